# shellcheck shell=bash
# shellcheck disable=SC2154 # src and tmp are bench/gateway/run.sh's, which sources this file
# Sourced by bench/gateway/run.sh: the network rows, the gateway as its
# users run it. The naive script (tests/integration/gateway/naive.py:
# Python requests, 8 threads, one GET per URL, no retry logic) against
# nginx limit_req RATE r/s burst 1 (429 + Retry-After: 1) in front of a
# 100 ms upstream (bench/run/upstream.py): direct, with urllib3's Retry, and
# through one gateway that is not told the limit (its base URL); then two
# gateways on one redis-server budget with 4 threads each; then the added
# latency when nothing is throttled (nginx answering at once, 1 thread, p50
# through the gateway against direct). Early: requests that reached nginx
# within the Retry-After of a 429 (bench/run/analyse.py). CPU: the
# gateway's utime+stime from /proc (the process's task-clock), per request.
# Last, 2,000 client connections held waiting in one account's queue: the
# gateway's RSS.
# Needs $POLITE, $src, $tmp; NET_N (600), NET_RATE (40).
NET_N=${NET_N:-600}
NET_RATE=${NET_RATE:-40}
T=$tmp
PIDS=()
NAIVE=$src/tests/integration/gateway/naive.py
# A kill that finds nothing (a gateway the table already stopped) is no
# error: under run.sh's set -e it would end the trap at the first dead pid,
# leave redis-server running, and that server, holding the bench lock's
# descriptor it inherited from flock, would block every later bench.
net_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap 'net_cleanup; rm -rf "$tmp"' EXIT

python3 "$src/bench/run/upstream.py" "$T/up.port" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
UP=$(cat "$T/up.port")
mkdir -p "$T/ng/logs" "$T/ng/tmp"
. "$src/bench/run/nginx.sh"
bench_nginx_limited "$UP" "$NET_RATE" && started=1
[ -n "${started:-}" ] || { echo "bench: nginx did not start" >&2; cat "$T/ng/stderr" >&2; exit 1; }
NG=127.0.0.1:$PORT
LOG=$T/ng/logs/access.log

