#!/usr/bin/env bash
# polite_client learns the start rate (issue #10): four threads share one
# client (examples/fetch.c) and make their calls against real limiters.
#  - nginx limit_req (10 r/s, burst 1, 429 with Retry-After: 1, no rate-limit
#    headers): with the default rate (learned) every call ends ok and few
#    are answered 429; the same client with --rate none (unpaced, what
#    polite_client did before #10) is the control, and the learned run must
#    see far fewer 429s per call than it. A 429 in one call slows the others
#    only if the rate is kept between calls and shared by the threads.
#  - --max-rate caps the learned rate.
#  - polite proxy --rate-limit 10/s --burst 3 (IETF RateLimit headers): the
#    headers plan the rate before any 429. The burst is 3, not 1: at burst 1
#    the limiter tolerates only 100 ms of lateness, and on a loaded machine
#    (CI runs four tests at once on two cores) a thread scheduled 100 ms late
#    delivers two starts together and draws a 429 the client could not avoid
#    (seen in CI: 3 retries, 7.9 s instead of 4.1 s).
# Bounds on counts, not tight timings: the machine may be loaded.
. "$(dirname "$0")/lib.sh"
FETCH=$POLITE_BUILD/example_fetch
[ -x "$FETCH" ] || { echo "no $FETCH"; echo "0 passed, 1 failed"; exit 1; }
start_nginx 10r/s || { echo "0 passed, 1 failed"; exit 1; }
NG_LOG=$TMP/nginx/logs/access.log

# fetch TAG N BASE ARGS...: N calls to BASE/TAG/i from 4 threads; sets RC,
# WALL (ms) and OK (calls that ended ok).
fetch() {
  local tag=$1 n=$2 base=$3 i t0
  shift 3
  local urls=()
  for i in $(seq 1 "$n"); do urls+=("$base/$tag/$i"); done
  t0=$(date +%s%N)
  "$FETCH" --threads 4 "$@" "${urls[@]}" >"$TMP/$tag.out" 2>&1
  RC=$?
  WALL=$((($(date +%s%N) - t0) / 1000000))
  OK=$(grep -c '^ok ' "$TMP/$tag.out")
}
# Requests nginx answered 429 for TAG.
ng429() { grep -c "GET /$1/.* 429 " "$NG_LOG"; }

# ---- learned (the default) --------------------------------------------------
N=60
fetch learned $N "http://127.0.0.1:$NG_PORT"
L429=$(ng429 learned)
echo "# learned: $OK/$N ok, $L429 429s, $(grep -c 'GET /learned/' "$NG_LOG") requests, wall $WALL ms (floor $((N * 100)) ms)"
check "learned: exit 0" [ "$RC" -eq 0 ]
check_eq "learned: every call ok" "$OK" "$N"
check "learned: at most 10% answered 429" [ "$L429" -le $((N / 10)) ]
# A rate stuck at the controller's floor (0.5/s) or calls made one at a time
# would miss this; the controller's speed is judged in its own tests.
check "learned: wall below 3 x N / limit" [ "$WALL" -lt $((N * 100 * 3)) ]

# ---- the control: unpaced ---------------------------------------------------
sleep 1.1 # nginx's bucket drains
NC=16
fetch none $NC "http://127.0.0.1:$NG_PORT" --rate none
C429=$(ng429 none)
echo "# control (--rate none): $OK/$NC ok, $C429 429s, wall $WALL ms"
check "control: unpaced calls are throttled (429s >= calls / 2)" [ "$C429" -ge $((NC / 2)) ]
# 429s per call: learned x 4 below the control's (without the learned rate
# both runs are the same unpaced client).
check "learned: 429s per call below a quarter of the control's" \
  [ $((L429 * NC * 4)) -lt $((C429 * N)) ]

# ---- --max-rate caps it -------------------------------------------------------
sleep 1.1
NM=12
fetch capped $NM "http://127.0.0.1:$NG_PORT" --max-rate 4/s
echo "# capped at 4/s: $OK/$NM ok, $(ng429 capped) 429s, wall $WALL ms"
check_eq "capped: every call ok" "$OK" "$NM"
check_eq "capped: no 429 below the limit" "$(ng429 capped)" 0
check "capped: $NM starts take at least $((NM - 1)) intervals of 250 ms" \
  [ "$WALL" -ge $(((NM - 1) * 250 - 50)) ]

# ---- polite proxy: the rate from its RateLimit headers ----------------------
start_pyserver
start_proxy --upstream "http://127.0.0.1:$PY_PORT" --rate-limit 10/s --burst 3
check "the proxy is listening" [ -n "${PX:-}" ]
NP=40
fetch px $NP "http://$PX/ok"
# The proxy answers its 429s itself: count the calls' extra attempts.
RETRIES=$(($(grep -o 'attempts=[0-9]*' "$TMP/px.out" | cut -d= -f2 | paste -sd+) - NP))
echo "# proxy 10/s with headers: $OK/$NP ok, $RETRIES retries, wall $WALL ms (floor $((NP * 100)) ms)"
check_eq "proxy: every call ok" "$OK" "$NP"
check "proxy: at most 2 retries" [ "$RETRIES" -le 2 ]
finish
