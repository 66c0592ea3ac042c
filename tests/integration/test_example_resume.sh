#!/usr/bin/env bash
# examples/resume.c (a C program on libpolite's resume policy,
# polite_journal_attach): SIGKILL in the middle of a batch of POSTs, then
# run it again. Every id ends ok exactly once, each write reached the
# server with one and only one key (a write in flight at the kill is sent
# again with its key), and the journal's keys are the server's
# (tests/integration/resume/check.py).
. "$(dirname "$0")/lib.sh"
EX=${EXAMPLE_RESUME:-$POLITE_BUILD/example_resume}
HERE=$IT/resume

# 200 after 50 ms; records method, path and Idempotency-Key.
start_api main --delay-ms 50
REC=$API_REC
B=$API
N=60
for i in $(seq 1 $N); do
  printf '{"id":"ex-op%d","method":"POST","url":"%s/ex/op%d?token=SECRET","body":"v%d"}\n' \
    "$i" "$B" "$i" "$i"
done >"$TMP/in"
J=$TMP/j

"$EX" "$J" "$TMP/in" "$TMP/out" 2>>"$TMP/err" &
pid=$!
# The journal is locked while the program runs: watch the server instead.
for _ in $(seq 500); do
  [ "$(wc -l <"$REC")" -ge 12 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.01
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
st=$?
check "killed mid-batch (SIGKILL)" [ $st -eq 137 ]
check "... before the end (no results file yet)" [ ! -e "$TMP/out" ]
sent1=$(wc -l <"$REC")
"$EX" "$J" "$TMP/in" "$TMP/out" 2>>"$TMP/err"
check "the second run completes (exit 0)" [ $? -eq 0 ]
check "... and says it skipped what was done" grep -q "[1-9][0-9]* already done" "$TMP/err"
check "fewer than N requests were sent by the second run" \
  [ $(($(wc -l <"$REC") - sent1)) -lt $N ]
if python3 "$HERE/check.py" "$TMP/out" "$REC" ex $N "$J" >"$TMP/check" 2>&1; then
  ok "each id ok once, one key per write, journal = server"
else
  bad "each id ok once, one key per write, journal = server"
  sed 's/^/    /' "$TMP/check"
fi
sent2=$(wc -l <"$REC")
"$EX" "$J" "$TMP/in" "$TMP/out" 2>>"$TMP/err"
check "a third run sends nothing" [ $? -eq 0 ] && check "... at all" [ "$(wc -l <"$REC")" -eq "$sent2" ]
finish
