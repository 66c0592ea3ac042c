#!/usr/bin/env python3
"""Reverse proxy: byte-exact bodies (binary, chunked both ways), hop-by-hop headers,
Via, the upstream's own 429/503 Retry-After tracked (seconds and HTTP-date), HEAD,
502 when the upstream is down, --latency applied without blocking the loop."""
import email.utils
import hashlib
import http.client
import subprocess
import threading
import time

import requests

from pxtest import Proxy, check, done, path, upstream

up = upstream()
px = Proxy("--upstream", up, name="fwd", clock=True)  # Retry-After waits on its clock
s = requests.Session()

# --- 1. byte-exact bodies ---
direct = requests.get(up + "/bin?n=1000003", timeout=30).content
via = s.get(px.base + "/bin?n=1000003", timeout=30)
check(via.status_code == 200 and via.content == direct and len(direct) == 1000003,
      "binary body (1 MB, all byte values) passes byte-exact")
check(via.headers.get("Content-Length") == "1000003", "Content-Length kept")
check(via.headers.get("Via") == "1.1 polite", "Via added to the response")

direct = requests.get(up + "/chunked?n=150000", timeout=30).content
conn = http.client.HTTPConnection(px.host, px.port, timeout=30)
conn.request("GET", "/chunked?n=150000")
resp = conn.getresponse()
body = resp.read()
check(resp.status == 200 and body == direct, "chunked upstream response passes byte-exact")
check(resp.getheader("Transfer-Encoding") == "chunked", "streamed to the client chunked")
check(resp.getheader("X-Hop") is None, "header named in the upstream's Connection is dropped")
check(resp.getheader("X-End") == "kept", "end-to-end header kept")
conn.close()

# curl, with --raw, sees valid chunked framing; and sha256 matches again
out = subprocess.run(["curl", "-s", px.base + "/chunked?n=150000"], capture_output=True).stdout
check(hashlib.sha256(out).hexdigest() == hashlib.sha256(direct).hexdigest(), "curl: chunked body identical")

# --- 2. request bodies: fixed length and chunked, hop-by-hop request headers ---
blob = bytes(range(256)) * 2000 + b"\r\n0\r\n\r\n"


def gen():
    for i in range(0, len(blob), 10007):
        yield blob[i:i + 10007]


r = s.post(px.base + "/echo", data=blob, timeout=30)
j = r.json()
check(j["sha256"] == hashlib.sha256(blob).hexdigest() and j["len"] == len(blob), "POST body byte-exact")
r = s.post(px.base + "/echo", data=gen(), headers={"Connection": "keep-alive, X-Secret-Hop",
                                                   "X-Secret-Hop": "no", "Keep-Alive": "timeout=5",
                                                   "Proxy-Authorization": "Basic eA==",
                                                   "X-Keep": "yes"}, timeout=30)
j = r.json()
check(j["sha256"] == hashlib.sha256(blob).hexdigest(), "chunked POST body byte-exact")
h = j["headers"]
check("x-secret-hop" not in h and "keep-alive" not in h and "proxy-authorization" not in h
      and "transfer-encoding" not in h, "hop-by-hop request headers removed (%s)" % sorted(h))
check(h.get("x-keep") == "yes", "end-to-end request header kept")
check(h.get("via") == "1.1 polite", "Via added to the request")
check(h.get("host") == up.split("//")[1], "Host rewritten to the upstream")

codes = [s.get(px.base + "/close-after", timeout=10).status_code for _ in range(30)]
check(codes == [200] * 30, "upstream closing kept-alive connections: every request still 200 (%s)"
      % sorted(set(codes)))
codes = [s.get(px.base + "/flaky", timeout=10).status_code for _ in range(5)]
check(codes == [200] * 5, "GET on a kept-alive connection the upstream drops: retried once, 200 (%s)" % codes)
codes = [s.post(px.base + "/flaky", data="x", timeout=10).status_code for _ in range(3)]
# The first POST lands on the connection the last GET left open, the second on a
# fresh one, the third on that one again.
check(codes == [502, 200, 502], "POST on a dropped kept-alive connection is not sent twice: 502 (%s)" % codes)
r = subprocess.run(["curl", "-s", "-H", "Expect: 100-continue", "--data-binary", "@" + __file__,
                    px.base + "/continue"], capture_output=True, text=True).stdout
check(r == "expect=none", "Expect: 100-continue is answered by the proxy, not forwarded (%r)" % r)

# pipelined requests on one connection come back in order
import socket
sk = socket.create_connection((px.host, px.port), timeout=10)
sk.sendall(b"".join(b"GET /p%d HTTP/1.1\r\nHost: x\r\n\r\n" % i for i in range(5)))
data = b""
while data.count(b"ok /p") < 5:
    chunk = sk.recv(65536)
    if not chunk:
        break
    data += chunk
