#!/usr/bin/env bash
# polite proxy: a thousand concurrent keep-alive connections (mock mode and reverse proxy), curl --parallel (cases in proxy/case_concurrency.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_concurrency.py"
