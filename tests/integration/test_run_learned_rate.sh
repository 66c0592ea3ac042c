#!/usr/bin/env bash
# polite run --rate auto: the start rate is learned at run time against a
# third-party limiter that sends no rate-limit headers (nginx limit_req at
# 20 r/s, burst 1, 429 with Retry-After: 1): every request ends ok, few
# 429s, and the attempt log says how the rate evolved ("event":"rate"
# lines). --max-rate caps it.
. "$(dirname "$0")/lib.sh"
P=$POLITE
start_nginx 20r/s || { echo "0 passed, 1 failed"; exit 1; }
B=http://127.0.0.1:$NG_PORT
N=200
for i in $(seq 1 $N); do echo "$B/item/$i"; done >"$TMP/in.txt"

t0=$(date +%s%N)
"$P" run --no-progress --rate auto --concurrency 8 --max-attempts 10 \
  --spread 100ms --log "$TMP/log" --summary-json "$TMP/s.json" \
  "$TMP/in.txt" >"$TMP/out" 2>"$TMP/err"
rc=$?
wall_ms=$((($(date +%s%N) - t0) / 1000000))
check "learned: exit 0" [ "$rc" -eq 0 ]
check "learned: $N ok" [ "$(jq -r 'select(.outcome=="ok")|.id' "$TMP/out" | wc -l)" -eq $N ]
n429=$(jq .status_429 "$TMP/s.json")
echo "# $n429 429s, wall $wall_ms ms (floor $((N * 1000 / 20)) ms)"
# Wiring, not tuning: a rate that is never cut sends most requests into
# 429s; the controller's own targets are judged in its tests and bench/.
check "learned: at most 20% answered 429" [ "$n429" -le $((N / 5)) ]
# The engine's wiring, not the controller's quality (tests/unit/test_ratectl.c
# and bench/ judge that): a rate stuck low or never cut would miss this.
check "learned: wall below 3 x N / limit" [ "$wall_ms" -lt $((N * 1000 * 3 / 20)) ]
check "the summary JSON says how the rate evolved" jq -e \
  '.rate_learned.first_per_s > 0 and .rate_learned.lowest_per_s <= .rate_learned.final_per_s and .rate_learned.final_per_s <= .rate_learned.highest_per_s and .rate_learned.cuts.throttle >= 1' "$TMP/s.json"
check "... and so does the text summary" grep -q "learned rate: .* first, .* final" "$TMP/err"
check "the log's first rate line is the start" jq -e -s \
  'map(select(.event=="rate"))[0] | .reason=="start" and .previous_per_s==null and .rate_per_s > 0' "$TMP/log"
check "a 429 cut the rate, and the log says so" jq -e -s \
  'map(select(.event=="rate" and .reason=="throttle")) | length >= 1 and all(.rate_per_s < .previous_per_s)' "$TMP/log"
check "every rate line has the documented keys" jq -e -s \
  'map(select(.event=="rate")) | all(has("wall_ms") and has("rate_per_s") and has("previous_per_s") and has("reason") and has("detail"))' "$TMP/log"
check "attempt lines are the attempts" \
  [ "$(jq -s 'map(select(has("event")|not)) | length' "$TMP/log")" -eq "$(jq .network_attempts "$TMP/s.json")" ]

# --max-rate caps the learned rate.
head -20 "$TMP/in.txt" >"$TMP/in20.txt"
sleep 1.1
t0=$(date +%s%N)
"$P" run --no-progress --rate auto --max-rate 5/s --log "$TMP/log2" \
  "$TMP/in20.txt" >"$TMP/out2" 2>"$TMP/err2"
wall_ms=$((($(date +%s%N) - t0) / 1000000))
check "capped: exit 0" [ $? -eq 0 ]
check "capped: 20 starts take at least 19 intervals of 200 ms" [ "$wall_ms" -ge 3700 ]
check "capped: the log says the cap was reached" jq -e -s \
  'map(select(.event=="rate" and .reason=="max_rate")) | length == 1' "$TMP/log2"
check "capped: never above 5/s" jq -e -s \
  'map(select(.event=="rate")) | all(.rate_per_s <= 5.0)' "$TMP/log2"
"$P" run --max-rate fast "$TMP/in20.txt" >/dev/null 2>"$TMP/err3"
check "a bad --max-rate is a usage error (exit 2)" [ $? -eq 2 ]
finish
