#!/usr/bin/env bash
# polite proxy: the judge with real clients: four urllib3 threads on one URL are never flagged, a client 50 ms early under --latency is, a mocked 202 with Retry-After is no throttle, early 429s under a rate limit carry RateLimit headers (cases in proxy/case_judge.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_judge.py"