sk.close()
order = [int(x.split(b"/p")[1][:1]) for x in data.split(b"\r\n\r\n")[1:] if x.startswith(b"ok /p")]
check(order == [0, 1, 2, 3, 4], "pipelined requests answered in order (%s)" % order)

r = s.head(px.base + "/bin?n=77", timeout=10)
check(r.status_code == 200 and r.headers.get("Content-Length") == "77" and r.content == b"", "HEAD passes")

# --- 3. the upstream's Retry-After is tracked like ours ---
r = s.get(px.base + "/429?ra=2", timeout=10)
check(r.status_code == 429 and r.headers.get("Retry-After") == "2", "upstream 429 passes through")
px.advance(500)
r = s.get(px.base + "/429?ra=2", timeout=10)
check(r.status_code == 429 and "early_retry" in r.text, "retry 1.5 s early is answered by the proxy")
date = email.utils.formatdate(time.time() + 3, usegmt=True)
r = s.get(px.base + "/503?ra=" + requests.utils.quote(date), timeout=10)
check(r.status_code == 503, "upstream 503 with an HTTP-date passes through")
r = s.get(px.base + "/503?ra=" + requests.utils.quote(date), timeout=10)
check(r.status_code == 429 and r.headers.get("Retry-After") in ("2", "3"),
      "HTTP-date Retry-After tracked (early retry told %s s)" % r.headers.get("Retry-After"))
rep = px.report()
check(rep["early_retries"] == 2, "two early retries recorded (%d)" % rep["early_retries"])
e = rep["early"][0]
check(1300 <= e["early_ms"] <= 1500, "early_ms about 1500 for the upstream 429 (%d)" % e["early_ms"])
px.stop()

# --- 3b. back-pressure: a client that does not read does not make the proxy buffer everything ---
def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


px = Proxy("--upstream", up, "--log", "/dev/null", name="bp")
requests.get(px.base + "/big?mb=1", timeout=30)  # warm up (and the upstream's block)
before = rss_mb(px.proc.pid)
MB = 256
sk = socket.create_connection((px.host, px.port), timeout=30)
sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
sk.sendall(b"GET /big?mb=%d HTTP/1.1\r\nHost: x\r\n\r\n" % MB)
head = sk.recv(1024)
time.sleep(2.0)  # the client stalls; the upstream keeps sending
during = rss_mb(px.proc.pid)
check(during - before < 64, "stalled client: proxy memory grew %.0f MB for a %d MB body (bounded)"
      % (during - before, MB))
total = len(head) - head.index(b"\r\n\r\n") - 4
while total < MB << 20:
    chunk = sk.recv(1 << 20)
    if not chunk:
        break
    total += len(chunk)
sk.close()
check(total == MB << 20, "after the stall the whole body arrives (%d bytes)" % total)
px.stop()

# --- 4. upstream down: 502, the proxy stays up ---
px = Proxy("--upstream", "http://127.0.0.1:9", name="down")
r = requests.get(px.base + "/x", timeout=10)
check(r.status_code == 502 and "bad_gateway" in r.text, "upstream unreachable: 502 (%d)" % r.status_code)
check(px.report()["upstream_errors"] == 1, "report counts upstream_errors")
px.stop()

# --- 5. --latency: every answer waits 200-250 ms, concurrently (not serialized) ---
px = Proxy("--latency", "200-250", name="latency")
times = []


def one():
    t = time.time()
    requests.get(px.base + "/ok/latency", timeout=10)
    times.append(time.time() - t)


t0 = time.time()
ths = [threading.Thread(target=one) for _ in range(10)]
for t in ths:
    t.start()
for t in ths:
    t.join()
total = time.time() - t0
check(min(times) >= 0.195, "--latency: each answer waits >= 200 ms (min %.3f)" % min(times))
check(total < 1.5, "--latency: 10 concurrent requests overlap (total %.2f s, serial would be >= 2 s)" % total)
px.stop()

# --- 6. the proxy in mock mode as an upstream of another proxy ---
inner = Proxy("--failure-rate", "100", "--retry-after", "1", name="inner")
outer = Proxy("--upstream", inner.base, name="outer")
# One client on one connection: the outer proxy's judge knows it is the one
# the inner 429 told to wait (a new connection at once could be another).
s = requests.Session()
r = s.get(outer.base + "/chain", timeout=10)
check(r.status_code == 429 and r.headers.get("Via") == "1.1 polite", "proxy chain: inner 429 via outer")
r = s.get(outer.base + "/chain", timeout=10)
check("early_retry" in r.text, "outer proxy tracks the inner proxy's Retry-After")
inner.stop()
outer.stop()

done()
