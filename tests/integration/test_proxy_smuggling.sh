#!/usr/bin/env bash
# polite proxy: request smuggling shapes answered 400 (RFC 9112) and never forwarded; a truncated upstream body closes the client (cases in proxy/case_smuggling.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_smuggling.py"
