#!/usr/bin/env bash
# Integration test of `polite diagnose`: every fixture through the real
# binary (--json and plain), stdin, usage and parse errors with their exit
# codes, and real requests to a throttling python3 http.server on a free
# loopback port (method, headers, body and redirects checked by the server;
# TLS with a self-signed certificate refused unless -k).
. "$(dirname "$0")/lib.sh"
SRC=$POLITE_SRC
FIX="$SRC/tests/fixtures/diagnose"
SERVER_PID=
at_exit() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; }
on_exit at_exit

# expect_rc WANT DESCRIPTION -- command...
expect_rc() {
  local want=$1 what=$2
  shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" -eq "$want" ]; then ok; else bad "$what: exit $rc, want $want ($(head -c 300 "$TMP/err"))"; fi
}

# ---- every fixture, --json, compared with its .json -----------------------
# One python3 process runs the binary on each fixture (a python3 start per
# fixture would dominate the run time); it prints "ok NAME" or "bad NAME ...".
python3 - "$POLITE" "$FIX" >"$TMP/fixtures.log" 2>&1 <<'EOF'
import glob, json, os, subprocess, sys
polite, fix = sys.argv[1], sys.argv[2]
for expf in sorted(glob.glob(os.path.join(fix, "*.json"))):
    name = os.path.basename(expf)[:-5]
    exp = json.load(open(expf))
    r = subprocess.run([polite, "diagnose", "--json", "--now", str(exp["now"]),
                        expf[:-5] + ".http"], capture_output=True, text=True)
    if r.returncode != 0:
        print("bad", name, "exit", r.returncode, r.stderr.strip()); continue
    got = json.loads(r.stdout)
    errs = []
    for k in ("component", "limit", "retry_helps", "wait_ms", "wait_source"):
        if k in exp and got.get(k) != exp[k]:
            errs.append(f"{k}: got {got.get(k)!r}, want {exp[k]!r}")
    if "through" in exp and got["through"] != exp["through"]:
        errs.append(f"through: {got['through']}")
    if "ids" in exp and [i["name"] for i in got["request_ids"]] != exp["ids"]:
        errs.append(f"ids: {got['request_ids']}")
    kind, _, vendor = got["component"].partition(":")
    if got["component"] != "unknown" and (got["kind"] != kind or got["vendor"] != vendor):
        errs.append("kind/vendor do not match component")
    # The status of the last status line (curl -si may print several).
    lines = open(expf[:-5] + ".http", "rb").read().split(b"\n")
    status = [int(l.split()[1]) for l in lines if l.startswith(b"HTTP/")][-1]
    if got["status"] != status:
        errs.append(f"status {got['status']}, want {status}")
    if not got["evidence"] or not got["advice"]:
        errs.append("no evidence or advice")
    print(("bad " + name + " " + "; ".join(errs)) if errs else "ok " + name)
EOF
n_fix=$(grep -c '^ok ' "$TMP/fixtures.log")
pass=$((pass + n_fix))
while read -r line; do bad "fixture $line"; done < <(grep -v '^ok ' "$TMP/fixtures.log")
if [ "$n_fix" -ge 40 ]; then ok; else bad "only $n_fix fixtures passed in $FIX"; fi

# ---- plain words, stdin, '-' ------------------------------------------------
expect_rc 0 "plain output" -- "$POLITE" diagnose --now 1796014800 "$FIX/aws_apigw_usage_plan_quota.http"
if grep -q "sent by:     gateway:aws-api-gateway" "$TMP/out" && grep -q "^limit:       quota" "$TMP/out" \
  && grep -q "waiting will not help" "$TMP/out" && grep -q "retry helps: no" "$TMP/out"; then
  ok
else
  bad "plain quota output: $(cat "$TMP/out")"
fi
expect_rc 0 "plain CDN output" -- "$POLITE" diagnose --now 1796014800 "$FIX/cloudflare_1015_html.http"
if grep -q "a CDN rule, not the API" "$TMP/out" && grep -q "cf-ray: 8ea1b2c3d4e5f616-AMS" "$TMP/out"; then
  ok
