#!/usr/bin/env bash
# Bodies through polite gateway (curl, the scripted API behind a base URL):
#  - a request body arrives whole (sha256), with and without
#    Expect: 100-continue;
#  - a keyed PUT answered 429 is retried with its body kept (both attempts
#    carry all of it);
#  - a body larger than --retry-body-max is sent once and not retried, even
#    with a key: its 429 comes back;
#  - answers stream through: a 20 MiB one with a length, a chunked one and
#    a close-delimited one arrive whole;
#  - kill -9 of the gateway loses only what was in flight: each waiting
#    client sees a connection error, never a wrong answer.
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"
start_upstream
start_gateway a --upstream "http://$UP" --retry-body-max 64k --spread 0 --log "$TMP/a.log"
B=http://$GW
head -c $((3 << 20)) /dev/urandom >"$TMP/big.bin"
head -c 20000 /dev/urandom >"$TMP/small.bin"
want=$(sha256sum "$TMP/big.bin" | cut -d' ' -f1)

for expect in "" "Expect: 100-continue"; do
  got=$(curl -s -m 20 -H "$expect" --data-binary @"$TMP/big.bin" "$B/echo" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sha256"])')
  check_eq "a 3 MiB POST arrives whole ${expect:+($expect)}" "$got" "$want"
done

code=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -X PUT -H 'Idempotency-Key: put-1' \
  --data-binary @"$TMP/small.bin" "$B/flip/put?n=1&ra=1")
check_eq "a PUT answered 429 is retried with its body" "$code" 200
check_eq "both attempts carry the whole body" \
  "$(grep '/flip/put' "$TMP/up.rec" | grep -c '"len": 20000')" 2

code=$(curl -s -m 20 -o /dev/null -w '%{http_code}' -X POST -H 'Idempotency-Key: big-1' \
  --data-binary @"$TMP/big.bin" "$B/flip/bigpost?n=1&ra=1")
check_eq "a body over --retry-body-max: its 429 comes back" "$code" 429
check_eq "a body over --retry-body-max is sent once" "$(up_count '^/flip/bigpost')" 1

check_eq "a 20 MiB answer with a length arrives whole" \
  "$(curl -s -m 30 "$B/big?mb=20" | wc -c)" $((20 << 20))
check_eq "a chunked answer arrives whole" \
  "$(curl -s -m 10 "$B/sse?ms=1&n=50" | grep -c '^data: ')" 50
check_eq "a close-delimited answer arrives whole" \
  "$(curl -s -m 10 "$B/close?kb=300" | wc -c)" $((300 << 10))

# ---- kill -9 -----------------------------------------------------------------
for i in 1 2 3; do
  curl -s -m 20 -o "$TMP/k$i.body" -w '%{http_code}' "$B/slow?ms=3000" >"$TMP/k$i.code" 2>/dev/null &
  eval "k$i=\$!"
done
# Killed once the upstream has all three (they are in flight), not after
# a guessed second.
wait_count 3 '"path": "/slow\?ms=3000"' "$TMP/up.rec"
kill -9 "$GW_PID"
wait "$GW_PID" 2>/dev/null
for i in 1 2 3; do
  eval "wait \$k$i"
  rc=$?
  if [ "$rc" -ne 0 ] && [ "$(cat "$TMP/k$i.code")" = 000 ] && [ ! -s "$TMP/k$i.body" ]; then
    ok "kill -9: client $i sees a connection error (curl exit $rc), no answer"
  else bad "kill -9: client $i: curl exit $rc, status $(cat "$TMP/k$i.code")"; fi
done
finish
