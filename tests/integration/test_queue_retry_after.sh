#!/usr/bin/env bash
# Leases that match the waits (issue 24): a worker whose entries all wait
# on a 10 s Retry-After keeps them although its lease is 2 s, because it
# renews every lease it holds, waiting ones included. A second worker that
# polls the queue the whole time claims none of them, every entry is sent
# exactly twice (the 429, then the answer), both times by the first worker,
# and the results are the first worker's.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
start_redis || exit 1
start_upstream
Q="redis://127.0.0.1:$RPORT/ra"
push_ids 3 ra/10
"$POLITE" queue push "$Q" "$TMP/in.txt" >/dev/null
W=(--queue "$Q" --rate none --concurrency 3 --lease 2s)
worker A "${W[@]}"
wait_for 3 "/ra/10/q" || exit 1
# B joins while A waits; it keeps looking for claimable entries.
worker B "${W[@]}"
sleep 4
"$POLITE" queue status --json "$Q" >"$TMP/mid.json"
check_eq "4 s into the wait (2 leases): all 3 still in flight at A" \
  "$(jq '[.workers[] | select(.in_flight > 0) | .in_flight] | add' "$TMP/mid.json")" 3
wait "${WPID[A]}"
check_eq "A ends 0" "$?" 0
wait "${WPID[B]}"
check_eq "B ends 0 once A has finished (nothing pending or in flight)" "$?" 0
check_eq "every entry was sent twice (429, then 200)" \
  "$(grep -c '"ev": "in"' "$UP_REC")" 6
check_eq "... all by A" "$(grep '"ev": "in"' "$UP_REC" | grep -c '"ua": "A"')" 6
check_grep "A's summary: claimed none, lost none" \
  "^queue: took 3 \(0 claimed.*0 lease\(s\) lost" "$TMP/A.err"
check_grep "B took nothing" "^queue: took 0 " "$TMP/B.err"
check_eq "A's --out has the 3 results" "$(grep -c '"outcome":"ok"' "$TMP/A.jsonl")" 3
"$POLITE" queue results "$Q" >"$TMP/results.jsonl"
check "the queue has one result per id" qcheck results 3 "$TMP/results.jsonl"
finish
