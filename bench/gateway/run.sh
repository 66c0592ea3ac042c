#!/usr/bin/env bash
# bench/gateway: the gateway's engine (polite/engine.h) alone, no network:
# CPU per request on the paths a request takes through it (relayed at its
# head; over 50 host accounts; a 429 whose body is read, then a retry), and
# the heap each waiting client costs, against the issue's targets (added
# latency p50 <= 0.1 ms; 2,000 waiting clients in <= 64 MB). CPU is measured
# twice: the process's getrusage, and perf stat's task-clock (the exact
# on-CPU time; '-' when perf is not usable). A benchmark, not a test: it
# prints one Markdown table and never fails on a slow machine.
# Then the network tables (bench/gateway/net.sh): the naive script direct,
# with urllib3 Retry and through the gateway against nginx limit_req, two
# gateways on one Redis budget, and the added latency.
# Usage: bench/gateway/run.sh [BUILD_DIR] [N]  (default: build-bench, a
# Release build made here; N requests per row, default 200000). NET=0 skips
# the network tables; POLITE (default BUILD_DIR/polite) is the binary they
# run, NET_N and NET_RATE their size (600 GETs at 40 r/s).
# Last, the official OpenAI Node SDK direct and through the gateway
# (bench/gateway/sdk.sh; SDK=0 skips it, SDK_N and SDK_RATE its size: 200
# chat completions at 20 r/s).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build-bench}"
n="${2:-200000}"
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
if [ ! -f "$build/libpolite.a" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target polite_static >/dev/null
fi
POLITE=${POLITE:-$build/polite}
if { [ "${NET:-1}" != 0 ] || [ "${SDK:-1}" != 0 ]; } && [ ! -x "$POLITE" ]; then
  cmake --build "$build" -j2 --target polite_cli >/dev/null
fi
tmp="$(mktemp -d /tmp/polite-bench-gateway.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
# The pkg-config output is a list of flags: split on purpose.
# shellcheck disable=SC2046
cc -O2 -std=gnu11 -Wall -Wextra -I"$src/include" \
  "$src/bench/gateway/engine_bench.c" "$build/libpolite.a" \
  $(pkg-config --libs libcurl jansson hiredis sqlite3) -lpthread -lm \
  -o "$tmp/engine_bench"

# task-clock of one run in ms, or '-'.
task_clock() {
  perf stat -x, -e task-clock "$@" 2>"$tmp/perf" >/dev/null || { echo -; return; }
  awk -F, '/task-clock/ {print $1; f=1} END {if (!f) print "-"}' "$tmp/perf"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| path | requests | CPU us / request (getrusage) | (perf task-clock) | heap bytes / waiting client | target |"
echo "|---|---:|---:|---:|---:|---|"
row() { # name n target
  local line us tc per heap
  line=$("$tmp/engine_bench" "$1" "$2")
  us=${line##*us_per_request=} && us=${us%% *}
  heap=${line##*bytes_per_waiting=} && heap=${heap%% *}
  tc=$(task_clock "$tmp/engine_bench" "$1" "$2")
  if [ "$tc" = - ]; then per=-; else per=$(awk -v t="$tc" -v n="$2" 'BEGIN {printf "%.3f", t * 1000 / n}'); fi
  [ "$heap" = 0 ] && heap=
  echo "| $1 | $2 | $us | $per | $heap | $3 |"
}
row relay "$n" "p50 added latency <= 100 us"
row relay-hosts "$n" "(50 accounts)"
row throttled "$((n / 2))" "(two attempts each)"
row wait 2000 "2,000 waiting in <= 64 MB: 33,554 bytes each"
row wait 20000 ""
row sweep 20000 "(one 429 re-judges the queue: CPU per waiting client)"
echo
echo "relay: submit, start, a 200 head relayed, end; throttled: a 429 head, its"
echo "body read, dropped, the retry after the server's second, then a 200; wait:"
echo "clients with 8 headers and a 1 KiB body queued behind a 1/s rate (the"
echo "engine's memory only: the network half adds its connection buffers);"
echo "sweep: the CPU of the one answer whose pause re-judges the 20,000 waiting"
echo "(the perf column times the whole process, the queue's building included)."
[ "${NET:-1}" = 0 ] || . "$src/bench/gateway/net.sh"
[ "${SDK:-1}" = 0 ] || . "$src/bench/gateway/sdk.sh"
