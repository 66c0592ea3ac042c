#!/usr/bin/env bash
# polite proxy ca: the local root CA is made on first use with private modes, its leaves pass
# `openssl verify` and Python's ssl (127.0.0.1 and a DNS name, wrong name refused), --renew changes it.
. "$(dirname "$0")/lib.sh"
set -o pipefail
mode() { stat -c %a "$1"; }

# 1. First use makes the CA in --dir, directories 0700, key 0600; the output says how to trust it.
D="$TMP/home/ca"
out="$("$POLITE" proxy ca --dir "$D")"
check_quiet "ca: certificate path printed" grep -qF "CA certificate: $D/ca.pem" <<<"$out"
for hint in "curl --cacert $D/ca.pem" "REQUESTS_CA_BUNDLE=$D/ca.pem" "NODE_EXTRA_CA_CERTS=$D/ca.pem" \
  "SSL_CERT_FILE=$D/ca.pem" "/usr/local/share/ca-certificates/" "update-ca-certificates"; do
  check_quiet "ca: says '$hint'" grep -qF -- "$hint" <<<"$out"
done
check_quiet "ca: key mode 0600" [ "$(mode "$D/ca.key")" = 600 ]
check_quiet "ca: directory mode 0700" [ "$(mode "$D")" = 700 ]
check_quiet "ca: parent made 0700 too" [ "$(mode "$TMP/home")" = 700 ]
check_quiet "ca: root is CA:TRUE critical" sh -c "openssl x509 -in '$D/ca.pem' -noout -ext basicConstraints | grep -q 'critical' && openssl x509 -in '$D/ca.pem' -noout -ext basicConstraints | grep -q 'CA:TRUE'"
check_quiet "ca: subject names polite and the user" sh -c "openssl x509 -in '$D/ca.pem' -noout -subject | grep -q 'polite proxy CA ($(id -un)@'"

# 1b. An existing directory others can enter is refused, never chmod'ed (--dir /tmp must not make /tmp private).
mkdir -m 755 "$TMP/open"
check_quiet "ca: --dir of a 755 directory refused" sh -c "! '$POLITE' proxy ca --dir '$TMP/open' 2>'$TMP/open.err' && grep -q 'mode 700; it is 755' '$TMP/open.err'"
check_quiet "ca: ... and left as it was, with no key in it" sh -c "[ \"\$(stat -c %a '$TMP/open')\" = 755 ] && [ ! -e '$TMP/open/ca.key' ]"
mkdir -m 700 "$TMP/mine"
check_quiet "ca: --dir of an existing 700 directory of ours is used" "$POLITE" proxy ca --dir "$TMP/mine" --path

# 2. POLITE_CA_DIR and XDG_DATA_HOME choose the default place; --path prints only the path.
check_quiet "ca: POLITE_CA_DIR" [ "$(POLITE_CA_DIR="$D" "$POLITE" proxy ca --path)" = "$D/ca.pem" ]
check_quiet "ca: XDG_DATA_HOME" [ "$(env -u POLITE_CA_DIR XDG_DATA_HOME="$TMP/xdg" "$POLITE" proxy ca --path)" = "$TMP/xdg/polite/ca/ca.pem" ]
check_quiet "ca: HOME fallback" [ "$(env -u POLITE_CA_DIR -u XDG_DATA_HOME HOME="$TMP/h2" "$POLITE" proxy ca --path)" = "$TMP/h2/.local/share/polite/ca/ca.pem" ]

# 3. Leaves pass openssl verify (IP and DNS name), with SAN and serverAuth.
"$POLITE" proxy ca --dir "$D" --issue 127.0.0.1 --out "$TMP/ip" >/dev/null
"$POLITE" proxy ca --dir "$D" --issue api.polite.test --out "$TMP/dns" >/dev/null
check_quiet "leaf: openssl verify (IP)" openssl verify -CAfile "$D/ca.pem" -purpose sslserver "$TMP/ip.pem"
check_quiet "leaf: openssl verify (DNS)" openssl verify -CAfile "$D/ca.pem" -purpose sslserver -verify_hostname api.polite.test "$TMP/dns.pem"
check_quiet "leaf: wrong name refused by openssl verify" sh -c "! openssl verify -CAfile '$D/ca.pem' -verify_hostname other.polite.test '$TMP/dns.pem'"
check_quiet "leaf: key mode 0600" [ "$(mode "$TMP/ip.key")" = 600 ]
check_quiet "leaf: SAN IP" sh -c "openssl x509 -in '$TMP/ip.pem' -noout -ext subjectAltName | grep -q 'IP Address:127.0.0.1'"
check_quiet "leaf: hostile name refused" sh -c "! '$POLITE' proxy ca --dir '$D' --issue 'a.test,DNS:evil.test' --out '$TMP/evil' 2>'$TMP/evil.err' && grep -q 'not a DNS name' '$TMP/evil.err'"

