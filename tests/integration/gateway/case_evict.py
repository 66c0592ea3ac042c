#!/usr/bin/env python3
# ctest-label: asan
"""A retry whose upstream was evicted while it waited (commit 9d034e6). In forward mode the gateway keeps at
most 256 upstreams (net/net_upstream.h: NET_UP_POOL_MAX), evicting the least recently used one with nothing
announced or in flight. A request answered 429 with Retry-After: 3 waits between attempts with nothing in
flight, so when 300 other hosts are asked for during its wait its upstream is evicted and freed; the retry
must look its upstream up again (the old code kept the pointer of its last attempt: in the ASan+UBSan build,
where this case also runs, a heap-use-after-free that kills the gateway). Every host is a name of its own
(victim.test, h0.test ... h299.test) sent to the tests' scripted API by one --connect-to rule, so no DNS and
no other address is needed. Checks: the retry is answered 200, it came after the 300 others (else the case
proved nothing: the machine was too slow to fill the pool during the wait), each of those got its 200, and
the gateway exits 0 at SIGTERM with no sanitizer report."""
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proxy"))
import requests  # noqa: E402

import pxtest  # noqa: E402
from pxtest import POLITE, check, done, path  # noqa: E402

HOSTS = 300  # more than NET_UP_POOL_MAX (256)
WAIT_S = 3   # the victim's Retry-After: the time the 300 others have

rec = path("up.rec")
up = pxtest.track(subprocess.Popen(
    [sys.executable, os.path.join(pxtest.HERE, "..", "upstream.py"), path("up.port"), rec],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
up_port = pxtest._wait_file(path("up.port"), up)
check(up_port is not None, "the scripted API started")

ready, log = path("gw.ready"), path("gw.log")
errf = open(log, "w")
gw = pxtest.track(subprocess.Popen(
    [POLITE, "gateway", "--listen", "127.0.0.1:0", "--ready-file", ready, "--rate", "none",
     "--connect-to", "::127.0.0.1:%s" % up_port], stdout=subprocess.DEVNULL, stderr=errf))
addr = pxtest._wait_file(ready, gw)
if addr is None:
    errf.close()
    sys.stdout.write(open(log).read())
    raise SystemExit("gateway did not start")
PROXIES = {"http": "http://" + addr}


def records(p):
    """The upstream's record lines ("in") whose path is p, or every one when p is None."""
    out = []
    with open(rec) as f:
        for line in f:
            r = json.loads(line)
            if r["ev"] == "in" and (p is None or r["path"] == p):
                out.append(r)
    return out


victim = {}


def ask_victim():
    try:
        r = requests.get("http://victim.test/ra/%d/v" % WAIT_S, proxies=PROXIES, timeout=30)
        victim["status"], victim["body"] = r.status_code, r.text
    except requests.RequestException as e:
        victim["status"], victim["body"] = 0, str(e)


t = threading.Thread(target=ask_victim)
t.start()
end = time.monotonic() + 10
while not records("/ra/%d/v" % WAIT_S) and time.monotonic() < end:
    time.sleep(0.02)
check(len(records("/ra/%d/v" % WAIT_S)) == 1, "the victim's first attempt was answered 429 and waits")

local = threading.local()


def ask(i):
    s = getattr(local, "s", None)
    if s is None:
        s = local.s = requests.Session()
    try:
        r = s.get("http://h%d.test/ok/%d" % (i, i), proxies=PROXIES, timeout=30)
        return r.status_code
    except requests.RequestException:
        return 0


t0 = time.monotonic()
with ThreadPoolExecutor(8) as pool:
    codes = list(pool.map(ask, range(HOSTS)))
took = time.monotonic() - t0
check(codes.count(200) == HOSTS, "%d hosts during the wait: %d answered 200 (%.2f s)"
      % (HOSTS, codes.count(200), took))
t.join(40)
check(victim.get("status") == 200 and victim.get("body", "").startswith("ok"),
      "the retry after the eviction is answered 200 (got %s %.80r)" % (victim.get("status"), victim.get("body")))
tries = records("/ra/%d/v" % WAIT_S)
others = [r for r in records(None) if r["path"].startswith("/ok/")]
hosts = {r["headers"].get("host") for r in others}
check(len(hosts) == HOSTS, "the upstream saw %d distinct hosts (Host: h0.test ... h%d.test)"
      % (len(hosts), HOSTS - 1))
check(len(tries) == 2 and others and tries[1]["t"] > max(r["t"] for r in others),
      "the retry came after the %d others, so the pool was full during its wait (%d attempts)"
      % (HOSTS, len(tries)))

gw.terminate()
try:
    rc = gw.wait(timeout=30)
except subprocess.TimeoutExpired:
    gw.kill()
    rc = gw.wait()
errf.close()
text = open(log).read()
check(rc == 0, "the gateway exits 0 at SIGTERM (got %s)" % rc)
check("Sanitizer" not in text and "runtime error" not in text,
      "no sanitizer report%s" % ("" if "Sanitizer" not in text else ": " + text[text.find("ERROR"):][:300]))
done()
