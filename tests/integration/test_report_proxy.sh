#!/usr/bin/env bash
# polite proxy --report-html: after a compliant client (polite run) and a
# naive one (curl retrying at once after a 429) the page's counts equal the
# proxy's JSON report, every early retry is listed with how early it was,
# traffic is split per client and per rule, and the page is self-contained.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
CHECK="python3 $here/../report/page_check.py"
export PYTHONDONTWRITEBYTECODE=1

"$POLITE" proxy --listen 127.0.0.1:0 --rate-limit 10/s --retry-after 2 \
  --ready-file "$TMP/px.addr" --log "$TMP/px.log" --report "$TMP/px.json" \
  --report-html "$TMP/px.html" 2>"$TMP/px.err" &
PXPID=$!
PIDS+=("$PXPID")
for _ in $(seq 100); do [ -s "$TMP/px.addr" ] && break; sleep 0.05; done
PX=$(cat "$TMP/px.addr")
for i in $(seq 1 12); do echo "http://$PX/v1/items/$i"; done >"$TMP/in.txt"
"$POLITE" run --rate 15/s -q -o /dev/null "$TMP/in.txt"
# A naive client: three requests back to back on one connection (one curl
# process, so a loaded machine cannot space them 100 ms apart and let the
# limiter refill): the second is rate limited and gets Retry-After, the
# third retries at once. Three times, each with its own token, then once
# without one.
B=http://$PX/v1/burst
for i in 1 2 3; do
  curl -s -o /dev/null -o /dev/null -o /dev/null \
    -H "Authorization: Bearer naive-$i-secret" "$B" "$B" "$B"
done
curl -s -o /dev/null -o /dev/null "$B" "$B"
kill -TERM "$PXPID"
wait "$PXPID" 2>/dev/null
check "the HTML report was written at SIGTERM" test -s "$TMP/px.html"
for k in requests passed injected rate_limited early_retries max_attempts; do
  want=$(jq ".$k" "$TMP/px.json")
  got=$($CHECK value "$TMP/px.html" "$k")
  check "$k on the page = JSON report's $want (got $got)" \
    python3 -c "import sys; sys.exit(float('$got') != float('$want'))"
done
early=$(jq .early_retries "$TMP/px.json")
if [ "$early" -gt 0 ]; then ok "the naive client was caught ($early early)"; else bad "no early retry caught"; fi
check "every early retry is listed" test "$(grep -c '<tr><td class="l">20[0-9-]*T.*</td><td>[0-9]*</td></tr>' "$TMP/px.html")" -eq "$early"
jq -r '.early[].early_ms' "$TMP/px.json" >"$TMP/early_ms"
while read -r ms; do
  grep -q "<td>$ms</td></tr>" "$TMP/px.html" || bad "early by $ms ms not on the page"
done <"$TMP/early_ms"
requests=$(jq .requests "$TMP/px.json")
check "per-rule counts add up to the requests ($requests), as many as the log's lines" python3 - "$TMP/px.html" "$requests" "$(grep -c . "$TMP/px.log")" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
n = sum(int(v) for v in re.findall(r'data-key="rule\.[^"]+" data-value="(\d+)"', t))
sys.exit(n != int(sys.argv[2]) or n != int(sys.argv[3]))
PY
check "the page has no note of a log that disagrees" sh -c "! grep -q 'holds [0-9]* requests of this run' '$TMP/px.html'"
check "clients with a token are told apart by a hash" grep -q '127.0.0.1 auth:[0-9a-f]\{8\}' "$TMP/px.html"
check "the token itself is not on the page" sh -c "! grep -q 'naive-1-secret' '$TMP/px.html'"
check "the traffic chart is there" grep -q 'id="c-traffic"' "$TMP/px.html"
if $CHECK static "$TMP/px.html" 1; then ok "self-contained, chart titled and described, print style"; else bad "static checks"; fi

# Without a log file the page still has the JSON report's part.
"$POLITE" proxy --listen 127.0.0.1:0 --ready-file "$TMP/px2.addr" \
  --report-html "$TMP/px2.html" --log - 2>"$TMP/px2.err" &
PX2=$!
PIDS+=("$PX2")
for _ in $(seq 100); do [ -s "$TMP/px2.addr" ] && break; sleep 0.05; done
curl -s -o /dev/null "http://$(cat "$TMP/px2.addr")/x"
kill -TERM "$PX2"
wait "$PX2" 2>/dev/null
check "without --log FILE: the page says how to get the timeline" grep -q 'start it with <code>--log FILE</code>' "$TMP/px2.html"
check "... and counts the request" test "$($CHECK value "$TMP/px2.html" requests)" = "1.0"
finish
