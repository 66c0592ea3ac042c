#!/usr/bin/env bash
# Node clients through polite gateway (tests/node's packages, npm ci from
# the committed lock):
#  - the official OpenAI Node SDK with the gateway as its base URL and its
#    own retries left on (default 2), to polite proxy --rate-limit 10/s in
#    front of a chat-completions API (tests/integration/upstream.py): every call
#    succeeds, the judge sees 0 early requests, few 429s at the server; the
#    gateway's log counts the SDK's own retries (X-Stainless-Retry-Count);
#    a streamed completion arrives whole; the API key is in no log;
#  - Node's fetch through undici's ProxyAgent: an https:// --watch URL
#    intercepted with the local CA (NODE_EXTRA_CA_CERTS) and made polite;
#    a --watch http:// URL, which undici 6 sends through a CONNECT tunnel
#    too (docs/gateway.md, "Node fetch"), is made polite as well (its pacing
#    and the proxy's side: test_gateway_connect_plain.sh).
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"
need_node
field() {
  python3 -c 'import json, sys; o = json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}
N=40
start_upstream
start_proxy --upstream "http://$UP" --rate-limit 10/s --burst 1 \
  --retry-after-scope host --report "$TMP/px.json"
PX_PID=${PIDS[-1]}

# ---- The OpenAI SDK, base URL ------------------------------------------------
start_gateway a --upstream "http://$PX/v1" --log "$TMP/a.log"
out=$(node "$NODE_DIR/openai_chat.mjs" "http://$GW" $N 8)
echo "# OpenAI SDK through the gateway: $out"
check_eq "OpenAI SDK: all $N chat completions succeed" "$(field "$out" 'o["ok"]')" $N
check_eq "OpenAI SDK: the answer is read whole" "$(field "$out" 'o["content"]')" hello
out=$(node "$NODE_DIR/openai_chat.mjs" "http://$GW" 2 1 stream)
check_eq "OpenAI SDK: a streamed completion arrives whole" "$(field "$out" '(o["ok"], o["content"])')" "(2, 'hello')"
stop_gateway
judge_verdict "$PX_PID"
early=$EARLY limited=$LIMITED
check_eq "the judge saw 0 early requests" "$early" 0
if [ "$limited" -le 4 ]; then ok "the server answered $limited 429s (<= 10% of $N)"
else bad "the server answered $limited 429s"; fi
check_grep "the log says how many retries the SDK had made" '"client_retries":0' "$TMP/a.log"
check_no_grep "the API key is in no log" 'sk-test-node-secret' "$TMP/a.log" "$TMP/a.err" "$TMP/px.log"

# ---- Node fetch through undici's ProxyAgent --------------------------------
make_cert "$TMP/tls" server
start_nginx_tls "$TMP/tls"
start_gateway b --watch "http://$UP/*" --watch "https://localhost:$TLS_PORT/*" \
  --upstream-cacert "$TMP/tls/ca.pem" --log "$TMP/b.log"
NODE_EXTRA_CA_CERTS=$POLITE_CA_DIR/ca.pem node "$NODE_DIR/fetch_via_proxy.mjs" "http://$GW" \
  "http://$UP/ok/node" "https://localhost:$TLS_PORT/ok" >"$TMP/fetch.out" 2>&1
check_grep "undici ProxyAgent: an http:// GET inside its CONNECT goes through the gateway" \
  '"status":200,.*"via":"1.1 polite","body":"ok /ok/node' "$TMP/fetch.out"
check_grep "undici ProxyAgent: an https:// GET intercepted with the local CA" \
  '"url":"https://localhost:[0-9]+/ok","status":200,.*"via":"1.1 polite"' "$TMP/fetch.out"
stop_gateway
check_eq "the https:// one went through the engine" "$(grep -c '"url":"https://localhost:[0-9]*/ok"' "$TMP/b.log")" 1
check_eq "the http:// one too, logged as http://" "$(grep -c "\"url\":\"http://$UP/ok/node\"" "$TMP/b.log")" 1
finish
