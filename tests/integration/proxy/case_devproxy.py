#!/usr/bin/env python3
"""Dev Proxy's own configuration files, as shipped (tests/fixtures/devproxy/):
the proxy is used as a forward proxy (absolute-form requests, as Dev Proxy runs).
Issue 20: the apim-rate-limiting sample through the forward proxy over HTTPS (5
calls, 5 requests; the second 429 is APIM's own, RetryAfterPlugin not being
enabled; the HTML shows Retry-After 90 s), per-plugin urlsToWatch, unknown keys
named, and a watch list that cannot match in the mode refused."""
import json
import os
import re
import shutil
import subprocess
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

# --- 7. the apim-rate-limiting sample through the forward proxy, over HTTPS ---
# rateLimit 3 per 90 s, a custom 429 (APIM's body, Retry-After @dynamic), a mock
# for every other call; no RetryAfterPlugin, so no early-retry judge.
os.environ["POLITE_CA_DIR"] = path("polite-ca")
apim = os.path.join(FIX, "apim", "devproxyrc.json")
html = path("apim.html")
px = Proxy("--devproxy-config", apim, "--log", path("apim.log"), "--report-html", html, name="apim")
check(warnings(px) == [], "the sample loads without a warning (%s)" % warnings(px))
calls = []
for i in range(5):
    p = subprocess.run(["curl", "-s", "-x", px.base, "--cacert", path("polite-ca/ca.pem"), "-m", "10",
                        "-w", "\n%{http_code}", "https://myapi.azure-api.net/orders"],
                       capture_output=True, text=True)
    body, _, code = p.stdout.rpartition("\n")
    calls.append((code, body))
check([c for c, _ in calls] == ["200", "200", "200", "429", "429"],
      "curl x5: three pass, then 429 (%s)" % [c for c, _ in calls])
apim_body = {"statusCode": 429, "message": "Rate limit is exceeded. Try again in a few seconds."}
check(all(json.loads(b or "{}") == apim_body for _, b in calls[3:]),
      "both 429s carry APIM's own body, the second too (%s)" % [b[:60] for _, b in calls[3:]])
rep = px.report()
check(rep["requests"] == 5 and rep["connects"] == 5 and rep["passed"] == 3 and rep["rate_limited"] == 2,
      "the JSON report counts 5 requests for 5 calls, the CONNECTs apart (%d requests, %d connects)"
      % (rep["requests"], rep["connects"]))
check(rep["judge"] is False and rep["early_retries"] == 0, "no RetryAfterPlugin: no early-retry judge")
px.stop()
page = open(html).read()
check("up to 90 s" in page and "<td>90 s</td>" in page and "90000 s" not in page,
      "the HTML shows Retry-After 90 s (%s)" % re.findall(r"up to [^,]*", page))
vals = dict(re.findall(r'data-key="([^"]+)" data-value="(\d+)"', page))
check(vals.get("requests") == "5" and vals.get("connects") == "5"
      and sum(int(v) for k, v in vals.items() if k.startswith("rule.")) == 5,
      "the page's summary and per-rule table both count 5 requests (%s)"
      % {k: v for k, v in vals.items() if k in ("requests", "connects") or k.startswith("rule.")})
check("early-retry judge was off" in page, "the page says the judge was off")
# Beside --upstream the sample's https:// URLs can never reach the proxy: refused.
rc, out, err = run("proxy", "--devproxy-config", apim, "--upstream", "https://localhost:19443",
                   "--listen", "127.0.0.1:0")
check(rc == 2 and "apim/devproxyrc.json: urlsToWatch" in err and "reverse mode" in err,
      "--upstream beside the sample: exit 2, the watch list and the mode named (%r)" % err.strip())

# --- 8. per-plugin urlsToWatch, and unknown keys named ---
rc_file = path("per-plugin.json")
with open(rc_file, "w") as f:
    json.dump({
        "urlsToWatch": ["http://api.contoso.test/*"],
        "plugins": [
            # Without RetryAfterPlugin: with it, the limit's 429 would make the
            # whole host wait for this client, as in Dev Proxy.
            {"name": "RateLimitingPlugin", "enabled": True, "configSection": "rl",
             "urlsToWatch": ["http://api.contoso.test/limited/*"]}],
        "rl": {"rateLimit": 2, "costPerRequest": 1, "resetTimeWindowSeconds": 60},
        "mysteryPlugin": {"depth": 3}}, f)
px = Proxy("--devproxy-config", rc_file, "--upstream", UP, name="perplugin")
w = warnings(px)
check(len(w) == 1 and "mysteryPlugin" in w[0] and "urlsToWatch" not in w[0],
      "an unknown object key is named, per-plugin urlsToWatch no longer is (%s)" % w)
s = session(px)
limited = [s.get("http://api.contoso.test/limited/%d" % i, timeout=10).status_code for i in range(3)]
free = [s.get("http://api.contoso.test/free/%d" % i, timeout=10) for i in range(4)]
check(limited == [200, 200, 429], "the rate limit acts on its plugin's URLs (%s)" % limited)
check([r.status_code for r in free] == [200] * 4 and all("RateLimit-Limit" not in r.headers for r in free),
      "and not on the other watched URLs (%s)" % [r.status_code for r in free])
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
