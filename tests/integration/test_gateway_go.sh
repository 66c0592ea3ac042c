#!/usr/bin/env bash
# docs/gateway.md's Go recipe, run: a tiny net/http program (tests/go/get.go,
# the default client: HTTP_PROXY/HTTPS_PROXY through ProxyFromEnvironment,
# SSL_CERT_FILE for trust) through polite gateway, both ways in:
#  - as HTTPS_PROXY: https://api.example.test (a --watch host; Go never
#    proxies a loopback or localhost URL, so the test names a host and the
#    gateway's --connect-to sends it to the local TLS API) is intercepted
#    with the local CA: 200 with the gateway's Via; a 429 with Retry-After 1
#    is waited out and retried by the gateway, so the program gets 200;
#    without SSL_CERT_FILE Go refuses the gateway's certificate;
#  - as a base URL (--upstream): http://GATEWAY/path reaches the API.
# Skipped (exit 77) only when `go` is not installed (Debian: golang-go,
# in the Makefile's DEB_PACKAGES).
. "$(dirname "$0")/lib.sh"
. "$IT/gateway/gw.sh"
if ! command -v go >/dev/null; then
  echo "# SKIP: go is not installed (apt-get install golang-go; make deps installs it)"
  exit 77
fi
# The build cache stays in the build tree (a second run links at once); the
# program needs no module (it imports only the standard library).
export GOCACHE=$POLITE_BUILD/go-cache GOPATH=$TMP/gopath GOFLAGS=
check_quiet "the Go program builds" go build -o "$TMP/get" "$POLITE_SRC/tests/go/get.go"

# A certificate for api.example.test from a throwaway CA, for the API.
make_cert "$TMP/tls" server
d=$TMP/tls
openssl req -newkey rsa:2048 -nodes -subj "/CN=api.example.test" \
  -keyout "$d/api.key" -out "$d/api.csr" 2>/dev/null
printf 'subjectAltName=DNS:api.example.test\nbasicConstraints=CA:FALSE\n' >"$d/api.ext"
openssl x509 -req -in "$d/api.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
  -CAcreateserial -days 2 -extfile "$d/api.ext" -out "$d/api.pem" 2>/dev/null
start_upstream "$d/api.pem" "$d/api.key"
start_gateway g --watch 'https://api.example.test/*' --upstream https://api.example.test \
  --connect-to "api.example.test:443:$UP" --upstream-cacert "$d/ca.pem" --log "$TMP/g.log"
field() { # JSON-LINES-FILE N EXPR: EXPR of the Nth line (o)
  python3 -c 'import json, sys; o = json.loads(open(sys.argv[1]).readlines()[int(sys.argv[2])]); print(eval(sys.argv[3]))' "$@"
}

# ---- HTTPS_PROXY ---------------------------------------------------------------
HTTPS_PROXY=http://$GW SSL_CERT_FILE=$POLITE_CA_DIR/ca.pem "$TMP/get" \
  https://api.example.test/ok/go 'https://api.example.test/flip/go?n=1&ra=1' >"$TMP/proxy.out" 2>&1
sed 's/^/# /' "$TMP/proxy.out"
check_eq "HTTPS_PROXY: intercepted and answered 200 with the gateway's Via" \
  "$(field "$TMP/proxy.out" 0 '(o.get("status"), o.get("via"), o.get("body", "").strip())')" "(200, '1.1 polite', 'ok /ok/go')"
check_eq "a 429 (Retry-After: 1) is waited out by the gateway: the program gets 200" \
  "$(field "$TMP/proxy.out" 1 'o.get("status")')" 200
check_eq "the API saw the first try and one retry" "$(up_count '^/flip/go')" 2
gap=$(python3 -c '
import json, sys
t = [json.loads(l)["t"] for l in open(sys.argv[1]) if json.loads(l)["path"].startswith("/flip/go")]
print(int((t[1] - t[0]) * 1000))' "$TMP/up.rec")
if [ "$gap" -ge 950 ]; then ok "... not before the server's second ($gap ms)"
else bad "the retry came $gap ms after the 429"; fi
check_grep "the gateway's log names the https:// URL" '"url":"https://api.example.test/ok/go"' "$TMP/g.log"
HTTPS_PROXY=http://$GW SSL_CERT_FILE=/dev/null "$TMP/get" https://api.example.test/ok/untrusted >"$TMP/untrusted.out" 2>&1
check_grep "without SSL_CERT_FILE naming the local CA Go refuses the certificate" \
  '"error":".*(certificate|x509)' "$TMP/untrusted.out"

# ---- Base URL ------------------------------------------------------------------
"$TMP/get" "http://$GW/ok/gobase" >"$TMP/base.out" 2>&1
check_eq "base URL: 200 from the API through the gateway" \
  "$(field "$TMP/base.out" 0 '(o.get("status"), o.get("via"), o.get("body", "").strip())')" "(200, '1.1 polite', 'ok /ok/gobase')"
stop_gateway
check_eq "the gateway stops cleanly" "$GW_RC" 0
finish
