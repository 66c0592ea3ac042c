# shellcheck shell=bash
# tests/integration/gateway/gw.sh: what the gateway's integration tests
# share, sourced after lib.sh:
#   start_upstream [CERT KEY]  the scripted API (../upstream.py): UP (ADDR:PORT),
#                              its record of requests in $TMP/up.rec
#   start_gateway NAME ARGS... polite gateway on a free port: GW (ADDR:PORT),
#                              GW_PID, its stderr in $TMP/NAME.err
#   stop_gateway               SIGTERM, then wait: GW_RC its exit status
#   up_count RE                requests the upstream got whose path matches RE
#   judge_verdict PID          stops polite proxy PID (started with --report
#                              $TMP/px.json) and sets EARLY and LIMITED: the
#                              early requests its judge saw and its 429s
#   need_node                  node and tests/node's packages (npm ci from
#                              the committed lock): NODE_DIR; without them
#                              the test fails (CI installs them)
GWT=$IT/gateway
export POLITE_CA_DIR=$TMP/ca

# shellcheck disable=SC2120 # CERT KEY are optional: plain HTTP without them
start_upstream() {
  rm -f "$TMP/up.port"
  : >"$TMP/up.rec"
  bg python3 "$GWT/../upstream.py" "$TMP/up.port" "$TMP/up.rec" "$@"
  for _ in $(seq 100); do
    [ -s "$TMP/up.port" ] && break
    sleep 0.05
  done
  # shellcheck disable=SC2034 # for the test that sources this file
  UP=127.0.0.1:$(cat "$TMP/up.port")
}

start_gateway() {
  local n=$1
  shift
  rm -f "$TMP/$n.addr"
  bg "$POLITE" gateway --listen 127.0.0.1:0 --ready-file "$TMP/$n.addr" "$@" \
    2>"$TMP/$n.err"
  GW_PID=$!
  for _ in $(seq 100); do
    [ -s "$TMP/$n.addr" ] && break
    sleep 0.05
  done
  GW=$(cat "$TMP/$n.addr" 2>/dev/null)
  [ -n "$GW" ] || cat "$TMP/$n.err" >&2
}

stop_gateway() {
  kill -TERM "$GW_PID" 2>/dev/null
  wait "$GW_PID" 2>/dev/null
  # shellcheck disable=SC2034 # for the test that sources this file
  GW_RC=$?
}

up_count() {
  python3 -c '
import json, re, sys
print(sum(1 for l in open(sys.argv[1]) if re.search(sys.argv[2], json.loads(l)["path"])))' \
    "$TMP/up.rec" "$1"
}

judge_verdict() {
  kill -TERM "$1"
  wait "$1"
  for _ in $(seq 50); do [ -s "$TMP/px.json" ] && break; sleep 0.1; done
  # shellcheck disable=SC2034 # for the test that sources this file
  read -r EARLY LIMITED < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(r["early_retries"], r["rate_limited"])' "$TMP/px.json")
}

need_node() {
  NODE_DIR=$POLITE_SRC/tests/node
  command -v node >/dev/null && "$NODE_DIR/install.sh" && return 0
  bad "node and the npm packages of tests/node are needed"
  finish
  exit 1
}