# 4. Python's ssl (the default context: hostname check, CERT_REQUIRED) accepts each leaf.
py="$(cat <<'PY'
import socket, ssl, sys, threading
cert, key, cafile, name = sys.argv[1:5]
srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
srv.load_cert_chain(cert, key)
ls = socket.socket(); ls.bind(("127.0.0.1", 0)); ls.listen(1)
def serve():
    c, _ = ls.accept()
    try:
        with srv.wrap_socket(c, server_side=True) as s:
            s.sendall(b"hello")
    except Exception:
        pass
threading.Thread(target=serve, daemon=True).start()
cli = ssl.create_default_context(cafile=cafile)
if hasattr(ssl, "VERIFY_X509_STRICT"):
    cli.verify_flags |= ssl.VERIFY_X509_STRICT
with socket.create_connection(ls.getsockname(), timeout=5) as raw:
    with cli.wrap_socket(raw, server_hostname=name) as s:
        sys.exit(0 if s.recv(5) == b"hello" else 1)
PY
)"
check_quiet "python ssl: accepts leaf for 127.0.0.1" timeout 20 python3 -c "$py" "$TMP/ip.pem" "$TMP/ip.key" "$D/ca.pem" 127.0.0.1
check_quiet "python ssl: accepts leaf for api.polite.test" timeout 20 python3 -c "$py" "$TMP/dns.pem" "$TMP/dns.key" "$D/ca.pem" api.polite.test
check_quiet "python ssl: refuses the leaf for another name" sh -c "! timeout 20 python3 -c '$py' '$TMP/dns.pem' '$TMP/dns.key' '$D/ca.pem' other.polite.test"

# 4b. curl and Node (NODE_EXTRA_CA_CERTS) accept a leaf served by a small HTTPS server.
cat >"$TMP/serve.py" <<'PY'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a): pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[1], sys.argv[2])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
open(sys.argv[3], "w").write(str(srv.server_address[1]))
srv.serve_forever()
PY
"$POLITE" proxy ca --dir "$D" --issue localhost --out "$TMP/lh" >/dev/null
python3 "$TMP/serve.py" "$TMP/lh.pem" "$TMP/lh.key" "$TMP/port" &
spid=$!
for _ in $(seq 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
port="$(cat "$TMP/port")"
check_quiet "curl --cacert accepts a leaf for localhost" sh -c "[ \"\$(curl -sS --max-time 10 --cacert '$D/ca.pem' https://localhost:$port/)\" = ok ]"
check_quiet "curl without the CA refuses it" sh -c "! curl -sS --max-time 10 https://localhost:$port/"
if command -v node >/dev/null; then
  js="require('https').get('https://localhost:$port/', r => { let b=''; r.on('data', d => b += d); r.on('end', () => process.exit(b === 'ok' ? 0 : 1)); }).on('error', e => { console.error(e.message); process.exit(1); })"
  check_quiet "node (NODE_EXTRA_CA_CERTS) accepts a leaf for localhost" env NODE_EXTRA_CA_CERTS="$D/ca.pem" timeout 20 node -e "$js"
  check_quiet "node without the CA refuses it" sh -c "! timeout 20 node -e \"$js\""
fi
kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null

# 5. A group-readable key is refused; --renew makes a new CA (new fingerprint, old leaf no longer verifies).
fp() { openssl x509 -in "$D/ca.pem" -noout -fingerprint -sha256; }
before="$(fp)"
chmod 640 "$D/ca.key"
check_quiet "ca: group-readable key refused" sh -c "! '$POLITE' proxy ca --dir '$D' 2>'$TMP/ro.err' && grep -q 'readable by group or others' '$TMP/ro.err'"
"$POLITE" proxy ca --dir "$D" --renew >"$TMP/renew.out" 2>&1
check_quiet "renew: exit 0" [ $? -eq 0 ]
check_quiet "renew: fingerprint changed" [ "$(fp)" != "$before" ]
check_quiet "renew: key mode 0600 again" [ "$(mode "$D/ca.key")" = 600 ]
check_quiet "renew: old leaf no longer verifies" sh -c "! openssl verify -CAfile '$D/ca.pem' '$TMP/ip.pem'"
check_quiet "usage: unknown option exits 2" sh -c "'$POLITE' proxy ca --bogus 2>/dev/null; [ \$? -eq 2 ]"

finish
