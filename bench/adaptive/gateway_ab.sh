#!/usr/bin/env bash
# bench/adaptive/gateway_ab.sh: the learned rate through `polite gateway`,
# two binaries (say main's and a branch's) run alternately (A B A B ...),
# ROUNDS rounds, so that a noisy machine's load falls on both alike. Two
# rows, as bench/gateway's: the naive script (tests/integration/gateway/
# naive.py, 8 threads of Python requests, NAIVE_N GETs) through one gateway
# not told the limit, against nginx limit_req 40 r/s burst 1 in front of a
# 100 ms upstream; and the official OpenAI Node SDK (its retries on, 8 at a
# time, SDK_N chat completions) with the gateway as its base URL, against
# nginx limit_req 20 r/s burst 1 in front of an API that answers at once;
# and, when redis-server is there, two gateways on one Redis budget
# (--budget redis://), 4 threads of the naive script each, against the
# naive row's nginx (bench/gateway/net.sh's row, here A/B).
# Prints one Markdown table: each run's wall / floor, 429s at nginx (share),
# early requests, and the gateway's CPU per request (utime+stime). Each
# run's gateway log is kept in OUT (default: a temporary directory, removed)
# with its rate events, to read which rule fired, and nginx's access log
# of each row (naive.access.log, sdk.access.log). Not a test: it never fails
# on a slow machine.
#   bench/adaptive/gateway_ab.sh A_BINARY B_BINARY [ROUNDS] [OUT]  (default 2)
# NAIVE=0, TWO=0 or SDK=0 skips a row.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
A=$1 B=$2 ROUNDS=${3:-2}
NAIVE_N=${NAIVE_N:-600} SDK_N=${SDK_N:-200}
tmp=$(mktemp -d /tmp/polite-bench-gwab.XXXXXX)
OUT=${4:-$tmp/logs}
mkdir -p "$OUT"
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  for r in naive sdk; do
    [ -f "$tmp/$r/ng/logs/access.log" ] && cp "$tmp/$r/ng/logs/access.log" "$OUT/$r.access.log"
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
. "$src/bench/run/nginx.sh"

# nginx_for DIR UPSTREAM RATE: nginx limit_req RATE r/s burst 1 in front of
# UPSTREAM, its files in DIR; sets NG (ADDR:PORT).
nginx_for() {
  local T=$1
  mkdir -p "$T/ng/logs" "$T/ng/tmp"
  bench_nginx_limited "$2" "$3" || { echo "gateway_ab: nginx did not start" >&2; exit 1; }
  NG=127.0.0.1:$PORT
}

# upstream DIR SCRIPT ARGS...: a scripted upstream; sets UP (its port).
upstream() {
  local d=$1
  shift
  python3 "$@" >"$d/up.out" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 100); do [ -s "$d/up.port" ] && break; sleep 0.05; done
  UP=$(cat "$d/up.port")
}

# gw BIN LOG UPSTREAM_URL [ARGS...]: a gateway; sets GWP and GWA.
gw() {
  local bin=$1 log=$2 up=$3
  shift 3
  rm -f "$tmp/gw.addr"
  "$bin" gateway --listen 127.0.0.1:0 --ready-file "$tmp/gw.addr" --upstream "$up" \
    --log "$log" "$@" >/dev/null 2>"$log.err" &
  GWP=$!
  PIDS+=("$GWP")
  for _ in $(seq 100); do [ -s "$tmp/gw.addr" ] && break; sleep 0.05; done
  GWA=$(cat "$tmp/gw.addr")
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# cell ACCESS_LOG TAG N FLOOR_S WALL_S CPU_TICKS: one run's cell.
cell() {
  local seen n429 early
  read -r seen n429 early < <(python3 "$src/bench/run/analyse.py" "$1" "$2")
  awk -v w="$5" -v f="$4" -v q="$n429" -v s="$seen" -v e="$early" -v c="$6" \
    -v n="$3" -v hz="$(getconf CLK_TCK)" 'BEGIN {
      printf "%.2fx, %d (%.1f%%) 429, %d early, %.0f us", w / f, q,
        100 * q / (s > 0 ? s : 1), e, c * 1e6 / hz / n }'
}

# run_naive BIN ROUND NAME: one naive-script run; prints its cell.
run_naive() {
  local tag=naive$2$3 c0 o
  sleep 1.2
  gw "$1" "$OUT/$tag.log" "http://$NG_NAIVE"
  c0=$(ticks "$GWP")
  o=$(python3 "$src/tests/integration/gateway/naive.py" --threads 8 \
    "http://$GWA/item/{}?tool=$tag" "$NAIVE_N")
  local c1
  c1=$(ticks "$GWP")
  kill -TERM "$GWP"
  wait "$GWP" 2>/dev/null
  cell "$tmp/naive/ng/logs/access.log" "$tag" "$NAIVE_N" "$((NAIVE_N / 40))" \
    "$(echo "$o" | jq .wall_s)" "$((c1 - c0))"
}

