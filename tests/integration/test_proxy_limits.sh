#!/usr/bin/env bash
# polite proxy: --rate-limit (429 with a Retry-After never too short), --burst, --quota, --failure-rate with --seed, --watch (cases in proxy/case_limits.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_limits.py"
