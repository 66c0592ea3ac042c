#!/usr/bin/env python3
"""Peer for the benchmark: Python requests + urllib3 Retry (respects
Retry-After on 429) with a thread pool. Usage: py_client.py URLFILE THREADS.
Prints one status per URL (0 for an exception)."""
import sys
from concurrent.futures import ThreadPoolExecutor
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

urls = [l.strip() for l in open(sys.argv[1]) if l.strip()]
threads = int(sys.argv[2])
retry = Retry(total=5, status_forcelist=[429, 503], backoff_factor=0.5,
              respect_retry_after_header=True, allowed_methods=None,
              raise_on_status=False)
s = requests.Session()
s.mount("http://", HTTPAdapter(max_retries=retry, pool_maxsize=threads))


def get(u):
    try:
        return s.get(u, timeout=30).status_code
    except Exception:
        return 0


with ThreadPoolExecutor(threads) as ex:
    for st in ex.map(get, urls):
        print(st)
