#!/usr/bin/env python3
"""Warm upstream connections (issue 22): a paced request is sent at its time on a connection opened while
it waited, not a connect later. An upstream of this test's own records when it accepted each connection
and when each request's first byte came on it, and holds every answer 1.2 s, so that no connection comes
free for the next start. Through a gateway told --rate 5/s, 5 clients at once: the first request connects
when it is sent (nothing was announced before it); each later one must arrive on a connection that was
open well before its bytes (>= 50 ms: it was pre-opened while the request waited), and the spares stay
bounded (net/net_upstream.h: NET_UP_SPARE_MAX 2, so at most 5 + 2 connections). Without warm connections
every request after the first would arrive on a connection accepted a moment before it."""
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proxy"))
import pxtest  # noqa: E402
from pxtest import POLITE, check, done, path, read_all  # noqa: E402

events = []  # (connection number, accepted at, first byte of a request at)
lock = threading.Lock()
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
conns = []


def serve(c, n, accepted):
    buf = b""
    try:
        while True:
            first = None
            while b"\r\n\r\n" not in buf:
                b = c.recv(65536)
                if not b:
                    return
                if first is None:
                    first = time.monotonic()
                buf += b
            buf = buf[buf.index(b"\r\n\r\n") + 4:]
            with lock:
                events.append((n, accepted, first if first is not None else time.monotonic()))
            time.sleep(1.2)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    except OSError:
        pass


def accept_loop():
    while True:
        try:
            c, _ = srv.accept()
        except OSError:
            return
        with lock:
            conns.append(c)
            n = len(conns)
        threading.Thread(target=serve, args=(c, n, time.monotonic()), daemon=True).start()


threading.Thread(target=accept_loop, daemon=True).start()
ready = path("gw.ready")
errf = open(path("gw.err"), "w")
gw = pxtest.track(subprocess.Popen(
    [POLITE, "gateway", "--listen", "127.0.0.1:0", "--ready-file", ready, "--upstream",
     "http://127.0.0.1:%d" % srv.getsockname()[1], "--rate", "5/s", "--quiet"],
    stdout=subprocess.DEVNULL, stderr=errf))
addr = pxtest._wait_file(ready, gw)
check(addr is not None, "the gateway started")
host, port = addr.rsplit(":", 1)
codes = []


def client(i):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"GET /item/%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % i)
    data = read_all(s)
    with lock:
        codes.append(data.split(b" ", 2)[1] if data.startswith(b"HTTP/1.1 ") else b"none")


threads = [threading.Thread(target=client, args=(i,)) for i in range(5)]
for t in threads:
    t.start()
for t in threads:
    t.join(30)
gw.terminate()
gw.wait(30)
errf.close()
check(codes == [b"200"] * 5, "5 answers of 200 (%s)" % codes)
events.sort(key=lambda e: e[2])
seen, gaps = set(), []
for n, acc, first in events:  # the first request on each connection: how long it had been open
    if n not in seen:
        seen.add(n)
        gaps.append(round((first - acc) * 1000))
print("# first request on each connection, ms it had been open, in the order they came: %s" % gaps)
warm = [g for g in gaps[1:] if g >= 50]
check(len(events) == 5, "the upstream saw the 5 requests (%d)" % len(events))
check(len(gaps) == 5, "each request on a connection of its own (answers held 1.2 s): %d" % len(gaps))
check(len(warm) >= 3, "at least 3 of the 4 paced requests came on a connection opened >= 50 ms before "
      "them (%s)" % gaps)
check(len(conns) <= 7, "spares bounded: %d connections for 5 requests (<= 5 + NET_UP_SPARE_MAX)" % len(conns))
srv.close()
done()
