#!/usr/bin/env bash
# A certificate that does not verify is not transient (issue 25 item 6): a
# real TLS server (openssl s_server) with a self-signed certificate, and one
# with a leaf from `polite proxy ca --issue`. polite run, polite_client
# (examples/fetch.c) and polite diagnose make one attempt and say tls_error;
# the server's own log counts the handshakes. Then the CA environment
# variables (CURL_CA_BUNDLE, SSL_CERT_FILE, SSL_CERT_DIR) as curl reads them,
# shared by run and diagnose, and diagnose's -x/--proxy and --noproxy.
. "$(dirname "$0")/lib.sh"
P=$POLITE
S=$TMP/tls
# The machine's own CA variables would decide the cases below.
unset CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR
mkdir -p "$S/capath"

# s_server NAME CERT KEY: an HTTPS server answering every GET with 200
# (-www) on a free port; sets PORT_NAME. Its log counts refused handshakes.
# Up when its log says ACCEPT (it has bound the port: not another test's
# server answering there); one that exited (the port was taken in between)
# is a new try on a new port, five in all.
s_server() {
  local name=$1 port pid
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    bg openssl s_server -accept "127.0.0.1:$port" -cert "$2" -key "$3" -www \
      >"$S/$name.log" 2>&1
    pid=$!
    for _ in $(seq 200); do
      grep -q '^ACCEPT' "$S/$name.log" 2>/dev/null && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    if grep -q '^ACCEPT' "$S/$name.log" && wait_port "$port" 10; then
      printf -v "PORT_$name" '%s' "$port"
      return 0
    fi
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  return 1
}
# handshakes_refused NAME: how many clients refused the server's certificate.
# s_server reads a client's alert after the client has left, so on a loaded
# machine the count could be read before it was written: first a request of
# our own that it answers (curl -k, no alert). s_server serves one
# connection at a time, so by then every earlier client's alert is logged.
handshakes_refused() {
  local port=PORT_$1
  curl -sk -o /dev/null --max-time 20 "https://127.0.0.1:${!port}/" ||
    echo "# curl -k to s_server $1 failed" >&2
  grep -c "alert" "$S/$1.log"
}

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$S/ss.key" -out "$S/ss.pem" 2>/dev/null ||
  { bad "openssl could not make a certificate"; finish; exit; }
cp "$S/ss.pem" "$S/capath/$(openssl x509 -hash -noout -in "$S/ss.pem").0"
"$P" proxy ca --dir="$TMP/ca" --issue=127.0.0.1 --out="$S/leaf" >/dev/null ||
  { bad "polite proxy ca --issue failed"; finish; exit; }
s_server self "$S/ss.pem" "$S/ss.key" || { bad "s_server did not start"; finish; exit; }
s_server leaf "$S/leaf.pem" "$S/leaf.key" || { bad "s_server did not start"; finish; exit; }
# shellcheck disable=SC2154 # PORT_self: set by s_server's printf -v
SELF=https://127.0.0.1:$PORT_self
# shellcheck disable=SC2154 # PORT_leaf: set by s_server's printf -v
LEAF=https://127.0.0.1:$PORT_leaf
run() { "$P" run --no-progress -q "$@"; }

# ---- polite run: one attempt, tls_error ---------------------------------------
echo "$SELF/a" | run --max-attempts 5 --log "$TMP/a.log" --summary-json "$TMP/a.sum" >"$TMP/a.out"
check "run: a self-signed certificate fails the run (exit 1)" [ $? -eq 1 ]
check_eq "... outcome tls_error after one attempt (issue 25: 5 over 6.3 s)" \
  "$(jq -r '"\(.outcome) \(.attempts)"' "$TMP/a.out")" "tls_error 1"
