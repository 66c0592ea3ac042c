#!/usr/bin/env bash
# polite run renews its budget leases while a request is in flight (the
# engine's heartbeat, 1 s): with a shared file budget of lease=2s and
# --concurrency 1, a second process must not start while the first one's
# 4-second request still runs. Without the heartbeat the first process's
# lease expires after ~2 s and the second would start then. (The lease is
# twice the heartbeat, not equal to it, so a late wake-up on a busy machine
# cannot let a renewal come after the expiry.)
. "$(dirname "$0")/lib.sh"

start_api main
REC=$API_REC
B=$API
BUDGET="file:$TMP/hb.budget?lease=2s"
ARGS=(--no-progress -q --concurrency 1 --budget "$BUDGET")

echo "$B/slow?ms=4000" >"$TMP/a.txt"
echo "$B/ok/second" >"$TMP/b.txt"
"$POLITE" run "${ARGS[@]}" --log "$TMP/a.log" --out "$TMP/a.out" "$TMP/a.txt" 2>"$TMP/a.err" &
pa=$!
PIDS+=("$pa")
for _ in $(seq 200); do
  grep -q '"/slow' "$REC" && break
  sleep 0.01
done
# The first request is in flight and holds the only slot: start the second
# process now; it has to wait for the release, ~4 s from now.
"$POLITE" run "${ARGS[@]}" --log "$TMP/b.log" --out "$TMP/b.out" "$TMP/b.txt" 2>"$TMP/b.err"
sb=$?
wait $pa
sa=$?
check_quiet "both runs exit 0 (got $sa, $sb)" [ $sa -eq 0 -a $sb -eq 0 ]
read -r a_start a_end b_start < <(python3 -c "
import json
def first(p):  # the first attempt line (event lines are not attempts)
    return next(o for o in map(json.loads, open(p)) if 'event' not in o)
a = first('$TMP/a.log')
b = first('$TMP/b.log')
print(a['start_ms'], a['end_ms'], b['start_ms'])")
echo "# first: ${a_start}..${a_end} ms; second started at $((b_start - a_start)) ms (lease 2 s)"
# The release happens just before the first logs its end: allow 150 ms.
check_quiet "the second did not start while the first's 4 s request ran (started $((b_start - a_start)) ms after it, it ended at $((a_end - a_start)) ms)" \
  [ $((b_start)) -ge $((a_end - 150)) ]
check_quiet "... and it started soon after the release (within 1 s)" \
  [ $((b_start - a_end)) -lt 1000 ]

finish