# gw_start NAME ARGS...: a gateway in front of nginx; GWA its ADDR:PORT.
gw_start() {
  local n=$1
  shift
  rm -f "$T/$n.addr"
  "$POLITE" gateway --listen 127.0.0.1:0 --ready-file "$T/$n.addr" --upstream "http://$NG" \
    --log "$T/$n.log" "$@" 2>"$T/$n.err" &
  GWP=$!
  PIDS+=("$GWP")
  for _ in $(seq 100); do [ -s "$T/$n.addr" ] && break; sleep 0.05; done
  GWA=$(cat "$T/$n.addr")
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
js() { python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
# net_row NAME TAG OUT... (naive.py's JSON lines) [CPU_MS]: one table row.
net_row() {
  local name=$1 tag=$2 cpu=$3
  shift 3
  read -r seen n429 early < <(python3 "$src/bench/run/analyse.py" "$LOG" "$tag")
  python3 - "$name" "$seen" "$n429" "$early" "$cpu" "$NET_N" "$NET_RATE" "$@" <<'PY'
import json, sys
name, seen, n429, early, cpu, n, rate = sys.argv[1:8]
outs = [json.loads(x) for x in sys.argv[8:]]
ok = sum(o["status"].get("200", 0) for o in outs)
wall = max(o["wall_s"] for o in outs)
floor = int(n) / float(rate)
pct = 100.0 * int(n429) / max(1, int(seen))
cpu_s = "-" if cpu == "-" else "%.0f" % (float(cpu) * 1000 / int(n))
print("| %s | %d / %s | %.1f s | %.2f x | %s (%.1f%%) | %s | %s | %s |" % (
    name, ok, n, wall, wall / floor, n429, pct, early, seen, cpu_s))
PY
}

echo
echo "## Through the network: the naive script and nginx limit_req"
echo
echo "N=$NET_N GETs, nginx limit_req $NET_RATE r/s burst 1 nodelay (Retry-After: 1), 100 ms upstream,"
echo "8 threads of Python requests, no client or gateway told the limit; floor N/rate = $((NET_N / NET_RATE)) s."
echo "Targets: through the gateway all 200, <= 1% 429s at nginx, 0 early, wall <= 1.15 x the floor"
echo "(two gateways on one Redis budget: <= 1.2 x)."
echo
echo "| client | 200 at the client | wall | / floor | 429s at nginx | early | requests nginx saw | gateway CPU us / request |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
o=$(python3 "$NAIVE" --threads 8 "http://$NG/item/{}?tool=direct" "$NET_N")
net_row "requests, direct" direct - "$o"
sleep 1.1
o=$(python3 "$NAIVE" --threads 8 --retry 10 "http://$NG/item/{}?tool=retry" "$NET_N")
net_row "requests + urllib3 Retry(total=10)" retry - "$o"
sleep 1.1
gw_start one
c0=$(cpu_ticks "$GWP")
o=$(python3 "$NAIVE" --threads 8 "http://$GWA/item/{}?tool=gw" "$NET_N")
c1=$(cpu_ticks "$GWP")
net_row "requests through polite gateway" gw "$(((c1 - c0) * 1000 / $(getconf CLK_TCK)))" "$o"
kill -TERM "$GWP"
wait "$GWP" 2>/dev/null
# net_redis: a redis-server of the bench's own on a free port (RP), ready
# when it returns 0: the port from the kernel (bind to 0), not $RANDOM (which
# could be anyone's), and redis_ready waits until this very server answers;
# a port taken in between is a new try, five in all.
. "$src/tests/integration/redis_ready.sh"
net_redis() {
  local rpid
  for _ in 1 2 3 4 5; do
    RP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    redis-server --port "$RP" --bind 127.0.0.1 --save '' --appendonly no >>"$T/redis.log" 2>&1 &
    rpid=$!
    PIDS+=("$rpid")
    redis_ready "$rpid" "$RP" && return 0
    kill -9 "$rpid" 2>/dev/null
  done
  echo "bench: redis-server did not start, no two-gateway row: $(tail -2 "$T/redis.log")" >&2
  return 1
}
if command -v redis-server >/dev/null && net_redis; then
  sleep 1.1
  gw_start two1 --budget "redis://127.0.0.1:$RP/bench"
  g1=$GWP a1=$GWA
  gw_start two2 --budget "redis://127.0.0.1:$RP/bench"
  g2=$GWP a2=$GWA
  python3 "$NAIVE" --threads 4 "http://$a1/item/{}?tool=two" $((NET_N / 2)) >"$T/two1.out" &
  p1=$!
  python3 "$NAIVE" --threads 4 "http://$a2/item/1{}?tool=two" $((NET_N / 2)) >"$T/two2.out" &
  p2=$!
  wait $p1 $p2
  net_row "2 gateways, one Redis budget, 4 threads each" two - "$(cat "$T/two1.out")" "$(cat "$T/two2.out")"
  kill -TERM "$g1" "$g2"
  wait "$g1" "$g2" 2>/dev/null
fi

echo
echo "## Added latency, nothing throttled"
echo
echo "1 thread, ${NET_LAT_N:-300} GETs to nginx's /free/ (answered by nginx at once, no limit);"
echo "target: p50 through the gateway <= 0.1 ms over direct."
echo
echo "| client | p50 | p99 |"
echo "|---|---:|---:|"
o=$(python3 "$NAIVE" --threads 1 "http://$NG/free/{}" "${NET_LAT_N:-300}")
echo "| direct | $(js "$o" 'o["latency_ms"][0]') ms | $(js "$o" 'o["latency_ms"][1]') ms |"
gw_start lat --rate none
o2=$(python3 "$NAIVE" --threads 1 "http://$GWA/free/{}" "${NET_LAT_N:-300}")
echo "| through polite gateway (--rate none) | $(js "$o2" 'o["latency_ms"][0]') ms | $(js "$o2" 'o["latency_ms"][1]') ms |"
kill -TERM "$GWP"
wait "$GWP" 2>/dev/null
echo
echo "## 2,000 client connections waiting in the queue"
echo
echo "Each sends one GET and waits; the gateway (--rate 1/s, --queue-max 4000) admits one a second."
echo "Target: RSS <= 64 MB, one core."
echo
gw_start wait --rate 1/s --queue-max 4000 --max-wait 0
rss0=$(awk '/VmRSS/ {print $2}' "/proc/$GWP/status")
c0=$(cpu_ticks "$GWP")
python3 - "$GWA" "$GWP" "${NET_WAITING:-2000}" >"$T/wait.out" <<'PY'
import resource, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
n = int(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 256)), hard))
socks = []
for i in range(n):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"GET /item/%d?tool=wait HTTP/1.1\r\nHost: x\r\n\r\n" % i)
    socks.append(s)
