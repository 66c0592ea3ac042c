#!/usr/bin/env bash
# polite proxy --devproxy-config: Dev Proxy configurations (JSON and YAML) run unchanged: urlsToWatch with exclusions, errors file, rate limiting (Throttle and Custom), mocks with @file bodies and nth 0, one warning naming what is not simulated, files reloaded when they change (cases in proxy/case_devproxy.py).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE:=${POLITE_BUILD:-$here/../../build}/polite}"
export POLITE
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
exec python3 "$here/proxy/case_devproxy.py"
