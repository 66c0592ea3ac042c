# shellcheck shell=bash
# tests/integration/queue/lib.sh: what the work queue's tests share, on top
# of tests/integration/lib.sh (source that first).
#   start_redis [ARGS...]  a redis-server of the test's own on a free port of
#                          127.0.0.1, its data in $TMP/redis (RPORT, RPID);
#                          ARGS are more redis-server options; again after
#                          a kill it comes back on the same port and dir
#   start_upstream         tests/integration/upstream.py --record-out (UP_PORT, UP_REC)
#   push_ids N PATH [METHOD]  writes N JSON lines with ids q0..q{N-1} to
#                          $TMP/in.txt, url http://127.0.0.1:UP_PORT/PATH/qI
#   wait_for N PATTERN     waits until the upstream saw N requests whose
#                          path matches PATTERN (a grep -E on its record)
#   worker NAME ARGS...    polite run --queue ARGS... in the background,
#                          -A NAME, --out $TMP/NAME.jsonl, stderr to
#                          $TMP/NAME.err; its pid in WPID[NAME]. Workers
#                          are killed (-9) at exit before the servers
#   qcheck ARGS...         python3 tests/integration/queue/check.py ARGS...
command -v redis-server >/dev/null || { echo "redis-server not installed"; exit 1; }
QDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
qcheck() { python3 "$QDIR/check.py" "$@"; }
RPID=""
RPORT=""
declare -A WPID
_kill_workers() {
  local p
  for p in "${WPID[@]:-}"; do
    [ -n "$p" ] && kill -9 "$p" 2>/dev/null
  done
}
on_exit _kill_workers

worker() {
  local name=$1
  shift
  "$POLITE" run --no-progress -A "$name" -o "$TMP/$name.jsonl" "$@" \
    2>"$TMP/$name.err" &
  WPID[$name]=$!
}

_redis_up() {
  mkdir -p "$TMP/redis"
  (cd "$TMP/redis" && exec redis-server --port "$RPORT" --bind 127.0.0.1 \
    --save '' --dir "$TMP/redis" "$@" >>"$TMP/redis/log" 2>&1) &
  RPID=$!
  redis_ready "$RPID" "$RPORT"
}

# shellcheck disable=SC2120 # ARGS are optional: most tests pass none
start_redis() {
  REDIS_ARGS=("$@")
  if [ -n "$RPORT" ]; then
    _redis_up "${REDIS_ARGS[@]}" && PIDS+=("$RPID")
    return
  fi
  for _ in 1 2 3 4 5; do
    RPORT=$(free_port)
    if _redis_up "${REDIS_ARGS[@]}"; then
      PIDS+=("$RPID")
      return 0
    fi
  done
  echo "could not start redis-server" >&2
  return 1
}

start_upstream() {
  UP_REC=$TMP/up.jsonl
  : >"$UP_REC"
  rm -f "$TMP/upport"
  bg python3 "$QDIR/../upstream.py" "$TMP/upport" "$UP_REC" --record-out >"$TMP/up.log" 2>&1
  for _ in $(seq 100); do
    [ -s "$TMP/upport" ] && break
    sleep 0.05
  done
  UP_PORT=$(cat "$TMP/upport")
}

push_ids() {
  local n=$1 path=$2 method=${3:-GET} i
  : >"$TMP/in.txt"
  for i in $(seq 0 $((n - 1))); do
    printf '{"id":"q%d","method":"%s","url":"http://127.0.0.1:%s/%s/q%d"}\n' \
      "$i" "$method" "$UP_PORT" "$path" "$i" >>"$TMP/in.txt"
  done
}

wait_for() {
  local n=$1 re=$2 secs=${3:-20} i
  for i in $(seq $((secs * 20))); do
    [ "$(grep '"ev": "in"' "$UP_REC" | grep -cE -- "$re")" -ge "$n" ] && return 0
    sleep 0.05
  done
  echo "the upstream did not see $n requests matching '$re' in ${secs}s" >&2
  return 1
}
