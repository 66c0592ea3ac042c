#!/usr/bin/env bash
# polite diagnose recognises polite's own proxy (#16.3): its own 429s carry
# Server: polite-proxy and a RateLimit-Policy named "polite"; the rate limit
# is proxy:polite / rate, the quota proxy:polite / quota with no retry, even
# though the quota body has OpenAI's insufficient_quota shape.
. "$(dirname "$0")/lib.sh"

# start_proxy NAME ARGS...: polite proxy in mock mode on a free port; sets PORT.
start_proxy() {
  local name=$1
  shift
  rm -f "$TMP/$name.ready"
  bg "$POLITE" proxy --listen 127.0.0.1:0 --ready-file "$TMP/$name.ready" "$@" \
    2>"$TMP/$name.err"
  for _ in $(seq 100); do
    [ -s "$TMP/$name.ready" ] && break
    sleep 0.05
  done
  PORT=$(sed 's/.*://' "$TMP/$name.ready")
}

start_proxy rate --rate-limit 1/min
curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/x"
curl -si "http://127.0.0.1:$PORT/v1/x" >"$TMP/rate.http"
check_grep "the proxy's second answer is a 429" "^HTTP/1.1 429" "$TMP/rate.http"
"$POLITE" diagnose --json "$TMP/rate.http" >"$TMP/rate.json"
check "diagnose exits 0 on it" [ $? -eq 0 ]
check "it is proxy:polite, a rate limit that a retry helps" jq -e \
  '.component == "proxy:polite" and .limit == "rate" and .retry_helps == true and .wait_ms > 0' \
  "$TMP/rate.json"
check "the evidence names the Server header" jq -e \
  '.evidence | map(select(test("polite-proxy"))) | length == 1' "$TMP/rate.json"

start_proxy quota --quota 1
curl -s -o /dev/null "http://127.0.0.1:$PORT/v1/y"
curl -si "http://127.0.0.1:$PORT/v1/y" >"$TMP/quota.http"
check_grep "past --quota it answers insufficient_quota" "insufficient_quota" "$TMP/quota.http"
"$POLITE" diagnose --json "$TMP/quota.http" >"$TMP/quota.json"
check "it is proxy:polite, a quota (not OpenAI), no retry" jq -e \
  '.component == "proxy:polite" and .limit == "quota" and .retry_helps == false' \
  "$TMP/quota.json"
finish
