#!/usr/bin/env bash
# polite run's layers in run_wire()'s order (src/run_wire.c): the report tap
# is outermost, so --log holds a result line for every request the engine
# ran, even the ones an inner layer keeps to itself. The journal is such a
# layer: once its check fails (here: the results file is removed while four
# requests are in flight) it records nothing more and passes no result on,
# so that --resume does those requests again. Wired the other way round
# (the tap inside the journal), the four results would be missing from the
# log while their attempt lines are there.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
for i in $(seq 1 8); do echo "$B/slow?ms=2500&i=$i"; done >"$TMP/in.txt"

"$POLITE" run --no-progress -q --rate none --concurrency 4 --journal "$TMP/j.db" \
  --out "$TMP/out.jsonl" --log "$TMP/log.jsonl" "$TMP/in.txt" 2>"$TMP/err" &
RUN=$!
# Four requests in flight (the server has them), none answered yet.
for _ in $(seq 200); do
  [ "$(grep -c '/slow?ms=2500' "$PY_REC")" -ge 4 ] && break
  sleep 0.05
done
check_eq "four requests in flight" "$(grep -c '/slow?ms=2500' "$PY_REC")" 4
rm -f "$TMP/out.jsonl"
wait "$RUN"
st=$?
check_eq "the removed results file stops the run: exit 1" "$st" 1
check_grep "... naming the file" "results file '$TMP/out.jsonl' is gone" "$TMP/err"

attempts=$(jq -r 'select(.event == null) | .id' "$TMP/log.jsonl" | sort -u | wc -l)
results=$(grep -c '"event":"result"' "$TMP/log.jsonl")
kept=$(sed -n 's/.*; \([0-9]*\) result(s) were not written.*/\1/p' "$TMP/err")
check_eq "the log has the four attempts" "$attempts" 4
check "... whose results the journal kept to itself ($kept)" [ "${kept:-0}" -ge 4 ]
check_eq "... and the log has a result line for each (the tap outside the journal)" \
  "$results" "$kept"
check_grep "... and its end line" '"event":"end"' "$TMP/log.jsonl"
sed 's/^/#   /' "$TMP/err" | head -3
finish
