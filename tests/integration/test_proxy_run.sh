#!/usr/bin/env bash
# polite proxy with `polite run` as the client: never early under the limit; a naive client is caught; quota stops it (cases in proxy/case_run.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_run.py"
