#!/usr/bin/env python3
"""The API behind the gateway in its tests: scripted answers by path, and a
JSON line per request it parsed (arrival time, method, path, headers, body
length) so that a test can check what the gateway really sent, and when.

Usage: upstream.py PORTFILE RECORDFILE [CERT KEY]   (binds 127.0.0.1:0,
writes the port; with CERT and KEY it serves HTTPS)

Paths:
  /ok[...]                  200 "ok <path>"
  /flip/TAG?n=K&ra=R&st=S   the first K requests of TAG (default 1) get S
                            (default 429) with Retry-After: R when given and
                            an OpenAI-shaped rate_limit_exceeded body; later
                            ones 200 with {"tag","count","key"} (key: the
                            Idempotency-Key header the request carried)
  /quota                    429 insufficient_quota, no Retry-After
  /slow?ms=N                sleeps N ms, then 200
  /sse?ms=N&n=K             K server-sent events, one every N ms, chunked;
                            each carries the server's time.time() it was
                            written at ({"i":I,"t":T})
  /big?mb=N                 N MiB as fast as the socket takes it
  /close?kb=N               200 with N KiB and no length: the answer ends
                            when the server closes the connection
  /echo                     200 with the method, headers and the body's
                            length and sha256 as JSON
  /v1/chat/completions      an OpenAI chat completion (a stream of chunks
                            and [DONE] when the request says "stream":true)
"""
import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

lock = threading.Lock()
flips = {}
record = None


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body=b"", ctype="application/json", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def chunk(self, data):
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.wfile.flush()

    def flip(self, tag, q):
        with lock:
            flips[tag] = flips.get(tag, 0) + 1
            count = flips[tag]
        if count <= int(q.get("n", ["1"])[0]):
            extra = [("Retry-After", q["ra"][0])] if "ra" in q else []
            err = {"error": {"message": "Rate limit reached for requests", "type": "requests",
                             "code": "rate_limit_exceeded"}}
            return self.reply(int(q.get("st", ["429"])[0]), json.dumps(err).encode(), extra=extra)
        out = {"tag": tag, "count": count, "key": self.headers.get("Idempotency-Key")}
        self.reply(200, json.dumps(out).encode())

    def sse(self, q):
        ms, n = int(q.get("ms", ["10"])[0]), int(q.get("n", ["20"])[0])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for i in range(n):
                if i:
                    time.sleep(ms / 1000.0)
                self.chunk(b"data: %s\n\n" % json.dumps({"i": i, "t": time.time()}).encode())
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def big(self, q):
        mb = int(q.get("mb", ["10"])[0])
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(mb << 20))
        self.end_headers()
        block = b"b" * (1 << 20)
        try:
            for _ in range(mb):
                self.wfile.write(block)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def chat(self, body):
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        base = {"id": "chatcmpl-polite", "created": int(time.time()), "model": req.get("model", "gpt-test")}
        if not req.get("stream"):
            out = dict(base, object="chat.completion", choices=[{
                "index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}],
                usage={"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4})
            return self.reply(200, json.dumps(out).encode())
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for word in ("hel", "lo"):
            c = dict(base, object="chat.completion.chunk", choices=[{
                "index": 0, "delta": {"content": word}, "finish_reason": None}])
            self.chunk(b"data: %s\n\n" % json.dumps(c).encode())
        self.chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def handle_any(self):
        u = urlparse(self.path)
        q = parse_qs(u.query)
        body = self.read_body()
        line = {"t": time.time(), "method": self.command, "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()}, "len": len(body)}
        with lock:
            record.write(json.dumps(line) + "\n")
            record.flush()
        if u.path.startswith("/flip/"):
            self.flip(u.path[6:], q)
        elif u.path == "/quota":
            err = {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota",
                             "code": "insufficient_quota"}}
            self.reply(429, json.dumps(err).encode())
        elif u.path == "/slow":
            time.sleep(int(q.get("ms", ["100"])[0]) / 1000.0)
            self.reply(200, b"slow ok\n", "text/plain")
        elif u.path == "/sse":
            self.sse(q)
        elif u.path == "/big":
            self.big(q)
        elif u.path == "/close":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"c" * (int(q.get("kb", ["64"])[0]) << 10))
            self.wfile.flush()
            self.close_connection = True
        elif u.path == "/echo":
            hdrs = {k.lower(): v for k, v in self.headers.items()}
            out = {"method": self.command, "headers": hdrs, "len": len(body),
                   "sha256": hashlib.sha256(body).hexdigest()}
            self.reply(200, json.dumps(out).encode())
        elif u.path.endswith("/chat/completions"):
            self.chat(body)
        else:
            self.reply(200, b"ok " + u.path.encode() + b"\n", "text/plain")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any


def main():
    global record
    record = open(sys.argv[2], "a")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    srv.request_queue_size = 1024
    if len(sys.argv) > 4:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[3], sys.argv[4])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
