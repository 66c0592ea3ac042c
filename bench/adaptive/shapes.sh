#!/usr/bin/env bash
# bench/adaptive/shapes.sh: the learned rate against real limiters of the
# shapes of the limiter zoo (tests/sim), each beside the simulation of the
# same limiter (polite_sim --row), so the table shows whether the
# simulation predicts the real runs. No client is told the limit. Shapes:
#   nginx-burst     nginx limit_req RATE r/s burst=BURST nodelay, Retry-After 1
#   nginx-conn      nginx limit_conn 4, limit_conn_status 429, no Retry-After
#   express-fixed   express-rate-limit 100 per 5 s, its headers off (so no
#                   Retry-After either): a bare fixed window
#   haproxy-counter HAProxy stick table, http_req_rate(1s) above 40 denied
#                   with 429 and Retry-After 1 (denied requests count too)
#   nginx-shared    nginx limit_req RATE r/s burst=1, a second caller on the
#                   same account sending 10/s throughout
# Clients: polite run --concurrency 8 (1 process, and 2 on a file: budget)
# and Python requests + urllib3 Retry with 8 threads. Each real limiter
# stands in front of a 100 ms upstream. Prints a markdown table; not a
# test. The machine's load is printed with it: on a shared machine the
# real walls are noisy, the simulated ones are not.
#   bench/adaptive/shapes.sh [--shapes 'a b ...'] [--logs DIR] [POLITE] [N]
#   bench/adaptive/shapes.sh [--shapes 'a b ...'] [--logs DIR] --ab A B ROUNDS [N]
# --ab compares two builds on a noisy machine: per shape and round it runs
# A and B one after the other (1 process A B, then 2 processes A B), each
# beside its own build's polite_sim, then prints each build's mean; the
# urllib3 row runs once per shape. --logs DIR keeps every polite run's
# attempt log (--log: its rate events, python3 rates.py) as
# DIR/SHAPE.BUILD.PROCS.ROUND.PART.log.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
RUN=$HERE/../run # upstream.py, analyse.py, py_client.py, nginx.sh
NODE_DIR=$HERE/../../tests/node
SHAPES="nginx-burst nginx-conn express-fixed haproxy-counter nginx-shared"
AB='' ROUNDS=1 LOGS=''
while [ $# -gt 0 ]; do
  case "$1" in
  --shapes) SHAPES=$2; shift 2 ;;
  --logs) LOGS=$2; shift 2 ;;
  --ab) AB=1 A_BIN=$2 B_BIN=$3 ROUNDS=$4; shift 4; break ;;
  *) break ;;
  esac
