#!/usr/bin/env bash
# polite_client's learned rate lives in the budget: two processes
# (examples/fetch.c, four threads each) share one file: budget against nginx
# limit_req (10 r/s, burst 1, 429 with Retry-After: 1, no rate-limit
# headers). Every call ends ok, few are answered 429, and the file holds the
# rate they learned, which polite_client_rate_per_s reports. Without the
# learned rate the clients would be unpaced (see test_client_learned_rate.sh
# for that control) and the file would hold no rate. Bounds on counts, not
# tight timings: the machine may be loaded.
. "$(dirname "$0")/lib.sh"
FETCH=$POLITE_BUILD/example_fetch
[ -x "$FETCH" ] || { echo "no $FETCH"; echo "0 passed, 1 failed"; exit 1; }
start_nginx 10r/s || { echo "0 passed, 1 failed"; exit 1; }
NG_LOG=$TMP/nginx/logs/access.log
N=40 # calls per process

# two TAG ARGS...: both processes, N calls each to /TAG/P/i; sets RC (0 when
# both exit 0), WALL (ms), OK (calls ended ok, both) and RATES (each one's
# "start rate now", sorted).
two() {
  local tag=$1 p i t0 pids=()
  shift
  t0=$(date +%s%N)
  for p in 1 2; do
    local urls=()
    for i in $(seq 1 $N); do urls+=("http://127.0.0.1:$NG_PORT/$tag/$p/$i"); done
    "$FETCH" --threads 4 "$@" "${urls[@]}" >"$TMP/$tag.$p.out" 2>&1 &
    pids+=($!)
  done
  RC=0
  for p in "${pids[@]}"; do wait "$p" || RC=1; done
  WALL=$((($(date +%s%N) - t0) / 1000000))
  OK=$(cat "$TMP/$tag".[12].out | grep -c '^ok ')
  RATES=$(sed -n 's/^fetch: start rate now \([0-9.]*\)\/s$/\1/p' "$TMP/$tag".[12].out | sort -n | tr '\n' ' ')
}
ng429() { grep -c "GET /$1/.* 429 " "$NG_LOG"; }

two shared --budget "file:$TMP/budget"
S429=$(ng429 shared)
echo "# shared file: budget: $OK/$((2 * N)) ok, $S429 429s, wall $WALL ms (floor $((2 * N * 100)) ms), rates now $RATES"
check "shared: both processes exit 0" [ "$RC" -eq 0 ]
check_eq "shared: every call ok" "$OK" $((2 * N))
check "shared: at most 10% answered 429" [ "$S429" -le $((2 * N / 10)) ]
check "shared: wall below 3 x N / limit" [ "$WALL" -lt $((2 * N * 100 * 3)) ]
"$POLITE" budget show --json "file:$TMP/budget" >"$TMP/show.json" 2>&1
check "shared: the file holds the learned rate, cut at least once" \
  jq -e '.rate_per_s > 0 and .rate_per_s < 20 and .generation >= 1' "$TMP/show.json"
# The process that ended last read the budget after every publish.
FILE_RATE=$(jq .rate_per_s "$TMP/show.json")
# shellcheck disable=SC2086 # RATES: one number a word, split on purpose
check "shared: a process reports the file's rate ($FILE_RATE/s; they say $RATES)" \
  python3 -c "import sys; f = float(sys.argv[1]); sys.exit(0 if any(abs(float(r) - f) <= f * 0.01 for r in sys.argv[2:]) else 1)" "$FILE_RATE" $RATES
finish
