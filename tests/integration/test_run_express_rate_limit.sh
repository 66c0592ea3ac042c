#!/usr/bin/env bash
# The learned rate against a real third-party limiter that states its
# limit in headers: Express with express-rate-limit (npm, committed lock in
# tests/node), a fixed window of 20 requests per 2 s per client, each answer
# after a 100 ms handler, in the four header forms it can send (IETF
# draft-6 RateLimit-*, draft-7 RateLimit: limit=, draft-8 RateLimit "name";
# r; t with RateLimit-Policy, and the legacy X-RateLimit-* with an epoch
# reset). `polite run --concurrency 8` is not told the limit; 60 GETs each.
# Issue #10's target for a server with headers: at most 0.5% of requests
# answered 429 and a wall within 1.1 x N / (q/w) (a benchmark; here the
# bound is loose for a loaded machine, but below the 1.68 x that spreading
# over the rounded-up reset gave). Then two processes sharing a file:
# budget against the draft-8 form.
. "$(dirname "$0")/lib.sh"

NODE_DIR=$POLITE_SRC/tests/node
if ! command -v node >/dev/null || ! "$NODE_DIR/install.sh"; then
  bad "node and the npm packages of tests/node are needed"
  finish
  exit 1
fi

N=60 LIMIT=20 WINDOW_MS=2000
FLOOR_MS=$((N * WINDOW_MS / LIMIT))

# serve MODE: starts the limiter; sets SRV_PORT, SRV_LOG.
serve() {
  SRV_LOG=$TMP/$1.log
  : >"$SRV_LOG"
  rm -f "$TMP/port"
  node "$NODE_DIR/ratelimit_server.mjs" "$TMP/port" "$1" "$LIMIT" \
    "$WINDOW_MS" 100 "$SRV_LOG" &
  SRV_PID=$!
  PIDS+=("$SRV_PID")
  for _ in $(seq 100); do
    [ -s "$TMP/port" ] && break
    sleep 0.05
  done
  SRV_PORT=$(cat "$TMP/port" 2>/dev/null)
}

stop() { kill "$SRV_PID" 2>/dev/null && wait "$SRV_PID" 2>/dev/null; }

# judge WHAT WALL_MS [BOUND_TENTHS]: the server's record of one run; the
# wall bound is BOUND_TENTHS / 10 x the floor (14).
judge() {
  local bound=${3:-14}
  local sent n429 early
  sent=$(wc -l <"$SRV_LOG")
  n429=$(awk '$2 == 429' "$SRV_LOG" | wc -l)
  early=$(awk '$3 == 1' "$SRV_LOG" | wc -l)
  echo "# $1: wall $2 ms (floor $FLOOR_MS ms), $sent sent, $n429 answered 429, $early early"
  check_eq "$1: every request answered once or retried" "$((sent - n429))" "$N"
  # 0.5% of 60 is 0.3: one 429 is already above it
  check_eq "$1: no request answered 429" "$n429" 0
  check_eq "$1: no request before a Retry-After" "$early" 0
  if [ "$2" -le $((FLOOR_MS * bound / 10)) ]; then
    ok "$1: wall within $bound/10 x the floor"
  else
    bad "$1: wall $2 ms is above $bound/10 x the floor ($FLOOR_MS ms)"
  fi
}

now_ms() { date +%s%3N; }

for mode in draft-6 draft-7 draft-8 legacy; do
  serve "$mode"
  if [ -z "$SRV_PORT" ]; then
    bad "$mode: the limiter did not start"
    continue
  fi
  seq "$N" | sed "s|.*|http://127.0.0.1:$SRV_PORT/&|" >"$TMP/in"
  t0=$(now_ms)
  "$POLITE" run --no-progress -q --concurrency 8 --max-attempts 5 \
    --summary-json "$TMP/$mode.json" --log "$TMP/$mode.attempts" "$TMP/in" \
    >"$TMP/$mode.out" 2>"$TMP/$mode.err"
  rc=$?
  t1=$(now_ms)
  stop
  check_eq "$mode: polite run succeeds" "$rc" 0
  check_eq "$mode: every result ok" "$(grep -c '"outcome":"ok"' "$TMP/$mode.out")" "$N"
  check "$mode: the rate was set from the headers" jq -e -s \
    'map(select(.event == "rate" and .reason == "headers")) | length >= 1' \
    "$TMP/$mode.attempts"
  # The legacy reset is the window's end as an epoch second rounded up,
  # the same in every answer: up to a second late per 2 s window, which no
  # answer sharpens (1.15-1.47 x seen, depending on where the windows fall
  # within the second), so its bound only catches a rate stuck low.
  if [ "$mode" = legacy ]; then
    judge "$mode" $((t1 - t0)) 17
  else
    judge "$mode" $((t1 - t0))
  fi
done

# Two processes, one file: budget, one limiter (one client address).
serve draft-8
seq "$N" | sed "s|.*|http://127.0.0.1:$SRV_PORT/&|" >"$TMP/in"
head -n $((N / 2)) "$TMP/in" >"$TMP/in.a"
tail -n +$((N / 2 + 1)) "$TMP/in" >"$TMP/in.b"
t0=$(now_ms)
for p in a b; do
  "$POLITE" run --no-progress -q --concurrency 8 --max-attempts 5 \
    --budget "file:$TMP/budget" "$TMP/in.$p" >"$TMP/two.$p.out" 2>"$TMP/two.$p.err" &
  eval "pid_$p=\$!"
done
# shellcheck disable=SC2154 # pid_a: set by the eval above
wait "$pid_a"
rc_a=$?
# shellcheck disable=SC2154 # pid_b: set by the eval above
wait "$pid_b"
rc_b=$?
t1=$(now_ms)
stop
check_eq "two processes: both succeed" "$rc_a$rc_b" 00
check_eq "two processes: every result ok" \
  "$(cat "$TMP/two.a.out" "$TMP/two.b.out" | grep -c '"outcome":"ok"')" "$N"
judge "two processes, one file: budget" $((t1 - t0))
finish