done
if [ -n "$AB" ]; then
  POLITE=$A_BIN
  N=${1:-600}
  [[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "shapes: --ab A B ROUNDS: ROUNDS is a count" >&2; exit 2; }
  for b in "$A_BIN" "$B_BIN"; do
    [ -x "$b" ] || { echo "shapes: $b is not an executable" >&2; exit 2; }
  done
else
  POLITE=${1:-$HERE/../../build/polite}
  N=${2:-600}
fi
SIM=$(dirname "$POLITE")/polite_sim
[ -n "$LOGS" ] && mkdir -p "$LOGS"
RATE=40 BURST=20 CONC=8
T=$(mktemp -d /tmp/polite-bench-shapes.XXXXXX)
PIDS=()
finish() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap finish EXIT
[ -x "$SIM" ] || { echo "shapes: $SIM missing (make build)" >&2; exit 1; }

python3 "$RUN/upstream.py" "$T/up.port" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
UP=$(cat "$T/up.port")
now() { date +%s.%N; }

# ---- the limiters ---------------------------------------------------------

# nginx in front of the upstream (bench/adaptive/nginx.conf.in); $1: the
# limit's directives (http level), $2: the location's. Sets B (base URL)
# and LOG.
nginx_up() {
  mkdir -p "$T/ng/logs" "$T/ng/tmp"
  # shellcheck source=../run/nginx.sh
  . "$RUN/nginx.sh"
  for _ in $(seq 20); do
    PORT=$((20000 + RANDOM % 30000))
    sed -e "s|@T@|$T|g" -e "s|@UP@|$UP|g" -e "s|@PORT@|$PORT|g" \
      -e "s|@HTTP@|$1|" -e "s|@LOCATION@|$2|" "$HERE/nginx.conf.in" \
      >"$T/ng/nginx.conf"
    bench_nginx_start && break
    PORT=
  done
  [ -n "$PORT" ] || { echo "shapes: nginx did not start" >&2; return 1; }
  NGPID=${PIDS[-1]}
  B=http://127.0.0.1:$PORT LOG=$T/ng/logs/access.log
}

nginx_down() {
  kill "$NGPID" 2>/dev/null
  wait "$NGPID" 2>/dev/null
  rm -rf "$T/ng"
}

# HAProxy in front of the upstream: a stick table of http_req_rate(1s) per
# source; above 40 in the last second a request is answered 429 with
# Retry-After 1 (tracked first, so a refused request counts as well). Its
# log (accept ms, status, URI, handshake and idle ms) goes to $T/hap.log.
haproxy_up() {
  for _ in $(seq 20); do
    PORT=$((20000 + RANDOM % 30000))
    cat >"$T/hap.cfg" <<EOF
global
  log stdout format raw local0
  maxconn 4096
defaults
  mode http
  log global
  log-format "%Ts%ms %ST %HU %Th %Ti"
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend f
  bind 127.0.0.1:$PORT
  stick-table type ip size 1k expire 30s store http_req_rate(1s)
  http-request track-sc0 src
  http-request return status 429 content-type text/plain string "limited" hdr Retry-After 1 if { sc_http_req_rate(0) gt 40 } !{ path /probe }
  default_backend b
backend b
  http-reuse always
  server up 127.0.0.1:$UP
EOF
    haproxy -f "$T/hap.cfg" >"$T/hap.log" 2>"$T/hap.err" &
    HPID=$!
    for _ in $(seq 50); do
      curl -s -o /dev/null "http://127.0.0.1:$PORT/probe" && break
      sleep 0.1
    done
    if kill -0 "$HPID" 2>/dev/null; then
      PIDS+=("$HPID")
      B=http://127.0.0.1:$PORT
      sleep 1.1 # the probe's second has passed
      return 0
    fi
  done
  echo "shapes: haproxy did not start" >&2
  return 1
}

haproxy_down() {
  kill "$HPID" 2>/dev/null
  wait "$HPID" 2>/dev/null
}

express_up() {
  "$NODE_DIR/install.sh" >/dev/null || return 1
  rm -f "$T/ex.port"
  : >"$T/ex.log"
  node "$NODE_DIR/ratelimit_server.mjs" "$T/ex.port" none 100 5000 100 \
    "$T/ex.log" &
  EPID=$!
  PIDS+=("$EPID")
  for _ in $(seq 100); do [ -s "$T/ex.port" ] && break; sleep 0.05; done
  B=http://127.0.0.1:$(cat "$T/ex.port")
}

express_down() {
  kill "$EPID" 2>/dev/null
  wait "$EPID" 2>/dev/null
}

# ---- the clients ----------------------------------------------------------

urls() { for i in $(seq 1 "$N"); do echo "$B/item/$i?tool=$1"; done; }

# Runs `polite run` (no --rate) on TAG's URLs over PROCS processes sharing
# a file: budget (1: none); sets WALL (s) and OK. With --logs, each
# process's attempt log goes to $LOGS/LOGNAME.PART.log.
run_polite() { # tag procs [logname]
  local f bud=() pids=() log
  urls "$1" >"$T/$1.txt"
  rm -f "$T/$1.part."* "$T/$1.budget"
  [ "$2" -gt 1 ] && bud=(--budget "file:$T/$1.budget")
  split -n "r/$2" -d "$T/$1.txt" "$T/$1.part."
  local s e
  s=$(now)
  for f in "$T/$1.part."??; do
    log=()
    [ -n "$LOGS" ] && log=(--log "$LOGS/${3:-$1}.${f##*.part.}.log")
    "$POLITE" run --no-progress -q --concurrency $CONC --max-attempts 10 \
      "${bud[@]}" "${log[@]}" "$f" >"$f.out" 2>"$f.err" &
    pids+=($!)
  done
  wait "${pids[@]}"
  e=$(now)
  WALL=$(echo "$e - $s" | bc)
  OK=$(cat "$T/$1.part."??.out | grep -c '"outcome":"ok"')
}

run_urllib3() { # tag
  urls "$1" >"$T/$1.txt"
  local s e
  s=$(now)
  python3 "$RUN/py_client.py" "$T/$1.txt" $CONC >"$T/$1.out" 2>/dev/null
  e=$(now)
  WALL=$(echo "$e - $s" | bc)
  OK=$(grep -c '^200$' "$T/$1.out")
}

# The other caller of nginx-shared: 10/s on the same account while $1 runs.
other_caller() {
  python3 - "$B" <<'PY' &
import sys, time, urllib.request
base, t = sys.argv[1], time.monotonic()
while True:
    try:
        urllib.request.urlopen(base + "/other?tool=other", timeout=5).read()
    except Exception:
        pass
    t += 0.1
    time.sleep(max(0.0, t - time.monotonic()))
PY
  OTHER=$!
}

# 429s and early arrivals of TAG's requests: from nginx's access log
# (early: within the Retry-After of 1 s of a 429; none when the shape sends
# no Retry-After), haproxy's log, or express's log (all requests of a run).
count() { # shape tag -> N429 EARLY
  case "$1" in
  nginx-burst | nginx-shared)
    read -r _ N429 EARLY < <(python3 "$RUN/analyse.py" "$LOG" "$2") ;;
  nginx-conn)
    read -r _ N429 _ < <(python3 "$RUN/analyse.py" "$LOG" "$2")
    EARLY=0 ;;
  express-fixed)
    N429=$(awk '$2 == 429' "$T/ex.log" | wc -l)
    EARLY=$(awk '$3 == 1' "$T/ex.log" | wc -l) ;;
  haproxy-counter)
    read -r N429 EARLY < <(python3 - "$T/hap.log" "$2" <<'PY'
import sys
rows = []
for line in open(sys.argv[1]):
    p = line.split()
    # The accept date, plus the handshake and the keep-alive idle time
    # before the request (%Th %Ti): when the request itself arrived (the
    # accept date alone is the connection's, up to a pause earlier).
    if len(p) >= 5 and "tool=" + sys.argv[2] in p[2]:
        rows.append(((int(p[0]) + int(p[3]) + int(p[4])) / 1000.0, int(p[1])))
rows.sort()
n429 = early = 0
until = 0.0
for t, s in rows:
    early += t < until
    if s == 429:
        n429 += 1
        until = max(until, t + 1.0)
print(n429, early)
PY
    ) ;;
  esac
}

