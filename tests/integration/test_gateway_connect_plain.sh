#!/usr/bin/env bash
# Plain http:// inside a CONNECT, through polite gateway and polite proxy.
# undici's ProxyAgent sends every URL through a CONNECT, http:// ones too
# (CONNECT host:80, then plain HTTP in the tunnel), and so does curl with
# --proxytunnel. For a --watch host the first byte after the 200 says TLS
# or plain HTTP (net/net_connect.c); plain HTTP then takes the same front
# door as a forward-proxy request:
#  - gateway: paced by the engine (--rate 2/s: four sequential GETs from
#    one ProxyAgent reach the server >= ~500 ms apart, held to >= 250 ms so
#    that a loaded machine's late deliveries pass; tunnelled they would
#    arrive back to back), Via added, logged as http://; an unwatched host
#    is still tunnelled untouched; curl --proxytunnel likewise; an https://
#    URL of a watched host is still intercepted with the local CA;
#  - proxy: the judge sees them (--rate-limit 1/min: a second GET after
#    the first gets the proxy's 429) and its log names http://, not https://.
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"
need_node
start_upstream
# A second upstream (python's http.server) on a free port: one taken in
# between makes it exit, and is a new try on a new port, five in all.
for _ in 1 2 3 4 5; do
  UP2_PORT=$(free_port)
  bg python3 -u -m http.server "$UP2_PORT" --bind 127.0.0.1 --directory "$TMP" >"$TMP/up2.log" 2>&1
  for _ in $(seq 100); do
    grep -q "^Serving HTTP" "$TMP/up2.log" && break
    kill -0 "${PIDS[-1]}" 2>/dev/null || break
    sleep 0.05
  done
  grep -q "^Serving HTTP" "$TMP/up2.log" && wait_port "$UP2_PORT" && break
done
echo hi >"$TMP/plain.txt"
# gaps RE: the gaps in ms between the upstream's arrivals whose path matches RE.
gaps() {
  python3 -c '
import json, re, sys
t = [json.loads(l)["t"] for l in open(sys.argv[1]) if re.search(sys.argv[2], json.loads(l)["path"])]
print(" ".join("%d" % ((b - a) * 1000) for a, b in zip(t, t[1:])))' "$TMP/up.rec" "$1"
}
via_of() {
  python3 -c '
import json, re, sys
for l in open(sys.argv[1]):
    o = json.loads(l)
    if re.search(sys.argv[2], o["path"]):
        print(o["headers"].get("via", "-"))' "$TMP/up.rec" "$1"
}

# ---- The gateway -------------------------------------------------------------
make_cert "$TMP/tls" server
start_nginx_tls "$TMP/tls"
start_gateway g --watch "http://$UP/*" --watch "https://localhost:$TLS_PORT/*" \
  --upstream-cacert "$TMP/tls/ca.pem" --rate 2/s --log "$TMP/g.log"
urls=()
for i in 1 2 3 4; do urls+=("http://$UP/ok/pace$i"); done
NODE_EXTRA_CA_CERTS=$POLITE_CA_DIR/ca.pem node "$NODE_DIR/fetch_via_proxy.mjs" "http://$GW" \
  "${urls[@]}" "http://127.0.0.1:$UP2_PORT/plain.txt" "https://localhost:$TLS_PORT/ok" \
  >"$TMP/fetch.out" 2>&1
check_eq "ProxyAgent, http:// to a watched host: 4 x 200" \
  "$(grep -c '"url":"http://[^"]*/ok/pace[0-9]","status":200,.*"via":"1.1 polite"' "$TMP/fetch.out")" 4
check_eq "the server saw the gateway's Via on each" "$(via_of '^/ok/pace' | sort -u)" "1.1 polite"
g=$(gaps '^/ok/pace')
echo "# arrival gaps at the server (ms): $g"
slow=$(for x in $g; do [ "$x" -ge 250 ] && echo y; done | grep -c y)
check_eq "paced at --rate 2/s: the 3 gaps are >= 250 ms" "$slow" 3
check_eq "the gateway's log names them http://" \
  "$(grep -c "\"url\":\"http://$UP/ok/pace[0-9]\"" "$TMP/g.log")" 4
