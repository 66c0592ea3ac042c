#!/usr/bin/env python3
"""The naive script: Python requests, T threads, one GET per URL, no retry logic of its own (or, with
--retry, urllib3's Retry as the requests docs suggest). Used by the gateway's tests and bench/gateway.

Usage: naive.py [--threads T] [--retry N] [--timeout S] URL_PREFIX COUNT
  GETs URL_PREFIX0 .. URL_PREFIX{COUNT-1} (a prefix with {} gets the number there instead). Proxies come from the environment as requests reads them
  (HTTP_PROXY, HTTPS_PROXY, REQUESTS_CA_BUNDLE). Prints one JSON line: {"status": {"200": n, ...},
  "errors": n, "wall_s": s, "latency_ms": [p50, p99]}."""
import argparse
import collections
import json
import threading
import time

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--retry", type=int, default=0, help="urllib3 Retry(total=N) on 429/503, Retry-After honoured")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("prefix")
    ap.add_argument("count", type=int)
    a = ap.parse_args()
    todo = list(range(a.count))
    lock = threading.Lock()
    status = collections.Counter()
    lat = []
    errors = [0]

    def worker():
        s = requests.Session()
        if a.retry:
            r = Retry(total=a.retry, status_forcelist=[429, 503], backoff_factor=0.5,
                      respect_retry_after_header=True, allowed_methods=None)
            s.mount("http://", HTTPAdapter(max_retries=r))
            s.mount("https://", HTTPAdapter(max_retries=r))
        while True:
            with lock:
                if not todo:
                    return
                i = todo.pop(0)
            t0 = time.monotonic()
            try:
                url = a.prefix.format(i) if "{}" in a.prefix else "%s%d" % (a.prefix, i)
                code = s.get(url, timeout=a.timeout).status_code
            except requests.RequestException:
                code = None
            with lock:
                lat.append((time.monotonic() - t0) * 1000)
                if code is None:
                    errors[0] += 1
                else:
                    status[str(code)] += 1

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(a.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lat.sort()
    pick = (lambda q: round(lat[min(len(lat) - 1, int(q * len(lat)))], 2)) if lat else (lambda q: None)
    print(json.dumps({"status": dict(status), "errors": errors[0], "wall_s": round(time.monotonic() - t0, 3),
                      "latency_ms": [pick(0.5), pick(0.99)]}))


if __name__ == "__main__":
    main()
