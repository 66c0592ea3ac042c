#!/usr/bin/env python3
"""Checks of a polite report page, for the integration tests.

  page_check.py summary PAGE.html SUMMARY.json LOG
                                                 numbers on the page = the
                                                 run's --summary-json
  page_check.py same PAGE_A.html PAGE_B.html     the same counts on both
  page_check.py scale PAGE_A.html PAGE_B.html K  B's counts are K x A's
  page_check.py static PAGE.html [CHARTS]        self-contained, accessible,
                                                 printable (at least CHARTS
                                                 charts, default 5)
  page_check.py value PAGE.html KEY              prints one value

Exit 0 when the check holds; otherwise each difference is printed."""
import json
import re
import sys
from html.parser import HTMLParser

# Counts that must be equal exactly.
EXACT = ["requests", "first_attempts", "retries", "network_attempts", "ok",
         "failed", "status_429", "status_503", "retry_wait_ms",
         "in_flight_peak", "units"]


def page_values(path):
    text = open(path, encoding="utf-8").read()
    vals = {}
    for k, v in re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', text):
        vals[k] = float(v)
    return vals


def close(a, b, rel, absolute):
    return abs(a - b) <= max(absolute, rel * max(abs(a), abs(b)))


def stop_pauses(log):
    """Pauses begun by a request that gave up, and the run's --spread: the
    run adds a random spread to those that the log does not carry."""
    n, spread = 0, 0
    for line in open(log, encoding="utf-8"):
        o = json.loads(line)
        if o.get("event") == "run":
            spread = o.get("spread_ms") or 0
        elif ("event" not in o and o.get("account_pause")
              and o.get("action") != "retry"
              and (o.get("server_wait_ms") or 0) > 0):
            n += 1
    return n, spread


def check_summary(page, summary, log):
    p = page_values(page)
    s = json.load(open(summary))
    bad = []

    def want(key, expect, ok):
        got = p.get(key)
        if got is None or not ok(got, expect):
            bad.append(f"{key}: page {got}, summary {expect}")

    for k in EXACT:
        want(k, s[k], lambda a, b: a == b)
    for k, n in s["failures"].items():
        want("failures." + k, n, lambda a, b: a == b) if n else None
        if not n and ("failures." + k) in p:
            bad.append(f"failures.{k}: on the page but 0 in the summary")
    for t in s["throttled_by"]:
        want(f"throttled_by.{t['component']}.{t['limit']}", t["count"],
             lambda a, b: a == b)
    if s["rate_target"] is not None:
        want("rate_target", s["rate_target"], lambda a, b: close(a, b, 1e-9, 0))
    # Pauses: the run adds them on its monotonic clock, the log has wall ms:
    # a millisecond per pause either way; a pause begun by a request that
    # gave up also has up to --spread that the log does not carry (the page
    # shows the server's minimum).
    n_pauses = s["status_429"] + s["status_503"]
    n_stop, spread = stop_pauses(log)
    want("paused_ms", s["paused_ms"],
         lambda a, b: -(2 + 2 * n_pauses) <= b - a <= 2 + 2 * n_pauses
         + n_stop * spread)
    # Rates and means: wall-clock milliseconds against monotonic
    # microseconds.
    want("rate_measured", s["rate_measured"], lambda a, b: close(a, b, .03, .05))
    want("latency_mean_ms", s["latency_mean_ms"],
         lambda a, b: close(a, b, .05, 1.0))
    # The mean in flight from the summary's own latency and attempt counts:
    # the run's in_flight_mean is an integral sampled at the steps of its
    # loop, and since the scheduler split it misses the interval an attempt
    # ends in (about half of it with 60 ms answers); the page's is exact.
    exact = s["latency_mean_ms"] * s["network_attempts"] / max(
        s["elapsed_ms"], 1)
    want("in_flight_mean", exact, lambda a, b: close(a, b, .05, .02))
    if not close(exact, s["in_flight_mean"], .2, .02):
        print(f"  note: the run's in_flight_mean {s['in_flight_mean']:.3f} "
              f"is not latency x attempts / elapsed = {exact:.3f}")
    want("littles_law_in_flight", s["littles_law_in_flight"],
         lambda a, b: close(a, b, .08, .02))
    return bad


def check_scale(a, b, k):
    pa, pb = page_values(a), page_values(b)
    bad = []
    for key in EXACT + [x for x in pa if x.startswith(("failures.",
                                                       "throttled_by."))]:
        if key == "in_flight_peak":
            continue
        if key in pa and pb.get(key) != pa[key] * k:
            bad.append(f"{key}: {pa[key]} x {k} != {pb.get(key)}")
    return bad


class Static(HTMLParser):
    """Collects what the static check needs."""

    def __init__(self):
        super().__init__()
        self.svgs = []      # [role, has title, has desc]
        self.stack = []
        self.urls = []
        self.tags = set()
        self.text = {"title": "", "desc": ""}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if tag == "svg" and a.get("role") == "img":
            self.svgs.append({"id": a.get("id"), "title": "", "desc": ""})
        if tag in ("title", "desc") and self.svgs and "svg" in self.stack:
            self.cur = tag
        else:
            self.cur = None
        for k in ("src", "href", "action", "data", "poster"):
            if k in a:
                self.urls.append(a[k])
        self.stack.append(tag)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop() == tag:
                break
        self.cur = None

    def handle_data(self, data):
        if getattr(self, "cur", None) and self.svgs:
            self.svgs[-1][self.cur] += data


def check_static(page, min_charts=5):
    text = open(page, encoding="utf-8").read()
    bad = []
    p = Static()
    p.feed(text)
    if "script" in p.tags or re.search(r"<script", text, re.I):
        bad.append("the page has a script")
    for u in p.urls:
        if not u.startswith("#"):
            bad.append(f"a reference leaves the page: {u}")
    if re.search(r"url\((?!#)", text) or "@import" in text:
        bad.append("the style sheet loads something")
    if "@media print" not in text:
        bad.append("no print style")
    if len(p.svgs) < min_charts:
        bad.append(f"{len(p.svgs)} charts, expected {min_charts}")
    for s in p.svgs:
        if len(s["title"].strip()) < 5 or len(s["desc"].strip()) < 20:
            bad.append(f"chart {s['id']}: no title or description")
    if "<table" not in text or 'id="t-timeline"' not in text:
        bad.append("no data table")
    return bad


def main():
    cmd = sys.argv[1]
    if cmd == "value":
        print(page_values(sys.argv[2]).get(sys.argv[3]))
        return 0
    if cmd == "summary":
        bad = check_summary(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "same":
        bad = check_scale(sys.argv[2], sys.argv[3], 1)
    elif cmd == "scale":
        bad = check_scale(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == "static":
        bad = check_static(sys.argv[2], *[int(x) for x in sys.argv[3:4]])
    else:
        print(__doc__)
        return 2
    for b in bad:
        print("  " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
