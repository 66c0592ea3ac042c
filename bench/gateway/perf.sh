#!/usr/bin/env bash
# bench/gateway/perf.sh: the gateway's unthrottled cost, two builds side by
# side in one run (issue #22's throughput and added-latency targets):
#  1. throughput: wrk -t2 -c64 against nginx's /free/ directly (the
#     upstream alone), through nginx proxy_pass in a process of its own
#     (bench/gateway/nginx-proxy.conf.in: client, proxy and origin are three
#     processes, as with the gateway) and through each gateway (--rate none
#     --concurrency 64, --log on, as users run it), ROUNDS rounds, the four
#     paths in turn in each; CPU per request is perf stat's task-clock of
#     the process in the middle (the upstream's own for the direct row);
#  2. added latency: one client's sequential keep-alive GETs, direct and
#     through each gateway alternately, LAT_ROUNDS rounds of LAT_N; the
#     p50 of each round, then the median of the rounds;
#  3. SSE: an upstream writes an event every 20 ms with its CLOCK_MONOTONIC
#     time; the client's receipt time minus it, p50 and max, per gateway;
#  4. CPU per paced request: each gateway at --rate PACED_RATE (20/s)
#     --concurrency 8 in front of nginx's /free/, wrk -c PACED_C (8 and 256:
#     the rest wait in the queue), the builds alternating, PACED_ROUNDS
#     rounds of PACED_S s; perf stat of the gateway (task-clock, context
#     switches) from 2 s after wrk starts (its connections are in), per
#     request the gateway logged in that window, the upstream nginx's beside.
# Usage: bench/gateway/perf.sh OLD_POLITE NEW_POLITE  (either may be the
# same binary). A benchmark: it prints Markdown tables and never fails on a
# slow machine; on a shared machine every number is noisy.
set -euo pipefail
command -v wrk >/dev/null || {
  # As the Makefile's deps step installs packages: only when missing.
  SUDO=
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get install -y -qq --no-install-recommends wrk >/dev/null 2>&1 ||
    { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends wrk >/dev/null; }
}
src="$(cd "$(dirname "$0")/../.." && pwd)"
A=${1:?usage: perf.sh OLD_POLITE NEW_POLITE}
B=${2:?usage: perf.sh OLD_POLITE NEW_POLITE}
ROUNDS=${ROUNDS:-3}
WRK_S=${WRK_S:-5}
T="$(mktemp -d /tmp/polite-bench-gwperf.XXXXXX)"
PIDS=()
# nginx's access log stays on, as in net.sh: every path pays for its own log.
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
mkdir -p "$T/ng/logs" "$T/ng/tmp"
. "$src/bench/run/nginx.sh"
for _ in $(seq 20); do
  PORT=$((20000 + RANDOM % 30000))
  sed -e "s|@T@|$T|g" -e "s|@UP@|9|g" -e "s|@PORT@|$PORT|g" -e "s|@HTTP@||" -e "s|@LOCATION@||" \
    "$src/bench/gateway/nginx.conf.in" >"$T/ng/nginx.conf"
  bench_nginx_start && { started=1; break; }
done
[ -n "${started:-}" ] || { echo "bench: nginx did not start" >&2; exit 1; }
NG=127.0.0.1:$PORT
NGPID=${PIDS[-1]}

# nginx proxy_pass in its own process in front of $NG, on a free port.
mkdir -p "$T/ngp/logs" "$T/ngp/tmp"
started=
for _ in $(seq 20); do
  PP=$((20000 + RANDOM % 30000))
  sed -e "s|@T@|$T|g" -e "s|@ORIGIN@|$NG|g" -e "s|@PORT@|$PP|g" \
    "$src/bench/gateway/nginx-proxy.conf.in" >"$T/ngp/nginx.conf"
  nginx -p "$T/ngp" -c "$T/ngp/nginx.conf" -g "daemon off; master_process off;" 2>"$T/ngp/stderr" &
  NPPID=$!
  for _ in $(seq 50); do
    curl -s -o /dev/null "http://127.0.0.1:$PP/probe" && { started=1; break; }
    kill -0 "$NPPID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$started" ] && break
  kill "$NPPID" 2>/dev/null || true
  wait "$NPPID" 2>/dev/null || true
done
[ -n "$started" ] || { echo "bench: nginx proxy_pass did not start" >&2; exit 1; }
PIDS+=("$NPPID")
NGP=127.0.0.1:$PP

