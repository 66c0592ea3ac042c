#!/bin/sh
# Installs tests/node's npm packages from the committed package-lock.json
# (npm ci, npm's registry only), once per lock file: the tests that need
# them call this first, and ctest may start several at a time, so the
# install runs under a lock and is skipped when node_modules already holds
# this lock file's packages (a stamp of its hash).
set -e
cd "$(dirname "$0")"
exec 9>.npm-ci.lock
flock 9
want=$(sha256sum package-lock.json | cut -d' ' -f1)
stamp=node_modules/.polite-lock-sha256
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
echo "$want" >"$stamp"
