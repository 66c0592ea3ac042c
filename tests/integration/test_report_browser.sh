#!/usr/bin/env bash
# polite report pages in headless Chromium (Debian's /usr/bin/chromium,
# driven by playwright-core from npm, tests/report/package-lock.json): no
# console error, no network request, screenshots (screen and print) that are
# not blank, a PDF print. Pages: one from a real throttled run (polite run
# --report through polite proxy), the proxy's own (--report-html) and one
# from a synthetic 100,000-request log.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
export PYTHONDONTWRITEBYTECODE=1
src=$here/../report

if [ ! -x /usr/bin/chromium ] || ! command -v npm >/dev/null; then
  bad "chromium and npm are needed (DEB_PACKAGES in the Makefile)"
  finish
  exit 1
fi

# playwright-core from the committed lock file, installed once per build
# directory (npm ci; the package downloads no browser).
NODE_DIR=${POLITE_BUILD:-$TMP}/report-node
if ! cmp -s "$src/package-lock.json" "$NODE_DIR/package-lock.json" ||
  [ ! -d "$NODE_DIR/node_modules/playwright-core" ]; then
  rm -rf "$NODE_DIR"
  mkdir -p "$NODE_DIR"
  cp "$src/package.json" "$src/package-lock.json" "$NODE_DIR/"
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --ignore-scripts >"$TMP/npm.log" 2>&1) ||
    { cat "$TMP/npm.log"; bad "npm ci"; finish; exit 1; }
fi
cp "$src/check_page.js" "$NODE_DIR/"

"$POLITE" proxy --listen 127.0.0.1:0 --rate-limit 10/s --burst 2 \
  --retry-after 1 --ready-file "$TMP/px.addr" --log "$TMP/px.log" \
  --report-html "$TMP/proxy.html" 2>"$TMP/px.err" &
PXPID=$!
PIDS+=("$PXPID")
for _ in $(seq 100); do [ -s "$TMP/px.addr" ] && break; sleep 0.05; done
PX=$(cat "$TMP/px.addr")
for i in $(seq 1 16); do echo "http://$PX/v1/items/$i"; done >"$TMP/in.txt"
"$POLITE" run --rate 15/s --concurrency 3 -q --report "$TMP/run.html" \
  -o /dev/null "$TMP/in.txt"
check "polite run --report wrote the page" test -s "$TMP/run.html"
kill -TERM "$PXPID"
wait "$PXPID" 2>/dev/null
check "polite proxy --report-html wrote its page" test -s "$TMP/proxy.html"

python3 "$src/gen_log.py" 100000 "$TMP/expect.json" |
  "$POLITE" report - -o "$TMP/big.html" 2>/dev/null
check "the synthetic page was written" test -s "$TMP/big.html"

for p in run big proxy; do
  mkdir -p "$TMP/$p"
  if (cd "$NODE_DIR" && timeout 120 node check_page.js "$TMP/$p.html" "$TMP/$p") \
    >"$TMP/$p.out" 2>&1; then
    ok "$p page: no console error, no request, not blank ($(tr '\n' ' ' <"$TMP/$p.out"))"
  else
    cat "$TMP/$p.out"
    bad "$p page in Chromium"
  fi
done
# Keep the screenshots for a person to look at (REPORT_SHOTS=DIR).
if [ -n "${REPORT_SHOTS:-}" ]; then
  mkdir -p "$REPORT_SHOTS"
  cp "$TMP/run/screen.png" "$REPORT_SHOTS/run-screen.png"
  cp "$TMP/run/print.png" "$REPORT_SHOTS/run-print.png"
  cp "$TMP/big/screen.png" "$REPORT_SHOTS/big-screen.png"
  cp "$TMP/proxy/screen.png" "$REPORT_SHOTS/proxy-screen.png"
fi
finish
