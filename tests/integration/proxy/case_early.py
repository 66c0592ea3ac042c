#!/usr/bin/env python3
"""Early-retry tracking: a client 400 ms early is caught, a compliant one never is;
@dynamic values from an errors file are tracked; --penalty restarts the wait;
the report is written on SIGTERM (exit 0) with the early list and max_attempts.
The waits pass on the proxy's controlled clock (--test-clock, Proxy.advance):
no sleep, and the early times are exact."""
import json
import os
import urllib.error
import urllib.request

import requests

from pxtest import Proxy, check, done, path, write


def get(base, p, **kw):
    return requests.get(base + p, timeout=10, **kw)


# --- 1. injected 429s (Retry-After 1): an early client and compliant clients ---
report = path("early.json")
report_md = path("early.md")
px = Proxy("--failure-rate", "100", "--retry-after", "1", "--seed", "7",
           "--report", report, "--report-md", report_md, name="early", clock=True)

r = get(px.base, "/early", headers={"Authorization": "Bearer sk-SECRET-123"})
check(r.status_code == 429 and r.headers.get("Retry-After") == "1",
      "injected 429 carries Retry-After: 1 (got %s %s)" % (r.status_code, r.headers.get("Retry-After")))
check("too_many_requests" in r.text, "injected 429 has a JSON error body")
px.advance(600)  # 400 ms before the Retry-After has passed
r = get(px.base, "/early", headers={"Authorization": "Bearer sk-SECRET-123"})
check(r.status_code == 429, "early retry answered 429")
check(r.headers.get("Retry-After") == "1", "early retry gets the remaining wait rounded up (1 s)")

# Compliant clients: requests and urllib, each waiting the full Retry-After.
for rnd in range(3):
    r = get(px.base, "/compliant")
    ra = int(r.headers["Retry-After"])
    px.advance(ra * 1000)
for rnd in range(2):
    try:
        urllib.request.urlopen(px.base + "/compliant-urllib", timeout=10)
    except urllib.error.HTTPError as e:
        ra = int(e.headers["Retry-After"])
        check(e.code == 429, "urllib client sees the injected 429")
    px.advance(ra * 1000)
try:
    urllib.request.urlopen(px.base + "/compliant-urllib", timeout=10)
except urllib.error.HTTPError:
    pass

rep = px.report()
check(rep["early_retries"] == 1, "exactly one early retry (got %d)" % rep["early_retries"])
e = rep["early"][0] if rep["early"] else {}
check(e.get("url", "").endswith("/early"), "the early retry names the URL")
check(e.get("method") == "GET", "the early retry names the method")
check(e.get("early_ms", -1) == 400,
      "early_ms is 400 ms (ms precision, not whole seconds): %s" % e.get("early_ms"))
check(e.get("client", "").startswith("127.0.0.1"), "the early retry names the client address")
check("sk-SECRET" not in json.dumps(rep), "the Authorization value never reaches the report")
check("auth:" in e.get("client", ""), "clients are told apart by a hash of Authorization")
check(rep["requests"] == 8 and rep["injected"] == 8, "8 requests, all injected failures (%d, %d)"
      % (rep["requests"], rep["injected"]))
urls = {u["url"].rsplit("/", 1)[1]: u for u in rep["urls"]}
check(urls["compliant"]["early_retries"] == 0 and urls["compliant"]["max_attempts"] == 3,
      "compliant client: no early retry, 3 attempts in one retry chain")
check(rep["max_attempts"] == 3, "max_attempts over all URLs is 3 (got %d)" % rep["max_attempts"])

rc = px.stop()
check(rc == 0, "SIGTERM: exit status 0 (got %d)" % rc)
with open(report) as f:
    saved = json.load(f)
for k in ("requests", "passed", "injected", "early_retries", "early", "urls", "max_attempts"):
    check(k in saved, "report file has '%s'" % k)
check(saved["early_retries"] == 1 and saved["early"][0]["early_ms"] == e.get("early_ms"),
      "report file matches the live report")
md = open(report_md).read()
check("## Early retries" in md and "/early" in md, "markdown report lists the early retry")
log = px.logtext()
check("EARLY" in log and "sk-SECRET" not in log, "log line flags EARLY and has no secret")

