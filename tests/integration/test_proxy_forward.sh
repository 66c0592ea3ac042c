#!/usr/bin/env bash
# polite proxy: reverse proxy byte-exact (binary, chunked), hop-by-hop headers, upstream Retry-After tracked, 502, --latency (cases in proxy/case_forward.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_forward.py"
