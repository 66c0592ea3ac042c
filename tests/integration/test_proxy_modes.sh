#!/usr/bin/env bash
# polite proxy: the limit modes with real clients: a client following RateLimit r and t gets no 429 and reaches 10/s under gcra, fixed and sliding; Dev Proxy headers; concurrency limit; quota periods; polite run at the right rate gets no 429, a faster one honours them (cases in proxy/case_modes.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_modes.py"
