#!/usr/bin/env bash
# bench/proxy/https.sh: polite proxy --upstream https:// vs nginx proxy_pass https:// in front of the same HTTPS upstream
# (wrk over plain HTTP to each proxy, keep-alive and TLS session reuse to the upstream, loopback).
#
# Usage: bench/proxy/https.sh [POLITE_BINARY] [SECONDS]
#   POLITE_BINARY  default: build/polite (a RelWithDebInfo or Release build, not a sanitizer build)
#   SECONDS        wrk duration per throughput run (default 10)
#
# The upstream is an nginx TLS server (EC P-256 certificate for 127.0.0.1
# made here by openssl, signed by a CA made here) returning a small fixed
# body. Both proxies verify it against that CA and keep upstream
# connections alive; both run one worker / one event loop. Per target:
# throughput (64 connections, one run) and latency at light load (1
# connection, median of three interleaved rounds). "direct" is wrk to the
# upstream itself over HTTPS. Numbers are indicative, not a test.
set -euo pipefail
POLITE=${1:-build/polite}
SECS=${2:-10}
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
UP=$(free_port); NG=$(free_port); MP=$(free_port)

ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 -subj "/CN=bench CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req "${ec[@]}" -keyout "$tmp/up.key" -out "$tmp/up.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tmp/up.ext"
openssl x509 -req -in "$tmp/up.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -days 2 \
  -extfile "$tmp/up.ext" -out "$tmp/up.pem" 2>/dev/null

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
    listen 127.0.0.1:$UP ssl;
    ssl_certificate $tmp/up.pem;
    ssl_certificate_key $tmp/up.key;
    location / { default_type application/json; return 200 '{"ok":true,"data":"0123456789abcdef0123456789abcdef"}'; }
  }
  upstream backend { server 127.0.0.1:$UP; keepalive 128; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$NG;
    location / {
      proxy_pass https://backend;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering on;
      proxy_ssl_verify on;
      proxy_ssl_trusted_certificate $tmp/ca.pem;
      proxy_ssl_name 127.0.0.1;
      proxy_ssl_session_reuse on;
    }
  }
}
CONF
# One nginx process (one worker, no master) serves both the upstream and the
# nginx proxy, as in bench/proxy/run.sh.
nginx -c "$tmp/nginx.conf" -p "$tmp" &
pids+=($!)
"$POLITE" proxy --listen 127.0.0.1:0 --ready-file "$tmp/polite.ready" \
  --upstream "https://127.0.0.1:$UP" --upstream-cacert "$tmp/ca.pem" --log /dev/null 2>"$tmp/polite.err" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/polite.ready" ] && break; sleep 0.05; done
PX=$(cat "$tmp/polite.ready")
sleep 0.3
targets="direct nginx polite"
if command -v mitmdump >/dev/null; then
  # mitmproxy as a reverse proxy to the same upstream, verifying it against the same CA.
  mitmdump -q --mode "reverse:https://127.0.0.1:$UP" --listen-host 127.0.0.1 --listen-port "$MP" \
    --set ssl_verify_upstream_trusted_ca="$tmp/ca.pem" --set confdir="$tmp/mitm" >"$tmp/mitm.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$MP/" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$MP/" >/dev/null && targets="$targets mitmproxy" || echo "mitmproxy not up: skipped" >&2
fi
curl -sf "http://127.0.0.1:$NG/" >/dev/null || { echo "nginx proxy not up" >&2; cat "$tmp/error.log" >&2; exit 1; }
curl -sf "http://$PX/" >/dev/null || { echo "polite proxy not up" >&2; cat "$tmp/polite.err" >&2; exit 1; }

rps() { awk '/Requests\/sec/ {print $2}' "$1"; }
medlat() { for r in 1 2 3; do pct "$tmp/$1-lat$r.txt" "$2"; echo; done | sort -g | sed -n 2p; }
pct() { awk -v p="$2" '$1 == p { v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        if (u == "us") v /= 1000; else if (u == "s") v *= 1000; printf "%.3f", v }' "$1"; }
errs() { awk '/Non-2xx|Socket errors/ {print}' "$1"; }
run() { wrk -t"$4" -c"$3" -d"$5"s --latency "$2" >"$tmp/$1.txt" 2>&1; }
url_of() { case $1 in direct) echo "https://127.0.0.1:$UP/";; nginx) echo "http://127.0.0.1:$NG/";;
  polite) echo "http://$PX/";; mitmproxy) echo "http://127.0.0.1:$MP/";; esac; }

echo "warming up..."
run warm1 "$(url_of nginx)" 16 2 2
run warm2 "$(url_of polite)" 16 2 2
for t in $targets; do
  run "$t-tput" "$(url_of $t)" 64 2 "$SECS"
done
LAT_SECS=$(( SECS / 3 > 2 ? SECS / 3 : 2 ))
for round in 1 2 3; do
  for t in $targets; do
    run "$t-lat$round" "$(url_of $t)" 1 1 "$LAT_SECS"
  done
done

printf '\n%-8s %12s %10s %10s %10s %10s\n' target "req/s(c64)" "p50 c64" "p99 c64" "p50 c1" "p99 c1"
for t in $targets; do
  printf '%-8s %12s %9sms %9sms %9sms %9sms\n' "$t" "$(rps "$tmp/$t-tput.txt")" \
    "$(pct "$tmp/$t-tput.txt" 50%)" "$(pct "$tmp/$t-tput.txt" 99%)" \
    "$(medlat $t 50%)" "$(medlat $t 99%)"
  errs "$tmp/$t-tput.txt"
done
python3 - "$(rps "$tmp/polite-tput.txt")" "$(rps "$tmp/nginx-tput.txt")" \
  "$(medlat polite 50%)" "$(medlat nginx 50%)" "$(medlat direct 50%)" \
  "$(medlat polite 99%)" "$(medlat nginx 99%)" "$(medlat direct 99%)" \
  $(case $targets in *mitmproxy*) rps "$tmp/mitmproxy-tput.txt";; esac) <<'PY'
import sys
p, n, p50, n50, d50, p99, n99, d99 = map(float, sys.argv[1:9])
print("\npolite/nginx throughput over an HTTPS upstream: %.2f x (target >= 0.7)" % (p / n))
if len(sys.argv) > 9:
    print("polite/mitmproxy throughput: %.1f x (target >= 10)" % (p / float(sys.argv[9])))
print("added latency at 1 connection: p50 polite %.3f ms, nginx %.3f ms; p99 polite %.3f ms, nginx %.3f ms"
      % (p50 - d50, n50 - d50, p99 - d99, n99 - d99))
PY
