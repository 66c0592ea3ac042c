// Node's fetch through undici's ProxyAgent, for the polite proxy tests.
// Usage: node fetch_via_proxy.mjs PROXY_URL URL...
// Prints one JSON line per URL: {"url", "status", "retry_after", "via", "body"}
// or {"url", "error"}. Trust comes from NODE_EXTRA_CA_CERTS.
import { fetch, ProxyAgent } from "undici";

const [proxy, ...urls] = process.argv.slice(2);
const dispatcher = new ProxyAgent(proxy);
for (const url of urls) {
  try {
    const r = await fetch(url, { dispatcher });
    console.log(JSON.stringify({
      url, status: r.status, retry_after: r.headers.get("retry-after"),
      via: r.headers.get("via"), body: await r.text(),
    }));
  } catch (e) {
    console.log(JSON.stringify({ url, error: String(e.cause || e) }));
  }
}
await dispatcher.close();
