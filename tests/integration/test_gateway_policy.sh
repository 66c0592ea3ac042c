#!/usr/bin/env bash
# polite gateway's safety rules with curl as the client (which retries
# nothing) and the scripted API (tests/integration/upstream.py) behind a base URL:
#  - a GET answered 429 + Retry-After: 1 twice is retried and the client
#    gets the 200; the upstream saw 3 requests, none before its time;
#  - a POST without an idempotency key is sent once and its 429 comes back
#    to the client as it was (body included);
#  - a POST with an Idempotency-Key is retried with the same key;
#  - --idempotency-key auto gives a keyless POST a key, the same on each try;
#  - Retry-After: 3600 is answered at once (429, Retry-After about 3600),
#    not waited for, and nothing else is sent to that account meanwhile;
#  - a full queue answers 503 + Retry-After at once;
#  - a client's own retry (X-Stainless-Retry-Count) is counted as such in
#    the log (client_retries) and the metrics.
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"
start_upstream

# curl -s -w: "STATUS SECONDS" of one request; its body in $TMP/body.
req() {
  curl -s -m 20 -o "$TMP/body" -D "$TMP/head" -w '%{http_code} %{time_total}' "$@"
}
# The upstream's arrival times of the requests whose path matches $1,
# as gaps in ms from the first.
gaps() {
  python3 -c '
import json, re, sys
t = [json.loads(l)["t"] for l in open(sys.argv[1]) if re.search(sys.argv[2], json.loads(l)["path"])]
print(" ".join(str(int((b - a) * 1000)) for a, b in zip(t, t[1:])))' "$TMP/up.rec" "$1"
}

start_gateway a --upstream "http://$UP" --rate 50/s --spread 0 --log "$TMP/a.log"
B=http://$GW

# ---- A GET is retried, never before the server's time --------------------
read -r code _ < <(req "$B/flip/g?n=2&ra=1")
check_eq "GET: two 429s retried, the client gets the 200" "$code" 200
check_eq "GET: the upstream saw 3 requests" "$(up_count '^/flip/g')" 3
for gap in $(gaps '^/flip/g'); do
  if [ "$gap" -ge 990 ]; then ok "GET: a retry ${gap} ms after the 429 (Retry-After: 1)"
  else bad "GET: a retry ${gap} ms after the 429 (Retry-After: 1): early"; fi
done

# ---- Writes -----------------------------------------------------------------
read -r code _ < <(req -X POST -d '{"a":1}' "$B/flip/p?n=1&ra=1")
check_eq "POST without a key: its 429 comes back" "$code" 429
check_grep "POST without a key: the server's own body" 'rate_limit_exceeded' "$TMP/body"
check_grep "POST without a key: the server's Retry-After" '^Retry-After: 1' "$TMP/head"
check_eq "POST without a key: sent once" "$(up_count '^/flip/p')" 1

read -r code _ < <(req -X POST -H 'Idempotency-Key: k-123' -d '{"a":1}' "$B/flip/k?n=1&ra=1")
check_eq "POST with a key: retried, the client gets the 200" "$code" 200
check_eq "POST with a key: sent twice" "$(up_count '^/flip/k')" 2
check_eq "POST with a key: the same key on both" \
  "$(grep '/flip/k' "$TMP/up.rec" | grep -c '"idempotency-key": "k-123"')" 2
stop_gateway

start_gateway b --upstream "http://$UP" --idempotency-key auto --spread 0 \
  --queue-max 1 --concurrency 1 --rate 50/s --log "$TMP/b.log"
B=http://$GW
read -r code _ < <(req -X POST -d x "$B/flip/auto?n=1&ra=1")
check_eq "--idempotency-key auto: a keyless POST is retried" "$code" 200
keys=$(grep '/flip/auto' "$TMP/up.rec" | python3 -c '
import json, sys
print(" ".join(json.loads(l)["headers"].get("idempotency-key", "-") for l in sys.stdin))')
# shellcheck disable=SC2086 # the keys, one a word: split on purpose
set -- $keys
if [ $# -eq 2 ] && [ "$1" = "$2" ] && [ "$1" != - ]; then ok "--idempotency-key auto: the same key on both ($1)"
else bad "--idempotency-key auto: keys '$keys'"; fi

# ---- A full queue answers 503 at once -------------------------------------
# --concurrency 1, --queue-max 1: one in flight, one waiting, the third is
# refused. Each step waits until the one before it has happened (the first
# has reached the upstream, the second is in the gateway's queue), not a
# fixed time; the first's 2.5 s leave the third room on a loaded machine.
# wait_metric RE: waits (10 s) until a line of the gateway's metrics matches.
wait_metric() {
  for _ in $(seq 200); do
    curl -s -m 2 "$B/__polite/metrics" | grep -qE -- "$1" && return 0
    sleep 0.05
  done
  echo "# wait_metric: no metrics line matches '$1' after 10 s" >&2
  return 1
}
curl -s -m 10 -o /dev/null "$B/slow?ms=2500" &
s1=$!
check "a full queue: the first request reaches the upstream" \
  wait_count 1 '"path": "/slow\?ms=2500"' "$TMP/up.rec"
curl -s -m 10 -o /dev/null "$B/slow?ms=10" &
s2=$!
check "a full queue: the second waits in the gateway's queue" \
  wait_metric '^polite_gateway_queue_length\{[^}]*\} 1$'
read -r code secs < <(req "$B/ok/third")
check_eq "a full queue: 503" "$code" 503
check_grep "a full queue: with Retry-After" '^Retry-After: [0-9]+' "$TMP/head"
if python3 -c "import sys; sys.exit(0 if float('$secs') < 0.5 else 1)"; then
  ok "a full queue: answered at once (${secs} s)"
else bad "a full queue: answered after ${secs} s"; fi
wait $s1 $s2
stop_gateway

# ---- Retry-After: 3600 is answered at once ---------------------------------
start_gateway c --upstream "http://$UP" --log "$TMP/c.log"
B=http://$GW
read -r code secs < <(req "$B/flip/h?n=1&ra=3600")
check_eq "Retry-After 3600: the 429 comes back" "$code" 429
ra=$(sed -n 's/^Retry-After: \([0-9]*\).*/\1/p' "$TMP/head" | tr -d '\r')
if [ -n "$ra" ] && [ "$ra" -ge 3590 ] && [ "$ra" -le 3600 ]; then ok "Retry-After 3600: the client is told $ra s"
else bad "Retry-After 3600: the client is told '$ra'"; fi
if python3 -c "import sys; sys.exit(0 if float('$secs') < 2 else 1)"; then
  ok "Retry-After 3600: answered at once (${secs} s)"
else bad "Retry-After 3600: answered after ${secs} s"; fi
read -r code secs < <(req -H 'X-Stainless-Retry-Count: 1' "$B/ok/after")
check_eq "the paused account: a later request is answered 429 at once" "$code" 429
check_eq "the paused account: nothing more was sent upstream" "$(up_count '^/ok/after')" 0
curl -s -m 5 "$B/__polite/metrics" >"$TMP/metrics.txt"
check_grep "the client's own retry is counted in the metrics" \
  '^polite_gateway_requests_total\{kind="client_retry"\} [1-9]' "$TMP/metrics.txt"
stop_gateway
check_grep "the summary counts the clients' own retries" 'clients: 2 requests, 1 of them their own retries' "$TMP/c.err"
finish