# run_two BIN ROUND NAME: two gateways on one Redis budget (its own name
# per run), 4 naive threads each, NAIVE_N GETs in all; prints its cell
# (CPU: both gateways').
run_two() {
  local tag=two$2$3 g1 a1 g2 a2 c0 c1 p1 p2
  sleep 1.2
  gw "$1" "$OUT/$tag-1.log" "http://$NG_NAIVE" --budget "redis://127.0.0.1:$RP/$tag"
  g1=$GWP a1=$GWA
  gw "$1" "$OUT/$tag-2.log" "http://$NG_NAIVE" --budget "redis://127.0.0.1:$RP/$tag"
  g2=$GWP a2=$GWA
  c0=$(($(ticks "$g1") + $(ticks "$g2")))
  python3 "$src/tests/integration/gateway/naive.py" --threads 4 \
    "http://$a1/item/{}?tool=$tag" $((NAIVE_N / 2)) >"$tmp/$tag-1.out" &
  p1=$!
  python3 "$src/tests/integration/gateway/naive.py" --threads 4 \
    "http://$a2/item/1{}?tool=$tag" $((NAIVE_N / 2)) >"$tmp/$tag-2.out" &
  p2=$!
  wait "$p1" "$p2"
  c1=$(($(ticks "$g1") + $(ticks "$g2")))
  kill -TERM "$g1" "$g2"
  wait "$g1" "$g2" 2>/dev/null
  local ok wall
  ok=$(cat "$tmp/$tag-1.out" "$tmp/$tag-2.out" | jq -s 'map(.status."200" // 0) | add')
  wall=$(cat "$tmp/$tag-1.out" "$tmp/$tag-2.out" | jq -s 'map(.wall_s) | max')
  [ "$ok" = "$NAIVE_N" ] || printf '%s of %s ok, ' "$ok" "$NAIVE_N"
  cell "$tmp/naive/ng/logs/access.log" "$tag" "$NAIVE_N" "$((NAIVE_N / 40))" \
    "$wall" "$((c1 - c0))"
}

# run_sdk BIN ROUND NAME: one OpenAI SDK run; prints its cell.
run_sdk() {
  local tag=sdk$2$3 c0 c1 o
  sleep 1.2
  gw "$1" "$OUT/$tag.log" "http://$NG_SDK/v1"
  c0=$(ticks "$GWP")
  o=$(POLITE_QUERY="tool=$tag" node "$src/tests/node/openai_chat.mjs" "http://$GWA" "$SDK_N" 8)
  c1=$(ticks "$GWP")
  kill -TERM "$GWP"
  wait "$GWP" 2>/dev/null
  local ok
  ok=$(echo "$o" | jq .ok)
  [ "$ok" = "$SDK_N" ] || printf '%s of %s ok, ' "$ok" "$SDK_N"
  cell "$tmp/sdk/ng/logs/access.log" "$tag" "$SDK_N" "$((SDK_N / 20))" \
    "$(echo "$o" | jq .wall_s)" "$((c1 - c0))"
}

rows=()
if [ "${NAIVE:-1}" != 0 ]; then
  mkdir -p "$tmp/naive"
  upstream "$tmp/naive" "$src/bench/run/upstream.py" "$tmp/naive/up.port"
  nginx_for "$tmp/naive" "$UP" 40
  NG_NAIVE=$NG
  rows+=(naive)
fi
if [ "${TWO:-1}" != 0 ] && command -v redis-server >/dev/null; then
  if [ -z "${NG_NAIVE:-}" ]; then
    mkdir -p "$tmp/naive"
    upstream "$tmp/naive" "$src/bench/run/upstream.py" "$tmp/naive/up.port"
    nginx_for "$tmp/naive" "$UP" 40
    NG_NAIVE=$NG
  fi
  # A random port may be taken (another bench's, a helper's): up to five
  # tries, each waited for, or the row is left out with the reason (a
  # redis-server that never answered left every gateway of the row failing
  # to connect and the table empty).
  up=0
  for _ in 1 2 3 4 5; do
    RP=$((20000 + RANDOM % 30000))
    redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
    rpid=$!
    for _ in $(seq 50); do
      redis-cli -p "$RP" ping >/dev/null 2>&1 && { up=1; break; }
      kill -0 "$rpid" 2>/dev/null || break
      sleep 0.1
    done
    [ "$up" = 1 ] && { PIDS+=("$rpid"); break; }
    kill "$rpid" 2>/dev/null
    wait "$rpid" 2>/dev/null
  done
  if [ "$up" = 1 ]; then
    rows+=(two)
  else
    echo "gateway_ab: redis-server did not answer on five ports: the two-gateway row is left out" >&2
  fi
fi
if [ "${SDK:-1}" != 0 ] && command -v node >/dev/null && "$src/tests/node/install.sh" >/dev/null 2>&1; then
  mkdir -p "$tmp/sdk"
  upstream "$tmp/sdk" "$src/tests/integration/upstream.py" "$tmp/sdk/up.port" "$tmp/sdk/up.rec"
  nginx_for "$tmp/sdk" "$UP" 20
  NG_SDK=$NG
  rows+=(sdk)
fi

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A = $A"
echo "B = $B"
echo
echo "| row | A: wall / floor, 429s at nginx, early, gateway CPU per request | B: the same |"
echo "|---|---|---|"
for row in "${rows[@]}"; do
  a=() b=()
  for r in $(seq 1 "$ROUNDS"); do
    a+=("$("run_$row" "$A" "$r" a)")
    b+=("$("run_$row" "$B" "$r" b)")
  done
  case $row in
  naive) name="naive script, $NAIVE_N GETs, nginx 40 r/s burst 1, 100 ms upstream" ;;
  two) name="2 gateways, one Redis budget, 4 naive threads each, $NAIVE_N GETs, the same nginx" ;;
  sdk) name="OpenAI Node SDK (base URL), $SDK_N chat completions, nginx 20 r/s burst 1" ;;
  esac
  printf '| %s | %s | %s |\n' "$name" "$(printf '%s; ' "${a[@]}")" "$(printf '%s; ' "${b[@]}")"
done
echo
echo "(the gateway's rate events of each run: $OUT; a shared machine makes every"
echo "wall-clock number noisy: rerun on a quiet one.)"
