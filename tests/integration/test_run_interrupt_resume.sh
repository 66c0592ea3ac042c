#!/usr/bin/env bash
# SIGTERM in the middle of a journaled run, then a plain --resume (issue #21
# items 4 and 5): the resume finishes the batch without --requeue (every id
# ends ok exactly once in --out, exit 0), the attempt log records every
# attempt started (those cut in flight say so) and is appended to by the
# resume, so that each session's attempts in the log equal its summary's,
# and `polite report` still reads the log.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
# 40 requests; every fifth takes 3 s, longer than the 2 s the interrupt
# gives requests in flight, so some are cut.
for i in $(seq 1 40); do
  if [ $((i % 5)) -eq 0 ]; then
    printf '{"id":"r%d","url":"%s/slow?ms=3000&i=%d"}\n' "$i" "$B" "$i"
  else
    printf '{"id":"r%d","url":"%s/ok/r%d"}\n' "$i" "$B" "$i"
  fi
done >"$TMP/in.jsonl"
J=$TMP/j.journal
O=$TMP/out.jsonl
L=$TMP/attempts.jsonl
ARGS=(--no-progress -q --rate 20/s --concurrency 4 --journal "$J" --out "$O"
  --log "$L")

"$POLITE" run "${ARGS[@]}" --summary-json "$TMP/s1.json" "$TMP/in.jsonl" \
  2>"$TMP/err1" &
pid=$!
for _ in $(seq 200); do
  [ "$(wc -l 2>/dev/null <"$O" || echo 0)" -ge 8 ] && break
  sleep 0.02
done
kill -TERM $pid
wait $pid
st=$?
check_eq "SIGTERM: exit 130" "$st" 130

# attempts_in LOG N: attempt lines of the Nth session (after its Nth
# {"event":"run"} line) of an appended log.
attempts_in() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
n, want = 0, int(sys.argv[2])
count = 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("event") == "run":
        n += 1
    elif "event" not in o and n == want:
        count += 1
print(count)
EOF
}
summary_attempts() {
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network_attempts"])' "$1"
}
a1=$(attempts_in "$L" 1)
s1=$(summary_attempts "$TMP/s1.json")
check_eq "session 1: the log's attempts = the summary's ($s1)" "$a1" "$s1"
cut=$(grep -c '"cut_in_flight":true' "$L")
check "session 1: attempts cut in flight are in the log, marked ($cut)" \
  [ "$cut" -ge 1 ]
check_grep "... with reason cancelled and no status" \
  '"status":null.*"reason":"cancelled".*"cut_in_flight":true' "$L"
ncan=$(jq -r 'select(.outcome=="cancelled") | .id' "$O" | wc -l)
check "session 1 left cancelled results ($ncan)" [ "$ncan" -gt 0 ]
check "... and some requests were never read (no line at all)" \
  [ "$(wc -l <"$O")" -lt 40 ]

"$POLITE" run "${ARGS[@]}" --summary-json "$TMP/s2.json" --resume \
  "$TMP/in.jsonl" 2>"$TMP/err2"
check_eq "a plain --resume exits 0" "$?" 0
check_grep "it says what runs again" "[0-9]+ run again \(cancelled or never started\)" "$TMP/err2"
check_eq "every id has exactly one line" \
  "$(jq -r .id "$O" | sort | uniq -d | wc -l) $(wc -l <"$O")" "0 40"
check_eq "every id is ok" "$(jq -r 'select(.outcome=="ok") | .id' "$O" | sort -u | wc -l)" 40
check_eq "the log was appended to: two sessions" \
  "$(grep -c '"event":"run"' "$L")" 2
a2=$(attempts_in "$L" 2)
s2=$(summary_attempts "$TMP/s2.json")
check_eq "session 2: the log's attempts = the summary's ($s2)" "$a2" "$s2"
check_eq "the log's attempts = both summaries'" \
  "$(grep -vc '"event"' "$L")" "$((s1 + s2))"
check "polite report reads the appended log" \
  "$POLITE" report "$L" -o "$TMP/r.html"
check "a second plain --resume has nothing to do and exits 0" \
  "$POLITE" run "${ARGS[@]}" --resume "$TMP/in.jsonl"

# The exit status is the whole batch's: a result that is not ok, kept from
# an earlier session, makes the resume exit 1 too.
printf '{"id":"e1","url":"%s/status/404"}\n{"id":"e2","url":"%s/ok/e2"}\n' \
  "$B" "$B" >"$TMP/e.jsonl"
EA=(--no-progress -q --max-attempts 1 --journal "$TMP/e.journal" --out "$TMP/e.out")
"$POLITE" run "${EA[@]}" "$TMP/e.jsonl" 2>/dev/null
check_eq "a batch with an http_error exits 1" "$?" 1
"$POLITE" run "${EA[@]}" --resume "$TMP/e.jsonl" 2>"$TMP/err3"
check_eq "... and so does its resume, which runs nothing" "$?" 1
check_grep "... saying the batch is not all ok" \
  "the batch is not all ok: 1 request.*http_error 1" "$TMP/err3"
finish