# ---- the table ------------------------------------------------------------

# The upstream's answers behind nginx: python's http.server writes the
# headers and the body apart, and on nginx's keepalive upstream connection
# the second write waits for a delayed ACK, so most answers take 140 ms,
# not 100 (measured: 477 and 519 of 600). The rows through nginx_up
# simulate the share measured in the run (stall_share, from nginx's
# $request_time), a stall of 41 ms; without it the simulation's client
# climbs to 79/s where the real one, 8 in flight, tops out at 56/s.
# Since the upstreams set TCP_NODELAY (d96dc67) the share is about 0;
# it is still measured, so a stalling upstream shows in the table.
STALL=0 OTHER_MS=100
stall_share() { # tag -> STALL
  STALL=$(awk -v t="tool=$1" '$4 ~ t && $3 == 200 { n++; s += $2 >= 0.120 }
    END { printf "%.2f", n ? s / n : 0 }' "$LOG")
}

sim_spec() { # shape
  local l="latency_ms=101 jitter_ms=1 n=$N conc=$CONC"
  case "$1" in nginx-burst | nginx-shared) l="$l slow_ms=41 slow_share=$STALL" ;; esac
  case "$1" in
  nginx-burst) echo "name=$1 kind=gcra rate=$RATE burst=$((BURST + 1)) ra=1 $l" ;;
  nginx-conn) echo "name=$1 kind=conc inflight=4 ra=none latency_ms=101 jitter_ms=2 n=$N conc=$CONC" ;;
  express-fixed) echo "name=$1 kind=fixed anchored=1 quota=100 window_ms=5000 ra=none $l" ;;
  haproxy-counter) echo "name=$1 kind=counter quota=40 window_ms=1000 ra=1 $l" ;;
  nginx-shared) echo "name=$1 kind=gcra rate=$RATE burst=2 ra=1 other_burst=1 other_period_ms=$OTHER_MS $l" ;;
  esac
}

