#!/usr/bin/env bash
# polite proxy: Prometheus metrics at GET /__polite/metrics (requests by outcome, injected by kind, throttled by rule, early retries, in flight, upstream latency histogram), valid under promtool check metrics (cases in proxy/case_metrics.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_metrics.py"
