#!/usr/bin/env python3
"""Benchmark upstream: a threaded HTTP/1.1 server on 127.0.0.1:0 that sleeps
100 ms per request (the 'handler time') and answers 200. Writes its port to
the file named by argv[1]."""
import os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body are two writes: without TCP_NODELAY the body waits
    # for the peer's delayed ACK (~40 ms behind nginx's keepalive pool),
    # so a "100 ms" answer took 141-144 ms 77-86% of the time
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def do_GET(self):
        time.sleep(0.1)
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class S(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, *a):
        pass


srv = S(("127.0.0.1", 0), H)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
srv.serve_forever()
