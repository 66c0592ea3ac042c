#!/usr/bin/env python3
"""Request smuggling: every head that two HTTP parsers could frame or route
differently gets 400 (RFC 9112) with the connection closed, and never reaches
the upstream; an upstream that breaks off a chunked body, or closes before its
Content-Length, closes the client's connection instead of ending the answer."""
import socket
import time

import requests

from pxtest import Proxy, check, done, upstream

up = upstream()
px = Proxy("--upstream", up, name="smuggle")


def exchange(raw, wait=5.0):
    """Sends raw bytes on a fresh connection; returns everything until close."""
    sk = socket.create_connection((px.host, px.port), timeout=wait)
    sk.sendall(raw)
    data = b""
    try:
        while True:
            chunk = sk.recv(65536)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        data += b"<open>"  # the proxy kept the connection open
    sk.close()
    return data


def count():
    return int(requests.get(up + "/count", timeout=10).text)


SMUGGLE = "POST /x HTTP/1.1\r\nHost: a\r\n"
CASES = [
    ("two Content-Length headers",
     SMUGGLE + "Content-Length: 4\r\nContent-Length: 40\r\n\r\nABCDGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n"),
    ("two equal Content-Length headers", SMUGGLE + "Content-Length: 4\r\nContent-Length: 4\r\n\r\nABCD"),
    ("'Transfer-Encoding : chunked' (space before the colon)",
     SMUGGLE + "Transfer-Encoding : chunked\r\nContent-Length: 0\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
    ("Content-Length and Transfer-Encoding",
     SMUGGLE + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("Transfer-Encoding and Content-Length",
     SMUGGLE + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n"),
    ("Content-Length: +5", SMUGGLE + "Content-Length: +5\r\n\r\nhello"),
    ("Content-Length list '5, 5'", SMUGGLE + "Content-Length: 5, 5\r\n\r\nhello"),
    ("a target with a space", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n"),
    ("an empty header name", "GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n"),
    ("a control byte in a header value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x01\r\n\r\n"),
    ("a NUL in a header value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x002\r\n\r\n"),
    ("a bare CR inside a line", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n"),
    ("two Host headers", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
    ("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n"),
    ("obsolete line folding", "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n"),
    ("chunked not last", SMUGGLE + "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n"),
    ("Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
    ("a chunk size with garbage", SMUGGLE + "Transfer-Encoding: chunked\r\n\r\n5x\r\nhello\r\n0\r\n\r\n"),
]

before = count()
for what, raw in CASES:
    data = exchange(raw.encode("latin-1"))
    first = data.split(b"\r\n", 1)[0]
    check(first == b"HTTP/1.1 400 Bad Request" and data.count(b"\r\n\r\n") == 1
          and b"Connection: close" in data and not data.endswith(b"<open>"),
          "%s: 400 and the connection closed (%r)" % (what, first))
    check(b"Server: polite-proxy" in data, "%s: the 400 says it is the proxy's" % what)
after = count()
# Only the two /count requests themselves reached the upstream; the chunk-size
# case is the one whose head is valid, so its refusal comes before forwarding.
check(after - before == 1, "none of the %d refused requests reached the upstream (%d seen)"
      % (len(CASES), after - before - 1))

# A valid request after the refusals still works, and valid chunked bodies pass.
r = requests.post(px.base + "/echo", data=iter([b"ab", b"cd"]), timeout=10)
check(r.status_code == 200 and r.json()["len"] == 4, "a valid chunked request still passes")

# --- the upstream breaks off: the client must see it ---
data = exchange(b"GET /cut-chunked HTTP/1.1\r\nHost: a\r\n\r\n")
check(data.startswith(b"HTTP/1.1 200") and b"hello" in data and b" world" in data,
      "chunked upstream cut: the chunks that arrived are passed on")
check(not data.endswith(b"0\r\n\r\n") and not data.endswith(b"<open>"),
      "chunked upstream cut: no terminating chunk, the client connection is closed (%r)" % data[-12:])
data = exchange(b"GET /cut-length HTTP/1.1\r\nHost: a\r\n\r\n")
head, _, body = data.partition(b"\r\n\r\n")
check(b"Content-Length: 100" in head and body == b"0123456789",
      "Content-Length upstream cut: 10 of 100 bytes, then the client connection is closed (%r)" % body)
try:
    r = requests.get(px.base + "/cut-length", timeout=10)
    check(False, "requests sees the cut Content-Length body as an error (got %d bytes)" % len(r.content))
except requests.exceptions.RequestException as e:
    check(True, "requests sees the cut Content-Length body as an error (%s)" % type(e).__name__)
rep = px.report()
check(rep["upstream_errors"] >= 3, "cut answers are counted as upstream errors (%d)" % rep["upstream_errors"])

# A pipelined request behind a cut answer is not answered on that connection.
data = exchange(b"GET /cut-chunked HTTP/1.1\r\nHost: a\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n")
check(b"ok /after" not in data, "nothing follows a cut answer on its connection")
px.stop()
done()
