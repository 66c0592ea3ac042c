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
. "$(dirname "$0")/lib.sh"
UP=$(free_port); NG=$(free_port); MP=$(free_port)

ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 2 -subj "/CN=bench CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req "${ec[@]}" -keyout "$tmp/up.key" -out "$tmp/up.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tmp/up.ext"
openssl x509 -req -in "$tmp/up.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -days 2 \
  -extfile "$tmp/up.ext" -out "$tmp/up.pem" 2>/dev/null

nginx_start "$(cat <<CONF
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
CONF
)"
polite_start --upstream "https://127.0.0.1:$UP" --upstream-cacert "$tmp/ca.pem"
targets=(direct nginx polite)
if command -v mitmdump >/dev/null; then
  # mitmproxy as a reverse proxy to the same upstream, verifying it against the same CA.
  mitmdump -q --mode "reverse:https://127.0.0.1:$UP" --listen-host 127.0.0.1 --listen-port "$MP" \
    --set ssl_verify_upstream_trusted_ca="$tmp/ca.pem" --set confdir="$tmp/mitm" >"$tmp/mitm.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$MP/" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$MP/" >/dev/null && targets+=(mitmproxy) || echo "mitmproxy not up: skipped" >&2
fi
up_check

url_of() { case $1 in direct) echo "https://127.0.0.1:$UP/";; nginx) echo "http://127.0.0.1:$NG/";;
  polite) echo "http://$PX/";; mitmproxy) echo "http://127.0.0.1:$MP/";; esac; }

echo "warming up..."
run warm1 "$(url_of nginx)" 16 2 2
run warm2 "$(url_of polite)" 16 2 2
measure "${targets[@]}"
table "${targets[@]}"
mitm=() # mitmproxy's requests/s, when it ran and wrk reported one (none: no argument, as on main)
case " ${targets[*]} " in *" mitmproxy "*) m=$(rps "$tmp/mitmproxy-tput.txt"); [ -z "$m" ] || mitm=("$m") ;; esac
python3 - "$(rps "$tmp/polite-tput.txt")" "$(rps "$tmp/nginx-tput.txt")" \
  "$(medlat polite 50%)" "$(medlat nginx 50%)" "$(medlat direct 50%)" \
  "$(medlat polite 99%)" "$(medlat nginx 99%)" "$(medlat direct 99%)" \
  "${mitm[@]}" <<'PY'
import sys
p, n, p50, n50, d50, p99, n99, d99 = map(float, sys.argv[1:9])
print("\npolite/nginx throughput over an HTTPS upstream: %.2f x (target >= 0.7)" % (p / n))
if len(sys.argv) > 9:
    print("polite/mitmproxy throughput: %.1f x (target >= 10)" % (p / float(sys.argv[9])))
print("added latency at 1 connection: p50 polite %.3f ms, nginx %.3f ms; p99 polite %.3f ms, nginx %.3f ms"
      % (p50 - d50, n50 - d50, p99 - d99, n99 - d99))
PY
