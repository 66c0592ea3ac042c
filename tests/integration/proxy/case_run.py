#!/usr/bin/env python3
"""`polite run` against `polite proxy` (the demo's pairing): a polite client under the
rate limit with random 429s is never flagged early; a naive client that retries at once
is; a spent --quota stops `polite run` with exit 3 and outcome quota_exhausted.
Skipped (0 checks) when this build has no `polite run`."""
import json
import sys
import time

import requests

from pxtest import Proxy, check, done, path, run, write

rc, out, err = run("run", "--help")
if rc != 0 or "--rate" not in out:
    print("polite run is not part of this build: skipped")
    done()

# --- 1. polite run under the limit, with injected 429s: no early retry ---
px = Proxy("--rate-limit", "10/s", "--failure-rate", "10", "--seed", "3", "--retry-after", "1", name="run")
urls = write("urls.txt", "".join("%s/item/%d\n" % (px.base, i) for i in range(16)))
rc, out, err = run("run", "--rate", "8/s", "--concurrency", "4", "--no-progress", urls)
lines = [json.loads(l) for l in out.splitlines() if l.strip()]
check(rc == 0 and len(lines) == 16 and all(l["outcome"] == "ok" for l in lines),
      "polite run: 16 requests, all ok (exit %d)" % rc)
rep = px.report()
check(rep["failures"] >= 1, "some 429s were injected (%d)" % rep["failures"])
check(rep["early_retries"] == 0, "polite run is never early (%d early)" % rep["early_retries"])
check(rep["max_attempts"] >= 2, "the report shows the retries (max_attempts %d)" % rep["max_attempts"])
px.stop()

# --- 2. a naive client retrying at once is caught ---
px = Proxy("--failure-rate", "100", "--retry-after", "1", name="naive")
for attempt in range(3):
    requests.get(px.base + "/naive", timeout=10)
rep = px.report()
check(rep["early_retries"] == 2, "naive immediate retries: 2 early (%d)" % rep["early_retries"])
check(rep["max_attempts"] == 3, "naive client: 3 attempts in one chain")
px.stop()

# --- 3. a spent quota stops polite run: exit 3, outcome quota_exhausted ---
px = Proxy("--quota", "2", name="quota")
urls = write("urls-q.txt", "".join("%s/q/%d\n" % (px.base, i) for i in range(5)))
rc, out, err = run("run", "--concurrency", "1", "--no-progress", urls)
outcomes = [json.loads(l)["outcome"] for l in out.splitlines() if l.strip()]
check(rc == 3, "polite run exits 3 when the quota is spent (exit %d)" % rc)
check("quota_exhausted" in outcomes and outcomes.count("ok") == 2,
      "two ok, then quota_exhausted (%s)" % outcomes)
check(px.report()["early_retries"] == 0, "no early retry after insufficient_quota")
px.stop()

done()
