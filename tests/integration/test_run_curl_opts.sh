#!/usr/bin/env bash
# curl's habits in polite run, against a real nginx over TLS with a CA the
# test makes: --cacert, --capath, CURL_CA_BUNDLE, --cert/--key, -u (never in
# the results, the log, the summary or stderr), -A, --compressed (the
# decompressed size under --max-body), --http1.1/--http2, --proxy and
# --noproxy.
. "$(dirname "$0")/lib.sh"
P=$POLITE
C=$TMP/certs
make_cert "$C" server || { bad "openssl could not make certificates"; finish; exit; }
start_nginx_tls "$C" || { bad "nginx over TLS did not start"; finish; exit; }
B=https://127.0.0.1:$TLS_PORT
run() { "$P" run --no-progress -q --max-attempts 1 "$@"; }

# ---- the private CA ----------------------------------------------------------
echo "$B/ok" | run >"$TMP/noca.out" 2>&1
check "without the CA the certificate is refused (exit 1)" [ $? -eq 1 ]
check "... as a tls_error (not retried; test_tls_verify.sh has the rest)" jq -e 'select(.outcome)|.outcome=="tls_error"' "$TMP/noca.out"
echo "$B/ok" | run --cacert "$C/ca.pem" >"$TMP/ca.out"
check "--cacert FILE verifies it" jq -e '.status==200 and .body=="ok\n"' "$TMP/ca.out"
echo "$B/ok" | run --capath "$C/capath" >"$TMP/capath.out"
check "--capath DIR verifies it" jq -e '.status==200' "$TMP/capath.out"
echo "$B/ok" | CURL_CA_BUNDLE=$C/ca.pem run >"$TMP/env.out"
check "CURL_CA_BUNDLE is honoured" jq -e '.status==200' "$TMP/env.out"
echo "$B/ok" | run -k >"$TMP/k.out"
check "-k still skips verification" jq -e '.status==200' "$TMP/k.out"
run --cacert "$TMP/missing.pem" - </dev/null 2>"$TMP/e1"
check "a missing --cacert is a usage error (2)" [ $? -eq 2 ]
check_grep "... naming the option and the file" "--cacert: cannot read '.*missing.pem'" "$TMP/e1"
run --capath "$C/ca.pem" - </dev/null 2>"$TMP/e2"
check_grep "--capath must be a directory" "--capath: .* is not a directory" "$TMP/e2"
CA="--cacert $C/ca.pem"

# ---- client certificates -----------------------------------------------------
echo "$B/mtls" | run $CA >"$TMP/nocert.out"
check "without --cert the server refuses (403)" jq -e '.status==403' "$TMP/nocert.out"
echo "$B/mtls" | run $CA --cert "$C/client.pem" --key "$C/client.key" >"$TMP/cert.out"
check "--cert/--key present a client certificate" jq -e '.status==200 and (.body|test("polite test client"))' "$TMP/cert.out"
run $CA --key "$C/client.key" - </dev/null 2>"$TMP/e3"
check_grep "--key without --cert is refused" "--key needs --cert" "$TMP/e3"

# ---- -u user:password: sent, never written -------------------------------------
printf '%s\n' "$B/echo-auth" "$B/auth" "$B/nope?x=1" >"$TMP/u.in"
run $CA -u 'alice:PW-SECRET-7' --log "$TMP/u.log" --summary-json "$TMP/u.sum" \
  --out "$TMP/u.out" "$TMP/u.in" 2>"$TMP/u.err"
auth=$(printf 'alice:PW-SECRET-7' | base64)
check "-u sends Basic credentials" jq -e -s 'map(select(.url|endswith("/auth")))[0].status==200' "$TMP/u.out"
# The server echoes the header into the body: the body is the server's, the
# test only checks that polite wrote nothing of its own with it.
jq -c 'select(.url|endswith("/echo-auth")|not)' "$TMP/u.out" >"$TMP/u.own"
check_no_grep "the password is in no log, summary, error or other result" "PW-SECRET-7|$auth" \
  "$TMP/u.log" "$TMP/u.sum" "$TMP/u.err" "$TMP/u.own"
echo "$B/auth" | run $CA -u 'alice' 2>"$TMP/e4"
check "-u without a password is a usage error" [ $? -eq 2 ]
run $CA -u 'bob:NOPE-SECRET' --max-attempts 0 - </dev/null 2>"$TMP/e5"
check_no_grep "... and no usage error quotes the credentials" "SECRET" "$TMP/e4" "$TMP/e5"
echo "$B/auth" | run $CA -u 'alice:x' --timeout 0 2>"$TMP/e6"
check_no_grep "an error about another option quotes no credentials" "alice" "$TMP/e6"

