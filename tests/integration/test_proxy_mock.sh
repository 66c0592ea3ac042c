#!/usr/bin/env bash
# polite proxy: mock mode, mocks file, CORS, malformed HTTP gets 400, --config errors naming file/line/field, usage errors (cases in proxy/case_mock.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_mock.py"