time.sleep(2)
rss = [l.split()[1] for l in open("/proc/%s/status" % sys.argv[2]) if l.startswith("VmRSS")][0]
print(len(socks), rss)
for s in socks:
    s.close()
PY
c1=$(cpu_ticks "$GWP")
read -r nw rss1 <"$T/wait.out"
echo "| waiting clients | RSS at start | RSS with them waiting | per waiting client | gateway CPU for it |"
echo "|---:|---:|---:|---:|---:|"
echo "| $nw | $((rss0 / 1024)) MB | $((rss1 / 1024)) MB | $(((rss1 - rss0) * 1024 / nw)) bytes | $(((c1 - c0) * 1000 / $(getconf CLK_TCK))) ms |"
kill -TERM "$GWP"
wait "$GWP" 2>/dev/null
if command -v wrk >/dev/null; then
  echo
  echo "## Throughput, nothing throttled, plain HTTP"
  echo
  echo "wrk -t2 -c64 -d${NET_WRK_S:-5}s against nginx's /free/ (answered at once) through nginx's own"
  echo "proxy_pass (keepalive 64) and through the gateway (--rate none --concurrency 64). Target:"
  echo "the gateway >= 0.8 x nginx proxy_pass. Client, proxy and server share the 2 cores."
  echo
  echo "| path | requests/s | / nginx proxy_pass | proxy CPU us / request |"
  echo "|---|---:|---:|---:|"
  wrk_rps() { wrk -t2 -c64 -d"${NET_WRK_S:-5}s" "$1" 2>/dev/null | awk '/Requests\/sec/ {print $2}'; }
  ng_rps=$(wrk_rps "http://$NG/via/x")
  echo "| nginx proxy_pass | $ng_rps | 1.00 x | - |"
  gw_start thr --rate none --concurrency 64
  c0=$(cpu_ticks "$GWP")
  gw_rps=$(wrk_rps "http://$GWA/free/x")
  c1=$(cpu_ticks "$GWP")
  gw_n=$(awk -v r="$gw_rps" -v d="${NET_WRK_S:-5}" 'BEGIN {print int(r * d)}')
  echo "| polite gateway | $gw_rps | $(awk -v a="$gw_rps" -v b="$ng_rps" 'BEGIN {printf "%.2f", a / b}') x | $(awk -v c="$((c1 - c0))" -v n="$gw_n" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", c * 1e6 / hz / n}') |"
  kill -TERM "$GWP"
  wait "$GWP" 2>/dev/null
fi
echo
echo "(the machine's load when this ran: $(cut -d' ' -f1-3 /proc/loadavg); a shared machine makes"
echo "every wall-clock number noisy: rerun on a quiet one.)"