else
  bad "plain CDN output: $(cat "$TMP/out")"
fi
if "$POLITE" diagnose --json <"$FIX/slack_429.http" >"$TMP/out" 2>&1 && grep -q '"component":"origin:slack"' "$TMP/out"; then
  ok
else
  bad "stdin without argument: $(cat "$TMP/out")"
fi
if "$POLITE" diagnose --json - <"$FIX/openai_tokens_tpm.http" >"$TMP/out" 2>&1 && grep -q '"limit":"tokens"' "$TMP/out"; then
  ok
else
  bad "stdin as '-': $(cat "$TMP/out")"
fi
expect_rc 0 "help" -- "$POLITE" diagnose --help
if grep -q "Usage: polite diagnose" "$TMP/out"; then ok; else bad "help text"; fi

# ---- usage errors (2) and bad input (1) ------------------------------------
expect_rc 2 "unknown option" -- "$POLITE" diagnose --bogus "$FIX/bare_429.http"
if grep -q -- "--bogus" "$TMP/err"; then ok; else bad "unknown option not named: $(cat "$TMP/err")"; fi
expect_rc 2 "two inputs" -- "$POLITE" diagnose "$FIX/bare_429.http" "$FIX/nginx_429.http"
expect_rc 2 "-H with a file" -- "$POLITE" diagnose -H 'X-A: 1' "$FIX/bare_429.http"
if grep -q -- "-H only applies to a URL" "$TMP/err"; then ok; else bad "-H message: $(cat "$TMP/err")"; fi
expect_rc 2 "bad --now" -- "$POLITE" diagnose --now yesterday "$FIX/bare_429.http"
if grep -q "yesterday" "$TMP/err"; then ok; else bad "--now value not named"; fi
expect_rc 2 "--now without value" -- "$POLITE" diagnose --now
expect_rc 2 "-H without colon" -- "$POLITE" diagnose -H 'Authorization Bearer SECRET' http://127.0.0.1:9/
if grep -q SECRET "$TMP/err"; then bad "a header value reached an error message"; else ok; fi

printf 'HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nthis is not a header\r\n\r\n' >"$TMP/broken.http"
expect_rc 1 "header line without colon" -- "$POLITE" diagnose "$TMP/broken.http"
if grep -q "broken.http:3:" "$TMP/err"; then ok; else bad "file and line not named: $(cat "$TMP/err")"; fi
printf '<html>not a response</html>\n' >"$TMP/page.html"
expect_rc 1 "no status line" -- "$POLITE" diagnose --json "$TMP/page.html"
if grep -q "page.html:1: expected a status line" "$TMP/err"; then ok; else bad "status line message: $(cat "$TMP/err")"; fi
: >"$TMP/empty.http"
expect_rc 1 "empty file" -- "$POLITE" diagnose "$TMP/empty.http"
expect_rc 1 "missing file" -- "$POLITE" diagnose "$TMP/nope.http"
if grep -q "nope.http" "$TMP/err"; then ok; else bad "missing file not named"; fi

# ---- a real request to a throttling loopback server -------------------------
cat >"$TMP/server.py" <<'EOF'
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def send(self, code, headers, body):
        b = body.encode()
        self.send_response(code)
        for k, v in headers: self.send_header(k, v)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def do_GET(self):
        if self.path == "/redirect":
            return self.send(302, [("Location", "/kong")], "")
        if self.path == "/kong":
            return self.send(429, [("Content-Type", "application/json"), ("RateLimit-Remaining", "0"),
                ("Retry-After", "7"), ("X-RateLimit-Remaining-Minute", "0"), ("X-Kong-Response-Latency", "0"),
                ("Server", "kong/3.4.2")], '{"message":"API rate limit exceeded"}')
        return self.send(404, [], "no")
    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n).decode()
        # Only the request polite was told to make gets the Anthropic answer.
        if self.path == "/v1/messages" and self.headers.get("X-Test") == "yes" and body == "a=1":
            return self.send(429, [("Content-Type", "application/json"), ("request-id", "req_loopback"),
                ("anthropic-ratelimit-requests-remaining", "0"), ("retry-after", "3")],
                '{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your per-minute rate limit"}}')
        return self.send(400, [], "unexpected request")
    def do_PUT(self):
        return self.send(503, [("Retry-After", "2")], "")
