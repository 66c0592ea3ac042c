// bench/proxy/load.mjs: a closed-loop HTTP(S) load generator for proxies that
// wrk cannot drive (CONNECT + TLS through a forward proxy), on undici.
// Usage: node load.mjs URL CONNECTIONS SECONDS [PROXY_URL]
// Prints one JSON line: {"rps", "p50_ms", "p99_ms", "requests", "errors"}.
// Trust for https comes from NODE_EXTRA_CA_CERTS. Run from tests/node's
// node_modules (NODE_PATH is not used by ES modules: see forward.sh).
import { Agent, ProxyAgent, request } from "undici";

const [url, conns, secs, proxy] = process.argv.slice(2);
const n = Number(conns);
const dispatcher = proxy
  ? new ProxyAgent({ uri: proxy, connections: n })
  : new Agent({ connections: n });
const lat = [];
let errors = 0;
const end = Date.now() + Number(secs) * 1000;

async function worker() {
  while (Date.now() < end) {
    const t = process.hrtime.bigint();
    try {
      const r = await request(url, { dispatcher });
      await r.body.text();
      if (r.statusCode !== 200) errors++;
      else lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    } catch {
      errors++;
    }
  }
}

const t0 = Date.now();
await Promise.all(Array.from({ length: n }, worker));
const took = (Date.now() - t0) / 1000;
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : 0);
console.log(JSON.stringify({
  rps: lat.length / took, p50_ms: q(0.5), p99_ms: q(0.99), requests: lat.length, errors,
}));
await dispatcher.close();