# --- 2. errors file: @dynamic, @dynamic=N, method and bodyFragment matching ---
errors = write("errors.json", json.dumps({
    "errors": [
        {"request": {"url": "*/dyn3"},
         "responses": [{"statusCode": 429, "headers": [{"name": "Retry-After", "value": "@dynamic=3"}],
                        "body": {"error": {"code": "throttled"}}}]},
        {"request": {"url": "*/dyn"},
         "responses": [{"statusCode": 503, "headers": [{"name": "Retry-After", "value": "@dynamic"}],
                        "body": "busy"}]},
        {"request": {"url": "*/post-only", "method": "POST", "bodyFragment": "needle"},
         "responses": [{"statusCode": 500, "body": "matched"}]},
    ]}))
px = Proxy("--errors-file", errors, "--failure-rate", "100", "--retry-after", "4", name="errors",
           clock=True)
r = get(px.base, "/dyn3")
check(r.status_code == 429 and r.headers.get("Retry-After") == "3",
      "@dynamic=3 sends Retry-After: 3 (got %s)" % r.headers.get("Retry-After"))
check(r.json() == {"error": {"code": "throttled"}}, "a JSON body in the errors file is sent as JSON")
check(r.headers.get("Content-Type", "").startswith("application/json"), "JSON body gets a JSON content type")
px.advance(1000)
r = get(px.base, "/dyn3")
check(r.status_code == 429 and r.headers.get("Retry-After") == "2",
      "early retry 1 s into @dynamic=3 is told 2 s remain (got %s)" % r.headers.get("Retry-After"))
r = get(px.base, "/dyn")
check(r.status_code == 503 and r.headers.get("Retry-After") == "4",
      "@dynamic uses --retry-after (4) (got %s %s)" % (r.status_code, r.headers.get("Retry-After")))
r = requests.post(px.base + "/post-only", data="hay needle hay", timeout=10)
check(r.status_code == 500 and r.text == "matched", "errors file matches method + bodyFragment")
r = requests.post(px.base + "/post-only", data="only hay", timeout=10)
check(r.status_code == 200, "no matching error: the request passes (got %d)" % r.status_code)
r = get(px.base, "/unmatched")
check(r.status_code == 200, "URL not in the errors file passes")
rep = px.report()
early = [x for x in rep["early"] if x["url"].endswith("/dyn3")]
check(len(early) == 1 and early[0]["early_ms"] == 2000,
      "@dynamic=3 tracked: early by 2000 ms (%s)" % [x["early_ms"] for x in early])
px.stop()

# --- 3. --penalty: an early retry restarts the whole wait ---
px = Proxy("--failure-rate", "100", "--retry-after", "3", "--penalty", name="penalty", clock=True)
get(px.base, "/p")
px.advance(1000)
r = get(px.base, "/p")
check(r.headers.get("Retry-After") == "3",
      "--penalty: early retry is told the full 3 s again (got %s)" % r.headers.get("Retry-After"))
rep = px.report()
check(rep["early_retries"] == 1, "--penalty: the early retry is recorded")
px.stop()

# --- 4. --retry-after-scope client: the wait binds the client (by Authorization), any URL ---
px = Proxy("--failure-rate", "100", "--retry-after", "5", "--retry-after-scope", "client", name="scope")
get(px.base, "/one", headers={"Authorization": "Bearer alice"})
r_alice = get(px.base, "/two", headers={"Authorization": "Bearer alice"})
r_bob = get(px.base, "/two", headers={"Authorization": "Bearer bob"})
check("early_retry" in r_alice.text, "client scope: same Authorization, other URL: early")
check("early_retry" not in r_bob.text, "client scope: another Authorization is not early")
rep = px.report()
check(rep["early_retries"] == 1 and rep["early"][0]["key"].startswith("auth:")
      and "alice" not in json.dumps(rep), "client scope key is a hash, never the header")
px.stop()

# --- 5. --retry-after-scope host: the wait binds the Host header ---
px = Proxy("--failure-rate", "100", "--retry-after", "5", "--retry-after-scope", "host", name="host")
get(px.base, "/a", headers={"Host": "api.one.test"})
r1 = get(px.base, "/b", headers={"Host": "api.one.test"})
r2 = get(px.base, "/b", headers={"Host": "api.two.test"})
check("early_retry" in r1.text and "early_retry" not in r2.text, "host scope: per Host header")
px.stop()

done()
