# shellcheck shell=bash
# tests/integration/redis_ready.sh: is the redis-server a test just started
# up? Sourced by lib.sh, budget/redis.sh, queue/lib.sh and
# bench/gateway/net.sh.
#
# redis_ready PID PORT [REDIS-CLI ARGS...]: waits (100 tries, 50 ms apart)
# until the redis-server whose pid is PID answers on 127.0.0.1:PORT; ARGS
# are more redis-cli options (--tls ..., -a PASSWORD). The answer must come
# from PID itself (INFO's process_id): a PONG alone could come from another
# test's server that took the port first, while ours failed to bind it.
# Returns 1 as soon as PID has exited (the port was taken: the caller takes
# a new port and tries again) or after the tries. Each redis-cli gets 2 s:
# one speaking TLS to another test's plain server waits for its handshake
# forever.
redis_ready() {
  local pid=$1 port=$2
  shift 2
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 1
    timeout 2 redis-cli -p "$port" --no-auth-warning "$@" info server 2>/dev/null |
      tr -d '\r' | grep -qx "process_id:$pid" && return 0
    sleep 0.05
  done
  return 1
}
