// The official OpenAI Node SDK, as an application uses it: N chat
// completions, C at a time, with the SDK's own retries (default 2) left on.
// Usage: node openai_chat.mjs BASE_URL N C [stream]
// POLITE_QUERY=K=V adds ?K=V to every request (the SDK's defaultQuery), so
// that a server's access log can tell one run's requests from another's.
// Prints one JSON line: {"ok", "failed", "errors": {message: count},
// "wall_s", "content"} (content: the first answer's text, to show it was
// read whole; with "stream" each call streams and the chunks are joined).
import OpenAI from "openai";

const [baseURL, n, c, mode] = process.argv.slice(2);
const [qk, qv] = (process.env.POLITE_QUERY || "").split("=");
const client = new OpenAI({
  baseURL, apiKey: "sk-test-node-secret-0f3a", timeout: 120000,
  defaultQuery: qk ? { [qk]: qv } : undefined,
});
const todo = [...Array(Number(n)).keys()];
const out = { ok: 0, failed: 0, errors: {}, wall_s: 0, content: null };

async function one(i) {
  const req = { model: "gpt-test", messages: [{ role: "user", content: `hi ${i}` }] };
  if (mode === "stream") {
    const s = await client.chat.completions.create({ ...req, stream: true });
    let text = "";
    for await (const chunk of s) text += chunk.choices[0]?.delta?.content || "";
    return text;
  }
  const r = await client.chat.completions.create(req);
  return r.choices[0].message.content;
}

async function worker() {
  while (todo.length) {
    const i = todo.shift();
    try {
      const text = await one(i);
      out.ok++;
      if (out.content === null) out.content = text;
    } catch (e) {
      out.failed++;
      const k = String(e.status || e.message).slice(0, 80);
      out.errors[k] = (out.errors[k] || 0) + 1;
    }
  }
}

const t0 = Date.now();
await Promise.all([...Array(Number(c))].map(worker));
out.wall_s = (Date.now() - t0) / 1000;
console.log(JSON.stringify(out));
