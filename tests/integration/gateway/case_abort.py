#!/usr/bin/env python3
# ctest-label: asan
"""Clients that leave in the middle of an answer, in polite gateway's modes (issue 21's abort probe, issue
22): base URL, forward plain http, CONNECT intercepted HTTPS, CONNECT tunnel. A client closes or resets its
connection before the head, mid-body of a 50 MiB answer, mid-chunked, in a slow event stream, and while
its request waits in the account's queue. The gateway must stay alive, keep serving, cancel the upstream
exchange and give back the request's slot (--concurrency 1: a leaked slot would block the next request),
exit 0 at SIGTERM and, in the ASan+UBSan build (this case carries the ctest label asan), report nothing.
The upstream is the tests' scripted API (tests/integration/upstream.py)."""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proxy"))
import requests  # noqa: E402

import pxtest  # noqa: E402
from pxtest import (POLITE, abort_all, check, connect, done, leave, path, read_all, read_some, run,  # noqa: E402
                    tunnel_to, upstream)
from pxtest import tls as tls_to  # noqa: E402

CA_DIR = path("ca")
os.environ["POLITE_CA_DIR"] = CA_DIR
rc, _, err = run("proxy", "ca", "--dir", CA_DIR, "--issue", "127.0.0.1", "--out", path("up"))
check(rc == 0, "a certificate for the HTTPS upstream (%s)" % err.strip())
CA = os.path.join(CA_DIR, "ca.pem")
HTTP = upstream()
HTTPS = upstream(path("up.pem"), path("up.key"), name="tls-upstream")
UP_PORT = int(HTTP.rsplit(":", 1)[1])
TLS_PORT = int(HTTPS.rsplit(":", 1)[1])


class Gateway:
    """A running `polite gateway` on 127.0.0.1:0 (pxtest's Proxy, for the other command)."""

    def __init__(self, *args, name):
        self.ready, self.log = path(name + ".ready"), path(name + ".log")
        cmd = [POLITE, "gateway", "--listen", "127.0.0.1:0", "--ready-file", self.ready,
               "--rate", "none", "--concurrency", "1"] + list(args)
        self.errf = open(self.log, "w")
        self.proc = pxtest.track(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.errf))
        addr = pxtest._wait_file(self.ready, self.proc)
        if addr is None:
            self.errf.close()
            sys.stdout.write(open(self.log).read())
            raise SystemExit("gateway did not start: %s" % " ".join(cmd))
        self.host, port = addr.rsplit(":", 1)
        self.port = int(port)
        self.base = "http://" + addr

    def stop(self):
        self.proc.terminate()
        try:
            rc = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.errf.close()
        return rc


def tls(sock):
    return tls_to(sock, CA)


def still_serves(get, what):
    """--concurrency 1: the next request is answered only when every cut one gave its slot back."""
    end = time.monotonic() + 10
    while True:
        try:
            code, n = get()
        except (OSError, requests.RequestException):
            code, n = 0, 0
        if code == 200 or time.monotonic() > end:
            break
        time.sleep(0.2)
    check(code == 200 and n == 1000, "%s: a whole answer after the aborts (slot given back)" % what)


def stopped_clean(gw, what):
    rc = gw.stop()
    log = open(gw.log).read()
    bad = [l for l in log.splitlines() if "AddressSanitizer" in l or "runtime error" in l or "LeakSanitizer" in l]
    check(rc == 0, "%s: exit status 0 at SIGTERM (%d)" % (what, rc))
    check(not bad, "%s: no sanitizer report (%s)" % (what, bad[:3]))


def plain_get(gw, target):
    r = requests.get(gw.base + target if target.startswith("/") else target, timeout=10,
                     proxies={"http": gw.base})
    return r.status_code, len(r.content)


# --- 1. base URL ---
gw = Gateway("--upstream", HTTP, name="base")
n = abort_all(lambda: connect(gw), lambda u: u, rounds=2)
# Leaving while queued: one request holds the only slot, the others wait behind it and leave.
hold = connect(gw)
hold.sendall(b"GET /sse?ms=50&n=40 HTTP/1.1\r\nHost: x\r\n\r\n")
read_some(hold, 100)
for reset in (False, True, False, True):
    s = connect(gw)
    s.sendall(b"GET /bin?n=10 HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.05)
    leave(s, reset)
leave(hold, True)
still_serves(lambda: plain_get(gw, "/bin?n=1000"), "base URL (%d cut, 4 left the queue)" % n)
stopped_clean(gw, "base URL")

# --- 2. forward, plain http ---
gw = Gateway(name="forward")
n = abort_all(lambda: connect(gw), lambda u: "http://127.0.0.1:%d%s" % (UP_PORT, u), rounds=2)
still_serves(lambda: plain_get(gw, "http://127.0.0.1:%d/bin?n=1000" % UP_PORT), "forward http (%d cut)" % n)
stopped_clean(gw, "forward http")

# --- 3. CONNECT intercepted, and 4. CONNECT tunnelled, in one gateway ---
gw = Gateway("--watch", "https://127.0.0.1:%d/*" % TLS_PORT, "--upstream-cacert", CA, name="connect")
n = abort_all(lambda: tls(tunnel_to(gw, "127.0.0.1", TLS_PORT)), lambda u: u, rounds=1)
for reset in (False, True):  # gone while the CONNECT is being set up
    s = connect(gw)
    s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: x\r\n\r\n" % TLS_PORT)
    leave(s, reset)


def https_get():
    s = tls(tunnel_to(gw, "127.0.0.1", TLS_PORT))
    s.sendall(b"GET /bin?n=1000 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    head, _, rest = read_all(s).partition(b"\r\n\r\n")
    return (200 if head.startswith(b"HTTP/1.1 200") else 0), len(rest)


still_serves(https_get, "intercepted https (%d cut)" % n)
stopped_clean(gw, "intercepted https")
gw = Gateway("--watch", "https://elsewhere.invalid/*", name="tunnel")  # 127.0.0.1 unwatched: tunnelled
n = abort_all(lambda: tls(tunnel_to(gw, "127.0.0.1", TLS_PORT)), lambda u: u, rounds=1)
still_serves(https_get, "tunnel (%d cut)" % n)
stopped_clean(gw, "tunnel")
done()
