#!/usr/bin/env python3
"""Dev Proxy's own configuration files, as shipped (tests/fixtures/devproxy/):
the proxy is used as a forward proxy (absolute-form requests, as Dev Proxy runs)."""
import json
import os
import shutil
import time

import requests

from pxtest import Proxy, check, done, path, run, upstream

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "devproxy")


class session:
    """Requests through the proxy, a new connection each (evhttp, today's
    server side, closes kept-alive forward-proxy connections unpredictably)."""

    def __init__(self, px):
        self.proxies = {"http": px.base}

    def get(self, url, **kw):
        return requests.get(url, proxies=self.proxies, **kw)

    def post(self, url, **kw):
        return requests.post(url, proxies=self.proxies, **kw)


# A devproxyrc implies forward mode: what no mock or failure answers goes to
# its real destination. The fixtures' hosts (api.contoso.test, ...) exist
# nowhere, so every proxy here sends that traffic to a local upstream
# instead (the files themselves run unchanged).
UP = upstream()


def warnings(px):
    return [l for l in px.logtext().splitlines() if "warning" in l]


# --- 1. the JSON file as shipped: watch list, rate limiting, mocks, warning ---
px = Proxy("--devproxy-config", os.path.join(FIX, "devproxyrc.json"), "--upstream", UP, name="rc")
w = warnings(px)
check(len(w) == 1 and w[0].endswith("not simulated: ExecutionSummaryPlugin"),
      "one warning line naming what is not simulated (%s)" % w)
s = session(px)
r = s.get("http://api.contoso.test/users", timeout=10)
check(r.status_code == 200 and "Adele Vance" in r.text, "a mock answers with its @file body (%d)" % r.status_code)
check(r.headers.get("Content-Type", "").startswith("application/json"), "with the mock's headers")
for i in range(20):
    s.get("http://api.contoso.test/health", timeout=10)
r = s.get("http://api.contoso.test/health", timeout=10)
check(r.status_code == 200 and "RateLimit-Remaining" not in r.headers,
      "an excluded URL ('!') is not limited (%d)" % r.status_code)
codes, rem = [], []
for i in range(10):
    r = s.get("http://api.contoso.test/users", timeout=10)
    codes.append(r.status_code)
    rem.append(r.headers.get("RateLimit-Remaining"))
check(codes[:9] == [200] * 9 and codes[9] == 429,
      "rateLimit 20, costPerRequest 2: ten requests a window, then 429 (%s)" % codes)
# The first /users above spent 2 units: headers from 4 left (80 % used).
check(rem[5] is None and rem[6] == "4" and rem[7] == "2",
      "RateLimit-Remaining from warningThresholdPercent 80 on, in resources (%s)" % rem)
check(1 <= int(r.headers.get("Retry-After", "0")) <= 60, "the 429 has Retry-After to the reset")
r = s.post("http://api.contoso.test/reports", timeout=10)
check(r.status_code == 429, "the window is for every watched URL (%d)" % r.status_code)
px.stop()

# --- 2. the errors file, the host as the throttle key ---
px = Proxy("--devproxy-config", os.path.join(FIX, "devproxyrc.json"), "--upstream", UP, "--seed", "2", name="errs")
s = session(px)
got = None
for i in range(8):
    r = s.get("http://api.contoso.test/orders/%d" % i, timeout=10)
    if r.status_code in (429, 503) and "early_retry" not in r.text:
        got = r
        break
check(got is not None and got.headers.get("Retry-After") in ("5", "3"),
      "an error from devproxy-errors.json, @dynamic = retryAfterInSeconds 5 or @dynamic=3 (%s)"
      % (got and got.headers.get("Retry-After")))
r = s.get("http://api.contoso.test/users", timeout=10)
check(r.status_code == 429 and "early_retry" in r.text,
      "another URL of the same host at once: early, the throttle key is the host")
r2 = requests.get("http://api.contoso.test/users", proxies={"http": px.base},
                  headers={"Authorization": "Bearer other"}, timeout=10)