# ---- -A and the default User-Agent -------------------------------------------
echo "$B/ua" | run $CA >"$TMP/ua.out"
ver=$("$P" --version | awk '{print $2}')
# shellcheck disable=SC2016 # $v: jq's variable, not the shell's
check "the default User-Agent is polite/VERSION" jq -e --arg v "polite/$ver" '.body==$v' "$TMP/ua.out"
echo "$B/ua" | run $CA -A 'batch-tool/2' >"$TMP/ua2.out"
check "-A sets it" jq -e '.body=="batch-tool/2"' "$TMP/ua2.out"
echo "{\"url\":\"$B/ua\",\"headers\":{\"User-Agent\":\"line-ua\"}}" | run $CA -A other >"$TMP/ua3.out"
check "a line's own User-Agent wins over -A" jq -e '.body=="line-ua"' "$TMP/ua3.out"

# ---- --compressed: decoded, and --max-body counts decoded bytes ----------------
echo "$B/big" | run $CA --compressed --log "$TMP/gz.log" >"$TMP/gz.out"
check "--compressed gives the decoded body (204801 bytes)" jq -e '(.body|length)==204801 and (.body_truncated|not)' "$TMP/gz.out"
grep -c "" "$C/logs/access.log" >/dev/null
echo "$B/big" | run $CA --compressed --max-body 100k >"$TMP/gz2.out"
check "--max-body 100k cuts the decoded body at 102400 bytes" jq -e '(.body|length)==102400 and .body_truncated' "$TMP/gz2.out"
echo "$B/big" | run $CA >"$TMP/plain.out"
check "without --compressed the body is not compressed either" jq -e '(.body|length)==204801' "$TMP/plain.out"
# nginx logs the bytes it sent: the compressed answer is far smaller.
sent=$(awk '$7=="/big" {print $10}' "$C/logs/access.log" 2>/dev/null | head -1)
[ -n "$sent" ] && check "the compressed transfer was small ($sent bytes sent)" [ "$sent" -lt 20000 ]

# ---- --http1.1 / --http2 ---------------------------------------------------------
echo "$B/proto" | run $CA --http1.1 >"$TMP/h1.out"
check "--http1.1 speaks HTTP/1.1" jq -e '.body=="HTTP/1.1"' "$TMP/h1.out"
echo "$B/proto" | run $CA --http2 >"$TMP/h2.out"
check "--http2 speaks HTTP/2" jq -e '.body=="HTTP/2.0"' "$TMP/h2.out"
run --http1.1 --http2 - </dev/null 2>"$TMP/e7"
check "--http1.1 with --http2 is a usage error" [ $? -eq 2 ]

# ---- --proxy / --noproxy (the scripted server sees proxy-form targets) ---------
# The target is a port of 127.0.0.1 that refuses connections (closed_port):
# only through the proxy does a request get an answer, and going direct
# fails at once, with no resolver involved.
start_pyserver
closed_port
X=http://127.0.0.1:$CLOSED_PORT
echo "$X/ok/via-proxy" | run --proxy "http://127.0.0.1:$PY_PORT" >"$TMP/px.out"
check "--proxy URL sends the request through the proxy" jq -e '.status==200' "$TMP/px.out"
check "... in absolute form" grep -q "\"path\": *\"$X/ok/via-proxy\"" "$PY_REC"
echo "$X/ok/direct" | run --proxy "http://127.0.0.1:$PY_PORT" --noproxy 127.0.0.1 >"$TMP/np.out"
check "--noproxy HOST goes direct (here: a refused port)" jq -e '.outcome=="network_error"' "$TMP/np.out"
check_no_grep "... and the proxy never saw it" "/ok/direct" "$PY_REC"
echo "$X/ok/env" | HTTP_PROXY='' http_proxy="http://127.0.0.1:$PY_PORT" run >"$TMP/envpx.out"
check "http_proxy in the environment still works (libcurl reads it)" jq -e '.status==200' "$TMP/envpx.out"
echo "http://127.0.0.1:$PY_PORT/ok/noenv" | http_proxy="$X" run --proxy '' >"$TMP/nopx.out"
check "--proxy '' turns the variables off" jq -e '.status==200' "$TMP/nopx.out"
finish
