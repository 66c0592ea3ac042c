#!/usr/bin/env bash
# bench/proxy/forward.sh: polite proxy --mode forward vs mitmproxy (mitmdump, regular mode), plain HTTP
# (absolute-form, wrk) and HTTPS (CONNECT + TLS interception, Node undici ProxyAgent), same nginx upstream.
#
# Usage: bench/proxy/forward.sh [POLITE_BINARY] [SECONDS]
#   POLITE_BINARY  default: build/polite (not a sanitizer build)
#   SECONDS        duration per throughput run (default 10)
#
# The upstream is one nginx (one worker, no master) serving a 51-byte body
# over http and over https (EC P-256 certificate made here, signed by a CA
# made here, which both proxies verify). nginx proxy_pass (reverse, http)
# is the reference for plain HTTP: nginx is no forward proxy. wrk cannot
# CONNECT, so HTTPS goes through tests/node's undici (npm ci there first);
# its own ceiling is the "direct" row (Node to the upstream over HTTPS).
# Throughput: 32 connections; latency: 1 connection. Numbers are
# indicative, not a test.
set -euo pipefail
POLITE=${1:-build/polite}
SECS=${2:-10}
here="$(cd "$(dirname "$0")" && pwd)"
node_dir="$here/../../tests/node"
for t in node mitmdump; do
  command -v $t >/dev/null || { echo "$t is not installed" >&2; exit 2; }
done
. "$(dirname "$0")/lib.sh"  # wrk/nginx checks, $tmp, cleanup, free_port, pct
[ -d "$node_dir/node_modules/undici" ] || (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
UP=$(free_port); UPS=$(free_port); NG=$(free_port); MP=$(free_port)

ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 -subj "/CN=bench CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req "${ec[@]}" -keyout "$tmp/up.key" -out "$tmp/up.csr" -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$tmp/up.ext"
openssl x509 -req -in "$tmp/up.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -days 2 \
  -extfile "$tmp/up.ext" -out "$tmp/up.pem" 2>/dev/null
cat >"$tmp/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1;
pid $tmp/nginx.pid; error_log $tmp/error.log warn;
events { worker_connections 4096; }
http {
  access_log off; keepalive_requests 1000000;
  client_body_temp_path $tmp/body; proxy_temp_path $tmp/proxy; fastcgi_temp_path $tmp/fcgi;
  uwsgi_temp_path $tmp/uwsgi; scgi_temp_path $tmp/scgi;
  server {
    listen 127.0.0.1:$UP; listen 127.0.0.1:$UPS ssl;
    ssl_certificate $tmp/up.pem; ssl_certificate_key $tmp/up.key;
    location / { default_type application/json; return 200 '{"ok":true,"data":"0123456789abcdef0123456789abcdef"}'; }
  }
  upstream backend { server 127.0.0.1:$UP; keepalive 128; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$NG;
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
CONF
nginx -c "$tmp/nginx.conf" -p "$tmp" & pids+=($!)
POLITE_CA_DIR="$tmp/polite-ca" "$POLITE" proxy --mode forward --listen 127.0.0.1:0 \
  --ready-file "$tmp/polite.ready" --watch "https://localhost:$UPS/*" --upstream-cacert "$tmp/ca.pem" \
  --log /dev/null 2>"$tmp/polite.err" & pids+=($!)
mitmdump -q --listen-host 127.0.0.1 --listen-port "$MP" --set confdir="$tmp/mitm" \
  --set ssl_verify_upstream_trusted_ca="$tmp/ca.pem" >"$tmp/mitm.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/polite.ready" ] && [ -s "$tmp/mitm/mitmproxy-ca-cert.pem" ] && break; sleep 0.1; done
PX=$(cat "$tmp/polite.ready")
sleep 0.5
curl -sf -x "http://$PX" "http://127.0.0.1:$UP/" >/dev/null || { echo "polite not up" >&2; cat "$tmp/polite.err" >&2; exit 1; }
curl -sf -x "http://127.0.0.1:$MP" "http://127.0.0.1:$UP/" >/dev/null || { echo "mitmdump not up" >&2; cat "$tmp/mitm.log" >&2; exit 1; }
cat "$tmp/polite-ca/ca.pem" "$tmp/mitm/mitmproxy-ca-cert.pem" "$tmp/ca.pem" >"$tmp/trust.pem"

rps() { awk '/Requests\/sec/ {printf "%.0f", $2}' "$1"; }
pct() { awk -v p="$2" '$1 == p { v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
        if (u == "us") v /= 1000; else if (u == "s") v *= 1000; printf "%.3f", v }' "$1"; }
# Plain HTTP: wrk with absolute-form targets to each forward proxy, origin-form to nginx.
wrk_run() { # name proxy-url conns secs [abs]
  local th=2; [ "$3" -lt 2 ] && th=1
  if [ -n "${5:-}" ]; then
    TARGET="http://127.0.0.1:$UP" wrk -t$th -c"$3" -d"$4"s --latency -s "$here/abs.lua" "$2" >"$tmp/$1.txt" 2>&1
  else
    wrk -t$th -c"$3" -d"$4"s --latency "$2" >"$tmp/$1.txt" 2>&1
  fi
}
# HTTPS: Node undici through CONNECT (the script runs from $tmp with tests/node's modules).
cp "$here/load.mjs" "$tmp/load.mjs"; ln -s "$node_dir/node_modules" "$tmp/node_modules"
node_run() { # name proxy-url-or-empty conns secs
  NODE_EXTRA_CA_CERTS="$tmp/trust.pem" node "$tmp/load.mjs" "https://localhost:$UPS/" "$3" "$4" ${2:+"$2"} >"$tmp/$1.json"
}
j() { python3 -c 'import json,sys; print("%.3f" % json.load(open(sys.argv[1]))[sys.argv[2]] if sys.argv[2] != "rps" else "%.0f" % json.load(open(sys.argv[1]))["rps"])' "$1" "$2"; }

echo "warming up..."
wrk_run warm "http://$PX/" 8 2 abs; node_run warm2 "http://$PX" 8 2
echo "plain HTTP..."
wrk_run h-direct "http://127.0.0.1:$UP/" 32 "$SECS"
wrk_run h-nginx "http://127.0.0.1:$NG/" 32 "$SECS"
wrk_run h-polite "http://$PX/" 32 "$SECS" abs
wrk_run h-mitm "http://127.0.0.1:$MP/" 32 "$SECS" abs
for t in direct nginx polite mitm; do
  wrk_run "h-$t-lat" "$(case $t in direct) echo "http://127.0.0.1:$UP/";; nginx) echo "http://127.0.0.1:$NG/";;
    polite) echo "http://$PX/";; mitm) echo "http://127.0.0.1:$MP/";; esac)" 1 3 "$([ $t = polite ] || [ $t = mitm ] && echo abs)"