check_no_grep "and never https://" "https://$UP" "$TMP/g.log"
check_grep "an unwatched http:// host is still tunnelled untouched" \
  '"url":"http://127.0.0.1:[0-9]+/plain.txt","status":200,"retry_after":null,"via":null,"body":"hi' "$TMP/fetch.out"
check_grep "an https:// URL of a watched host is still intercepted" \
  '"url":"https://localhost:[0-9]+/ok","status":200,.*"via":"1.1 polite"' "$TMP/fetch.out"
code=$(curl -s -o "$TMP/curl.out" -w '%{http_code}' --proxytunnel -x "http://$GW" "http://$UP/ok/curl")
check_eq "curl --proxytunnel, http:// to a watched host: 200" "$code" 200
check_eq "through the gateway (Via)" "$(via_of '^/ok/curl$')" "1.1 polite"
check_grep "logged as http://" "\"url\":\"http://$UP/ok/curl\"" "$TMP/g.log"
# A raw client: the plain request in the same write as its CONNECT (read
# before the 200 went out), then one that leaves right after the 200, one
# that sends a TLS record header and leaves, and one that stays silent.
python3 - "$GW" "$UP" >"$TMP/raw.out" 2>&1 <<'PY'
import socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
up = sys.argv[2]
def conn():
    return socket.create_connection((host, int(port)), timeout=10)
s = conn()
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /ok/pipe HTTP/1.1\r\nHost: %s\r\n"
           "Connection: close\r\n\r\n" % (up, up, up)).encode())
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print("pipelined:", data.split(b"\r\n")[0].decode(), "|", b"HTTP/1.1 200 OK" in data, b"ok /ok/pipe" in data)
for first in (b"", b"\x16\x03\x01"):
    s = conn()
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (up, up)).encode())
    s.recv(200)
    s.sendall(first)
    s.close()
quiet = conn()
quiet.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (up, up)).encode())
quiet.recv(200)
time.sleep(0.2)
print("done")
PY
check_grep "a plain request sent with its CONNECT is answered" \
  "pipelined: HTTP/1.1 200 Connection Established | True True" "$TMP/raw.out"
code=$(curl -s -o /dev/null -w '%{http_code}' --proxytunnel -x "http://$GW" "http://$UP/ok/after")
check_eq "clients that left during the first byte's wait leave the gateway serving" "$code" 200
stop_gateway
check_eq "the gateway stops cleanly" "$GW_RC" 0

# ---- The proxy ---------------------------------------------------------------
start_proxy --mode forward --watch "http://$UP/*" --rate-limit 1/min --burst 1 \
  --log "$TMP/pxreq.log"
c1=$(curl -s -o /dev/null -w '%{http_code}' --proxytunnel -x "http://$PX" "http://$UP/ok/px1")
c2=$(curl -s -o /dev/null -w '%{http_code}' --proxytunnel -x "http://$PX" "http://$UP/ok/px2")
check_eq "proxy, curl --proxytunnel: the first 200, the second the proxy's 429" "$c1 $c2" "200 429"
node "$NODE_DIR/fetch_via_proxy.mjs" "http://$PX" "http://$UP/ok/px3" >"$TMP/pxfetch.out" 2>&1
check_grep "proxy, ProxyAgent: http:// inside CONNECT is judged (429 + Retry-After)" \
  '"url":"http://[^"]*/ok/px3","status":429,"retry_after":"[0-9]+"' "$TMP/pxfetch.out"
for _ in $(seq 100); do grep -q '/ok/px3' "$TMP/pxreq.log" 2>/dev/null && break; sleep 0.1; done
check_grep "the proxy's log names http://" " GET http://$UP/ok/px1 200" "$TMP/pxreq.log"
check_grep "... for the 429 too" " GET http://$UP/ok/px2 429" "$TMP/pxreq.log"
check_no_grep "and never https://" "https://$UP" "$TMP/pxreq.log"
finish
