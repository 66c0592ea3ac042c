#!/usr/bin/env bash
# The C API waits a budget outage out as `polite run` does (issue #21 item
# 3): polite_client calls under a redis:// budget whose server is stopped
# (SIGSTOP). Stopped for 3 s: the call that meets it blocks, sends nothing
# meanwhile, and returns 0 with the answer (ok). With budget_outage_ms
# 1000: the call returns POLITE_EBUDGET (-5) after about 1 s, its outcome
# cancelled, the error saying why, and nothing was sent.
. "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || { echo "redis-server not installed"; exit 1; }
C=$POLITE_BUILD/tools/budget_client
[ -x "$C" ] || { echo "missing $C (build the tests)"; exit 1; }
tmp=$TMP
. "$IT/budget/redis.sh"
at_exit() {
  kill -CONT "$rpid" 2>/dev/null
  kill -9 "$rpid" 2>/dev/null
}
on_exit at_exit
start_pyserver
U=http://127.0.0.1:$PY_PORT/ok/client
R="redis://127.0.0.1:$port"
count_sent() { grep -c '"path": "/ok/client' "$PY_REC"; }

# 1. A 3 s outage is waited out. 60 calls at the budget's 20/s: unstopped
# they would still be running through the counted 2 s.
"$C" "$R/c1?timeout=200ms" "$U" 60 >"$TMP/c1.out" 2>&1 &
pid=$!
sleep 1
kill -STOP "$rpid"
# A call admitted just before the stop may reach the server after it: the
# count starts 1 s into the outage, when such a one has landed.
sleep 1
before=$(count_sent)
sleep 2
during=$(( $(count_sent) - before ))
kill -CONT "$rpid"
wait $pid
check_eq "client: every call returned 0 and ok" \
  "$(grep -c 'rc=0 outcome=ok ' "$TMP/c1.out")" 60
check_eq "client: nothing sent while Redis was stopped" "$during" 0
longest=$(sed -n 's/.* ms=\([0-9]*\) .*/\1/p' "$TMP/c1.out" | sort -n | tail -1)
check "client: the call that met the outage waited it out (${longest} ms)" \
  [ "$longest" -ge 2500 ]

# 2. Past budget_outage_ms the call returns POLITE_EBUDGET.
: >"$PY_REC"
kill -STOP "$rpid"
"$C" "$R/c2?timeout=200ms" "$U" 1 1000 >"$TMP/c2.out" 2>&1
st=$?
kill -CONT "$rpid"
check_eq "client: budget unreachable at open is an open error" "$st" 1
"$C" "$R/c3?timeout=200ms" "$U" 100 1000 >"$TMP/c3.out" 2>&1 &
pid=$!
sleep 0.6
kill -STOP "$rpid"
for _ in $(seq 100); do
  grep -q 'rc=-5' "$TMP/c3.out" && break
  sleep 0.1
done
kill "$pid"
wait "$pid" 2>/dev/null
kill -CONT "$rpid"
# One request for each call that returned ok, none for the one that met the
# outage: counting the server's requests at the stop missed one admitted
# just before it and still on its way (3, want 2, in a ctest -j4 run).
check_eq "client: nothing sent after the budget went (one request per ok call)" \
  "$(count_sent)" "$(grep -c 'rc=0 outcome=ok ' "$TMP/c3.out")"
check_grep "client: past budget_outage_ms the call returns -5, cancelled" \
  'rc=-5 outcome=cancelled attempts=0 ms=(1[0-9]{3}|2[0-9]{3}) error=the budget could not be used for 1\.[0-9] s' "$TMP/c3.out"
finish