check_grep "... the error says why" '"error":"[^"]*self-signed certificate' "$TMP/a.out"
check_eq "... one attempt line in the log" "$(grep -c '"attempt":' "$TMP/a.log")" 1
check_grep "... whose reason is tls_error" '"reason":"tls_error"' "$TMP/a.log"
check_eq "... the summary counts it" "$(jq -r '.failures.tls_error' "$TMP/a.sum")" 1
check_eq "... and the server saw one handshake" "$(handshakes_refused self)" 1

# A write without an idempotency key: nothing was sent, so tls_error too.
echo "{\"method\":\"POST\",\"url\":\"$SELF/w\",\"body\":\"x\"}" | run --max-attempts 5 >"$TMP/w.out"
check_eq "run: a POST without a key is tls_error too (not not_retried_unsafe)" \
  "$(jq -r .outcome "$TMP/w.out")" tls_error
# A CA file that holds no certificate: the same on every attempt.
echo "not a certificate" >"$S/junk.pem"
echo "$SELF/j" | run --max-attempts 5 --cacert "$S/junk.pem" >"$TMP/j.out"
check_eq "run: --cacert of a file without certificates: tls_error, 1 attempt" \
  "$(jq -r '"\(.outcome) \(.attempts)"' "$TMP/j.out")" "tls_error 1"
# A transient failure is still retried: this port refuses connections.
closed_port
X=http://127.0.0.1:$CLOSED_PORT
echo "https://127.0.0.1:$CLOSED_PORT/x" | run --max-attempts 2 >"$TMP/r.out"
check_eq "run: a refused connection is still retried (network_error, 2 attempts)" \
  "$(jq -r '"\(.outcome) \(.attempts)"' "$TMP/r.out")" "network_error 2"

# ---- trusting the CA: options and environment, as curl reads them ----------
echo "$SELF/ok" | run --cacert "$S/ss.pem" >"$TMP/c1.out"
check "run --cacert verifies it" jq -e '.status==200' "$TMP/c1.out"
echo "$LEAF/ok" | run --cacert "$TMP/ca/ca.pem" >"$TMP/c2.out"
check "run --cacert of polite proxy ca verifies its --issue'd leaf" jq -e '.status==200' "$TMP/c2.out"
echo "$SELF/ok" | SSL_CERT_FILE=$S/ss.pem run >"$TMP/e1.out"
check "run reads SSL_CERT_FILE" jq -e '.status==200' "$TMP/e1.out"
echo "$SELF/ok" | SSL_CERT_DIR=$S/capath run >"$TMP/e2.out"
check "run reads SSL_CERT_DIR" jq -e '.status==200' "$TMP/e2.out"
echo "$SELF/ok" | CURL_CA_BUNDLE=$TMP/ca/ca.pem SSL_CERT_FILE=$S/ss.pem run >"$TMP/e3.out"
check_eq "CURL_CA_BUNDLE wins: SSL_CERT_FILE is not read beside it (curl's rule)" \
  "$(jq -r .outcome "$TMP/e3.out")" tls_error
echo "$SELF/ok" | SSL_CERT_FILE=$TMP/missing.pem run --cacert "$S/ss.pem" >"$TMP/e4.out"
check "--cacert given: the variables are not read" jq -e '.status==200' "$TMP/e4.out"
echo "$SELF/ok" | SSL_CERT_FILE=$TMP/missing.pem run >/dev/null 2>"$TMP/e5.err"
check "a variable naming a missing file is a usage error (exit 2)" [ $? -eq 2 ]
check_grep "... naming the variable and the file" "SSL_CERT_FILE: cannot read '.*missing.pem'" "$TMP/e5.err"

# ---- polite_client (examples/fetch.c): the same engine ------------------------
FETCH=$POLITE_BUILD/example_fetch
if [ -x "$FETCH" ]; then
  # A server of its own: the self-signed one's count may still be
  # catching up with the refusals above.
  s_server client "$S/ss.pem" "$S/ss.key" || bad "s_server did not start"
  # shellcheck disable=SC2154 # PORT_client: set by s_server's printf -v
  "$FETCH" --rate none "https://127.0.0.1:$PORT_client/client" >"$TMP/f.out" 2>&1
  check "polite_client: exit 1" [ $? -eq 1 ]
  check_grep "polite_client: tls_error after one attempt" "^tls_error .*attempts=1 " "$TMP/f.out"
  check_eq "... one handshake" "$(handshakes_refused client)" 1
