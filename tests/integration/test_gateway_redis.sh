#!/usr/bin/env bash
# Two polite gateways on one redis-server budget (--budget redis://), each
# with the naive script (gateway/naive.py, 4 threads, no retries) behind it,
# in front of one polite proxy --rate-limit 10/s that neither is told:
# every GET ends 200, the judge sees 0 early requests, and the server's
# 429s stay few because the two share one account (its learned rate and
# its pauses) in Redis. Without the shared budget each gateway would learn
# its own rate and the two would fight: one of them paused again and again
# by the 429s the other's traffic causes, the other racing ahead (measured:
# 25 s against 3 s); sharing, they finish together (the check allows a
# factor of 1.5 on a noisy machine), and the account is in Redis.
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"
command -v redis-server >/dev/null || { bad "redis-server is needed"; finish; exit 1; }
# A redis-server of the test's own on a free port: a port taken in between
# (redis-server exits, or another test's server answers there) is a new try
# on a new port, five in all.
for _ in 1 2 3 4 5; do
  RP=$(free_port)
  (cd "$TMP" && exec redis-server --port "$RP" --bind 127.0.0.1 --save '' \
    --appendonly no >>redis.log 2>&1) &
  RPID=$!
  PIDS+=("$RPID")
  redis_ready "$RPID" "$RP" && break
  kill -9 "$RPID" 2>/dev/null
  wait "$RPID" 2>/dev/null
  RP=
done
[ -n "$RP" ] || { bad "redis-server did not start: $(tail -3 "$TMP/redis.log")"; finish; exit 1; }
N=30
start_proxy --rate-limit 10/s --burst 1 --retry-after-scope host --report "$TMP/px.json"
PX_PID=${PIDS[-1]}
BUDGET=redis://127.0.0.1:$RP/gwtest
start_gateway g1 --upstream "http://$PX" --budget "$BUDGET" --log "$TMP/g1.log"
G1=$GW G1_PID=$GW_PID
start_gateway g2 --upstream "http://$PX" --budget "$BUDGET" --log "$TMP/g2.log"
G2=$GW
python3 "$GWT/naive.py" --threads 4 "http://$G1/a/" $N >"$TMP/c1.out" &
c1=$!
python3 "$GWT/naive.py" --threads 4 "http://$G2/b/" $N >"$TMP/c2.out" &
c2=$!
wait $c1 $c2
echo "# gateway 1: $(cat "$TMP/c1.out")"
echo "# gateway 2: $(cat "$TMP/c2.out")"
check_grep "gateway 1: all $N GETs end 200" "\"status\": \\{\"200\": $N\\}" "$TMP/c1.out"
check_grep "gateway 2: all $N GETs end 200" "\"status\": \\{\"200\": $N\\}" "$TMP/c2.out"
w1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_s"])' "$TMP/c1.out")
w2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["wall_s"])' "$TMP/c2.out")
if python3 -c "import sys; a, b = sorted([$w1, $w2]); sys.exit(0 if b <= 1.5 * a else 1)"; then
  ok "one shared account: the two finish together (${w1} s, ${w2} s)"
else bad "the two do not share: ${w1} s against ${w2} s"; fi
check_grep "the account's keys are in Redis" '^polite:\{gwtest\}:' \
  <(redis-cli -p "$RP" --scan --pattern 'polite:*')
stop_gateway
GW_PID=$G1_PID
stop_gateway
judge_verdict "$PX_PID"
early=$EARLY limited=$LIMITED
check_eq "the judge saw 0 early requests from both" "$early" 0
if [ "$limited" -le 6 ]; then ok "the server answered $limited 429s (<= 10% of $((2 * N)))"
else bad "the server answered $limited 429s"; fi
finish
