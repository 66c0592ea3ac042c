#!/usr/bin/env bash
# bench/budget: the cost of one admission on each budget backend (local,
# file, redis), from one and from several clients, and the number of Redis
# round trips per admission (counted by the client, by the server's
# INFO commandstats and by MONITOR). A benchmark, not a test: it prints
# numbers and never fails on a slow machine.
# Usage: [BEFORE=GITREF] bench/budget/run.sh [BUILD_DIR]   (default:
# build-bench, a Release build made here; pass an existing Release build to
# skip that). With BEFORE (say BEFORE=main, or a commit), that revision's
# budget_worker is built too (build-bench-before) and the local and file
# rows print side by side, before | after, each the median of 3 runs taken
# in turn, with the CPU time per call (perf stat task-clock) beside the
# wall time: on a shared machine the CPU column is the steadier one.
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build-bench}"
if [ ! -x "$build/tools/budget_worker" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target tool_budget_worker >/dev/null
fi
W="$build/tools/budget_worker"
tmp="$(mktemp -d /tmp/polite-bench-budget.XXXXXX)"
rpid="" mpid=""
cleanup() {
  { [ -n "$mpid" ] && kill "$mpid"; [ -n "$rpid" ] && kill "$rpid"; wait; } 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

field() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p"; }

# One client: N acquire+release pairs (unlimited rate, so every call is an
# admission) and N admissions under a rate and a concurrency limit.
one() { # label uri count [extra args]
  local label="$1" uri="$2" n="$3"
  shift 3
  local out
  out="$("$W" "$uri" --bench --count "$n" "$@" | grep BENCH)"
  printf '%-34s %10s ns/call %12s calls/s  admitted %s\n' "$label" \
    "$(echo "$out" | field ns_per_call)" "$(echo "$out" | field per_s)" \
    "$(echo "$out" | field admitted)"
}
# K clients at once: calls/s over the time all of them took together (from
# the first READY to the last BENCH end), so clients that happen not to
# overlap do not inflate the sum.
many() { # label uri k count [extra args]
  local label="$1" uri="$2" k="$3" n="$4"
  shift 4
  local ps=()
  for i in $(seq "$k"); do
    "$W" "$uri" --bench --count "$n" "$@" >"$tmp/m.$i" &
    ps+=($!)
  done
  wait "${ps[@]}"
  local total
  total="$(cat "$tmp"/m.* | awk '
    /^READY/ {r[$2] = $3; if (lo == "" || $3 < lo) lo = $3}
    /^BENCH/ {split($6, u, "="); split($3, c, "="); n += c[2]
              e = r[$2] + u[2]; if (e > hi) hi = e}
    END {printf "%.0f", n * 1e6 / (hi - lo)}')"
  rm -f "$tmp"/m.*
  printf '%-34s %10s clients %12s calls/s together\n' "$label" "$k" "$total"
}

# cpu_ns W URI N ARGS...: "wall_ns cpu_ns" per call of one --bench run.
cpu_ns() {
  local w="$1" uri="$2" n="$3" out cpu
  shift 3
  case $uri in file:*) rm -f "${uri#file:}" ;; esac # before and after differ
  if command -v perf >/dev/null; then
    out="$(perf stat -x, -e task-clock -o "$tmp/perf" "$w" "$uri" --bench --count "$n" "$@" | grep BENCH)"
    cpu="$(awk -F, -v n="$n" '/task-clock/ {printf "%.0f", $1 * 1e6 / n}' "$tmp/perf")"
  else
    out="$("$w" "$uri" --bench --count "$n" "$@" | grep BENCH)"
    cpu="-"
  fi
  echo "$(echo "$out" | field ns_per_call) $cpu"
}
# side LABEL URI N ARGS...: before | after, medians of 3 runs in turn.
side() {
  local label="$1" uri="$2" n="$3" i b=() a=()
  shift 3
  for i in 1 2 3; do
    b+=("$(cpu_ns "$WB" "$uri" "$n" "$@")")
    a+=("$(cpu_ns "$W" "$uri" "$n" "$@")")
  done
  med() { printf '%s\n' "$@" | sort -n -k"$K" | sed -n 2p | cut -d' ' -f"$K"; }
  local bw bc aw ac
  bw="$(K=1 med "${b[@]}")" bc="$(K=2 med "${b[@]}")"
  aw="$(K=1 med "${a[@]}")" ac="$(K=2 med "${a[@]}")"
  printf '| %-26s | %8s ns (%6s cpu) | %8s ns (%6s cpu) | %6s x |\n' "$label" \
    "$bw" "$bc" "$aw" "$ac" "$(awk -v a="$ac" -v b="$bc" 'BEGIN {if (b > 0) printf "%.1f", a / b; else print "-"}')"
}
if [ -n "${BEFORE:-}" ]; then
  bsrc="$tmp/before-src"
  mkdir -p "$bsrc"
  git -C "$src" archive "$BEFORE" | tar -x -C "$bsrc"
  bbuild="$src/build-bench-before"
  cmake -S "$bsrc" -B "$bbuild" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$bbuild" -j2 --target tool_budget_worker >/dev/null
  WB="$bbuild/tools/budget_worker"
  echo "== local and file: before ($BEFORE) | after (this tree), ns per acquire(+release), median of 3 =="
  echo "| row | before | after | cpu after/before |"
  echo "|---|---|---|---|"
  side "local, unlimited" local 1000000
  side "local, rate+concurrency" local 1000000 --rate 1e9 --concurrency 1000000
  side "file, unlimited" "file:$tmp/sa.budget" 300000
  side "file, rate+concurrency" "file:$tmp/sb.budget" 300000 --rate 1e9 --concurrency 1000000
fi
echo "== local (in-process) =="
one "local, unlimited" local 2000000
one "local, rate+concurrency" local 2000000 --rate 1e9 --concurrency 1000000
echo "== file (pread/pwrite under flock, checksummed records) =="
one "file, unlimited" "file:$tmp/a.budget" 300000
one "file, rate+concurrency" "file:$tmp/b.budget" 300000 --rate 1e9 --concurrency 1000000
many "file, rate+concurrency" "file:$tmp/b.budget" 2 300000 --rate 1e9 --concurrency 1000000
many "file, rate+concurrency" "file:$tmp/b.budget" 4 150000 --rate 1e9 --concurrency 1000000

echo "== redis (loopback) =="
# A free port (not a random one, which may be taken: the ephemeral range
# starts at 32768), through the tests' own start_redis.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
. "$src/tests/integration/budget/redis.sh"
R="redis://127.0.0.1:$port"
redis-cli -p "$port" --version | sed 's/^/server: /'
redis-server --version | sed 's/^/        /'
one "redis, admission only" "$R/a" 20000
one "redis, rate+concurrency (2 RTT)" "$R/b" 20000 --rate 1e9 --concurrency 1000000
many "redis, admission only" "$R/a" 4 10000
many "redis, admission only" "$R/a" 8 5000

# Round trips per admission, three ways.
redis-cli -p "$port" config resetstat >/dev/null
redis-cli -p "$port" monitor >"$tmp/monitor" &
mpid=$!
sleep 0.2
n=1000
out="$("$W" "$R/rt" --bench --count "$n" --rate 1e6 | grep BENCH)"
sleep 0.3
kill "$mpid"
wait "$mpid" 2>/dev/null || true
mpid=""
rt="$(echo "$out" | field round_trips)"
evalsha="$(redis-cli -p "$port" info commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')"
client_cmds="$(grep -v '\[0 lua\]' "$tmp/monitor" | grep -vc '^OK$' || true)"
lua_cmds="$(grep -c '\[0 lua\]' "$tmp/monitor" || true)"
echo "round trips for $n admissions (rate-limited account, no concurrency):"
echo "  counted by the client:          $rt (connect + SCRIPT LOAD + $n EVALSHA)"
echo "  EVALSHA calls (commandstats):   $evalsha"
echo "  commands from the client (MONITOR): $client_cmds; commands inside the script: $lua_cmds"
awk -v rt="$rt" -v n="$n" 'BEGIN {printf "  => %.3f round trips per admission after connecting\n", (rt - 2) / n}'
