#!/usr/bin/env bash
# polite gateway's ways in, with curl as the client: its own
# /__polite/metrics (valid under promtool), a GET in base-URL mode
# (--upstream), a plain http:// GET in forward mode (HTTP_PROXY), a CONNECT
# to an unwatched host tunnelled untouched (curl checks the server's own
# certificate), a CONNECT to a --watch host intercepted with the local CA
# (curl trusts only that CA, so an answer proves the interception) and made
# polite (it is in the attempt log), --allow-host refusing other hosts, a
# non-loopback --listen refused without --allow-host; the attempt log has
# polite run's schema plus the gateway's fields and no secret; SIGTERM
# prints polite run's summary with the layers' attempts.
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"

start_upstream
make_cert "$TMP/tls" server
start_nginx_tls "$TMP/tls"

# ---- Base URL and forward mode, plain http -------------------------------
start_gateway a --upstream "http://$UP" --log "$TMP/a.log"
curl -s -m 5 "http://$GW/__polite/metrics" >"$TMP/metrics.txt"
check_grep "its own /__polite/metrics answers" '^polite_gateway_requests_total' "$TMP/metrics.txt"
if command -v promtool >/dev/null; then
  check "the metrics are valid Prometheus text (promtool)" promtool check metrics <"$TMP/metrics.txt"
fi
check_eq "base URL: a GET reaches the upstream's path" \
  "$(curl -s -m 5 "http://$GW/ok/base")" "ok /ok/base"
SECRET=sk-test-51bd0c7e
check_eq "forward: a plain http:// GET through HTTP_PROXY" \
  "$(http_proxy=http://$GW curl -s -m 5 -H "Authorization: Bearer $SECRET" \
    "http://$UP/ok/fwd?api_key=$SECRET")" "ok /ok/fwd"
check_grep "the upstream got the query and the Authorization header" "api_key=$SECRET.*Bearer $SECRET" "$TMP/up.rec"
stop_gateway
check_eq "SIGTERM: the gateway drains and exits 0" "$GW_RC" 0
check_grep "the summary is polite run's" '^polite gateway: 2 requests in .*: 2 ok, 0 failed' "$TMP/a.err"
check_grep "the summary counts the attempts over all layers" 'attempts upstream over all layers: 2' "$TMP/a.err"
check_eq "one log line per attempt" "$(grep -c '"attempt":' "$TMP/a.log")" 2
python3 - "$TMP/a.log" "$UP" >"$TMP/a.check" 2>&1 <<'EOF'
import json, sys
need = ("id", "attempt", "method", "url", "start_ms", "end_ms", "status", "action", "reason",
        "layer", "queued_ms", "client_retries")
seen = []
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "attempt" not in o:
        continue
    miss = [k for k in need if k not in o]
    assert not miss, "missing %s in %s" % (miss, line)
    assert o["status"] == 200 and o["layer"] == "client", line
    seen.append((o["id"], o["url"].split("?")[0]))
# The request ids count from 1; the canonical URL is scheme, authority and
# the target sent upstream (the base URL's and the absolute-form one's).
up = "http://" + sys.argv[2]
assert seen == [("gw-1", up + "/ok/base"), ("gw-2", up + "/ok/fwd")], seen
print("schema ok")
EOF
check_grep "the log has polite run's schema and the gateway's fields" '^schema ok' "$TMP/a.check"
check_no_grep "no secret in the log or on stderr" "$SECRET" "$TMP/a.log" "$TMP/a.err"

# ---- HTTPS: tunnelled when unwatched, intercepted when watched ------------
start_gateway b --watch "https://localhost:$TLS_PORT/*" \
  --upstream-cacert "$TMP/tls/ca.pem" --log "$TMP/b.log"
check_eq "an unwatched CONNECT is tunnelled (curl verifies nginx's own cert)" \
  "$(curl -s -m 5 --cacert "$TMP/tls/ca.pem" -x "http://$GW" "https://127.0.0.1:$TLS_PORT/ok")" ok
check_eq "a watched CONNECT is intercepted with the local CA" \
  "$(curl -s -m 5 --cacert "$TMP/ca/ca.pem" -x "http://$GW" "https://localhost:$TLS_PORT/ok")" ok
if curl -s -m 5 --cacert "$TMP/tls/ca.pem" -x "http://$GW" "https://localhost:$TLS_PORT/ok" >/dev/null; then
  bad "the intercepted answer is not signed by nginx's CA"
else ok "the intercepted answer is not signed by nginx's CA"; fi
stop_gateway
check_eq "SIGTERM: exit 0" "$GW_RC" 0
check_grep "the intercepted request went through the engine" '"url":"https://localhost:[0-9]+/ok".*"status":200' "$TMP/b.log"
check_no_grep "the tunnelled one did not" '127\.0\.0\.1:'"$TLS_PORT" "$TMP/b.log"

# ---- --allow-host and the listen address ----------------------------------
start_gateway c --allow-host 127.0.0.1
code=$(curl -s -m 5 -o /dev/null -w '%{http_code}' -x "http://$GW" "http://localhost:${UP#*:}/ok/x")
check_eq "a host outside --allow-host is refused (403)" "$code" 403
check_eq "a host inside --allow-host is reached" \
  "$(curl -s -m 5 -x "http://$GW" "http://$UP/ok/in")" "ok /ok/in"
stop_gateway
"$POLITE" gateway --listen 0.0.0.0:0 >"$TMP/d.out" 2>&1 &
d_pid=$!
# It should exit at once: poll for that (5 s at most), not a fixed second.
for _ in $(seq 100); do
  kill -0 "$d_pid" 2>/dev/null || break
  sleep 0.05
done
if kill -0 "$d_pid" 2>/dev/null; then
  kill "$d_pid"
  bad "a non-loopback --listen without --allow-host is refused"
else
  wait "$d_pid"
  check_eq "a non-loopback --listen without --allow-host exits 2" "$?" 2
  check_grep "and says why" 'allow-host' "$TMP/d.out"
fi
finish
