#!/usr/bin/env bash
# polite queue push|status|results (issue 24): the run input format goes in
# as it is written; pushing the same file twice adds nothing (ids as in the
# journal: a line without one is line-N-XXXXXXXX, from its content);
# invalid lines are named with their file and line and not pushed; status
# and results say what the queue holds, as text and JSON; a worker parses
# each line with its own -X, -H and -d and reports the line numbers of the
# file that was pushed.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
start_redis || exit 1
start_upstream
Q="redis://127.0.0.1:$RPORT/push"
U="http://127.0.0.1:$UP_PORT"
cat >"$TMP/a.txt" <<EOF
# a comment, then a blank line

$U/echo/one
{"id":"two","url":"$U/echo/two","body":"b2"}
ftp://nope/x
{"id":"three","url":"$U/echo/three","method":"PATCH","idempotency_key":"k-3"}
{"id":"bad","url":"$U/x","color":"red"}
$U/echo/one
EOF
"$POLITE" queue push "$Q" "$TMP/a.txt" >"$TMP/p1.out" 2>"$TMP/p1.err"
check_eq "invalid lines: exit 1" "$?" 1
check_grep "4 added (the repeated URL line 8 is its own request)" "4 added, 0 skipped .*2 invalid" "$TMP/p1.out"
check_grep "an invalid line is named with its file and line" \
  "^polite queue push: $TMP/a.txt line 5: url \"ftp://nope/x\" must start with http" "$TMP/p1.err"
check_grep "... and the field at fault" "line 7: unknown field \"color\"" "$TMP/p1.err"
"$POLITE" queue push --json "$Q" "$TMP/a.txt" >"$TMP/p2.json" 2>/dev/null
check_eq "the same file again adds nothing" \
  "$(jq -c '[.lines, .added, .skipped, .invalid, .complete]' "$TMP/p2.json")" \
  "[6,0,4,2,true]"
# The same URL on the same line of another file is the same request (same
# id); a valid file pushes with exit 0, from stdin too.
printf '# x\n\n%s/echo/one\n%s/echo/four\n' "$U" "$U" |
  "$POLITE" queue push "$Q" - >"$TMP/p3.out"
check_eq "stdin, all valid: exit 0" "$?" 0
check_grep "... line 3 is the same request as a.txt's line 3: skipped" \
  "1 added, 1 skipped" "$TMP/p3.out"
"$POLITE" queue status "$Q" >"$TMP/st.txt"
check_grep "status text: pushed" "^pushed: 5$" "$TMP/st.txt"
check_grep "status text: pending, with the wait of the next" \
  "^pending: 5 \(the next has waited [0-9.]+ s\)$" "$TMP/st.txt"
check_grep "status text: nothing in flight" "^in flight: 0$" "$TMP/st.txt"
"$POLITE" run --queue "$Q" --rate 50/s -X POST -H 'X-From: worker' \
  --idempotency-key auto --progress --log "$TMP/w.log" \
  --summary-json "$TMP/w.summary" -o "$TMP/w.jsonl" 2>"$TMP/w.err"
check_eq "the worker ends 0" "$?" 0
check_eq "its attempt log has the 5 attempts" \
  "$(grep -c '"attempt":' "$TMP/w.log")" 5
check_eq "its --summary-json counts the 5 results" \
  "$(jq -c '[.requests, .ok]' "$TMP/w.summary")" "[5,5]"
check_grep "its progress line and summary are on stderr" "5 requests in" "$TMP/w.err"
jq -r 'select(.line == 3 or .line == 8) | .id' "$TMP/w.jsonl" | sort >"$TMP/ids"
check_grep "a bare URL line got the stable id line-3-XXXXXXXX" '^line-3-[0-9a-f]{8}$' "$TMP/ids"
check_eq "... the same URL on line 8 is another request: line-8-, the same digits" \
  "$(sed 's/^line-[38]-//' "$TMP/ids" | sort -u | wc -l)" 1
check_eq "... and reports the pushed file's line number" \
  "$(jq -r 'select(.id == "three") | .line' "$TMP/w.jsonl")" 6
check_eq "the worker's -X applies to lines without a method" \
  "$(grep '"ev": "in"' "$UP_REC" | grep -c '"method": "POST"')" 4
check_eq "a line's own method wins" \
  "$(grep '"ev": "in"' "$UP_REC" | grep -c '"method": "PATCH"')" 1
check_eq "a line's own key is sent" \
  "$(grep '"ev": "in"' "$UP_REC" | grep '/echo/three' | jq -r .idem)" k-3
check_eq "the other writes got the keys pushed with them (4 distinct)" \
  "$(grep '"ev": "in"' "$UP_REC" | jq -r .idem | sort -u | grep -vc k-3)" 4
"$POLITE" queue results "$Q" -o "$TMP/r.jsonl" 2>"$TMP/r.err"
check_eq "results -o: one line per id" "$(jq -r .id "$TMP/r.jsonl" | sort -u | wc -l)" 5
check_grep "... and says how many" "5 result\(s\) to $TMP/r.jsonl" "$TMP/r.err"
check_eq "results are the worker's lines" "$(sort "$TMP/r.jsonl" | md5sum)" \
  "$(sort "$TMP/w.jsonl" | md5sum)"
"$POLITE" queue status --json "$Q" >"$TMP/st.json"
check_eq "status JSON after the run" \
  "$(jq -c '[.pushed, .pending, .in_flight, .done, .failed, .dead, .oldest_pending_ms, .lease_ms, (.workers | length)]' "$TMP/st.json")" \
  "[5,0,0,5,0,0,null,30000,0]"
"$POLITE" queue push "$Q" "$TMP/missing.txt" 2>"$TMP/m.err"
check_eq "a missing input file: usage error (2)" "$?" 2
check_grep "... naming it" "cannot open '$TMP/missing.txt'" "$TMP/m.err"
"$POLITE" queue status "redis://127.0.0.1:$RPORT/nothing" >"$TMP/none.txt"
check_grep "status of a queue never pushed to" "nothing was ever pushed to it" "$TMP/none.txt"
finish
