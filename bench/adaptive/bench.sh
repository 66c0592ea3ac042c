#!/usr/bin/env bash
# bench/adaptive: clients that are NOT told the limit, side by side against
# nginx limit_req (RATE r/s, burst 1 nodelay, 429 with Retry-After: 1) in
# front of a 100 ms upstream, N GETs at 8 concurrent: Python requests +
# urllib3 Retry with 8 threads, got + Bottleneck (maxConcurrent 8, no
# minTime), and, with --with-polite, `polite run --concurrency 8` with no
# --rate (the learned rate), the same split over two processes sharing a
# file: budget, and polite against a server that states its limit in
# headers (`polite proxy --rate-limit HRATE/s --burst 1`, IETF RateLimit
# fields, in front of the same 100 ms upstream). Prints a markdown table.
# Not a test. Installs got and Bottleneck from the committed lock (npm ci).
# --no-headers skips the server with headers.
# --halve runs only the halved limit: polite (1, then 2 processes on a file:
# budget), N GETs (default 800) against nginx at RATE r/s, reloaded to
# RATE/2 HALVE_AT (8) s into each run; prints the time to follow it and the
# 429s after the reload (bench/adaptive/where.py reads the attempt logs).
# --logs DIR keeps polite's attempt logs (DIR/TAG.part.NN.log, with the
# {"event":"rate",...} lines), summaries and nginx's access log, to see
# where the time went.
#   bench/adaptive/bench.sh [--with-polite|--only-polite] [--no-headers|--halve] [--logs DIR] [POLITE_BINARY] [N] [RATE] [HRATE]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=$HERE/../run # upstream.py, analyse.py, py_client.py
WITH_POLITE='' PEERS=1 LOGS='' NOHDR='' HALVE=''
while :; do
  case "${1:-}" in
  --with-polite) WITH_POLITE=1 ;;
  --only-polite) WITH_POLITE=1 PEERS='' ;;
  --no-headers) NOHDR=1 ;;
  --halve) HALVE=1 WITH_POLITE=1 PEERS='' NGINX_MASTER=on ;;
  --logs) LOGS=$2; shift; mkdir -p "$LOGS" || exit 2 ;;
  *) break ;;
  esac
  shift
