#!/usr/bin/env bash
# polite proxy --upstream https:// to a real nginx: verification on by default, 502 naming bad certificates, refusals and timeouts, --upstream-insecure, --upstream-cacert, keep-alive reuse (cases in proxy/case_https.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_https.py"
