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
. "$(dirname "$0")/lib.sh"
UP=$(free_port); NG=$(free_port)

nginx_start "$(cat <<CONF
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
CONF
)"
polite_start --upstream "http://127.0.0.1:$UP"
up_check

echo "warming up..."
run warm1 "http://127.0.0.1:$NG/" 16 2 2
run warm2 "http://$PX/" 16 2 2
url_of() { case $1 in direct) echo "http://127.0.0.1:$UP/";; nginx) echo "http://127.0.0.1:$NG/";; polite) echo "http://$PX/";; esac; }
measure direct nginx polite
table direct nginx polite
python3 - "$(rps "$tmp/polite-tput.txt")" "$(rps "$tmp/nginx-tput.txt")" \
  "$(medlat polite 99%)" "$(medlat nginx 99%)" "$(medlat direct 99%)" <<'PY'
import sys
p, n, pl, nl, dl = map(float, sys.argv[1:])
print("\npolite/nginx throughput: %.2f x (target >= 0.9)" % (p / n))
print("p99 added latency at 1 connection: polite %.3f ms, nginx %.3f ms (target <= 1 ms)" % (pl - dl, nl - dl))
PY