done
POLITE=${1:-$HERE/../../build/polite}
N=${2:-$([ -n "$HALVE" ] && echo 800 || echo 600)}
RATE=${3:-40}
HRATE=${4:-10}
CONC=8
T=$(mktemp -d /tmp/polite-bench-adaptive.XXXXXX)
PIDS=()
# Keeps what --logs asked for, then removes the scratch directory.
finish() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -z "$LOGS" ] || cp "$T"/*.part.??.log "$T"/*.part.??.json "$T"/*.reload "$T/ng/logs/access.log" "$LOGS/" 2>/dev/null
  rm -rf "$T"
}
trap finish EXIT

[ -z "$PEERS" ] || (cd "$HERE" && npm ci --no-audit --no-fund --silent) ||
  { echo "bench: npm ci failed" >&2; exit 1; }

python3 "$RUN/upstream.py" "$T/up.port" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
UP=$(cat "$T/up.port")

# nginx on a free port: the limit is per client address, so every client
# here shares it, one after the other.
mkdir -p "$T/ng/logs" "$T/ng/tmp"
# shellcheck source=../run/nginx.sh
. "$RUN/nginx.sh"
conf() { # rate
  sed -e "s|@T@|$T|g" -e "s|@UP@|$UP|g" -e "s|@PORT@|$PORT|g" \
    -e "s|@HTTP@|limit_req_zone \$binary_remote_addr zone=z:1m rate=$1r/s;|" \
    -e "s|@LOCATION@|limit_req zone=z burst=1 nodelay; limit_req_status 429; error_page 429 = @limited;|" \
    "$HERE/nginx.conf.in" >"$T/ng/nginx.conf"
}
for _ in $(seq 20); do
  PORT=$((20000 + RANDOM % 30000))
  conf "$RATE"
  started=
  bench_nginx_start && { started=1; break; }
done
[ -n "${started:-}" ] || { echo "bench: nginx did not start" >&2; cat "$T/ng/stderr" >&2; exit 1; }
B=http://127.0.0.1:$PORT
LOG=$T/ng/logs/access.log

urls() { for i in $(seq 1 "$N"); do echo "$B/item/$i?tool=$1"; done; }
now() { date +%s.%N; }
# One row: wall time (and its ratio to N / RATE), 429s, requests arriving
# within the Retry-After of a 429, requests lost, requests sent.
row() { # tag start end ok name
  read -r seen n429 early < <(python3 "$RUN/analyse.py" "$LOG" "$1")
  local wall
  wall=$(echo "$3 - $2" | bc)
  printf '| %s | %.1f s | %.2f x | %s | %s | %s | %s |\n' "$5" "$wall" \
    "$(echo "$wall * $RATE / $N" | bc -l)" "$n429" "$early" "$((N - $4))" "$seen"
}

table_head() {
  echo "N=$N GETs, nginx limit_req ${RATE} r/s burst 1 nodelay (Retry-After: 1 on 429), 100 ms upstream, $CONC concurrent, no client told the limit"
  echo "ideal wall time N/rate = $(echo "scale=1; $N / $RATE" | bc) s"
  echo
  echo "| client | wall time | / (N/rate) | 429s | early | lost | requests sent |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
}

# Runs `polite run` (no --rate) on $T/TAG.txt split over PROCS processes
# sharing a file: budget (1: no budget); sets S and E (start and end), OK
# (requests ok) and N429 (answers 429) over all of them.
run_parts() { # tag procs
  local f bud=() pids=()
  [ "$2" -gt 1 ] && bud=(--budget "file:$T/$1.budget")
  split -n "r/$2" -d "$T/$1.txt" "$T/$1.part."
  sleep 1.1
  S=$(now)
  for f in "$T/$1.part."??; do
    "$POLITE" run --no-progress --concurrency $CONC --max-attempts 5 "${bud[@]}" \
      --summary-json "$f.json" --log "$f.log" "$f" >"$f.out" 2>"$f.err" &
    pids+=($!)
  done
  wait "${pids[@]}" # not the servers
  E=$(now)
  OK=0 N429=0
  for f in "$T/$1.part."??; do
    OK=$((OK + $(grep -c '"outcome":"ok"' "$f.out")))
    N429=$((N429 + $(jq .status_429 "$f.json")))
  done
}

polite_row() { # tag procs name
  urls "$1" >"$T/$1.txt"
  run_parts "$1" "$2"
  row "$1" "$S" "$E" "$OK" "$3"
}

if [ -n "$HALVE" ]; then
  HALF=$((RATE / 2)) AT=${HALVE_AT:-8}
  # Sets nginx's limit to $1 r/s (the zone's state survives the reload) and
  # prints the wall-clock ms at which it was asked to.
  set_rate() {
    conf "$1"
    date +%s%3N
    nginx -p "$T/ng" -c "$T/ng/nginx.conf" -s reload 2>/dev/null
  }
  echo "N=$N GETs, nginx limit_req $RATE r/s burst 1 nodelay, reloaded to $HALF r/s $AT s into the run (nginx -s reload), 100 ms upstream, $CONC concurrent, no --rate"
  echo "ideal wall time $AT s at $RATE/s, the rest at $HALF/s = $(echo "scale=1; $AT + ($N - $AT * $RATE) / $HALF" | bc) s"
  echo
  echo "| client | wall time | follow: reload to rate <= $HALF/s | 429s while following, per process | 429s after the reload | 429s in all | lost |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  for procs in 1 2; do
    tag=halve$procs
    set_rate "$RATE" >/dev/null
    sleep 1.5 # the new workers are up; the zone refills
    urls "$tag" >"$T/$tag.txt"
    (sleep "$(echo "1.1 + $AT" | bc)"; set_rate "$HALF" >"$T/$tag.reload") &
    timer=$!
    run_parts "$tag" "$procs"
    wait "$timer"
    read -r follow during after all < <(python3 "$HERE/where.py" \
      --reload "$(cat "$T/$tag.reload")" --limit "$HALF" "$T/$tag.part."??.log |
      jq -r '[.follow_s, (.n429_following | map(tostring) | join("+")),
              (.n429_after | map(tostring) | join("+")), .n429] | map(tostring) | join(" ")')
    printf '| %s | %.1f s | %s s | %s | %s | %s | %s |\n' \
      "$([ "$procs" = 1 ] && echo "polite run" || echo "2 x polite run, file: budget")" \
      "$(echo "$E - $S" | bc)" "$follow" "$during" "$after" "$all" "$((N - OK))"
  done
  exit 0
fi

table_head
if [ -n "$WITH_POLITE" ]; then
  polite_row polite 1 "polite run --concurrency $CONC (no --rate)"
  polite_row polite2 2 "2 x polite run --concurrency $CONC, file: budget (no --rate)"
fi

if [ -n "$PEERS" ]; then
sleep 2
urls py >"$T/py.txt"
s=$(now)
python3 "$RUN/py_client.py" "$T/py.txt" $CONC >"$T/py.out" 2>/dev/null
e=$(now)
row py "$s" "$e" "$(grep -c '^200$' "$T/py.out")" \
  "Python requests + urllib3 Retry(5), $CONC threads"

sleep 2
urls got >"$T/got.txt"
s=$(now)
node "$HERE/got_client.mjs" "$T/got.txt" $CONC >"$T/got.out" 2>"$T/got.err"
e=$(now)
row got "$s" "$e" "$(grep -c '^200$' "$T/got.out")" \
  "got (retry 5) + Bottleneck maxConcurrent $CONC"
fi

[ -n "$WITH_POLITE" ] && [ -z "$NOHDR" ] || exit 0
# A server that states its limit: polite proxy (GCRA, burst 1, IETF
# RateLimit / RateLimit-Policy on every answer) in front of the upstream.
"$POLITE" proxy --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$UP" \
  --rate-limit "$HRATE/s" --burst 1 --ready-file "$T/px.addr" \
  --report "$T/px.json" >"$T/px.log" 2>&1 &
PX=$!
PIDS+=("$PX")
for _ in $(seq 100); do [ -s "$T/px.addr" ] && break; sleep 0.05; done
HN=$((HRATE * ${HSEC:-30})) # HSEC s at the limit
echo
echo "N=$HN GETs, polite proxy --rate-limit $HRATE/s --burst 1 (IETF RateLimit headers), 100 ms upstream; ideal N/(q/w) = $((HN / HRATE)) s"
echo
echo "| client | wall time | / (N/(q/w)) | 429s | early | lost |"
echo "|---|---:|---:|---:|---:|---:|"
early_now() { curl -s "http://$(cat "$T/px.addr")/__polite/report" | jq .early_retries; }
hrow() { # procs name
  local i e0 wall
  e0=$(early_now)
  for i in $(seq 1 "$HN"); do echo "http://$(cat "$T/px.addr")/item/$i?tool=h$1"; done >"$T/h$1.txt"
  run_parts "h$1" "$1"
  wall=$(echo "$E - $S" | bc)
  printf '| %s | %.1f s | %.2f x | %s | %s | %s |\n' "$2" "$wall" \
    "$(echo "$wall * $HRATE / $HN" | bc -l)" "$N429" "$(($(early_now) - e0))" "$((HN - OK))"
}
hrow 1 "polite run --concurrency $CONC (no --rate)"
hrow 2 "2 x polite run --concurrency $CONC, file: budget"
