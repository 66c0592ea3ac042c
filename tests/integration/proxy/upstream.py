#!/usr/bin/env python3
"""A tiny upstream for the proxy tests: binary, chunked, echo and 429/503 answers.

Usage: upstream.py PORTFILE [CERT KEY]   (binds 127.0.0.1:0 and writes the port to PORTFILE;
with CERT and KEY it serves HTTPS)
"""
import hashlib
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs


def blob(n):
    # Every byte value, NULs and CR/LF included, in a fixed pseudo-random order.
    out = bytearray()
    x = 12345
    while len(out) < n:
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append((x >> 16) & 0xFF)
    return bytes(out)


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def body(self):
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

    def send(self, code, data, ctype="application/octet-stream", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def handle_any(self):
        H.seen = getattr(H, "seen", 0) + 1
        u = urlparse(self.path)
        q = parse_qs(u.query)
        req_body = self.body()
        if u.path == "/bin":
            self.send(200, blob(int(q.get("n", ["100000"])[0])))
        elif u.path == "/big":
            # N MiB of a fixed 1 MiB block, as fast as the socket takes it.
            mb = int(q.get("mb", ["100"])[0])
            block = blob(1 << 20) if not hasattr(H, "_block") else H._block
            H._block = block
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(mb << 20))
            self.end_headers()
            try:
                for _ in range(mb):
                    self.wfile.write(block)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif u.path == "/chunked":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "keep-alive, X-Hop")
            self.send_header("X-Hop", "must-not-pass")
            self.send_header("X-End", "kept")
            self.end_headers()
            data = blob(int(q.get("n", ["70000"])[0]))
            for i in range(0, len(data), 7001):
                part = data[i:i + 7001]
                self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif u.path == "/chunked-big":
            # N MiB in 64 KiB chunks, as fast as the socket takes them.
            mb = int(q.get("mb", ["50"])[0])
            part = b"%x\r\n" % 65536 + (b"c" * 65536) + b"\r\n"
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for _ in range(mb * 16):
                    self.wfile.write(part)
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif u.path == "/sse":
            # A slow event stream (an LLM's answer): one event every `ms`, `n` of them.
            ms, n = int(q.get("ms", ["10"])[0]), int(q.get("n", ["200"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            import time
            try:
                for i in range(n):
                    ev = b"data: token %d\n\n" % i
                    self.wfile.write(b"%x\r\n" % len(ev) + ev + b"\r\n")
                    self.wfile.flush()
                    time.sleep(ms / 1000.0)
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif u.path == "/echo":
            hdrs = {k.lower(): v for k, v in self.headers.items()}
            out = json.dumps({"method": self.command, "headers": hdrs,
                              "len": len(req_body),
                              "sha256": hashlib.sha256(req_body).hexdigest()}).encode()
            self.send(200, out, "application/json")
        elif u.path == "/close-after":
            # Keep-alive allowed by HTTP/1.1, then the server hangs up anyway:
            # the proxy must notice (or retry once) rather than fail the next request.
            self.send(200, b"closing", "text/plain")
            self.close_connection = True
        elif u.path == "/flaky":
            # Answers only the first request of each connection; later ones
            # are read and dropped with the connection (a keep-alive race).
            n = getattr(self, "served", 0)
            self.served = n + 1
            if n > 0:
                self.close_connection = True
                return
            self.send(200, b"flaky ok", "text/plain")
        elif u.path == "/count":
            # Requests this upstream has parsed so far (this one included).
            self.send(200, str(H.seen).encode(), "text/plain")
        elif u.path == "/cut-chunked":
            # Two chunks, then the connection drops: no terminating chunk.
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"5\r\nhello\r\n6\r\n world\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif u.path == "/cut-length":
            # Promises 100 bytes, sends 10, closes.
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"0123456789")
            self.wfile.flush()
            self.close_connection = True
        elif u.path == "/continue":
            self.send(200, b"expect=" + (self.headers.get("Expect") or "none").encode(), "text/plain")
        elif u.path == "/429":
            self.send(429, b'{"error":"slow down"}', "application/json",
                      [("Retry-After", q.get("ra", ["2"])[0])])
        elif u.path == "/503":
            self.send(503, b"busy", "text/plain",
                      [("Retry-After", q.get("ra", ["1"])[0])])
        else:
            self.send(200, b"upstream " + u.path.encode(), "text/plain")

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    if len(sys.argv) > 3:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(sys.argv[2], sys.argv[3])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()


if __name__ == "__main__":
    main()
