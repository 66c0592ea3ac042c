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
#   bench/adaptive/bench.sh [--with-polite|--only-polite] [POLITE_BINARY] [N] [RATE] [HRATE]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=$HERE/../run # upstream.py, analyse.py, py_client.py
WITH_POLITE= PEERS=1
[ "${1:-}" = --with-polite ] && { WITH_POLITE=1; shift; }
[ "${1:-}" = --only-polite ] && { WITH_POLITE=1; PEERS=; shift; }
POLITE=${1:-$HERE/../../build/polite}
N=${2:-600}
RATE=${3:-40}
HRATE=${4:-10}
CONC=8
T=$(mktemp -d /tmp/polite-bench-adaptive.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill $p 2>/dev/null; done; wait 2>/dev/null; rm -rf "$T"' EXIT

[ -z "$PEERS" ] || (cd "$HERE" && npm ci --no-audit --no-fund --silent) ||
  { echo "bench: npm ci failed" >&2; exit 1; }

python3 "$RUN/upstream.py" "$T/up.port" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
UP=$(cat "$T/up.port")

# nginx on a free port: the limit is per client address, so every client
# here shares it, one after the other.
mkdir -p "$T/ng/logs" "$T/ng/tmp"
. "$RUN/nginx.sh"
for _ in $(seq 20); do
  PORT=$((20000 + RANDOM % 30000))
  sed -e "s|@T@|$T|g" -e "s|@UP@|$UP|g" -e "s|@RATE@|$RATE|g" \
    -e "s|@PORT@|$PORT|g" "$HERE/nginx.conf.in" >"$T/ng/nginx.conf"
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

echo "N=$N GETs, nginx limit_req ${RATE} r/s burst 1 nodelay (Retry-After: 1 on 429), 100 ms upstream, $CONC concurrent, no client told the limit"
echo "ideal wall time N/rate = $(echo "scale=1; $N / $RATE" | bc) s"
echo
echo "| client | wall time | / (N/rate) | 429s | early | lost | requests sent |"
echo "|---|---:|---:|---:|---:|---:|---:|"

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
      --summary-json "$f.json" "$f" >"$f.out" 2>"$f.err" &
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

[ -n "$WITH_POLITE" ] || exit 0
# A server that states its limit: polite proxy (GCRA, burst 1, IETF
# RateLimit / RateLimit-Policy on every answer) in front of the upstream.
"$POLITE" proxy --listen 127.0.0.1:0 --upstream "http://127.0.0.1:$UP" \
  --rate-limit "$HRATE/s" --burst 1 --ready-file "$T/px.addr" \
  --report "$T/px.json" >"$T/px.log" 2>&1 &
PX=$!
PIDS+=($PX)
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
