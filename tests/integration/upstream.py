#!/usr/bin/env python3
"""The one scripted API of the integration tests and benches: named
behaviours chosen by path, and a JSON line per request it parsed, so that a
test can check what polite (the command, the proxy, the gateway, a queue
worker) really sent, how often, with which key, and when.

Usage: upstream.py PORTFILE [RECORDFILE [CERT KEY]] [--delay-ms N] [--record-out]

  PORTFILE      binds 127.0.0.1:0 and writes the port there (atomically)
  RECORDFILE    appends one JSON line per request ("-": none)
  CERT KEY      serve HTTPS with this certificate and key
  --delay-ms N  answer every request N ms after it arrived (a kill then lands
                mid-run: the resume tests)
  --record-out  also write a line when each answer has been sent (the
                queue's tests: what was in flight when)

A record line: {"ev":"in" (or "out"), "t" (time.time()), "method", "path"
(with its query), "idem" and "key" (the Idempotency-Key), "auth", "ua",
"headers" (lower-cased), "len" and "body" (the first 64 KiB, as text)}.

Paths (one behaviour each; N, S, K, R are numbers):
  /ok[...][?ms=N]        200 "ok <path>" (after N ms)
  /status/N              answers status N
  /once429/GN            the first request of each group G (the last segment
                         without its trailing digits N) gets 429 with
                         Retry-After: 1; every later one 200
  /openai429/GN          like /once429, but shaped like OpenAI's requests per
                         minute limit (openai-*, x-ratelimit-*,
                         rate_limit_exceeded body), Retry-After: 0
  /bare429/GN            like /once429, but a bare 429 with Retry-After: 0
  /ra/S/...              the first request of each path: 429 with
                         Retry-After: S; later ones 200
  /flip/TAG?n=K&ra=R&st=S  the first K requests of TAG (default 1) get S
                         (default 429) with Retry-After: R when given and an
                         OpenAI-shaped body; later ones 200 with
                         {"tag","count","key"}
  /fail503x2             per Idempotency-Key (or path): 503 + Retry-After: 0
                         twice, then 200
  /always503[...]        503 with Retry-After: 0
  /wait429[...]          429 with Retry-After: 30
  /429?ra=R, /503?ra=R   429 (a JSON body) or 503 with Retry-After: R (2, 1)
  /quota[...]            429 insufficient_quota, no Retry-After
  .../heals/...          503 with Retry-After: 30 until the file
                         PORTFILE.healed exists (a server that recovers)
  /slow?ms=N             sleeps N ms (default 100), then 200 "slow ok"
  /hang/...              answers after 120 s (a request that never ends)
  /echo                  200 with the method, headers, the body's length and
                         sha256 as JSON
  /echo/...              200 with the request body echoed
  /v1/chat/completions   an OpenAI chat completion (a stream of chunks and
                         [DONE] when the request says "stream":true)
  /bin?n=N               N bytes of every value (NULs, CR/LF) in a fixed order
  /big?mb=N              N MiB (default 10) as fast as the socket takes it
  /chunked?n=N           N bytes in 7001-byte chunks, a hop-by-hop header
  /chunked-big?mb=N      N MiB in 64 KiB chunks
  /sse?ms=N&n=K          K server-sent events, one every N ms, chunked; each
                         carries the time it was written ({"i":I,"t":T})
  /close?kb=N            N KiB and no length: ends when the server closes
  /close-after           200, then the server closes a keep-alive connection
  /flaky                 answers only the first request of each connection
  /count                 how many requests this server has parsed so far
  /cut-chunked           two chunks, then the connection drops
  /cut-length            promises 100 bytes, sends 10, closes
  /continue              200 "expect=<the Expect header>"
  anything else          200 "ok <path>"
"""
import hashlib
import json
import os
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

lock = threading.Lock()
counts = {}  # per-behaviour counters, keyed by (behaviour, name)
opts = {"record": None, "delay": 0.0, "out": False, "healed": None}
seen = [0]

RECORD_BODY = 64 << 10


def blob(n):
    """Every byte value, NULs and CR/LF included, in a fixed order."""
    out = bytearray()
    x = 12345
    while len(out) < n:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append((x >> 16) & 0xFF)
    return bytes(out)


BLOCK = []  # 1 MiB of blob(), made once


def bump(kind, name):
    """Counts one more request of `name` for behaviour `kind`; returns it."""
    with lock:
        n = counts.get((kind, name), 0) + 1
        counts[(kind, name)] = n
    return n


def record(ev, h, body):
    if opts["record"] is None:
        return
    key = h.headers.get("Idempotency-Key")
    line = {"ev": ev, "t": time.time(), "method": h.command, "path": h.path,
            "idem": key, "key": key, "auth": h.headers.get("Authorization"),
            "ua": h.headers.get("User-Agent"),
            "headers": {k.lower(): v for k, v in h.headers.items()},
            "len": len(body),
            "body": body[:RECORD_BODY].decode("utf-8", "replace")}
    with lock:
        opts["record"].write(json.dumps(line) + "\n")
        opts["record"].flush()


