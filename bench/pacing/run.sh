#!/usr/bin/env bash
# bench/pacing: how exactly `polite run` keeps its start rate, from 1/s to
# 10,000/s, against a static nginx on loopback (no limit: the server never
# slows the client down), --burst 1, --concurrency 16, --max-attempts 1.
# For each rate: wall / floor (floor = (N - 1) / rate, the time the N-th
# start is due), measured / planned start rate (pauses excluded; there are
# none), the start-interval error |gap - 1/rate| p50 and p99 from the
# summary, and CPU seconds (user + sys) per 1000 requests. Unpaced
# references: `polite run --rate none` and `curl --parallel` (same
# concurrency), on SECONDS * 10000 requests. The last column is the floor
# of the machine at that moment: measured / planned of a bare timerfd +
# poll loop (timer_floor.c, same T / 2 rule, no HTTP) run just before, at
# 250/s and above, and its CPU per 1000 wake-ups (the cost of sleeping once
# per start, which no pacer at --burst 1 avoids without a busy loop). Prints a markdown table. Not a test.
#   bench/pacing/run.sh [POLITE_BINARY] [SECONDS]
# RATES (environment, default "1 40 250 1000 5000 10000") picks the rates.
# SECONDS (default 2) is the planned length of each paced run; 1/s always
# runs 20 requests.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
POLITE=${1:-$HERE/../../build/polite}
SECS=${2:-2}
T=$(mktemp -d /tmp/polite-bench-pacing.XXXXXX)
trap '[ -s "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$T"' EXIT

chmod 755 "$T" # nginx workers run as another user
mkdir -p "$T/www" "$T/logs"
echo ok >"$T/www/ok.txt"
for _ in $(seq 20); do
  PORT=$((20000 + RANDOM % 30000))
  cat >"$T/nginx.conf" <<CONF
worker_processes 1;
error_log $T/logs/error.log warn;
pid $T/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 1000000;
  client_body_temp_path $T/cbt;
  proxy_temp_path $T/pt;
  fastcgi_temp_path $T/ft;
  uwsgi_temp_path $T/ut;
  scgi_temp_path $T/st;
  server {
    listen 127.0.0.1:$PORT;
    location / { root $T/www; try_files /ok.txt =404; }
  }
}
CONF
  nginx -c "$T/nginx.conf" 2>"$T/nginx.err" && break
done
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$PORT/" >/dev/null && break
  sleep 0.1
done

FLOOR=
cc -O2 -o "$T/timer_floor" "$HERE/timer_floor.c" 2>/dev/null && FLOOR=$T/timer_floor

urls() { seq "$1" | sed "s|.*|http://127.0.0.1:$PORT/&|"; }
# cpu CMD...: runs CMD, prints "user+sys" seconds (getrusage, tick-sampled)
# and, when `perf stat` works here, a second figure: the task-clock in
# seconds (the scheduler's exact on-CPU time, which tick sampling misreads
# for a process that runs in short bursts between sleeps); else "-".
PERF=
perf stat -x, -e task-clock -o /dev/null true 2>/dev/null && PERF=1
cpu() {
  if [ -n "$PERF" ]; then
    perf stat -x, -e task-clock -o "$T/perf" \
      /usr/bin/time -f "%U %S" -o "$T/time" "$@" >"${CPU_OUT:-/dev/null}" 2>"$T/stderr"
  else
    /usr/bin/time -f "%U %S" -o "$T/time" "$@" >"${CPU_OUT:-/dev/null}" 2>"$T/stderr"
    echo "-,msec,task-clock" >"$T/perf"
  fi
  awk '{printf "%.3f", $1 + $2}' "$T/time"
  awk -F, '$3 == "task-clock" { if ($1 == "-") printf " -"; else printf " %.3f", $1 / 1000 }' "$T/perf"
}
# per1000 "USER_SYS TASK" N: both figures per 1000 requests.
per1000() {
  echo "$1" | awk -v n="$2" '{ printf "%.3f", $1 / n * 1000; if ($2 == "-") printf " | -"; else printf " | %.3f", $2 / n * 1000 }'
}

echo "| rate | N | wall / floor | measured / planned | interval error p50 | p99 | CPU s / 1000 req (time) | (perf task-clock) | bare timer loop |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for rate in ${RATES:-1 40 250 1000 5000 10000}; do
  n=$((rate * SECS))
  [ "$rate" -eq 1 ] && n=20
  [ "$n" -lt 20 ] && n=20
  urls "$n" >"$T/in"
  fl=
  if [ -n "$FLOOR" ] && [ "$rate" -ge 250 ]; then
    fc=$(per1000 "$(CPU_OUT=$T/floor.out cpu "$FLOOR" "$rate" "$SECS")" "$((rate * SECS))")
    fl="$(sed 's/.*planned //' "$T/floor.out"), CPU ${fc##* }"
  fi
  c=$(cpu "$POLITE" run --no-progress -q --rate "$rate/s" --burst 1 \
    --concurrency 16 --max-attempts 1 --summary-json "$T/s.json" "$T/in")
  c=$(per1000 "$c" "$n")
  jq -r --argjson r "$rate" --argjson n "$n" --arg c "$c" --arg fl "$fl" '
    def f(d): (. * pow(10; d) | round) / pow(10; d);
    "| \($r)/s | \($n) | \(.elapsed_ms / 1000 / (($n - 1) / $r) | f(3)) | \(.rate_measured / $r | f(4)) | \(.interval_error_p50_ms | f(3)) ms | \(.interval_error_p99_ms | f(3)) ms | \($c) | \($fl) |"' \
    "$T/s.json"
done

n=$((SECS * 10000))
urls "$n" >"$T/in"
c=$(cpu "$POLITE" run --no-progress -q --rate none --concurrency 16 \
  --max-attempts 1 "$T/in")
echo "| polite, --rate none | $n | | | | | $(per1000 "$c" "$n") | |"
urls "$n" | sed 's/.*/url = "&"\noutput = \/dev\/null/' >"$T/curl.cfg"
c=$(cpu curl -s --parallel --parallel-max 16 -K "$T/curl.cfg")
echo "| curl --parallel, no rate | $n | | | | | $(per1000 "$c" "$n") | |"
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
