#!/usr/bin/env python3
"""Test server for `polite run` integration tests: scripted replies by path,
and a JSON line per request (arrival time, method, path, headers) so tests can
check what polite actually sent and when.

Usage: server.py PORTFILE RECORDFILE   (binds 127.0.0.1:0, writes the port)

Paths:
  /ok[...]          200 "ok <path>"
  /once429/GN       the first request of each group G (the last segment
                    without its trailing digits N) gets 429 with
                    Retry-After: 1; every later one 200
  /fail503x2        per Idempotency-Key (or path): 503 + Retry-After: 0 twice,
                    then 200
  /always503        503 with Retry-After: 0
  /wait429          429 with Retry-After: 30
  /quota            429 with an insufficient_quota body
  /slow?ms=N        sleeps N ms, then 200
  /status/N         answers status N
  /echo             200 with the request body echoed
  /openai429/GN     like /once429, but the 429 is shaped like OpenAI's
                    requests-per-minute limit (openai-* headers, x-ratelimit-*,
                    rate_limit_exceeded body) with Retry-After: 0
  /bare429/GN       like /once429, but a bare 429 (no vendor evidence) with
                    Retry-After: 0
"""
import json, re, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

lock = threading.Lock()
state = {"once429": {}, "counts": {}}
record = None


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def reply(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Request-Id", "req-%d" % int(time.time() * 1e6))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        t = time.time()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        u = urlparse(self.path)
        rec = {"t": t, "method": self.command, "path": self.path,
               "idem": self.headers.get("Idempotency-Key"),
               "auth": self.headers.get("Authorization"),
               "ua": self.headers.get("User-Agent"),
               "body": body.decode("utf-8", "replace")}
        with lock:
            record.write(json.dumps(rec) + "\n")
            record.flush()
        p = u.path
        if p.startswith("/ok"):
            return self.reply(200, ("ok " + p).encode())
        if p.startswith("/once429"):
            group = re.sub(r"\d+$", "", p.rsplit("/", 1)[-1])
            with lock:
                n = state["once429"].get(group, 0) + 1
                state["once429"][group] = n
                first = n == 1
            if first:
                return self.reply(429, b"slow down", [("Retry-After", "1")])
            return self.reply(200, b"ok")
        if p.startswith("/openai429") or p.startswith("/bare429"):
            group = p.split("/")[1] + re.sub(r"\d+$", "", p.rsplit("/", 1)[-1])
            with lock:
                n = state["once429"].get(group, 0) + 1
                state["once429"][group] = n
            if n > 1:
                return self.reply(200, b"ok")
            if p.startswith("/bare429"):
                return self.reply(429, b"", [("Retry-After", "0")])
            body = json.dumps({"error": {
                "message": "Rate limit reached for gpt-4o in organization "
                           "org-test on requests per min (RPM): Limit 3, "
                           "Used 3, Requested 1.",
                "type": "requests", "param": None,
                "code": "rate_limit_exceeded"}}).encode()
            return self.reply(429, body, [
                ("Content-Type", "application/json"),
                ("Retry-After", "0"),
                ("openai-organization", "org-test"),
                ("openai-processing-ms", "3"),
                ("x-ratelimit-limit-requests", "3"),
                ("x-ratelimit-remaining-requests", "0"),
                ("x-ratelimit-reset-requests", "20s")])
        if p.startswith("/fail503x2"):
            key = rec["idem"] or p
            with lock:
                c = state["counts"].get(key, 0) + 1
                state["counts"][key] = c
            if c <= 2:
                return self.reply(503, b"busy", [("Retry-After", "0")])
            return self.reply(200, b"created")
        if p.startswith("/always503"):
            return self.reply(503, b"busy", [("Retry-After", "0")])
        if p.startswith("/wait429"):
            return self.reply(429, b"later", [("Retry-After", "30")])
        if p.startswith("/quota"):
            return self.reply(429, json.dumps({"error": {"code": "insufficient_quota", "message": "You exceeded your current quota"}}).encode(),
                              [("Content-Type", "application/json")])
        if p.startswith("/slow"):
            ms = int(parse_qs(u.query).get("ms", ["1000"])[0])
            time.sleep(ms / 1000.0)
            return self.reply(200, b"slow ok")
        if p.startswith("/status/"):
            return self.reply(int(p.split("/")[2]), b"status")
        if p.startswith("/echo"):
            return self.reply(200, body)
        return self.reply(404, b"not found")

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = handle_any


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients that hang up (SIGINT tests) are expected


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
