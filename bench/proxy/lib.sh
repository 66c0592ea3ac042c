# shellcheck shell=bash
# bench/proxy/lib.sh: what bench/proxy/run.sh and https.sh share (sourced, not run): the checks, a temporary
# directory and the processes to stop, wrk runs and how their numbers are read, the measurement and the table.
# The caller sets POLITE and SECS before sourcing, and defines url_of TARGET before calling measure.
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
command -v nginx >/dev/null || { echo "nginx is not installed" >&2; exit 2; }
[ -x "$POLITE" ] || { echo "no polite binary at $POLITE" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wrk prints "Requests/sec:  N" and, with --latency, "  99%  1.23ms".
rps() { awk '/Requests\/sec/ {print $2}' "$1"; }
# Median over the latency rounds of one percentile.
medlat() { for r in 1 2 3; do pct "$tmp/$1-lat$r.txt" "$2"; echo; done | sort -g | sed -n 2p; }
pct() { awk -v p="$2" '$1 == p { v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        if (u == "us") v /= 1000; else if (u == "s") v *= 1000; printf "%.3f", v }' "$1"; }
errs() { awk '/Non-2xx|Socket errors/ {print}' "$1"; }

run() { # name url conns threads secs
  wrk -t"$4" -c"$3" -d"$5"s --latency "$2" >"$tmp/$1.txt" 2>&1
}

# measure TARGET...: throughput of each (64 connections, one run of SECS s), then latency at light load:
# three interleaved rounds, so that a burst of noise from elsewhere on the machine hits all targets alike;
# the median round's p50/p99 are reported.
measure() {
  local t round
  for t in "$@"; do
    run "$t-tput" "$(url_of "$t")" 64 2 "$SECS"
  done
  local lat_secs=$(( SECS / 3 > 2 ? SECS / 3 : 2 ))
  for round in 1 2 3; do
    for t in "$@"; do
      run "$t-lat$round" "$(url_of "$t")" 1 1 "$lat_secs"
    done
  done
}

# table TARGET...: one row per target.
table() {
  local t
  printf '\n%-8s %12s %10s %10s %10s %10s\n' target "req/s(c64)" "p50 c64" "p99 c64" "p50 c1" "p99 c1"
  for t in "$@"; do
    printf '%-8s %12s %9sms %9sms %9sms %9sms\n' "$t" "$(rps "$tmp/$t-tput.txt")" \
      "$(pct "$tmp/$t-tput.txt" 50%)" "$(pct "$tmp/$t-tput.txt" 99%)" \
      "$(medlat "$t" 50%)" "$(medlat "$t" 99%)"
    errs "$tmp/$t-tput.txt"
  done
}

# nginx_start SERVERS: writes $tmp/nginx.conf, one process (one worker, no master, no access log) whose http
# block holds SERVERS (server and upstream blocks), and starts it. One process serves both the upstream
# and the nginx proxy: two would share one config file.
nginx_start() {
  cat >"$tmp/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  keepalive_requests 1000000;
$1
}
CONF
  nginx -c "$tmp/nginx.conf" -p "$tmp" &
  pids+=($!)
}

# polite_start ARGS...: starts `polite proxy ARGS` on a free port (no log) and sets PX to its ADDR:PORT.
polite_start() {
  "$POLITE" proxy --listen 127.0.0.1:0 --ready-file "$tmp/polite.ready" --log /dev/null "$@" \
    2>"$tmp/polite.err" &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$tmp/polite.ready" ] && break; sleep 0.05; done
  PX=$(cat "$tmp/polite.ready")
}

# up_check: both proxies answer (after a moment for nginx to bind), else exit with their errors.
up_check() {
  sleep 0.3
  curl -sf "http://127.0.0.1:$NG/" >/dev/null || { echo "nginx proxy not up" >&2; cat "$tmp/error.log" >&2; exit 1; }
  curl -sf "http://$PX/" >/dev/null || { echo "polite proxy not up" >&2; cat "$tmp/polite.err" >&2; exit 1; }
}
