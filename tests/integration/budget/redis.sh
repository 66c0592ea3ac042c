# shellcheck shell=bash
# shellcheck disable=SC2154 # tmp is the sourcing script's (see below)
# Sourced by the Redis budget tests (and bench/budget/run.sh): a
# redis-server of the test's own on a free port of 127.0.0.1 (free_port,
# from tests/integration/lib.sh or the caller's own), in $tmp (which the
# caller made and removes).
# Gives start_redis (again on the same $port after a kill: a restart loses
# the data, as there is no persistence) and sets port and rpid; the caller's
# exit trap kills $rpid.

. "$(dirname "${BASH_SOURCE[0]}")/../redis_ready.sh"

# Starts redis-server on $port. Returns non-zero when it did not come up
# (port taken).
start_redis() {
  (cd "$tmp" && exec redis-server --port "$port" --bind 127.0.0.1 --save '' \
    --appendonly no --dir "$tmp" >>"$tmp/redis.log" 2>&1) &
  rpid=$!
  redis_ready "$rpid" "$port"
}

rpid=""
for _ in 1 2 3 4 5 6 7 8 9 10; do
  port=$(free_port)
  start_redis && break
  kill -9 "$rpid" 2>/dev/null || true
  rpid=""
done
[ -n "$rpid" ] || { echo "could not start redis-server"; exit 1; }