def rate_limit_body(message, code):
    return json.dumps({"error": {"message": message, "type": "requests",
                                 "param": None, "code": code}}).encode()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body (and each chunk) are separate writes: without
    # TCP_NODELAY a write after the first waits for the peer's delayed ACK
    # (~40 ms on a kept-alive connection), so "an API that answers at once"
    # answered in 40 ms and an SSE event could wait as long
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def reply(self, code, body=b"", ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "req-%d" % int(time.time() * 1e6))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def head(self, code, headers):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.wfile.flush()

    # ---- the rate limits ------------------------------------------------

    def once(self, p):
        kind = p.split("/")[1]
        group = re.sub(r"\d+$", "", p.rsplit("/", 1)[-1])
        if bump(kind, group) > 1:
            return self.reply(200, b"ok")
        if kind == "once429":
            return self.reply(429, b"slow down", extra=[("Retry-After", "1")])
        if kind == "bare429":
            return self.reply(429, b"", extra=[("Retry-After", "0")])
        body = rate_limit_body(
            "Rate limit reached for gpt-4o in organization org-test on "
            "requests per min (RPM): Limit 3, Used 3, Requested 1.",
            "rate_limit_exceeded")
        self.reply(429, body, "application/json", [
            ("Retry-After", "0"), ("openai-organization", "org-test"),
            ("openai-processing-ms", "3"),
            ("x-ratelimit-limit-requests", "3"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "20s")])

    def flip(self, tag, q):
        count = bump("flip", tag)
        if count <= int(q.get("n", ["1"])[0]):
            extra = [("Retry-After", q["ra"][0])] if "ra" in q else []
            body = rate_limit_body("Rate limit reached for requests",
                                   "rate_limit_exceeded")
            return self.reply(int(q.get("st", ["429"])[0]), body,
                              "application/json", extra)
        out = {"tag": tag, "count": count,
               "key": self.headers.get("Idempotency-Key")}
        self.reply(200, json.dumps(out).encode(), "application/json")

    def quota(self):
        err = {"error": {"message": "You exceeded your current quota",
                         "type": "insufficient_quota",
                         "code": "insufficient_quota"}}
        self.reply(429, json.dumps(err).encode(), "application/json")

    # ---- the bodies -----------------------------------------------------

    def big(self, q):
        mb = int(q.get("mb", ["10"])[0])
        if not BLOCK:
            BLOCK.append(blob(1 << 20))
        self.head(200, [("Content-Type", "application/octet-stream"),
                        ("Content-Length", str(mb << 20))])
        try:
            for _ in range(mb):
                self.wfile.write(BLOCK[0])
        except (BrokenPipeError, ConnectionResetError):
            pass

    def chunked(self, q):
        self.head(200, [("Content-Type", "application/octet-stream"),
                        ("Transfer-Encoding", "chunked"),
                        ("Connection", "keep-alive, X-Hop"),
                        ("X-Hop", "must-not-pass"), ("X-End", "kept")])
        data = blob(int(q.get("n", ["70000"])[0]))
        for i in range(0, len(data), 7001):
            self.chunk(data[i:i + 7001])
        self.wfile.write(b"0\r\n\r\n")

    def chunked_big(self, q):
        part = b"%x\r\n" % 65536 + (b"c" * 65536) + b"\r\n"
        self.head(200, [("Transfer-Encoding", "chunked")])
        try:
            for _ in range(int(q.get("mb", ["50"])[0]) * 16):
                self.wfile.write(part)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def sse(self, q):
        ms, n = int(q.get("ms", ["10"])[0]), int(q.get("n", ["20"])[0])
        self.head(200, [("Content-Type", "text/event-stream"),
                        ("Cache-Control", "no-cache"),
                        ("Transfer-Encoding", "chunked")])
        try:
            for i in range(n):
                if i:
                    time.sleep(ms / 1000.0)
                ev = json.dumps({"i": i, "t": time.time()}).encode()
                self.chunk(b"data: %s\n\n" % ev)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def close_body(self, q):
        self.head(200, [("Content-Type", "application/octet-stream"),
                        ("Connection", "close")])
        self.wfile.write(b"c" * (int(q.get("kb", ["64"])[0]) << 10))
        self.wfile.flush()
        self.close_connection = True

    def cut(self, chunked):
        if chunked:
            self.head(200, [("Transfer-Encoding", "chunked")])
            self.wfile.write(b"5\r\nhello\r\n6\r\n world\r\n")
        else:
            self.head(200, [("Content-Length", "100")])
            self.wfile.write(b"0123456789")
        self.wfile.flush()
        self.close_connection = True

    def flaky(self):
        n = getattr(self, "served", 0)
        self.served = n + 1
        if n > 0:
            self.close_connection = True  # read, then dropped with it
            return
        self.reply(200, b"flaky ok")

    def echo(self, body):
        out = {"method": self.command,
               "headers": {k.lower(): v for k, v in self.headers.items()},
               "len": len(body), "sha256": hashlib.sha256(body).hexdigest()}
        self.reply(200, json.dumps(out).encode(), "application/json")

    def chat(self, body):
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        base = {"id": "chatcmpl-polite", "created": int(time.time()),
                "model": req.get("model", "gpt-test")}
        if not req.get("stream"):
            out = dict(base, object="chat.completion", choices=[{
                "index": 0, "message": {"role": "assistant", "content": "hello"},
                "finish_reason": "stop"}],
                usage={"prompt_tokens": 3, "completion_tokens": 1,
                       "total_tokens": 4})
            return self.reply(200, json.dumps(out).encode(), "application/json")
        self.head(200, [("Content-Type", "text/event-stream"),
                        ("Transfer-Encoding", "chunked")])
        for word in ("hel", "lo"):
            c = dict(base, object="chat.completion.chunk", choices=[{
                "index": 0, "delta": {"content": word}, "finish_reason": None}])
            self.chunk(b"data: %s\n\n" % json.dumps(c).encode())
        self.chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    # ---- the table of behaviours ----------------------------------------

    def answer(self, p, q, body):
        ms = lambda d: int(q.get("ms", [d])[0]) / 1000.0
        if "/heals/" in p and not os.path.exists(opts["healed"]):
            return self.reply(503, b"try later\n", extra=[("Retry-After", "30")])
        if p.startswith("/ok"):
            time.sleep(ms("0"))
            return self.reply(200, ("ok " + p).encode())
        if p.startswith("/status/"):
            return self.reply(int(p.split("/")[2]), b"status")
        if re.match(r"/(once|openai|bare)429(/|$)", p):
            return self.once(p)
        if p.startswith("/ra/"):
            first = bump("ra", p) == 1
            return self.reply(429, b"later", extra=[("Retry-After", p.split("/")[2])]) \
                if first else self.reply(200, b"ok")
        if p.startswith("/flip/"):
            return self.flip(p[6:], q)
        if p.startswith("/fail503x2"):
            if bump("fail503x2", self.headers.get("Idempotency-Key") or p) <= 2:
                return self.reply(503, b"busy", extra=[("Retry-After", "0")])
            return self.reply(200, b"created")
        if p.startswith("/always503"):
            return self.reply(503, b"busy", extra=[("Retry-After", "0")])
        if p.startswith("/wait429"):
            return self.reply(429, b"later", extra=[("Retry-After", "30")])
        if p.startswith("/quota"):
            return self.quota()
        simple = {
            "/429": (429, b'{"error":"slow down"}', "application/json",
                     [("Retry-After", q.get("ra", ["2"])[0])]),
            "/503": (503, b"busy", "text/plain",
                     [("Retry-After", q.get("ra", ["1"])[0])]),
            "/continue": (200, b"expect=" + (self.headers.get("Expect") or
                                             "none").encode(), "text/plain", []),
            "/count": (200, str(seen[0]).encode(), "text/plain", []),
        }
        if p in simple:
            return self.reply(*simple[p])
        if p.startswith("/slow"):
            time.sleep(ms("100"))
            return self.reply(200, b"slow ok")
        if p.startswith("/hang"):
            time.sleep(120)
            return self.reply(200, b"late")
        if p.startswith("/echo/"):
            return self.reply(200, body)
        handlers = {
            "/echo": lambda: self.echo(body),
            "/bin": lambda: self.reply(200, blob(int(q.get("n", ["100000"])[0])),
                                       "application/octet-stream"),
            "/big": lambda: self.big(q), "/chunked": lambda: self.chunked(q),
            "/chunked-big": lambda: self.chunked_big(q),
            "/sse": lambda: self.sse(q), "/close": lambda: self.close_body(q),
            "/cut-chunked": lambda: self.cut(True),
            "/cut-length": lambda: self.cut(False), "/flaky": self.flaky,
        }
        if p in handlers:
            return handlers[p]()
        if p == "/close-after":
            self.reply(200, b"closing")
            self.close_connection = True
            return None
        if p.endswith("/chat/completions"):
            return self.chat(body)
        return self.reply(200, ("ok " + p).encode())

    def handle_any(self):
        t = time.time()
        with lock:
            seen[0] += 1
        body = self.read_body()
        u = urlparse(self.path)
        record("in", self, body)
        if opts["delay"] > 0:
            time.sleep(max(0.0, opts["delay"] - (time.time() - t)))
        self.answer(u.path, parse_qs(u.query), body)
        if opts["out"]:
            record("out", self, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass  # clients that hang up or are killed mid-request are expected


def main():
    args, pos = sys.argv[1:], []
    while args:
        a = args.pop(0)
        if a == "--delay-ms":
            opts["delay"] = int(args.pop(0)) / 1000.0
        elif a == "--record-out":
            opts["out"] = True
        elif a.startswith("--"):
            sys.exit("upstream.py: unknown option %s" % a)
        else:
            pos.append(a)
    if not pos or len(pos) == 3 or len(pos) > 4:
        sys.exit(__doc__.split("\n\n")[1])
    portfile = pos[0]
    opts["healed"] = portfile + ".healed"
    if len(pos) > 1 and pos[1] != "-":
        opts["record"] = open(pos[1], "a")
    srv = Server(("127.0.0.1", 0), H)
    if len(pos) == 4:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pos[2], pos[3])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()


if __name__ == "__main__":
    main()