done
echo "HTTPS (CONNECT, intercepted)..."
node_run s-direct "" 32 "$SECS"
node_run s-polite "http://$PX" 32 "$SECS"
node_run s-mitm "http://127.0.0.1:$MP" 32 "$SECS"
for t in direct polite mitm; do
  node_run "s-$t-lat" "$(case $t in direct) echo "";; polite) echo "http://$PX";; mitm) echo "http://127.0.0.1:$MP";; esac)" 1 3
done

printf '\n%-30s %10s %10s %10s %10s\n' "plain HTTP (wrk)" "req/s c32" "p50 c32" "p50 c1" "p99 c1"
for t in direct nginx polite mitm; do
  printf '%-30s %10s %9sms %9sms %9sms\n' "$t" "$(rps "$tmp/h-$t.txt")" "$(pct "$tmp/h-$t.txt" 50%)" \
    "$(pct "$tmp/h-$t-lat.txt" 50%)" "$(pct "$tmp/h-$t-lat.txt" 99%)"
done
printf '\n%-30s %10s %10s %10s %10s\n' "HTTPS forward (node undici)" "req/s c32" "p50 c32" "p50 c1" "p99 c1"
for t in direct polite mitm; do
  printf '%-30s %10s %9sms %9sms %9sms\n' "$t" "$(j "$tmp/s-$t.json" rps)" "$(j "$tmp/s-$t.json" p50_ms)" \
    "$(j "$tmp/s-$t-lat.json" p50_ms)" "$(j "$tmp/s-$t-lat.json" p99_ms)"
done
python3 - "$(rps "$tmp/h-polite.txt")" "$(rps "$tmp/h-nginx.txt")" "$(rps "$tmp/h-mitm.txt")" \
  "$(j "$tmp/s-polite.json" rps)" "$(j "$tmp/s-mitm.json" rps)" \
  "$(pct "$tmp/h-polite-lat.txt" 50%)" "$(pct "$tmp/h-direct-lat.txt" 50%)" <<'PY'
import sys
hp, hn, hm, sp, sm, p50, d50 = map(float, sys.argv[1:])
print("\nplain HTTP: polite forward / nginx proxy_pass %.2f x (target >= 0.9), / mitmproxy %.1f x (target >= 10)"
      % (hp / hn, hp / hm))
print("HTTPS forward: polite / mitmproxy %.1f x (target >= 10)" % (sp / sm))
print("p50 added latency at 1 connection, plain HTTP: %.3f ms (target <= 0.1)" % (p50 - d50))
PY
