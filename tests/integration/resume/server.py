#!/usr/bin/env python3
"""Test server for the --journal/--resume tests: answers every request with
200 after DELAY_MS (so a kill lands mid-run) and appends one JSON line per
request it received (method, path, Idempotency-Key) to RECORDFILE, flushed
before answering.

Paths under /flaky/ get 503 with Retry-After: 30 until the file
PORTFILE.healed exists (a server that recovers later: --requeue deadline).

Usage: server.py PORTFILE RECORDFILE DELAY_MS   (binds 127.0.0.1:0)
"""
import json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

lock = threading.Lock()


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        key = self.headers.get("Idempotency-Key")
        with lock:
            rec.write(json.dumps({"method": self.command, "path": self.path,
                                  "key": key}) + "\n")
            rec.flush()
        time.sleep(delay)
        if "/flaky/" in self.path and not os.path.exists(healed):
            body = b"try later\n"
            self.send_response(503)
            self.send_header("Retry-After", "30")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = ("ok %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = handle_any


if __name__ == "__main__":
    portfile, recfile, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]) / 1000
    healed = portfile + ".healed"
    rec = open(recfile, "a")
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    # A client killed mid-request is what these tests do: no tracebacks.
    srv.handle_error = lambda request, client_address: None
    srv.daemon_threads = True
    with open(portfile + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(portfile + ".tmp", portfile)
    srv.serve_forever()
