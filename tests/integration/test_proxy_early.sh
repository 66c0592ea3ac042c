#!/usr/bin/env bash
# polite proxy: early retries caught to the millisecond, compliant clients never flagged, @dynamic, --penalty, scopes, report on SIGTERM (cases in proxy/case_early.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_early.py"
