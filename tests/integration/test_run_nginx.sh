#!/usr/bin/env bash
# polite run against a third-party limiter: nginx limit_req at 20 r/s,
# burst 1, answering 429 with Retry-After: 1.
. "$(dirname "$0")/lib.sh"
P=$POLITE
start_nginx 20r/s || { echo "0 passed, 1 failed"; exit 1; }
B=http://127.0.0.1:$NG_PORT

for i in $(seq 1 40); do echo "$B/item/$i"; done >"$TMP/in.txt"

# 1. A rate that fits the limit (18/s: 10% headroom, as a plan should leave,
# so a loaded machine that delays one arrival does not trip burst 1): every
# request succeeds with no 429.
"$P" run --no-progress --rate 18/s --concurrency 4 --summary-json "$TMP/s1.json" \
  "$TMP/in.txt" >"$TMP/o1" 2>"$TMP/e1"
check "rate fits: exit 0" [ $? -eq 0 ]
check "rate fits: 40 ok" [ "$(jq -r 'select(.outcome=="ok")|.id' "$TMP/o1" | wc -l)" -eq 40 ]
check "rate fits: zero 429" jq -e '.status_429==0 and .network_attempts==40' "$TMP/s1.json"
check "rate fits: measured rate near 18/s" jq -e '.rate_measured > 16.5 and .rate_measured <= 18.5' "$TMP/s1.json"
grep -c ' 429 ' "$TMP/nginx/logs/access.log" >"$TMP/n429" || true
check "nginx logged no 429" [ "$(cat "$TMP/n429")" -eq 0 ]
sleep 1.1

# 2. A rate above the limit: 429s come back, Retry-After is honoured (the
# budget pauses at least 1 s per 429 burst) and every request still ends ok.
head -20 "$TMP/in.txt" >"$TMP/in20.txt"
"$P" run --no-progress --rate 50/s --concurrency 4 --max-attempts 6 \
  --summary-json "$TMP/s2.json" "$TMP/in20.txt" >"$TMP/o2" 2>"$TMP/e2"
check "rate too high: exit 0 after retries" [ $? -eq 0 ]
check "rate too high: 429s counted" jq -e '.status_429 > 0 and .retries == .status_429 and .paused_ms >= 1000' "$TMP/s2.json"
check "rate fits: no warning without 429s" jq -e '.warning == null' "$TMP/s1.json"
sleep 1.1

# 3. Two callers share the allowance, each within its own plan (15/s each,
# 30/s together): the 429s make the summary say another caller may share it.
"$P" run --no-progress --rate 15/s --summary-json "$TMP/s3a.json" "$TMP/in.txt" >/dev/null 2>&1 &
a=$!
"$P" run --no-progress --rate 15/s --summary-json "$TMP/s3b.json" "$TMP/in.txt" >/dev/null 2>"$TMP/e3b"
wait $a
check "shared allowance: 429s seen" jq -e -s '(.[0].status_429 + .[1].status_429) > 0' "$TMP/s3a.json" "$TMP/s3b.json"
check "shared allowance: the summary says so" jq -e -s 'map(select(.status_429 > 0)) | all(.warning != null and (.warning|test("another caller")))' "$TMP/s3a.json" "$TMP/s3b.json"

finish