check(r2.status_code == 429 and "throttled" in r2.text,
      "another client meanwhile: refused during the throttle, not flagged")
rep = px.report()
check(rep["early_retries"] == 1 and rep["during_throttle"] == 1, "the report tells them apart")
px.stop()

# --- 3. the same in YAML ---
px = Proxy("--devproxy-config", os.path.join(FIX, "devproxyrc.yaml"), "--upstream", UP, name="yaml")
w = warnings(px)
check(len(w) == 1 and w[0].endswith("not simulated: ExecutionSummaryPlugin"), "YAML: the same warning (%s)" % w)
r = session(px).get("http://api.contoso.test/users", timeout=10)
check(r.status_code == 200 and "Adele Vance" in r.text, "YAML: the mock answers")
px.stop()

# --- 4. whenLimitExceeded Custom, own header names, UtcEpochSeconds ---
px = Proxy("--devproxy-config", os.path.join(FIX, "devproxyrc-custom.json"), "--upstream", UP, name="custom")
s = session(px)
rs = [s.get("http://api.github.test/repos", timeout=10) for _ in range(4)]
check([r.status_code for r in rs] == [200, 200, 200, 403], "rateLimit 3, then the custom 403 (%s)"
      % [r.status_code for r in rs])
last = rs[3]
check("secondary-rate-limits" in last.text and 25 <= int(last.headers.get("Retry-After", "0")) <= 30,
      "the custom body, Retry-After @dynamic = seconds to the reset (%s)" % last.headers.get("Retry-After"))
reset = int(rs[2].headers.get("X-RateLimit-Reset", "0"))
check(time.time() + 25 <= reset <= time.time() + 31 and rs[2].headers.get("X-RateLimit-Remaining") == "0",
      "headerReset as UTC epoch seconds, under the configured names (%s)" % dict(rs[2].headers))
check(not warnings(px), "nothing unsimulated: no warning")
px.stop()

# --- 5. errors and mocks files reloaded when they change ---
d = path("reload")
shutil.copytree(FIX, d)
px = Proxy("--devproxy-config", os.path.join(d, "devproxyrc.json"), "--upstream", UP, name="reload")
s = session(px)
check("Adele" in s.get("http://api.contoso.test/users", timeout=10).text, "before the change")
mocks = json.load(open(os.path.join(d, "mocks.json")))
mocks["mocks"][0]["response"]["body"] = {"changed": True}
with open(os.path.join(d, "mocks.json"), "w") as f:
    json.dump(mocks, f)
later = os.stat(os.path.join(d, "mocks.json")).st_mtime + 2
os.utime(os.path.join(d, "mocks.json"), (later, later))
time.sleep(1.6)
r = s.get("http://api.contoso.test/users", timeout=10)
check(r.json() == {"changed": True}, "mocks.json reloaded within a second or two (%s)" % r.text[:60])
with open(os.path.join(d, "mocks.json"), "w") as f:
    f.write("{ not json")
os.utime(os.path.join(d, "mocks.json"), (later + 2, later + 2))
time.sleep(1.6)
r = s.get("http://api.contoso.test/users", timeout=10)
check(r.json() == {"changed": True} and "does not load, keeping the previous one" in px.logtext(),
      "a broken edit keeps the previous mocks and says so")
px.stop()

# --- 6. a bad value names the file and the field; exit 2 ---
bad = path("bad-rc.json")
with open(bad, "w") as f:
    json.dump({"plugins": [{"name": "RateLimitingPlugin", "enabled": True, "configSection": "rateLimiting"}],
               "rateLimiting": {"rateLimit": "lots"}}, f)
rc, out, err = run("proxy", "--devproxy-config", bad, "--listen", "127.0.0.1:0")
check(rc == 2 and "bad-rc.json" in err and "rateLimiting.rateLimit" in err,
      "bad value: exit 2, file and field named (%r)" % err.strip())
done()
