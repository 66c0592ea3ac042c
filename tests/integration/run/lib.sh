# Shared helpers for the `polite run` integration tests (sourced).
# Provides: POLITE, TMP (removed on exit), check/ok/bad, start_pyserver,
# start_nginx, finish.
set -u
POLITE=${POLITE:-${POLITE_BUILD:-build}/polite}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d /tmp/polite-run-test.XXXXXX)
PIDS=()
pass=0
fail=0

cleanup() {
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok - $1"; }
bad() { fail=$((fail + 1)); echo "FAIL - $1"; }
# check DESCRIPTION COMMAND...: passes when the command succeeds.
check() {
  local d=$1
  shift
  if "$@" >/dev/null; then ok "$d"; else bad "$d"; fi
}

# Starts tests/integration/run/server.py on a free port; sets PY_PORT and
# PY_REC (its record of requests, one JSON line each).
start_pyserver() {
  PY_REC=$TMP/rec.jsonl
  : >"$PY_REC"
  python3 "$HERE/server.py" "$TMP/pyport" "$PY_REC" &
  PIDS+=($!)
  for _ in $(seq 100); do
    [ -s "$TMP/pyport" ] && break
    sleep 0.05
  done
  PY_PORT=$(cat "$TMP/pyport")
}

# Starts nginx with limit_req at RATE (e.g. 20r/s) and burst 1 on a free
# port; 429 answers carry Retry-After: 1. Sets NG_PORT. An optional second
# argument is an upstream "127.0.0.1:PORT" to proxy to.
start_nginx() {
  local rate=$1 upstream=${2:-}
  local d=$TMP/nginx
  mkdir -p "$d/logs"
  # A static file, not "return": return runs in the rewrite phase, before
  # limit_req would see the request.
  mkdir -p "$d/www"
  echo ok >"$d/www/ok.txt"
  local body="root $d/www; try_files /ok.txt =404;"
  [ -n "$upstream" ] && body="proxy_pass http://$upstream;"
  for _ in $(seq 20); do
    NG_PORT=$((20000 + RANDOM % 30000))
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
  limit_req_zone \$binary_remote_addr zone=z:1m rate=$rate;
  server {
    listen 127.0.0.1:$NG_PORT;
    location / {
      limit_req zone=z burst=1 nodelay;
      limit_req_status 429;
      error_page 429 = @limited;
      $body
    }
    location @limited {
      add_header Retry-After 1 always;
      return 429 "limited\n";
    }
  }
}
CONF
    nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off; master_process off;' \
      2>"$d/logs/stderr" &
    local pid=$!
    for _ in $(seq 50); do
      if curl -s -o /dev/null "http://127.0.0.1:$NG_PORT/ping" 2>/dev/null; then
        PIDS+=($pid)
        sleep 1.1 # let the limiter forget the probe
        return 0
      fi
      kill -0 $pid 2>/dev/null || break
      sleep 0.05
    done
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
  done
  echo "cannot start nginx" >&2
  return 1
}

finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
