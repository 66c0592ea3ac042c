#!/usr/bin/env bash
# The naive script (Python requests, 8 threads, one GET per URL, no retry
# logic: gateway/naive.py) made polite by a gateway that is not told the
# limit, small counts (the full-size run is bench/gateway/run.sh):
#  - through a base URL to polite proxy --rate-limit 20/s, whose judge
#    (--retry-after-scope host) reports every request that came before a
#    Retry-After it gave: every GET ends 200 at the client, 0 early, few
#    429s at the server;
#  - through HTTPS_PROXY to nginx limit_req 20 r/s over TLS, intercepted
#    with the local CA (REQUESTS_CA_BUNDLE): every GET ends 200, few 429s in
#    nginx's log;
#  - a server-sent-events stream reaches a requests client event by event
#    (each event well before the next is written), not at the end.
# Each check fails without the gateway: the same script direct gets 429s.
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"
N=60

# JSON field of naive.py's output line $1: python expression $2 on it (o).
field() {
  python3 -c 'import json, sys; o = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

# ---- Base URL, polite proxy's judge ---------------------------------------
# The judge knows a client by its address: the direct run has a proxy of
# its own, so that its early requests are not counted as the gateway's.
start_proxy --rate-limit 20/s --burst 1
out=$(python3 "$GWT/naive.py" --threads 8 "http://$PX/direct/" 30)
if [ "$(field "$out" 'o["status"].get("429", 0)')" -gt 0 ]; then
  ok "direct, the naive script gets 429s ($(field "$out" 'o["status"]'))"
else bad "direct, the naive script gets no 429 ($out): the test cannot fail"; fi
kill "${PIDS[-1]}"
start_proxy --rate-limit 20/s --burst 1 --retry-after-scope host --report "$TMP/px.json"
PX_PID=${PIDS[-1]}

start_gateway a --upstream "http://$PX" --log "$TMP/a.log"
out=$(python3 "$GWT/naive.py" --threads 8 "http://$GW/v1/items/" $N)
echo "# through the gateway: $out"
check_eq "base URL: all $N GETs end 200 at the client" "$(field "$out" 'o["status"]')" "{'200': $N}"
stop_gateway
judge_verdict "$PX_PID"
early=$EARLY limited=$LIMITED
check_eq "the judge saw 0 early requests from the gateway" "$early" 0
if [ "$limited" -ge 0 ] && [ "$limited" -le 6 ]; then ok "the server answered the gateway $limited 429s (<= 10% of $N)"
else bad "the server answered the gateway $limited 429s"; fi

# ---- HTTPS_PROXY, intercepted, nginx limit_req over TLS --------------------
make_cert "$TMP/tls" server
NGINX_MORE="limit_req_zone \$binary_remote_addr zone=z:1m rate=20r/s;"
d=$TMP/nginx-tls
mkdir -p "$d/www"
echo ok >"$d/www/ok.txt"
NGINX_SERVER="
    ssl_certificate $TMP/tls/server.pem;
    ssl_certificate_key $TMP/tls/server.key;
    location / {
      limit_req zone=z burst=1 nodelay;
      limit_req_status 429;
      root $d/www; try_files /ok.txt =404;
    }" _nginx_start "$d" TLS_PORT ssl "$NGINX_MORE" ||
  bad "nginx over TLS did not start"

start_gateway b --watch "https://localhost:$TLS_PORT/*" \
  --upstream-cacert "$TMP/tls/ca.pem" --log "$TMP/b.log"
out=$(HTTPS_PROXY=http://$GW REQUESTS_CA_BUNDLE=$POLITE_CA_DIR/ca.pem \
  python3 "$GWT/naive.py" --threads 8 "https://localhost:$TLS_PORT/i" $N)
echo "# HTTPS through the gateway: $out"
check_eq "HTTPS_PROXY, intercepted: all $N GETs end 200" "$(field "$out" 'o["status"]')" "{'200': $N}"
stop_gateway
n429=$(grep -c '" 429 ' "$d/logs/access.log")
if [ "$n429" -le 6 ]; then ok "nginx answered $n429 429s (<= 10% of $N)"
else bad "nginx answered $n429 429s"; fi
check_eq "nginx served all $N" "$(grep -c '" 200 ' "$d/logs/access.log")" $N

# ---- Server-sent events, event by event ------------------------------------
start_upstream
start_gateway c --upstream "http://$UP"
python3 - "http://$GW/sse?ms=300&n=5" >"$TMP/sse.out" 2>&1 <<'EOF'
import json, sys, time
import requests
r = requests.get(sys.argv[1], stream=True, timeout=10)
worst = 0
n = 0
for line in r.iter_lines(chunk_size=1):
    if line.startswith(b"data: "):
        ev = json.loads(line[6:])
        worst = max(worst, time.time() - ev["t"])
        n += 1
print("events %d worst %.1f ms" % (n, worst * 1000))
# Events 300 ms apart: one held until the next (or the end) is >= 300 ms late.
print("streamed" if n == 5 and worst < 0.15 else "buffered")
EOF
echo "# SSE: $(head -1 "$TMP/sse.out")"
check_grep "SSE: every event arrives as it is written" '^streamed' "$TMP/sse.out"
stop_gateway
finish
