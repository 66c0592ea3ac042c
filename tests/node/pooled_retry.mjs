// A pooled client through undici's ProxyAgent that retries too soon, for the
// polite proxy judge's test (issue 20). Usage: node pooled_retry.mjs PROXY URL
// The first GET gets a 429 whose body it leaves unread for a while, so the
// pool's first connection stays busy and the early retry goes out on a second
// connection; then the pool hands out the older connection again, on time.
// Prints one JSON line per answer: {"n", "status", "retry_after", "body"}.
// Trust comes from NODE_EXTRA_CA_CERTS.
import { fetch, ProxyAgent } from "undici";

const [proxy, url] = process.argv.slice(2);
const dispatcher = new ProxyAgent(proxy);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const show = async (n, r) =>
  console.log(JSON.stringify({
    n, status: r.status, retry_after: r.headers.get("retry-after"),
    body: (await r.text()).slice(0, 200),
  }));

const first = await fetch(url, { dispatcher }); // 429, body not read yet
await sleep(300);
const early = await fetch(url, { dispatcher }); // too soon: the other connection
await show(1, first);
await show(2, early);
await sleep(2200); // the Retry-After (2 s) has passed
for (let n = 3; n <= 6; n++) await show(n, await fetch(url, { dispatcher }));
await dispatcher.close();