# gw NAME BINARY UPSTREAM ARGS...: starts a gateway; GWA its address, GWP its pid.
gw() {
  local n=$1 bin=$2 up=$3
  shift 3
  rm -f "$T/$n.addr"
  "$bin" gateway --listen 127.0.0.1:0 --ready-file "$T/$n.addr" --upstream "$up" \
    --log "$T/$n.log" --rate "${GW_RATE:-none}" --quiet "$@" 2>"$T/$n.err" &
  GWP=$!
  PIDS+=("$GWP")
  for _ in $(seq 100); do [ -s "$T/$n.addr" ] && break; sleep 0.05; done
  GWA=$(cat "$T/$n.addr")
}
stop() { kill -TERM "$1" 2>/dev/null; wait "$1" 2>/dev/null || true; }
wrk_rps() { wrk -t2 -c64 -d"${WRK_S}s" "$1" 2>/dev/null | awk '/Requests\/sec/ {print $2}'; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "old: $A"
echo "new: $B"
echo
echo "## Throughput, nothing throttled, plain HTTP (wrk -t2 -c64 -d${WRK_S}s, $ROUNDS rounds)"
echo
echo "| round | direct r/s | direct CPU us/req | nginx proxy_pass r/s | nginx CPU us/req | old r/s | old / nginx | old CPU us/req | new r/s | new / nginx | new CPU us/req |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
# under PID URL: "r/s cpu_us_per_req" of wrk against URL, CPU the
# task-clock of process PID over the run.
under() {
  perf stat -x, -e task-clock -p "$1" -o "$T/perf" -- sleep $((WRK_S + 1)) &
  local ps=$!
  sleep 0.3
  local rps
  rps=$(wrk_rps "$2")
  wait "$ps" || true
  local ms
  ms=$(awk -F, '/task-clock/ {print $1}' "$T/perf")
  awk -v r="${rps:-0}" -v ms="${ms:-0}" -v d="$WRK_S" \
    'BEGIN {printf "%s %.1f\n", r, (r > 0 ? ms * 1000 / (r * d) : 0)}'
}
# one_gw BINARY: "r/s cpu_us_per_req" of a gateway under wrk.
one_gw() {
  gw thr "$1" "http://$NG" --concurrency 64
  under "$GWP" "http://$GWA/free/x"
  stop "$GWP"
}
for r in $(seq "$ROUNDS"); do
  read -r dr dc <<<"$(under "$NGPID" "http://$NG/free/x")"
  read -r nr nc <<<"$(under "$NPPID" "http://$NGP/free/x")"
  read -r ar ac <<<"$(one_gw "$A")"
  read -r br bc <<<"$(one_gw "$B")"
  awk -v r="$r" -v dr="$dr" -v dc="$dc" -v n="$nr" -v nc="$nc" -v ar="$ar" -v ac="$ac" -v br="$br" -v bc="$bc" \
    'BEGIN {printf "| %d | %.0f | %s | %.0f | %s | %.0f | %.2f x | %s | %.0f | %.2f x | %s |\n", r, dr, dc, n, nc, ar, ar / n, ac, br, br / n, bc}'
done
echo
echo "(CPU: perf stat task-clock of the process in the middle (nginx proxy_pass's, the gateway's; the"
echo "upstream's for direct) over the wrk run, divided by the requests wrk counted; the 0.3 s before wrk"
echo "starts is idle and costs nothing measurable. The upstream nginx works in every row as well.)"
echo
echo "## Added latency, nothing throttled"
echo
gw la "$A" "http://$NG"
GA=$GWA PA=$GWP
gw lb "$B" "http://$NG"
GB=$GWA PB=$GWP
python3 - "$NG" "$GA" "$GB" "${LAT_ROUNDS:-15}" "${LAT_N:-300}" <<'PY'
import http.client, statistics, sys, time
ng, ga, gb, rounds, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def conn(addr):
    h, p = addr.rsplit(":", 1)
    return http.client.HTTPConnection(h, int(p))
def p50(c):
    lat = []
    for i in range(n):
        t = time.perf_counter()
        c.request("GET", "/free/%d" % i)
        r = c.getresponse()
        r.read()
        lat.append(time.perf_counter() - t)
    return statistics.median(lat) * 1000
cs = {"direct": conn(ng), "old": conn(ga), "new": conn(gb)}
for c in cs.values():
    p50(c)  # warm: connections open, caches hot
res = {k: [] for k in cs}
for _ in range(rounds):
    for k, c in cs.items():
        res[k].append(p50(c))
med = {k: statistics.median(v) for k, v in res.items()}
print("%d rounds of %d sequential keep-alive GETs per path, the paths alternating in each round;" % (rounds, n))
print("the p50 of each round, then the median (and range) of the rounds. Target: <= 0.1 ms added.")
print()
print("| path | p50 (median of rounds) | rounds' range | added over direct |")
print("|---|---:|---:|---:|")
for k in cs:
    add = "-" if k == "direct" else "%+.3f ms" % (med[k] - med["direct"])
    print("| %s | %.3f ms | %.3f-%.3f ms | %s |" % (k, med[k], min(res[k]), max(res[k]), add))
# The effect per round (through minus direct in the same round) is less noisy.
for k in ("old", "new"):
    d = [a - b for a, b in zip(res[k], res["direct"])]
    print("| %s minus direct, per round | %+.3f ms | %+.3f to %+.3f ms | |" % (k, statistics.median(d), min(d), max(d)))
PY
stop "$PA"
stop "$PB"

echo
echo "## SSE: an event reaches the client after the upstream writes it"
echo
python3 - "$T/sse.port" <<'PY' &
import http.server, socketserver, sys, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for i in range(50):
            self.wfile.write(b"data: %d\n\n" % time.monotonic_ns())
            self.wfile.flush()
            time.sleep(0.02)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
s = S(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
PY
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/sse.port" ] && break; sleep 0.05; done
SSE=127.0.0.1:$(cat "$T/sse.port")
echo "50 events 20 ms apart; delay = the client's CLOCK_MONOTONIC at the event's end minus the"
echo "upstream's when it wrote it. Target <= 50 ms, aim 5 ms."
echo
echo "| path | events | p50 | max |"
echo "|---|---:|---:|---:|"
sse_row() {
  python3 - "$1" "$2" <<'PY'
import socket, statistics, sys, time
name, addr = sys.argv[1], sys.argv[2]
h, p = addr.rsplit(":", 1)
s = socket.create_connection((h, int(p)))
s.sendall(b"GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
buf, d = b"", []
while True:
    b = s.recv(65536)
    if not b:
        break
    now = time.monotonic_ns()
    buf += b
    while b"data: " in buf and b"\n\n" in buf[buf.index(b"data: "):]:
        i = buf.index(b"data: ")
        j = buf.index(b"\n\n", i)
        d.append((now - int(buf[i + 6:j].split(b"\r")[0])) / 1e6)
        buf = buf[j + 2:]
print("| %s | %d | %.2f ms | %.2f ms |" % (name, len(d), statistics.median(d) if d else -1, max(d) if d else -1))
PY
}
sse_row direct "$SSE"
gw sa "$A" "http://$SSE"
sse_row old "$GWA"
stop "$GWP"
gw sb "$B" "http://$SSE"
sse_row new "$GWA"
stop "$GWP"

echo
echo "## CPU per paced request"
echo
PACED_RATE=${PACED_RATE:-20/s}
PACED_S=${PACED_S:-5}
PACED_ROUNDS=${PACED_ROUNDS:-2}
echo "--rate $PACED_RATE --concurrency 8, wrk -t1 -cC (the clients beyond 8 wait in the queue), perf stat over"
echo "${PACED_S} s from 2 s after wrk starts, per request the gateway logged then; nginx is the upstream's own"
echo "CPU for the same requests. Wake-ups: the gateway's context switches per request."
echo
echo "| round | clients | requests | old CPU us/req | old wake-ups/req | new CPU us/req | new wake-ups/req | nginx CPU us/req |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
# paced BINARY C: "requests cpu_us_per_req cs_per_req nginx_cpu_us_per_req".
paced() {
  GW_RATE=$PACED_RATE gw pc "$1" "http://$NG" --concurrency 8
  wrk -t1 -c"$2" -d$((PACED_S + 3))s --timeout 30s "http://$GWA/free/x" >/dev/null 2>&1 &
  local wp=$! n0 n1
  sleep 2
  n0=$(wc -l <"$T/pc.log")
  perf stat -x, -e task-clock,context-switches -p "$NGPID" -o "$T/perf.ng" -- sleep "$PACED_S" &
  local ps=$!
  perf stat -x, -e task-clock,context-switches -p "$GWP" -o "$T/perf.gw" -- sleep "$PACED_S" || true
  wait "$ps" || true
  n1=$(wc -l <"$T/pc.log")
  wait "$wp" || true
  stop "$GWP"
  awk -F, -v n=$((n1 - n0)) '
    FILENAME ~ /gw$/ {g[$3] = $1} FILENAME ~ /ng$/ {x[$3] = $1}
    END {if (n < 1) n = 1; printf "%d %.0f %.1f %.0f\n", n, g["task-clock"] * 1000 / n,
         g["context-switches"] / n, x["task-clock"] * 1000 / n}' "$T/perf.gw" "$T/perf.ng"
}
for r in $(seq "$PACED_ROUNDS"); do
  for c in 8 256; do
    read -r an ac aw ax <<<"$(paced "$A" "$c")"
    read -r bn bc bw bx <<<"$(paced "$B" "$c")"
    echo "| $r | $c | $an, $bn | $ac | $aw | $bc | $bw | $ax, $bx |"
  done
done
echo
echo "(load when this ended: $(cut -d' ' -f1-3 /proc/loadavg); a shared machine makes every number noisy.)"