# The simulation's row for CLIENT with PROCS on the machine NET (exact:
# the fake clock's times; loaded: a shared 2-core machine's jitter and
# stalls, tests/sim/net.c): "wall/floor n429 early floor_s".
# A polite_sim older than the stall (an --ab build before it) refuses its
# keys: that build's row is simulated without it.
sim_row() { # shape client procs net
  local spec
  spec=$(sim_spec "$1")
  "$SIM" --row "$spec" --procs 1 >/dev/null 2>&1 ||
    spec=$(printf '%s\n' "$spec" | sed 's/ slow_ms=[^ ]*//; s/ slow_share=[^ ]*//')
  "$SIM" --row "$spec" --procs "$3" --net "$4" --json |
    jq -r --arg c "$2" 'select(.client == $c) |
      "\(.wall_over_floor) \(.n429) \(.early) \(.floor_s)"'
}

up() {
  case "$1" in
  nginx-burst) nginx_up "limit_req_zone \$binary_remote_addr zone=z:1m rate=${RATE}r/s;" \
    "limit_req zone=z burst=$BURST nodelay; limit_req_status 429; error_page 429 = @limited;" ;;
  nginx-shared) nginx_up "limit_req_zone \$binary_remote_addr zone=z:1m rate=${RATE}r/s;" \
    "limit_req zone=z burst=1 nodelay; limit_req_status 429; error_page 429 = @limited;" ;;
  nginx-conn) nginx_up "limit_conn_zone \$binary_remote_addr zone=c:1m;" \
    "limit_conn c 4; limit_conn_status 429;" ;;
  express-fixed) express_up ;;
  haproxy-counter) haproxy_up ;;
  esac
}

down() {
  case "$1" in
  nginx-*) nginx_down ;;
  express-fixed) express_down ;;
  haproxy-counter) haproxy_down ;;
  esac
}

