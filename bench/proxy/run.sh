#!/usr/bin/env bash
# bench/proxy: polite proxy vs nginx proxy_pass in front of the same upstream (wrk, keep-alive, loopback).
#
# Usage: bench/proxy/run.sh [POLITE_BINARY] [SECONDS]
#   POLITE_BINARY  default: build/polite (build it with `make build`, not a sanitizer build)
#   SECONDS        wrk duration per throughput run (default 10)
#
# The upstream is an nginx serving a small fixed body. Both proxies keep
# upstream connections alive and run one worker / one event loop. Per
# target: throughput (64 connections, one run), and latency at light load
# (1 connection, median of three interleaved rounds) from which the added
# latency is the proxy's minus the upstream's own. Numbers are indicative,
# not a test.
set -euo pipefail
POLITE=${1:-build/polite}
SECS=${2:-10}
command -v wrk >/dev/null || { echo "wrk is not installed" >&2; exit 2; }
command -v nginx >/dev/null || { echo "nginx is not installed" >&2; exit 2; }
[ -x "$POLITE" ] || { echo "no polite binary at $POLITE" >&2; exit 2; }

. "$(dirname "$0")/common.sh"
UP=$(free_port); NG=$(free_port)

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
  server {
    listen 127.0.0.1:$UP;
    location / { default_type application/json; return 200 '{"ok":true,"data":"0123456789abcdef0123456789abcdef"}'; }
  }
  upstream backend { server 127.0.0.1:$UP; keepalive 128; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$NG;
    location / {
      proxy_pass http://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering on;
    }
  }
}
CONF
# Two nginx processes would share one config file; one process serves both
# the upstream and the nginx proxy (worker_processes 1, no master).
nginx -c "$tmp/nginx.conf" -p "$tmp" &
pids+=($!)
"$POLITE" proxy --listen 127.0.0.1:0 --ready-file "$tmp/polite.ready" \
  --upstream "http://127.0.0.1:$UP" --log /dev/null 2>"$tmp/polite.err" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/polite.ready" ] && break; sleep 0.05; done
PX=$(cat "$tmp/polite.ready")
sleep 0.3
curl -sf "http://127.0.0.1:$NG/" >/dev/null || { echo "nginx proxy not up" >&2; cat "$tmp/error.log" >&2; exit 1; }
curl -sf "http://$PX/" >/dev/null || { echo "polite proxy not up" >&2; cat "$tmp/polite.err" >&2; exit 1; }

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
echo "warming up..."
run warm1 "http://127.0.0.1:$NG/" 16 2 2
run warm2 "http://$PX/" 16 2 2
url_of() { case $1 in direct) echo "http://127.0.0.1:$UP/";; nginx) echo "http://127.0.0.1:$NG/";; polite) echo "http://$PX/";; esac; }
for t in direct nginx polite; do
  run "$t-tput" "$(url_of $t)" 64 2 "$SECS"
done
# Latency at light load: three interleaved rounds, so that a burst of noise
# from elsewhere on the machine hits all three targets alike; the median
# round's p50/p99 are reported.
LAT_SECS=$(( SECS / 3 > 2 ? SECS / 3 : 2 ))
for round in 1 2 3; do
  for t in direct nginx polite; do
    run "$t-lat$round" "$(url_of $t)" 1 1 "$LAT_SECS"
  done
done

printf '\n%-8s %12s %10s %10s %10s %10s\n' target "req/s(c64)" "p50 c64" "p99 c64" "p50 c1" "p99 c1"
for t in direct nginx polite; do
  printf '%-8s %12s %9sms %9sms %9sms %9sms\n' "$t" "$(rps "$tmp/$t-tput.txt")" \
    "$(pct "$tmp/$t-tput.txt" 50%)" "$(pct "$tmp/$t-tput.txt" 99%)" \
    "$(medlat $t 50%)" "$(medlat $t 99%)"
  errs "$tmp/$t-tput.txt"
done
python3 - "$(rps "$tmp/polite-tput.txt")" "$(rps "$tmp/nginx-tput.txt")" \
  "$(medlat polite 99%)" "$(medlat nginx 99%)" "$(medlat direct 99%)" <<'PY'
import sys
p, n, pl, nl, dl = map(float, sys.argv[1:])
print("\npolite/nginx throughput: %.2f x (target >= 0.9)" % (p / n))
print("p99 added latency at 1 connection: polite %.3f ms, nginx %.3f ms (target <= 1 ms)" % (pl - dl, nl - dl))
PY
