#!/usr/bin/env bash
# polite proxy: bounds on heads, header counts, bodies, header deadline and connections, each with its flag (cases in proxy/case_bounds.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_bounds.py"