# One client on one shape: a fresh limiter, the run, and both rows, with
# $POLITE and $SIM the build's. LOGNAME names its attempt logs (--logs);
# the row's wall / floor and 429s are also appended to $T/rows.
client_row() { # shape client procs label [logname]
  local tag="${1//-/}$2$3" floor ratio
  up "$1" || return
  [ "$1" = nginx-shared ] && other_caller
  if [ "$2" = polite ]; then run_polite "$tag" "$3" "${5:-$1.$3}"; else run_urllib3 "$tag"; fi
  [ "$1" = nginx-shared ] && { kill "$OTHER"; wait "$OTHER" 2>/dev/null; }
  sleep 0.2
  count "$1" "$tag"
  STALL=0 OTHER_MS=100
  case "$1" in nginx-burst | nginx-shared) stall_share "$tag" ;; esac
  # The other caller's period as it ran: one request at a time, its
  # answers stalled too, it sends less often than every 100 ms.
  [ "$1" = nginx-shared ] && OTHER_MS=$(awk -v w="$WALL" '$4 ~ /tool=other/ { n++ }
    END { printf "%d", n ? 1000 * w / n : 100 }' "$LOG")
  read -r s_ratio s_429 s_early floor < <(sim_row "$1" "$2" "$3" exact)
  read -r l_ratio _ < <(sim_row "$1" "$2" "$3" loaded)
  if [ "$1" = nginx-conn ]; then
    # 4 in flight at the handler's real time (a loaded machine stretches
    # the 100 ms): the floor N x mean time / 4, as the simulation's.
    floor=$(awk -v t="tool=$tag" '$4 ~ t && $3 == 200 { s += $2; n++ }
      END { if (n) printf "%.3f", '"$N"' * (s / n) / 4 }' "$LOG")
  fi
  if [ "$1" = nginx-shared ]; then
    # The floor counts the other caller's admitted requests too, as the
    # simulation's does.
    local other
    other=$(awk '$4 ~ /tool=other/ && $3 == 200' "$LOG" | wc -l)
    floor=$(echo "($N + $other - 2) / $RATE" | bc -l)
  fi
  down "$1"
  ratio=$(echo "$WALL / $floor" | bc -l)
  printf '%s %s %s %s %s\n' "$1" "$4" "$ratio" "$N429" "$((N - OK))" >>"$T/rows"
  printf '| %s | %s | %.3f x | %s (%.2f%%) | %s | %s | %.3f x | %s | %s | %.3f x | %s |\n' \
    "$1" "$4" "$ratio" "$N429" \
    "$(echo "100 * $N429 / $N" | bc -l)" "$EARLY" "$((N - OK))" \
    "$s_ratio" "$s_429" "$s_early" "$l_ratio" \
    "$STALL$([ "$1" = nginx-shared ] && echo "; the other caller every $OTHER_MS ms")"
}

# --ab: build A or B as the current one ($POLITE, $SIM, and its label).
use_build() { # A|B
  if [ "$1" = A ]; then POLITE=$A_BIN; else POLITE=$B_BIN; fi
  SIM=$(dirname "$POLITE")/polite_sim
  [ -x "$SIM" ] || { echo "shapes: $SIM missing (build polite_sim beside $POLITE)" >&2; exit 1; }
}

# --ab: per shape, each build's rounds as one line (walls, mean, 429s).
ab_means() {
  awk '{ k = $1 " | " $2; for (i = 3; i <= NF - 3; i++) k = k " " $i
         n[k]++; s[k] += $(NF - 2); w[k] = w[k] sprintf(" %.3f", $(NF - 2))
         q[k] = q[k] " " $(NF - 1); if (!(k in o)) o[k] = ++m; key[o[k]] = k }
       END { for (j = 1; j <= m; j++) { k = key[j]
         printf "| %s | %s | %.3f x | %s |\n", k, w[k], s[k] / n[k], q[k] } }' "$T/rows"
}

echo "N=$N GETs per run, 100 ms upstream, $CONC concurrent per process, no client told the limit;"
echo "floor as in docs/learned-rate.md (the simulation's own, for the same limiter)"
echo
echo "| shape | client | real: wall / floor | real: 429s | real: early | real: lost | sim: wall / floor | sim: 429s | sim: early | sim, loaded machine: wall / floor | answers stalled 40 ms (simulated too) |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
if [ -z "$AB" ]; then
  for shape in $SHAPES; do
    client_row "$shape" polite 1 "polite, 1 process"
    client_row "$shape" polite 2 "polite, 2 processes (file: budget)"
    client_row "$shape" urllib3 1 "urllib3 Retry, $CONC threads"
  done
else
  echo "A: $A_BIN"
  echo "B: $B_BIN"
  echo
  for shape in $SHAPES; do
    for r in $(seq "$ROUNDS"); do
      for p in 1 2; do
        for b in A B; do
          use_build "$b"
          pl="$p processes"; [ "$p" = 1 ] && pl="1 process"
          client_row "$shape" polite "$p" "$b polite, $pl" "$shape.$b.${p}p.$r"
        done
      done
    done
    use_build B
    client_row "$shape" urllib3 1 "urllib3 Retry, $CONC threads"
  done
  echo
  echo "Each build's rounds (wall / floor per round, their mean, 429s per round):"
  echo
  echo "| shape | client | walls | mean | 429s |"
  echo "|---|---|---|---:|---|"
  ab_means
fi
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
