# shellcheck shell=bash
# tests/integration/lib.sh: the one harness integration scripts source.
#
#   . "$(dirname "$0")/lib.sh"
#
# Gives: POLITE (the binary), POLITE_SRC, POLITE_BUILD, IT (this directory),
# TMP (a fresh directory, removed on exit unless KEEP_TMP is set), and
#   ok DESC / bad DESC        count a pass or a failure (and print it)
#   check DESC CMD...         passes when CMD succeeds (its stdout hidden:
#                             /dev/null, so a CMD writing to /dev/stdout
#                             still writes to a stream)
#   check_quiet DESC CMD...   the same with stdout and stderr kept in a file,
#                             whose last 20 lines are shown when CMD fails
#   check_eq DESC GOT WANT    passes when the strings are equal
#   check_grep DESC RE FILE   passes when FILE has a line matching RE
#   check_no_grep DESC RE FILE...  passes when no FILE has such a line
#   free_port                 prints a TCP port free on 127.0.0.1
#   free_ports N [BUS]        prints N distinct free ports, one a line; with
#                             BUS, each port + BUS is free too
#   wait_port PORT [SECONDS]  waits until 127.0.0.1:PORT accepts
#   wait_count N RE FILE [SECONDS]  waits until N lines of FILE match RE
#                             (a server's record: "it has arrived"), in
#                             place of a fixed sleep that guesses
#   closed_port               sets CLOSED_PORT: a port of 127.0.0.1 that
#                             refuses connections until exit (held bound)
#   redis_ready PID PORT [CLI ARGS...]  waits until the redis-server PID
#                             answers on PORT (tests/integration/redis_ready.sh)
#   bg CMD...                 starts CMD in the background; stopped on exit
#   on_exit CMD               runs CMD (a string) at exit, before TMP goes
#   start_api NAME [ARGS...]  tests/integration/upstream.py: API, API_REC,
#                             API_PORTFILE
#   start_pyserver            start_api py, with PY_PORT and PY_REC
#   start_nginx RATE [UP [MORE]]  nginx limit_req at RATE (429 + Retry-After: 1)
#   make_cert DIR NAME        a CA and a 127.0.0.1 server certificate signed
#                             by it (DIR/ca.pem, DIR/NAME.pem, DIR/NAME.key)
#   start_nginx_tls DIR       nginx over TLS with DIR's certificate: TLS_PORT
#   start_proxy ARGS...       polite proxy ARGS on a free port: PX (ADDR:PORT)
#   start_cluster             a 3-master Redis Cluster on free ports (their
#                             cluster bus ports free too): CPORTS
#   slot_owner KEY            the port (of CPORTS) whose node serves KEY
#   now                       prints the wall clock in seconds (bash's own
#                             EPOCHREALTIME: no process started, so a
#                             loaded machine does not shift it)
#   calc EXPR                 prints EXPR (arithmetic on seconds) to 3 places
#   sent_between FROM TO PRE  requests start_pyserver's server received in
#                             [FROM, TO] (wall seconds) whose path starts
#                             with PRE
#   side_by_side NAME CMD...  runs CMD (a function of the script, say) in
#                             a subshell beside the others, its output kept
#                             in $TMP/NAME.side.log; ok/bad/check... inside
#                             it count for the script once...
#   side_by_side_wait         ...this waits for every one of them, prints
#                             their output in the order they were started
#                             and adds their counts (a case that ends
#                             without its counts is a failure)
#   finish                    prints "N passed, N failed"; the script's
#                             status (exit "$(finish)" is not needed:
#                             end the script with `finish`)
# Every server listens on 127.0.0.1 only and is stopped by the exit trap.
# The machine's proxy variables are unset: every server is on 127.0.0.1, and
# a CI machine's http_proxy or no_proxy would decide the cases that set
# their own (--proxy, --noproxy, HTTP_PROXY for one command).
set -u
unset http_proxy HTTP_PROXY https_proxy HTTPS_PROXY all_proxy ALL_PROXY \
  no_proxy NO_PROXY