else
  bad "no $FETCH"
fi

# ---- polite diagnose ----------------------------------------------------------
"$P" diagnose "$SELF/d" >"$TMP/d1.out" 2>"$TMP/d1.err"
check "diagnose: exit 1 for a certificate that does not verify" [ $? -eq 1 ]
check_grep "... naming tls_error and libcurl's reason" "^polite diagnose: tls_error: .*self-signed certificate" "$TMP/d1.err"
check_grep "... and how to trust it" "--cacert FILE.*SSL_CERT_FILE.*-k" "$TMP/d1.err"
"$P" diagnose --json --cacert="$S/ss.pem" "$SELF/d" >"$TMP/d2.out" 2>&1
check "diagnose --cacert=FILE verifies it" jq -e '.status==200' "$TMP/d2.out"
"$P" diagnose --json --capath "$S/capath" "$SELF/d" >"$TMP/d3.out" 2>&1
check "diagnose --capath DIR verifies it" jq -e '.status==200' "$TMP/d3.out"
SSL_CERT_FILE=$S/ss.pem "$P" diagnose --json "$SELF/d" >"$TMP/d4.out" 2>&1
check "diagnose reads SSL_CERT_FILE" jq -e '.status==200' "$TMP/d4.out"
CURL_CA_BUNDLE=$TMP/ca/ca.pem "$P" diagnose --json "$LEAF/d" >"$TMP/d5.out" 2>&1
check "diagnose reads CURL_CA_BUNDLE" jq -e '.status==200' "$TMP/d5.out"
SSL_CERT_DIR=$S/capath "$P" diagnose --json "$SELF/d" >"$TMP/d6.out" 2>&1
check "diagnose reads SSL_CERT_DIR" jq -e '.status==200' "$TMP/d6.out"
SSL_CERT_FILE=$TMP/missing.pem "$P" diagnose "$SELF/d" >/dev/null 2>"$TMP/d7.err"
check "diagnose: a variable naming a missing file exits 2" [ $? -eq 2 ]
check_grep "... naming it" "SSL_CERT_FILE: cannot read" "$TMP/d7.err"
printf 'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\n\r\n' >"$TMP/r.txt"
SSL_CERT_FILE=$TMP/missing.pem "$P" diagnose --json "$TMP/r.txt" >"$TMP/d8.out" 2>&1
check "diagnose of a file does not read the CA variables" jq -e '.status==429' "$TMP/d8.out"
"$P" diagnose --cacert "$S/ss.pem" "$TMP/r.txt" >/dev/null 2>"$TMP/d9.err"
check_grep "diagnose --cacert with a file is a usage error" "--cacert only applies to a URL" "$TMP/d9.err"

# -x/--proxy (the scripted server sees the proxy-form target) and --noproxy,
# to the refused port: only the proxy answers, and direct fails at once,
# whatever the machine's resolver does.
start_pyserver
"$P" diagnose --json -x "http://127.0.0.1:$PY_PORT" "$X/status/429" >"$TMP/x.out" 2>&1
check "diagnose -x URL goes through the proxy" jq -e '.status==429' "$TMP/x.out"
check "... in absolute form" grep -q "\"path\": *\"$X/status/429\"" "$PY_REC"
"$P" diagnose --proxy="http://127.0.0.1:$PY_PORT" --noproxy=127.0.0.1 --max-time 5 \
  "$X/status/503" >/dev/null 2>"$TMP/np.err"
check "diagnose --noproxy HOST goes direct (here: a refused port, exit 1)" [ $? -eq 1 ]
check_grep "... a plain request failure, not tls_error" "the request failed" "$TMP/np.err"
check_no_grep "... and the proxy never saw it" "/status/503" "$PY_REC"
finish
