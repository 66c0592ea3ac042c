#!/usr/bin/env python3
"""A thousand concurrent keep-alive connections (python asyncio), in mock mode and
through a reverse proxy (upstream = a second proxy in mock mode), plus curl --parallel."""
import asyncio
import json
import resource
import subprocess

from pxtest import Proxy, check, done, write

N = 1000
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 3 * N:
    soft = hard if hard == resource.RLIM_INFINITY else min(hard, 4 * N)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
# The reverse-proxy case holds 2 descriptors per connection in one process
# (client side and upstream side): on a machine whose hard limit is low,
# fewer connections are opened rather than failing for want of descriptors.
if soft != resource.RLIM_INFINITY and soft < 2 * N + 200:
    N = max(100, (soft - 200) // 2)
    print("descriptor limit %d: using %d connections" % (soft, N))


async def client(host, port, i, results):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as e:
        results.append(("connect", str(e)))
        return
    ok = 0
    for k in range(2):  # two requests on the same connection (keep-alive)
        writer.write(b"GET /c/%d/%d HTTP/1.1\r\nHost: t\r\n\r\n" % (i, k))
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        body = await reader.readexactly(length)
        if head.startswith(b"HTTP/1.1 200") and json.loads(body)["path"] == "/c/%d/%d" % (i, k):
            ok += 1
    writer.close()
    results.append(("ok", ok))


async def many(host, port):
    results = []
    # All connections are opened first and held, so the server really has N at once.
    await asyncio.wait_for(asyncio.gather(*(client(host, port, i, results) for i in range(N))), 120)
    return results


def run_many(px, what):
    results = asyncio.run(many(px.host, px.port))
    good = sum(1 for kind, v in results if kind == "ok" and v == 2)
    check(good == N, "%s: %d/%d concurrent connections got both answers" % (what, good, N))


px = Proxy("--log", "/dev/null", name="mock")
run_many(px, "mock mode")
rep = px.report()
check(rep["requests"] == 2 * N, "mock mode: report counts %d requests (%d)" % (2 * N, rep["requests"]))

outer = Proxy("--upstream", px.base, "--log", "/dev/null", name="outer")
run_many(outer, "reverse proxy")
check(outer.report()["passed"] == 2 * N, "reverse proxy: all passed")

# curl --parallel against the reverse proxy
urls = write("urls.txt", "".join("url = %s/p/%d\noutput = /dev/null\n" % (outer.base, i) for i in range(300)))
p = subprocess.run(["curl", "-s", "--parallel", "--parallel-max", "100", "-w", "%{http_code}\n", "-K", urls],
                   capture_output=True, text=True, timeout=120)
codes = p.stdout.split()
check(len(codes) == 300 and set(codes) == {"200"}, "curl --parallel: 300 answers, all 200")
check(outer.stop() == 0 and px.stop() == 0, "both proxies stop cleanly")
done()
