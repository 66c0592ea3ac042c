#!/usr/bin/env bash
# polite run diagnoses every 429/503: the attempt log says who sent it and
# what kind of limit it is, and the summary counts them by sender and kind.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
P=$POLITE

# One OpenAI-shaped 429 (then 200), one bare 429 (then 200), one 503 twice
# (then 200), and a plain 200.
cat >"$TMP/in.txt" <<IN
{"id":"oa","url":"$B/openai429/a1"}
{"id":"bare","url":"$B/bare429/b1"}
{"id":"busy","url":"$B/fail503x2/d"}
{"id":"fine","url":"$B/ok/f"}
IN
"$P" run --no-progress --concurrency 1 --spread 0ms --log "$TMP/log" \
  --summary-json "$TMP/sum.json" "$TMP/in.txt" >"$TMP/out" 2>"$TMP/err"
check "all ok in the end" [ "$(jq -r .outcome "$TMP/out" | sort -u)" = "ok" ]
cat "$TMP/err" >&2

# The log: a diagnosis on every 429/503 attempt, none on the 200s.
check "OpenAI 429 diagnosed as origin:openai rate" jq -e -s \
  'map(select(.id=="oa" and .status==429))[0].diagnosis | .component=="origin:openai" and .limit=="rate" and .retry_helps==true and .wait_ms==0' "$TMP/log"
check "its evidence names the OpenAI headers and body" jq -e -s \
  'map(select(.id=="oa" and .status==429))[0].diagnosis.evidence | (map(select(test("openai-organization"))) | length==1) and (map(select(test("rate_limit_exceeded"))) | length==1)' "$TMP/log"
check "bare 429 is unknown, not guessed" jq -e -s \
  'map(select(.id=="bare" and .status==429))[0].diagnosis | .component=="unknown" and .limit=="unknown" and (.evidence|type=="array")' "$TMP/log"
check "both 503 attempts diagnosed" jq -e -s \
  '[.[] | select(.id=="busy" and .status==503) | .diagnosis.component] == ["unknown","unknown"]' "$TMP/log"
check "no diagnosis on 200 attempts" jq -e -s \
  'map(select(.status==200 and has("diagnosis"))) | length==0' "$TMP/log"
check "8 attempts logged" [ "$(grep -vc '^{"event"' "$TMP/log")" -eq 8 ]

# The summary: counted by sender and kind.
check "summary JSON throttled_by" jq -e \
  '(.throttled_by | length==2) and (.throttled_by[] | select(.component=="origin:openai" and .limit=="rate") | .count==1) and (.throttled_by[] | select(.component=="unknown" and .limit=="unknown") | .count==3)' "$TMP/sum.json"
check "summary JSON 429/503 totals agree" jq -e \
  '.status_429 + .status_503 == ([.throttled_by[].count] | add)' "$TMP/sum.json"
check "text summary line" grep -q -E "429/503 by sender: origin:openai rate x 1, unknown unknown x 3$" "$TMP/err"

# No throttling: an empty list and no text line.
echo "$B/ok/plain" | "$P" run --no-progress --summary-json "$TMP/sum2.json" >/dev/null 2>"$TMP/err2"
check "no 429/503: throttled_by is empty" jq -e '.throttled_by == []' "$TMP/sum2.json"
check "no 429/503: no by-sender line" bash -c "! grep -q 'by sender' '$TMP/err2'"

finish
