#!/usr/bin/env bash
# bench/proxy/urls.sh: the proxy's memory under a stream of distinct URLs (issue 21 item 6), one
# binary beside another, in one table.
#
# Usage: bench/proxy/urls.sh [POLITE] [BASE_POLITE] [URLS]
#   POLITE       the binary to measure (default build/polite)
#   BASE_POLITE  a binary to compare with, e.g. one built from main before the bound (optional)
#   URLS         distinct URLs per run (default 1000000)
#
# Each run starts `polite proxy` in mock mode (every URL watched; the default mock answers 200) and
# sends URLS requests, each to a URL never seen before (wrk, 2 threads, 32 keep-alive connections,
# bench/proxy/urls.lua; wrk is stopped once the proxy's metrics count URLS), in two shapes: all answered 200, and with --failure-rate 50 (429s with
# Retry-After 60 that nobody retries: keys with waits and retry chains in progress pile up too). It
# samples the proxy's RSS every second and reports the RSS before, at the end, the peak (VmHWM),
# requests/s, and CPU per request from `perf stat -e task-clock` on the proxy process alone.
# Numbers are indicative; on a shared machine run it twice.
set -euo pipefail
POLITE=${1:-build/polite}
BASE=${2:-}
URLS=${3:-1000000}
SECS=0
command -v perf >/dev/null || { echo "perf is not installed (linux-perf)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # wrk check, $tmp, the processes to stop, cleanup

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# run NAME BINARY ARGS...: one measured run; appends a row to $tmp/rows.
run() {
  local name=$1 bin=$2
  shift 2
  rm -f "$tmp/ready"
  "$bin" proxy --listen 127.0.0.1:0 --ready-file "$tmp/ready" --log /dev/null "$@" 2>"$tmp/px.err" &
  local px=$!
  pids+=("$px")
  for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
  local addr
  addr=$(cat "$tmp/ready")
  local before
  before=$(rss_kb "$px")
  perf stat -e task-clock -p "$px" -o "$tmp/perf.txt" &
  local perfpid=$!
  pids+=("$perfpid")
  sleep 0.2
  (while kill -0 "$px" 2>/dev/null; do rss_kb "$px" >>"$tmp/rss.$name"; sleep 1; done) 2>/dev/null &
  local sampler=$!
  pids+=("$sampler")
  local t0 t1
  t0=$(date +%s.%N)
  wrk -t2 -c32 -d3600s -s "$here/urls.lua" "http://$addr/" >"$tmp/wrk.$name" 2>&1 &
  local wrkpid=$!
  pids+=("$wrkpid")
  # wrk runs until the proxy has answered URLS requests (its metrics say).
  while :; do
    sleep 0.2
    local n
    n=$(curl -s "http://$addr/__polite/metrics" |
      awk '/^polite_proxy_requests_total/ {s += $2} END {print s + 0}')
    [ "$n" -ge "$URLS" ] && break
    kill -0 "$wrkpid" 2>/dev/null || break
  done
  kill "$wrkpid" 2>/dev/null || true
  wait "$wrkpid" 2>/dev/null || true
  t1=$(date +%s.%N)
  local end
  end=$(rss_kb "$px")
  local hwm
  hwm=$(hwm_kb "$px")
  local seen
  seen=$(curl -s "http://$addr/__polite/report" | python3 -c \
    'import json,sys; r=json.load(sys.stdin); t=r.get("url_table", {}); print(r["requests"], t.get("tracked", "-"), t.get("evicted", "-"))' \
    2>/dev/null || echo "? ? ?")
  kill -INT "$perfpid" 2>/dev/null || true
  wait "$perfpid" 2>/dev/null || true
  kill "$px" "$sampler" 2>/dev/null || true
  wait "$px" 2>/dev/null || true
  local cpu_ms
  cpu_ms=$(awk '/task-clock/ {gsub(",", "", $1); print $1}' "$tmp/perf.txt")
  read -r requests tracked evicted <<<"$seen"
  python3 - "$name" "$before" "$end" "$hwm" "$requests" "$tracked" "$evicted" "$cpu_ms" "$t0" "$t1" \
    >>"$tmp/rows" <<'PY'
import sys
name, before, end, hwm, req, tracked, evicted, cpu, t0, t1 = sys.argv[1:]
def num(x):
    try:
        return float(x)
    except ValueError:
        return float("nan")
r = num(req)
print("%-34s %10s %8.1f %8.1f %8.1f %9s %9s %9.0f %9.2f" % (
    name, req, num(before) / 1024, num(end) / 1024, num(hwm) / 1024, tracked, evicted,
    r / (num(t1) - num(t0)), num(cpu) * 1000 / r if r else float("nan")))
PY
}

for label in "$POLITE" ${BASE:+"$BASE"}; do
  tag=$( [ "$label" = "$POLITE" ] && echo new || echo base )
  run "$tag, all 200" "$label"
  run "$tag, --failure-rate 50" "$label" --failure-rate 50 --retry-after 60 --seed 1
done
printf '\n%d distinct URLs per run; RSS in MiB; CPU per request from perf task-clock (proxy only)\n' "$URLS"
printf '%-34s %10s %8s %8s %8s %9s %9s %9s %9s\n' run requests "RSS0" "RSS end" "peak" tracked evicted "req/s" "CPU us/req"
cat "$tmp/rows"
