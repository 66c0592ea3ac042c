#!/usr/bin/env bash
# polite proxy --mode forward: curl, Python requests and Node fetch (undici ProxyAgent) through HTTP_PROXY/HTTPS_PROXY to a local nginx over HTTPS; watched hosts intercepted, others tunnelled (cases in proxy/case_forward_mode.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
# Node's undici from the committed lock file (npm registry only).
node_dir="$here/../node"
if [ ! -d "$node_dir/node_modules/undici" ]; then
  (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
exec python3 "$here/proxy/case_forward_mode.py"
