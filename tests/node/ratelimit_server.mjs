// A real third-party limiter for the learned-rate tests: Express with
// express-rate-limit (fixed window, in-memory store, one counter per client
// address), stating its limit in the headers of one IETF draft or the
// legacy X-RateLimit-* fields.
//
//   node ratelimit_server.mjs PORT_FILE HEADERS LIMIT WINDOW_MS DELAY_MS LOG
//
// HEADERS: draft-6 | draft-7 | draft-8 (express-rate-limit's standardHeaders)
// or legacy (X-RateLimit-Limit/-Remaining/-Reset, reset an epoch second), or
// none (neither: a bare fixed window whose 429s carry no Retry-After).
// Listens on 127.0.0.1 on a free port and writes it to PORT_FILE. Every
// answer waits DELAY_MS first (a slow handler; 429s answer at once, as the
// limiter runs before the handler). LOG gets one line per request:
// "<arrival ms> <status> <early 0|1>", early when it arrived before the
// Retry-After of an earlier 429 had passed. Stops on SIGTERM.
import express from "express";
import { rateLimit } from "express-rate-limit";
import { appendFileSync, writeFileSync } from "node:fs";

const [portFile, mode, limitArg, windowArg, delayArg, log] = process.argv.slice(2);
const limit = Number(limitArg), windowMs = Number(windowArg), delay = Number(delayArg);
if (!log || !(limit > 0) || !(windowMs > 0) || !(delay >= 0) ||
    !["draft-6", "draft-7", "draft-8", "legacy", "none"].includes(mode)) {
  console.error("usage: ratelimit_server.mjs PORT_FILE draft-6|draft-7|draft-8|legacy|none LIMIT WINDOW_MS DELAY_MS LOG");
  process.exit(2);
}

let retryUntil = 0; // the latest Retry-After deadline a 429 named (ms)
const app = express();
app.use((req, res, next) => {
  const t = Date.now();
  res.on("finish", () => {
    const early = t < retryUntil ? 1 : 0;
    if (res.statusCode === 429) {
      const ra = Number(res.getHeader("Retry-After"));
      if (ra >= 0 && t + ra * 1000 > retryUntil) retryUntil = t + ra * 1000;
    }
    appendFileSync(log, `${t} ${res.statusCode} ${early}\n`);
  });
  next();
});
app.use(rateLimit({
  windowMs,
  limit,
  standardHeaders: mode === "legacy" || mode === "none" ? false : mode,
  legacyHeaders: mode === "legacy",
}));
app.get("/*path", (req, res) => {
  setTimeout(() => res.type("text/plain").send("ok\n"), delay);
});
const server = app.listen(0, "127.0.0.1", () => {
  writeFileSync(portFile, String(server.address().port));
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