s = http.server.HTTPServer(("127.0.0.1", 0), H)
if len(sys.argv) > 3:  # TLS with a self-signed certificate
    import ssl
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
EOF
python3 "$TMP/server.py" "$TMP/port" &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
PORT=$(cat "$TMP/port" 2>/dev/null)
if [ -z "$PORT" ]; then
  bad "the loopback server did not start"
else
  BASE="http://127.0.0.1:$PORT"
  expect_rc 0 "URL POST" -- "$POLITE" diagnose --json -X POST -H 'X-Test: yes' -d 'a=1' "$BASE/v1/messages"
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["component"]=="origin:anthropic" and d["limit"]=="rate" and d["wait_ms"]==3000 and d["request_ids"][0]["value"]=="req_loopback", d' "$TMP/out"; then
    ok
  else
    bad "URL POST diagnosis: $(cat "$TMP/out")"
  fi
  # -d alone means POST, as in curl.
  expect_rc 0 "URL -d implies POST" -- "$POLITE" diagnose --json -H 'X-Test: yes' -d 'a=1' "$BASE/v1/messages"
  if grep -q '"component":"origin:anthropic"' "$TMP/out"; then ok; else bad "-d without -X: $(cat "$TMP/out")"; fi
  expect_rc 0 "URL redirect not followed" -- "$POLITE" diagnose --json "$BASE/redirect"
  if grep -q '"status":302' "$TMP/out"; then ok; else bad "302 without -L: $(cat "$TMP/out")"; fi
  expect_rc 0 "URL redirect followed" -- "$POLITE" diagnose --json -L "$BASE/redirect"
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["status"]==429 and d["component"]=="gateway:kong" and d["wait_ms"]==7000, d' "$TMP/out"; then
    ok
  else
    bad "302 then Kong 429 with -L: $(cat "$TMP/out")"
  fi
  expect_rc 0 "URL PUT 503" -- "$POLITE" diagnose -X PUT "$BASE/x"
  if grep -q "^status:      503" "$TMP/out" && grep -q "wait:        2000 ms" "$TMP/out"; then ok; else bad "PUT 503: $(cat "$TMP/out")"; fi
  # Nothing listens on the server's port once it is stopped.
  kill "$SERVER_PID" 2>/dev/null; wait "$SERVER_PID" 2>/dev/null; SERVER_PID=
  expect_rc 1 "connection refused" -- "$POLITE" diagnose --max-time 5 "$BASE/kong?api_key=SECRET"
  if grep -q "the request failed" "$TMP/err" && ! grep -q SECRET "$TMP/err"; then ok; else bad "refused message: $(cat "$TMP/err")"; fi
fi

# ---- TLS: verified by default, -k turns verification off -------------------
if openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1; then
  rm -f "$TMP/port"
  python3 "$TMP/server.py" "$TMP/port" "$TMP/cert.pem" "$TMP/key.pem" &
  SERVER_PID=$!
  for _ in $(seq 1 100); do [ -s "$TMP/port" ] && break; sleep 0.05; done
  PORT=$(cat "$TMP/port" 2>/dev/null)
  if [ -z "$PORT" ]; then
    bad "the TLS loopback server did not start"
  else
    expect_rc 1 "self-signed certificate refused" -- "$POLITE" diagnose --max-time 10 "https://127.0.0.1:$PORT/kong"
    if grep -qi "certificate" "$TMP/err"; then ok; else bad "TLS failure not explained: $(cat "$TMP/err")"; fi
    expect_rc 0 "-k accepts it" -- "$POLITE" diagnose --json -k --max-time 10 "https://127.0.0.1:$PORT/kong"
    if grep -q '"component":"gateway:kong"' "$TMP/out"; then ok; else bad "https -k: $(cat "$TMP/out")"; fi
  fi
else
  echo "note: openssl could not make a certificate; TLS checks skipped" >&2
fi

finish