IT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
POLITE_SRC=${POLITE_SRC:-$(cd "$IT/../.." && pwd)}
POLITE_BUILD=${POLITE_BUILD:-$POLITE_SRC/build}
POLITE=${POLITE:-$POLITE_BUILD/polite}
# Absolute, so a test may cd (a relative POLITE=build/polite works too).
case $POLITE in /*) ;; *) POLITE=$PWD/$POLITE ;; esac
case $POLITE_BUILD in /*) ;; *) POLITE_BUILD=$PWD/$POLITE_BUILD ;; esac
TMP=$(mktemp -d "/tmp/polite-$(basename "$0" .sh).XXXXXX")
PIDS=()
EXIT_HOOKS=()
pass=0
fail=0

_lib_cleanup() {
  local h p
  for h in "${EXIT_HOOKS[@]:-}"; do
    [ -n "$h" ] && eval "$h"
  done
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap _lib_cleanup EXIT

on_exit() { EXIT_HOOKS+=("$1"); }
ok() { pass=$((pass + 1)); [ $# -gt 0 ] && echo "ok - $*"; return 0; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }
check() {
  local d=$1
  shift
  if "$@" >/dev/null; then ok "$d"; else bad "$d"; fi
}
check_quiet() {
  local d=$1 out="$TMP/.check.$BASHPID"
  shift
  if "$@" >"$out" 2>&1; then ok "$d"; else
    bad "$d"
    tail -20 "$out" | sed 's/^/#   /'
  fi
  rm -f "$out"
}
check_eq() {
  if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi
}
check_grep() {
  if grep -qE -- "$2" "$3"; then ok "$1"; else
    bad "$1: no line matches '$2' in $3:"
    sed 's/^/#   /' "$3" | head -20
  fi
}
check_no_grep() {
  local d=$1 re=$2
  shift 2
  if grep -qE -- "$re" "$@"; then
    bad "$d: '$re' found in: $(grep -lE -- "$re" "$@" | tr '\n' ' ')"
  else ok "$d"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# free_ports N [BUS]: N distinct ports free on 127.0.0.1 (each held until
# all are chosen, so none repeats); with BUS, only ports whose port + BUS is
# free (and at most 65535) as well: a Redis Cluster node also listens on
# port + 10000, its cluster bus. Free when printed: a server that binds one
# later may still lose it, so the caller retries with new ports.
free_ports() {
  python3 - "$1" "${2:-0}" <<'EOF'
import socket, sys
n, bus = int(sys.argv[1]), int(sys.argv[2])
held, out = [], []
def bound(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        return None
    held.append(s)
    return s.getsockname()[1]
while len(out) < n:
    p = bound(0)
    if not bus or (p + bus <= 65535 and bound(p + bus)):
        out.append(p)
print("\n".join(map(str, out)))
EOF
}
wait_port() {
  local port=$1 secs=${2:-10} _
  for _ in $(seq $((secs * 20))); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on 127.0.0.1:$port after ${secs}s" >&2
  return 1
}
bg() {
  "$@" &
  PIDS+=($!)
}
. "$IT/redis_ready.sh"

# wait_count N RE FILE [SECONDS]: waits (10 s by default) until at least N
# lines of FILE match RE (grep -E); returns 1, saying so, when they do not.
wait_count() {
  local n=$1 re=$2 f=$3 secs=${4:-10} c
  for _ in $(seq $((secs * 20))); do
    c=$(grep -cE -- "$re" "$f" 2>/dev/null)
    [ "${c:-0}" -ge "$n" ] && return 0
    sleep 0.05
  done
  echo "# wait_count: ${c:-0} of $n lines match '$re' in $f after ${secs}s" >&2
  return 1
}

# closed_port: sets CLOSED_PORT, a port of 127.0.0.1 where a connection is
# refused at once, whatever the machine's resolver or other tests do: a
# process of the test holds it bound without listening (so no server can
# take it, as one could take a free_port in between) until the exit trap.
# Where a case needs "the direct way fails", this is that way.
closed_port() {
  local f=$TMP/closed.port
  rm -f "$f"
  bg python3 -c '
import os, socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(3600)' "$f"
  for _ in $(seq 100); do
    [ -s "$f" ] && break
    sleep 0.05
  done
  # shellcheck disable=SC2034 # for the scripts that source this file
  CLOSED_PORT=$(cat "$f")
}

# start_api NAME [ARGS...]: the scripted API (tests/integration/upstream.py,
# its behaviours by path) on a free port with ARGS (--delay-ms N, ...); sets
# API (http://127.0.0.1:PORT), API_REC ($TMP/NAME.rec.jsonl, one JSON line
# per request) and API_PORTFILE (touch API_PORTFILE.healed to heal its
# .../heals/ paths). Stopped by the exit trap.
start_api() {
  local name=$1
  shift
  API_REC=$TMP/$name.rec.jsonl
  API_PORTFILE=$TMP/$name.port
  : >"$API_REC"
  rm -f "$API_PORTFILE"
  bg python3 "$IT/upstream.py" "$API_PORTFILE" "$API_REC" "$@"
  for _ in $(seq 100); do
    [ -s "$API_PORTFILE" ] && break
    sleep 0.05
  done
  API=http://127.0.0.1:$(cat "$API_PORTFILE")
}

# start_pyserver: start_api py; sets PY_PORT and PY_REC as well.
start_pyserver() {
  start_api py
  PY_REC=$API_REC
  # shellcheck disable=SC2034 # for the scripts that source this file
  PY_PORT=${API##*:}
}

now() {
  local t=$EPOCHREALTIME
  echo "${t/,/.}"
}
calc() { awk "BEGIN { printf \"%.3f\\n\", $1 }"; }
sent_between() {
  python3 - "$PY_REC" "$1" "$2" "$3" <<'EOF'
import json, sys
lo, hi, pre = float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
print(sum(1 for l in open(sys.argv[1])
          if (lambda r: r["path"].startswith(pre) and lo <= r["t"] <= hi)(json.loads(l))))
EOF
}

# Writes an nginx config for one server block to $1/nginx.conf (the
# server's body is $3, its listen line $2) and starts nginx with it.
_nginx_run() {
  local d=$1 listen=$2 body=$3
  mkdir -p "$d/logs"
  cat >"$d/nginx.conf" <<CONF
worker_processes 1;
error_log $d/logs/error.log warn;
pid $d/nginx.pid;
events { worker_connections 1024; }
http {
  access_log $d/logs/access.log;
  client_body_temp_path $d/cbt;
  proxy_temp_path $d/pt;
  fastcgi_temp_path $d/ft;
  uwsgi_temp_path $d/ut;
  scgi_temp_path $d/st;
  $body
  server {
    listen $listen;
    ${NGINX_SERVER:-}
  }
}
CONF
  rm -f "$d/nginx.pid"
  nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off; master_process off;' \
    2>"$d/logs/stderr" &
  NGINX_PID=$!
}

# _nginx_up DIR: after _nginx_run, 0 once nginx has written its pid file
# (it does so only after binding every listen port: the port is its own,
# not another test's server answering there), 1 when it exited (a port
# taken between free_port and its bind) or after 5 s.
_nginx_up() {
  for _ in $(seq 100); do
    [ "$(cat "$1/nginx.pid" 2>/dev/null)" = "$NGINX_PID" ] && return 0
    kill -0 "$NGINX_PID" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# _nginx_start DIR PORTVAR LISTEN_SUFFIX MORE: _nginx_run on a free port
# (stored in the variable PORTVAR, the listen line "127.0.0.1:PORT SUFFIX"),
# with NGINX_SERVER as the caller set it; a port taken in between is a new
# try on a new port, five in all.
_nginx_start() {
  local d=$1 var=$2 suffix=$3 more=$4 port
  for _ in 1 2 3 4 5; do
    port=$(free_port)
    printf -v "$var" '%s' "$port"
    _nginx_run "$d" "127.0.0.1:$port${suffix:+ $suffix}" "$more"
    if _nginx_up "$d" && wait_port "$port" 5; then
      PIDS+=("$NGINX_PID")
      return 0
    fi
    kill -9 "$NGINX_PID" 2>/dev/null
    wait "$NGINX_PID" 2>/dev/null
  done
  cat "$d/logs/stderr" >&2
  return 1
}

# Starts nginx with limit_req at RATE (e.g. 20r/s) and burst 1 on a free
# port; 429 answers carry Retry-After: 1. Sets NG_PORT. An optional second
# argument is an upstream "127.0.0.1:PORT" to proxy to ("": none), an
# optional third more of the http block (e.g. another server).
start_nginx() {
  local rate=$1 upstream=${2:-} more=${3:-} d=$TMP/nginx
  mkdir -p "$d/www"
  echo ok >"$d/www/ok.txt"
  # A static file, not "return": return runs in the rewrite phase, before
  # limit_req would see the request.
  local body="root $d/www; try_files /ok.txt =404;"
  [ -n "$upstream" ] && body="proxy_pass http://$upstream;"
  NGINX_SERVER="
    location / {
      limit_req zone=z burst=1 nodelay;
      limit_req_status 429;
      error_page 429 = @limited;
      $body
    }
    location @limited {
      add_header Retry-After 1 always;
      return 429 \"limited\\n\";
    }" _nginx_start "$d" NG_PORT "" \
    "limit_req_zone \$binary_remote_addr zone=z:1m rate=$rate; $more"
}

# Starts `polite proxy --listen 127.0.0.1:0 ARGS...` (its output in
# $TMP/px.log) and waits until it listens; sets PX to its ADDR:PORT.
start_proxy() {
  rm -f "$TMP/px.addr"
  bg "$POLITE" proxy --listen 127.0.0.1:0 --ready-file "$TMP/px.addr" "$@" \
    >"$TMP/px.log" 2>&1
  for _ in $(seq 100); do
    [ -s "$TMP/px.addr" ] && break
    sleep 0.05
  done
  if [ ! -s "$TMP/px.addr" ]; then
    cat "$TMP/px.log" >&2
    return 1
  fi
  # shellcheck disable=SC2034 # for the scripts that source this file
  PX=$(cat "$TMP/px.addr")
}

# start_cluster: three masters with --cluster-enabled on 127.0.0.1, joined
# by redis-cli --cluster create, each in $TMP/cPORT; sets CPORTS (their
# ports). The ports come from free_ports with their cluster bus (port +
# 10000) free too; a try that fails (a port taken in between, a node that
# did not start) stops its nodes and takes new ports, three tries in all.
# Stopped by the exit trap.
start_cluster() {
  local p okc try pids
  for try in 1 2 3; do
    mapfile -t CPORTS < <(free_ports 3 10000)
    pids=()
    for p in "${CPORTS[@]}"; do
      mkdir -p "$TMP/c$p"
      (cd "$TMP/c$p" && exec redis-server --port "$p" --bind 127.0.0.1 \
        --save '' --appendonly no --cluster-enabled yes \
        --cluster-config-file nodes.conf >log 2>&1) &
      pids+=($!)
    done
    PIDS+=("${pids[@]}")
    okc=0
    for p in "${CPORTS[@]}"; do
      for _ in $(seq 100); do
        redis-cli -p "$p" ping 2>/dev/null | grep -q PONG && { okc=$((okc + 1)); break; }
        sleep 0.05
      done
    done
    if [ "$okc" = 3 ] && redis-cli --cluster create "${CPORTS[@]/#/127.0.0.1:}" \
      --cluster-yes >"$TMP/cluster.log" 2>&1; then
      for _ in $(seq 100); do
        okc=0
        for p in "${CPORTS[@]}"; do
          redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' &&
            okc=$((okc + 1))
        done
        [ "$okc" = 3 ] && return 0
        sleep 0.1
      done
    fi
    echo "# start_cluster: try $try on ${CPORTS[*]} failed" >&2
    kill -9 "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
  done
  echo "could not start a Redis Cluster: $(tail -2 "$TMP/cluster.log" 2>/dev/null)" >&2
  return 1
}

# slot_owner KEY: the port (of CPORTS) whose node serves KEY's slot (the
# one that answers instead of redirecting with MOVED).
slot_owner() {
  local p
  for p in "${CPORTS[@]}"; do
    redis-cli -p "$p" exists "$1" 2>&1 | grep -q MOVED || { echo "$p"; return; }
  done
}

# make_cert DIR NAME: a throwaway CA (DIR/ca.pem, DIR/ca.key) and a
# certificate for 127.0.0.1 and localhost signed by it (DIR/NAME.pem,
# DIR/NAME.key). Also DIR/capath/ with the CA under its hash (c_rehash),
# and a client certificate DIR/client.pem, DIR/client.key.
make_cert() {
  local d=$1 n=$2
  mkdir -p "$d/capath"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=polite test CA" \
    -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null || return 1
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$d/$n.key" -out "$d/$n.csr" 2>/dev/null || return 1
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' >"$d/$n.ext"
  openssl x509 -req -in "$d/$n.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
    -CAcreateserial -days 2 -extfile "$d/$n.ext" -out "$d/$n.pem" 2>/dev/null || return 1
  cp "$d/ca.pem" "$d/capath/$(openssl x509 -hash -noout -in "$d/ca.pem").0"
  # A client certificate from the same CA (DIR/client.pem, DIR/client.key).
  openssl req -newkey rsa:2048 -nodes -subj "/CN=polite test client" \
    -keyout "$d/client.key" -out "$d/client.csr" 2>/dev/null || return 1
  openssl x509 -req -in "$d/client.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
    -CAcreateserial -days 2 -out "$d/client.pem" 2>/dev/null
}

# start_nginx_tls DIR: nginx over TLS on a free port with DIR/server.pem
# (make_cert DIR server first). Serves /ok (200 "ok"), /big (a 200 KiB
# body, gzip-compressed when asked), /auth (200 when Basic credentials are
# present, 401 without), /ua (the User-Agent it got), /echo-auth (the
# Authorization header it got), /proto (HTTP/1.1 or HTTP/2.0) and /mtls
# (200 only with a client certificate from DIR/ca.pem). Sets TLS_PORT.
start_nginx_tls() {
  local d=$1
  mkdir -p "$d/www"
  python3 -c 'print("a" * 204800)' >"$d/www/big"
  echo ok >"$d/www/ok"
  NGINX_SERVER="
    ssl_certificate $d/server.pem;
    ssl_certificate_key $d/server.key;
    ssl_client_certificate $d/ca.pem;
    ssl_verify_client optional;
    root $d/www;
    gzip on; gzip_types *; gzip_min_length 1;
    location = /ua { default_type text/plain; return 200 \"\$http_user_agent\"; }
    location = /echo-auth { default_type text/plain; return 200 \"\$http_authorization\"; }
    location = /proto { default_type text/plain; return 200 \"\$server_protocol\"; }
    location = /mtls {
      default_type text/plain;
      if (\$ssl_client_verify != SUCCESS) { return 403 \"no client certificate\"; }
      return 200 \"client \$ssl_client_s_dn\";
    }
    location = /auth {
      default_type text/plain;
      if (\$http_authorization = \"\") { return 401 \"no credentials\"; }
      return 200 \"authorized\";
    }
    location / { default_type text/plain; }" \
    _nginx_start "$d" TLS_PORT "ssl http2" ""
}

# Cases that mostly wait (sleeps, rates, timeouts) run side by side, each
# on its own files, ports and servers: the test then takes as long as its
# longest case, not their sum. A subshell's counts reach the script through
# a file, as its variables do not.
SIDE=()
side_by_side() {
  local name=$1
  shift
  (
    # shellcheck disable=SC2030 # the case's own counts: they reach the script through the file below
    pass=0 fail=0
    "$@"
    echo "$pass $fail" >"$TMP/$name.side.counts"
  ) >"$TMP/$name.side.log" 2>&1 &
  SIDE+=("$name:$!")
}
side_by_side_wait() {
  local e name p c
  for e in "${SIDE[@]}"; do
    wait "${e##*:}"
  done
  for e in "${SIDE[@]}"; do
    name=${e%:*}
    cat "$TMP/$name.side.log"
    if c=$(cat "$TMP/$name.side.counts" 2>/dev/null); then
      p=${c% *}
      # shellcheck disable=SC2031 # the script's counts, which the subshells above did not change
      pass=$((pass + p))
      # shellcheck disable=SC2031 # as pass
      fail=$((fail + ${c#* }))
    else
      bad "$name: the case ended without its counts (it died)"
    fi
  done
  SIDE=()
}

finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
