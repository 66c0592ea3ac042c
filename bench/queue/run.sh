#!/usr/bin/env bash
# bench/queue: the work queue (issue 24's targets) in one run, one table.
#  - 3 `polite run --queue` workers on one 40/s Redis budget, 600 requests
#    (half of them writes) against a 50 ms upstream: wall / the 15 s floor;
#  - the same with one worker killed -9 at a third of the run: ids lost,
#    duplicate results, writes with more than one key, requests sent twice
#    against what the killed worker had in flight, wall / floor;
#  - side by side: the same 600 from a file by one `polite run` on the same
#    budget (no queue), to show what the queue costs;
#  - `polite queue push` of 100,000 lines (twice: the second adds nothing).
# CPU is perf stat's task-clock of the polite processes (getrusage when perf
# is not usable), per request; Redis round trips per request are the
# workers' own count (their summary line); Redis script calls per request
# are INFO commandstats' EVALSHA calls (all clients: the budget's and the
# queue's scripts; the commands a script runs inside are not round trips).
# A benchmark, not a test: it never fails on a slow machine.
#   bench/queue/run.sh [POLITE_BINARY] [REQUESTS] [RATE]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
POLITE=${1:-$SRC/build/polite}
N=${2:-600}
RATE=${3:-40}
Q=$SRC/tests/integration/queue
T=$(mktemp -d /tmp/polite-bench-queue.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
now() { python3 -c 'import time; print("%.3f" % time.time())'; }
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
PERF=perf
perf stat -e task-clock -x, -o /dev/null true 2>/dev/null || PERF=

RP=$(free_port)
(cd "$T" && exec redis-server --port "$RP" --bind 127.0.0.1 --save '' \
  --appendonly no --dir "$T" >"$T/redis.log" 2>&1) &
PIDS+=($!)
python3 "$Q/../upstream.py" "$T/up.port" "$T/up.jsonl" --record-out >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do
  [ -s "$T/up.port" ] && redis-cli -p "$RP" ping 2>/dev/null | grep -q PONG && break
  sleep 0.05
done
UP=$(cat "$T/up.port")
R="redis://127.0.0.1:$RP"
for i in $(seq 0 $((N - 1))); do
  if [ $((i % 2)) = 0 ]; then
    printf '{"id":"q%d","method":"POST","url":"http://127.0.0.1:%s/echo/q%d","body":"n"}\n' "$i" "$UP" "$i"
  else
    printf '{"id":"q%d","url":"http://127.0.0.1:%s/ok/q%d?ms=50"}\n' "$i" "$UP" "$i"
  fi
done >"$T/in.txt"

# Runs a command under perf (its task-clock in ms to FILE.cpu).
timed() { # FILE CMD...
  local f=$1
  shift
  if [ -n "$PERF" ]; then
    perf stat -e task-clock -x, -o "$f.perf" "$@"
    local rc=$?
    awk -F, '/task-clock/ {print $1}' "$f.perf" >"$f.cpu"
    return $rc
  fi
  local t0
  t0=$(python3 -c 'import resource as r; u=r.getrusage(r.RUSAGE_CHILDREN); print(u.ru_utime+u.ru_stime)')
  "$@"
  python3 -c "import resource as r; u=r.getrusage(r.RUSAGE_CHILDREN); print((u.ru_utime+u.ru_stime-$t0)*1000)" >"$f.cpu"
}

RUN=(--rate "$RATE/s" --concurrency 8 --idempotency-key auto --no-progress)
W=("${RUN[@]}" --lease 3s)

# One fleet run: NAME QUEUE KILL_AFTER_S (0: none) WORKERS.
fleet() {
  local name=$1 qn=$2 kill_at=$3 k=$4 i
  "$POLITE" queue push "$R/$qn" "$T/in.txt" >/dev/null
  : >"$T/up.jsonl"
  redis-cli -p "$RP" config resetstat >/dev/null
  local t0 pids=()
  t0=$(now)
  for i in $(seq "$k"); do
    timed "$T/$name.w$i" "$POLITE" run --queue "$R/$qn" \
      --budget "$R/$name-budget?lease=3s" "${W[@]}" -A "$name-w$i" \
      -o "$T/$name.w$i.jsonl" 2>"$T/$name.w$i.err" &
    pids+=($!)
  done
  PIDS+=("${pids[@]}")
  local killed="" kpid=""
  if [ "$kill_at" != 0 ]; then
    sleep "$kill_at"
    # The polite process under perf (the child of perf, when perf is used).
    kpid=$(pgrep -f -- "-A $name-w2 " | while read -r p; do
      [ "$(cat /proc/"$p"/comm 2>/dev/null)" = polite ] && echo "$p"; done | head -1)
    kill -9 "$kpid"
    killed="$name-w2"
  fi
  wait "${pids[@]}" 2>/dev/null
  local t1
  t1=$(now)
  redis-cli -p "$RP" info commandstats >"$T/$name.cmdstats"
  redis-cli -p "$RP" --raw xrange "polite:queue:{$qn}:results" - + >"$T/$name.dump"
  "$POLITE" queue results "$R/$qn" >"$T/$name.results" 2>/dev/null
  python3 "$HERE/analyse.py" fleet "$name" "$T" "$N" "$RATE" "$t0" "$t1" \
    "$k" "${killed:--}" "$(hostname):${kpid:-0}:" >>"$T/rows"
}

# The same N from a file, one process, the same kind of budget.
single() {
  : >"$T/up.jsonl"
  redis-cli -p "$RP" config resetstat >/dev/null
  local t0
  t0=$(now)
  timed "$T/file.w1" "$POLITE" run --budget "$R/file-budget?lease=3s" \
    "${RUN[@]}" -A file-w1 -o "$T/file.w1.jsonl" "$T/in.txt" 2>"$T/file.w1.err"
  local t1
  t1=$(now)
  redis-cli -p "$RP" info commandstats >"$T/file.cmdstats"
  python3 "$HERE/analyse.py" file file "$T" "$N" "$RATE" "$t0" "$t1" >>"$T/rows"
}

push() {
  python3 -c "
for i in range(100000): print('https://api.example.com/v1/items/%d?page=1' % i)" >"$T/big.txt"
  local t0 t1 t2
  t0=$(now)
  timed "$T/push1" "$POLITE" queue push "$R/big" "$T/big.txt" >"$T/push1.out"
  t1=$(now)
  timed "$T/push2" "$POLITE" queue push "$R/big" "$T/big.txt" >"$T/push2.out"
  t2=$(now)
  python3 "$HERE/analyse.py" push "$T" "$t0" "$t1" "$t2" \
    "$(redis-cli -p "$RP" info memory | sed -n 's/^used_memory:\([0-9]*\).*/\1/p')" >>"$T/rows"
}

: >"$T/rows"
fleet fleet3 b1 0 3
fleet kill1 b2 "$(python3 -c "print(round($N / $RATE / 3, 1))")" 3
single
push
echo "bench/queue: $N requests (half POST), a ${RATE}/s Redis budget (--concurrency 8), a 50 ms upstream; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$HERE/analyse.py" table "$T/rows"
