#!/usr/bin/env bash
# Poison entries (issue 24): an entry that kills every worker that takes
# it would loop for ever; with --max-deliveries 2 the third take puts it in
# the dead letters with the reason instead, the other entries are done, and
# `polite queue retry-dead` puts it back with its count from 0.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
start_redis || exit 1
start_upstream
Q="redis://127.0.0.1:$RPORT/poison"
push_ids 3 ok
printf '{"id":"poison","url":"http://127.0.0.1:%s/hang/p"}\n' "$UP_PORT" >>"$TMP/in.txt"
"$POLITE" queue push "$Q" "$TMP/in.txt" >/dev/null
W=(--queue "$Q" --rate none --lease 1s --max-deliveries 2 --timeout 60s)
# Each of two workers takes it and dies with it (kill -9 stands for a
# crash the entry causes); the next one may claim it once the lease is out.
for n in 1 2; do
  worker "p$n" "${W[@]}"
  wait_for "$n" "/hang/p" || exit 1
  kill -9 "${WPID[p$n]}"
  wait "${WPID[p$n]}" 2>/dev/null
done
check_eq "the poison entry was taken twice" "$(grep '"ev": "in"' "$UP_REC" | grep -c /hang/p)" 2
worker p3 "${W[@]}"
wait "${WPID[p3]}"
check_eq "the third worker ends 0" "$?" 0
check_eq "... without sending it again" "$(grep '"ev": "in"' "$UP_REC" | grep -c /hang/p)" 2
check_grep "... having dead-lettered it" "1 dead-lettered" "$TMP/p3.err"
"$POLITE" queue status --json "$Q" >"$TMP/st.json"
check_eq "status: 3 done, 1 dead, nothing pending or in flight" \
  "$(jq -c '[.done, .dead, .pending, .in_flight]' "$TMP/st.json")" "[3,1,0,0]"
redis-cli -p "$RPORT" xrange 'polite:queue:{poison}:dead' - + >"$TMP/dead.txt"
check_grep "the dead letter names the id" "^poison$" "$TMP/dead.txt"
check_grep "... and says why" \
  "taken 3 times without a result \(max-deliveries 2\)" "$TMP/dead.txt"
"$POLITE" queue retry-dead "$Q" >"$TMP/retry.out"
check_grep "retry-dead moves it back" "moved 1 dead letter" "$TMP/retry.out"
"$POLITE" queue status --json "$Q" >"$TMP/st2.json"
check_eq "status: 0 dead, 1 pending" "$(jq -c '[.dead, .pending]' "$TMP/st2.json")" "[0,1]"
# Back with its count from 0: a worker with a short timeout gets a result.
worker p4 --queue "$Q" --rate none --lease 1s --max-deliveries 2 \
  --timeout 1s --max-attempts 1
wait "${WPID[p4]}"
check_eq "a result that is not ok: exit 1" "$?" 1
check_grep "the entry ran and got its result" '"id":"poison".*"outcome":"network_error"' "$TMP/p4.jsonl"
check_eq "status: 1 failed" "$("$POLITE" queue status --json "$Q" | jq .failed)" 1
finish
