#!/usr/bin/env python3
"""Rate-limit simulation (no 429 under the rate, 429 over it with a Retry-After that is
never too short, RateLimit headers), --failure-rate determinism with --seed, and --quota.
The rate limits run on the proxy's controlled clock (--test-clock): waiting is advancing it,
so no check depends on this machine's timing."""
import requests

from pxtest import Proxy, check, done

# --- 1. under the rate: 10/s, one request every >= 150 ms: never a 429 ---
px = Proxy("--rate-limit", "10/s", name="under", clock=True)
s = requests.Session()
codes = []
for i in range(8):
    codes.append(s.get(px.base + "/u%d" % i, timeout=10).status_code)
    px.advance(150)
check(codes == [200] * 8, "under the rate: all 200 (%s)" % codes)
r = s.get(px.base + "/headers", timeout=10)
check(r.headers.get("RateLimit-Policy") == '"polite";q=10;w=1',
      "RateLimit-Policy names q=10 and w=1 (%s)" % r.headers.get("RateLimit-Policy"))
check(r.headers.get("RateLimit", "").startswith('"polite";r='), "RateLimit header present")

# --- 2. over the rate: a burst gets 429 + Retry-After; waiting that long works ---
codes, ras = [], []
px.advance(1000)  # a full bucket again
for i in range(6):
    r = s.get(px.base + "/burst%d" % i, timeout=10)
    codes.append(r.status_code)
    if r.status_code == 429:
        ras.append(r.headers.get("Retry-After"))
check(codes == [200] + [429] * 5, "over the rate: a burst of 6 on a clock that stands still: 1 passes (%s)" % codes)
check(ras and all(x == "1" for x in ras), "Retry-After is whole seconds, rounded up to 1 (%s)" % ras)
r429 = s.get(px.base + "/late", timeout=10)
check(r429.status_code == 429 and "rate_limited" in r429.text, "429 body says rate_limited")
px.advance(int(r429.headers["Retry-After"]) * 1000)
r = s.get(px.base + "/late", timeout=10)
check(r.status_code == 200, "retry after exactly Retry-After is admitted (%d)" % r.status_code)
rep = px.report()
check(rep["early_retries"] == 0, "a compliant retry is never flagged early")
check(rep["rate_limited"] == codes.count(429) + 1, "report counts rate_limited (%d)" % rep["rate_limited"])
px.stop()

# --- 3. a slow rate: 30/min means one start every 2 s; Retry-After is 2 (rounded up) ---
px = Proxy("--rate-limit", "30/min", name="slow", clock=True)
s = requests.Session()
r1 = s.get(px.base + "/a", timeout=10)
r2 = s.get(px.base + "/b", timeout=10)
check(r1.status_code == 200 and r2.status_code == 429, "30/min: second immediate request is 429")
check(r2.headers.get("Retry-After") == "2", "30/min: Retry-After 2 (got %s)" % r2.headers.get("Retry-After"))
check(r2.headers.get("RateLimit-Policy") == '"polite";q=30;w=60', "30/min: policy q=30;w=60")
px.advance(1999)
check(s.get(px.base + "/b", timeout=10).status_code == 429, "30/min: 1 ms before the Retry-After: still 429")
px.advance(1)
r3 = s.get(px.base + "/b", timeout=10)
check(r3.status_code == 200, "30/min: admitted after waiting the Retry-After (%d)" % r3.status_code)
px.stop()

# --- 4. --burst 3 admits three at once ---
px = Proxy("--rate-limit", "1/s", "--burst", "3", name="burst")
codes = [requests.get(px.base + "/x%d" % i, timeout=10).status_code for i in range(4)]
check(codes == [200, 200, 200, 429], "--burst 3: three admitted, the fourth 429 (%s)" % codes)
px.stop()

# --- 4b. --rate-limit-scope url: one limiter per method + URL ---
px = Proxy("--rate-limit", "1/s", "--rate-limit-scope", "url", name="rscope")
codes = [requests.get(px.base + p, timeout=10).status_code for p in ("/a", "/b", "/a")]
check(codes == [200, 200, 429], "--rate-limit-scope url: /a and /b each admitted, /a again limited (%s)" % codes)
px.stop()

# --- 5. --quota: N requests, then 429 insufficient_quota without Retry-After ---
px = Proxy("--quota", "3", name="quota")
codes = []
for i in range(5):
    r = requests.get(px.base + "/q", timeout=10)
    codes.append(r.status_code)
check(codes == [200, 200, 200, 429, 429], "--quota 3: 3 pass, then 429 (%s)" % codes)
check("insufficient_quota" in r.text, "quota 429 body has insufficient_quota")
check("Retry-After" not in r.headers, "quota 429 has no Retry-After")
rep = px.report()
check(rep["quota_exceeded"] == 2 and rep["early_retries"] == 0, "report counts quota_exceeded")
px.stop()

# --- 6. --failure-rate with --seed is deterministic; 0 and 100 are exact ---
def pattern(*args):
    p = Proxy(*args, name="seed")
    out = [requests.get(p.base + "/f%d" % i, timeout=10).status_code for i in range(40)]
    p.stop()
    return out


a = pattern("--failure-rate", "50", "--seed", "42")
b = pattern("--failure-rate", "50", "--seed", "42")
c = pattern("--failure-rate", "50", "--seed", "43")
check(a == b, "same --seed, same failures")
check(a != c, "different --seed, different failures")
check(5 <= a.count(429) <= 35, "about half fail at 50%% (%d/40)" % a.count(429))
check(pattern("--failure-rate", "0").count(429) == 0, "--failure-rate 0: none fail")
check(pattern("--failure-rate", "100").count(429) == 40, "--failure-rate 100: all fail")

# --- 7. --watch: only matching URLs are acted on; '!' excludes; first match wins ---
px = Proxy("--failure-rate", "100", "--watch", "!*/api/health", "--watch", "*/api/*", name="watch")
check(requests.get(px.base + "/api/items", timeout=10).status_code == 429, "--watch */api/*: failed")
check(requests.get(px.base + "/api/health", timeout=10).status_code == 200, "--watch !*/api/health: excluded")
check(requests.get(px.base + "/other", timeout=10).status_code == 200, "unwatched URL passes")
px.stop()

done()
