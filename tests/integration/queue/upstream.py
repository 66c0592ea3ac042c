#!/usr/bin/env python3
"""Upstream for the work queue's tests and bench (tests/integration/queue,
bench/queue): answers by path and records every request twice, when it
arrives ("ev":"in") and when its answer was sent ("ev":"out"), with the
time, method, path, Idempotency-Key and User-Agent, so a test can tell what
each worker sent, how often, with which key, and what was in flight when.

Usage: upstream.py PORTFILE RECORDFILE   (binds 127.0.0.1:0, writes the port)

Paths:
  /ok/...[?ms=N]   200 "ok" (after N ms)
  /ra/S/...        the first request of each path: 429 with Retry-After: S;
                   later ones 200
  /hang/...        answers after 120 s (a request that never ends in time)
  /echo/...        200 with the body echoed
"""
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

lock = threading.Lock()
seen = {}
record = None


def log(ev, t, h, path):
    rec = {"ev": ev, "t": t, "method": h.command, "path": path,
           "idem": h.headers.get("Idempotency-Key"),
           "ua": h.headers.get("User-Agent")}
    with lock:
        record.write(json.dumps(rec) + "\n")
        record.flush()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body, headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        t = time.time()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        u = urlparse(self.path)
        log("in", t, self, u.path)
        p = u.path
        code, out, hdr = 404, b"not found", []
        if p.startswith("/ok"):
            ms = int(parse_qs(u.query).get("ms", ["0"])[0])
            time.sleep(ms / 1000.0)
            code, out = 200, b"ok"
        elif p.startswith("/ra/"):
            with lock:
                first = p not in seen
                seen[p] = 1
            secs = p.split("/")[2]
            code, out = (429, b"later") if first else (200, b"ok")
            if first:
                hdr = [("Retry-After", secs)]
        elif p.startswith("/hang"):
            time.sleep(120)
            code, out = 200, b"late"
        elif p.startswith("/echo"):
            code, out = 200, body
        self.reply(code, out, hdr)
        log("out", time.time(), self, p)

    do_GET = do_POST = do_PUT = do_PATCH = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass  # workers killed mid-request are expected


def main():
    global record
    record = open(sys.argv[2], "a")
    srv = Server(("127.0.0.1", 0), H)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
