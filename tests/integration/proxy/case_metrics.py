#!/usr/bin/env python3
"""GET /__polite/metrics: Prometheus text that promtool accepts, with the counts the
report has (requests, injected failures by kind, throttled by rule, early retries,
in flight) and the upstream latency histogram."""
import re
import shutil
import subprocess

import requests

from pxtest import Proxy, check, done, upstream

promtool = shutil.which("promtool")
check(promtool is not None, "promtool is installed (Debian package prometheus)")

up = upstream()
px = Proxy("--upstream", up, "--failure-rate", "30", "--seed", "5", "--retry-after", "1",
           "--rate-limit", "1000/s", "--burst", "100", name="metrics")
s = requests.Session()
for i in range(30):
    s.get(px.base + "/m/%d" % i, timeout=10)
s.get(px.base + "/m/0", timeout=10)  # early: /m/0 was told to wait
r = s.get(px.base + "/__polite/metrics", timeout=10)
text = r.text
check(r.status_code == 200 and r.headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
      "metrics served as Prometheus text 0.0.4")
if promtool:
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    check(p.returncode == 0, "promtool check metrics accepts it (%s%s)" % (p.stdout, p.stderr))


def value(name, labels=""):
    m = re.search(r"^%s%s (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


rep = px.report()
check(value("polite_proxy_requests_total", '{outcome="passed"}') == rep["passed"],
      "requests passed match the report (%s, %d)" % (value("polite_proxy_requests_total", '{outcome="passed"}'), rep["passed"]))
injected = sum(float(v) for v in re.findall(r"^polite_proxy_injected_total\{[^}]*\} (\S+)$", text, re.M))
check(injected == rep["injected"] and injected > 0, "injected by kind add up to the report (%s)" % injected)
check(value("polite_proxy_early_retries_total") == rep["early_retries"], "early retries (%s)" % rep["early_retries"])
check(value("polite_proxy_throttled_total", '{rule="failure_rate"}') == rep["failures"],
      "throttled by rule: failure_rate")
check(value("polite_proxy_connects_total") == rep["connects"] == 0
      and value("polite_proxy_shared_identities_total") == rep["shared_identities"]
      and value("polite_proxy_urls_evicted_total") == rep["url_table"]["evicted"] == 0,
      "the tracking's own counters match the report (connects, shared identities, URLs evicted)")
check(value("polite_proxy_in_flight") == 0, "in flight: none once answered (%s)" % value("polite_proxy_in_flight"))
count = value("polite_proxy_upstream_latency_seconds_count")
check(count == rep["passed"] and count > 5 and value("polite_proxy_upstream_latency_seconds_bucket", '{le="+Inf"}') == count,
      "one upstream latency per forwarded request (%s)" % count)
check(value("polite_proxy_upstream_latency_seconds_sum") > 0, "latency sum > 0")
px.stop()
done()
