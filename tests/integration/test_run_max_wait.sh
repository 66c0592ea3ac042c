#!/usr/bin/env bash
# polite run --max-wait: a server wait longer than the limit ends the
# requests at once with outcome wait_too_long (nothing sent early, nothing
# waited for), and the other requests of the account end with it.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
P=$POLITE

# /wait429 answers 429 with Retry-After: 30.
printf '%s\n' "$B/wait429/a" "$B/wait429/b" "$B/wait429/c" >"$TMP/in.txt"
t0=$(date +%s%N)
"$P" run --no-progress --concurrency 1 --max-wait 10s "$TMP/in.txt" \
  >"$TMP/out" 2>"$TMP/err"
rc=$?
t1=$(date +%s%N)
check "exit 1 (not every request ok)" [ "$rc" -eq 1 ]
check "three results, all wait_too_long" \
  [ "$(jq -r .outcome "$TMP/out" | sort | uniq -c | tr -s ' ')" = " 3 wait_too_long" ]
check "the server saw one request only" [ "$(wc -l <"$PY_REC")" -eq 1 ]
check "ended at once, not after 30 s" [ $(((t1 - t0) / 1000000)) -lt 5000 ]
check "the error names max-wait" \
  jq -e -s 'map(select(.error | test("max-wait"))) | length == 3' "$TMP/out"

"$P" run --max-wait soon "$TMP/in.txt" >/dev/null 2>"$TMP/err2"
rc=$?
check "a bad --max-wait exits 2" [ "$rc" -eq 2 ]
check "its message names the option" grep -q -- '--max-wait' "$TMP/err2"

finish
