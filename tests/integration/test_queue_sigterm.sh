#!/usr/bin/env bash
# SIGTERM of a worker (issue 24) gives back at once what it has not
# started: right after it exits nothing is in flight and its entries are
# pending again, with their deliveries unchanged; it exits 130 with its
# results written. Another worker then does the rest, and no id was sent
# twice. Also: --follow waits for entries pushed later and ends on SIGTERM.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
start_redis || exit 1
start_upstream
Q="redis://127.0.0.1:$RPORT/term"
push_ids 40 ok
"$POLITE" queue push "$Q" "$TMP/in.txt" >/dev/null
# 5/s: after 1.5 s about 8 are done and up to 8 more are held (window 2 x 4).
worker A --queue "$Q" --rate 5/s --concurrency 4 --lease 30s
wait_for 5 "/ok/q" || exit 1
kill -TERM "${WPID[A]}"
wait "${WPID[A]}"
check_eq "SIGTERM: the worker exits 130" "$?" 130
"$POLITE" queue status --json "$Q" >"$TMP/st.json"
done_a=$(grep -c . "$TMP/A.jsonl")
check_eq "right after it: nothing in flight (its entries were given back)" \
  "$(jq .in_flight "$TMP/st.json")" 0
check_eq "... the rest is pending: 40 - $done_a" "$(jq .pending "$TMP/st.json")" \
  $((40 - done_a))
check_eq "... and its results are recorded" "$(jq .done "$TMP/st.json")" "$done_a"
gave=$(sed -n 's/.*gave back \([0-9]*\).*/\1/p' "$TMP/A.err")
check "A's summary says it gave back $gave" [ "${gave:-0}" -ge 1 ]
check_eq "a given-back entry (the newest) keeps its count of deliveries: 0" \
  "$(redis-cli -p "$RPORT" xrevrange 'polite:queue:{term}:work' + - count 1 |
    sed -n '/^deliveries$/{n;p}')" 0
"$POLITE" run --queue "$Q" --rate 50/s --no-progress -A B \
  -o "$TMP/B.jsonl" 2>"$TMP/B.err"
check_eq "B does the rest and ends 0" "$?" 0
"$POLITE" queue results "$Q" >"$TMP/results.jsonl"
check "one result per id" qcheck results 40 "$TMP/results.jsonl"
check "A's and B's --out share no id" qcheck union 40 "$TMP/A.jsonl" "$TMP/B.jsonl"
check_eq "no id was sent twice" "$(qcheck twice "$UP_REC")" 0

# --follow: an empty queue is waited on; entries pushed later run at once.
Q2="redis://127.0.0.1:$RPORT/follow"
worker F --queue "$Q2" --follow --rate 50/s
F=${WPID[F]}
sleep 1
check "--follow: still waiting on a queue nothing was pushed to" kill -0 "$F"
printf '{"id":"late","url":"http://127.0.0.1:%s/ok/late"}\n' "$UP_PORT" >"$TMP/late.txt"
"$POLITE" queue push "$Q2" "$TMP/late.txt" >/dev/null
for _ in $(seq 40); do
  [ -s "$TMP/F.jsonl" ] && break
  sleep 0.05
done
check_grep "--follow: an entry pushed later runs within 2 s" '"id":"late"' "$TMP/F.jsonl"
kill -TERM "$F"
wait "$F"
check_eq "--follow ends on SIGTERM (130)" "$?" 130
check_no_grep "... and does not call the queue missing once it was pushed to" \
  "does not exist" "$TMP/F.err"

# Without --follow, a queue nothing was pushed to ends the worker at once.
"$POLITE" run --queue "redis://127.0.0.1:$RPORT/none" --no-progress \
  -o "$TMP/N.jsonl" 2>"$TMP/N.err"
check_eq "a queue that does not exist: exit 0" "$?" 0
check_grep "... saying so" "does not exist \(nothing was pushed" "$TMP/N.err"
finish
