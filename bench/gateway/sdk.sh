# shellcheck shell=bash
# shellcheck disable=SC2154 # src and tmp are bench/gateway/run.sh's, which sources this file
# Sourced by bench/gateway/run.sh: the official OpenAI Node SDK (npm
# `openai`, tests/node's lock) with its own retries left on (2), SDK_N chat
# completions 8 at a time against nginx limit_req SDK_RATE r/s burst 1
# (429 + Retry-After: 1) in front of a chat-completions API that answers at
# once (the tests' scripted API, tests/integration/upstream.py): direct,
# then through one polite gateway as its base URL (not told the limit),
# then the same with --retry-writes (the gateway itself retries a 429'd
# POST), and told the limit (--rate: what the learned rate costs). The
# columns are net.sh's, with the gateway's perf task-clock beside its
# utime+stime (10 ms ticks); the floor is SDK_N / SDK_RATE. Early: requests
# that reached nginx within the Retry-After of a 429 (bench/run/analyse.py).
# Needs $POLITE, $src, $tmp; SDK_N (200), SDK_RATE (20); SDK=0 skips it.
SDK_N=${SDK_N:-200}
SDK_RATE=${SDK_RATE:-20}
SDK_NODE=$src/tests/node
SDK_T=$tmp/sdk
SDK_PIDS=()
# Stops what the table started (some already stopped: a kill that finds
# nothing is no error under set -e).
# Waits for its own processes only: a bare wait would also wait for the
# network tables' servers (net.sh, sourced before), which run until the
# EXIT trap, and the bench would never end.
sdk_cleanup() {
  local p
  for p in "${SDK_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${SDK_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
# On any exit, net.sh's servers (when it ran) go too, then the temporary files.
trap 'sdk_cleanup; if declare -F net_cleanup >/dev/null; then net_cleanup; fi; rm -rf "$tmp"' EXIT

# sdk_row NAME TAG CPU_MS TASK_CLOCK_MS OUT: one row from openai_chat.mjs's
# JSON line.
sdk_row() {
  local seen n429 early
  read -r seen n429 early < <(python3 "$src/bench/run/analyse.py" "$SDK_T/ng/logs/access.log" "$2")
  python3 - "$1" "$seen" "$n429" "$early" "$3" "$4" "$SDK_N" "$SDK_RATE" "$5" <<'PY'
import json, sys
name, seen, n429, early, cpu, tc, n, rate, out = sys.argv[1:10]
o = json.loads(out)
floor = int(n) / float(rate)
pct = 100.0 * int(n429) / max(1, int(seen))
per = lambda ms: "-" if ms == "-" else "%.0f" % (float(ms) * 1000 / int(n))
errs = "" if not o["errors"] else " (failed: %s)" % ", ".join("%s x %d" % kv for kv in o["errors"].items())
print("| %s | %d / %s%s | %.1f s | %.2f x | %s (%.1f%%) | %s | %s | %s | %s |" % (
    name, o["ok"], n, errs, o["wall_s"], o["wall_s"] / floor, n429, pct, early, seen, per(cpu), per(tc)))
PY
}

# sdk_gateway NAME TAG ARGS...: one row through a gateway with ARGS.
sdk_gateway() {
  local name=$1 tag=$2 gwp gwa c0 c1 o
  shift 2
  rm -f "$SDK_T/$tag.addr"
  "$POLITE" gateway --listen 127.0.0.1:0 --ready-file "$SDK_T/$tag.addr" \
    --upstream "http://$SDK_NG/v1" --log "$SDK_T/$tag.log" "$@" 2>"$SDK_T/$tag.err" &
  gwp=$!
  SDK_PIDS+=("$gwp")
  for _ in $(seq 100); do [ -s "$SDK_T/$tag.addr" ] && break; sleep 0.05; done
  gwa=$(cat "$SDK_T/$tag.addr")
  c0=$(awk '{print $14 + $15}' "/proc/$gwp/stat")
  # perf counts the gateway for as long as its command runs: a tail that
  # ends with the SDK's process (a background perf would need a SIGINT,
  # which a non-interactive shell's background jobs ignore).
  local nodep tc
  POLITE_QUERY="tool=$tag" node "$SDK_NODE/openai_chat.mjs" "http://$gwa" "$SDK_N" 8 >"$SDK_T/$tag.out" &
  nodep=$!
  perf stat -x, -e task-clock -p "$gwp" -o "$SDK_T/$tag.perf" -- tail --pid="$nodep" -f /dev/null 2>/dev/null ||
    wait "$nodep"
  wait "$nodep"
  o=$(cat "$SDK_T/$tag.out")
  c1=$(awk '{print $14 + $15}' "/proc/$gwp/stat")
  tc=$(awk -F, '/task-clock/ && $1 ~ /^[0-9.]+$/ {print $1; f=1} END {if (!f) print "-"}' "$SDK_T/$tag.perf" 2>/dev/null || echo -)
  sdk_row "$name" "$tag" "$(((c1 - c0) * 1000 / $(getconf CLK_TCK)))" "$tc" "$o"
  kill -TERM "$gwp"
  wait "$gwp" 2>/dev/null || true
}

sdk_bench() {
  if ! command -v node >/dev/null || ! command -v nginx >/dev/null || ! "$SDK_NODE/install.sh"; then
    echo
    echo "(the OpenAI Node SDK table needs node, nginx and tests/node's packages: skipped)"
    return 0
  fi
  mkdir -p "$SDK_T/ng/logs" "$SDK_T/ng/tmp"
  rm -f "$SDK_T/up.port"
  # The tests' scripted API (its chat completions); it may live one folder up.
  local api=$src/tests/integration/upstream.py
  [ -f "$api" ] || api=$src/tests/integration/gateway/upstream.py
  python3 "$api" "$SDK_T/up.port" "$SDK_T/up.rec" &
  SDK_PIDS+=($!)
  for _ in $(seq 100); do [ -s "$SDK_T/up.port" ] && break; sleep 0.05; done
  local up started="" T=$SDK_T PORT PIDS=()
  up=$(cat "$SDK_T/up.port")
  . "$src/bench/run/nginx.sh"
  bench_nginx_limited "$up" "$SDK_RATE" && started=1
  SDK_PIDS+=("${PIDS[@]}")
  if [ -z "$started" ]; then
    echo "bench: nginx did not start for the SDK table" >&2
    return 1
  fi
  SDK_NG=127.0.0.1:$PORT
  echo
  echo "## The official OpenAI Node SDK, its own retries on"
  echo
  echo "N=$SDK_N chat completions (POST /v1/chat/completions), 8 at a time, the SDK's default"
  echo "max_retries (2); nginx limit_req $SDK_RATE r/s burst 1 nodelay (Retry-After: 1) in front of an"
  echo "API that answers at once; the gateway is its base URL and is not told the limit; floor"
  echo "N/rate = $((SDK_N / SDK_RATE)) s. Targets: through the gateway $SDK_N / $SDK_N succeed, <= 2% 429s at"
  echo "nginx, wall <= 1.2 x the floor."
  echo
  echo "| client | 200 at the client | wall | / floor | 429s at nginx | early | requests nginx saw | gateway CPU us / request (utime+stime) | (perf task-clock) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  local o
  o=$(POLITE_QUERY=tool=sdkdirect node "$SDK_NODE/openai_chat.mjs" "http://$SDK_NG/v1" "$SDK_N" 8)
  sdk_row "OpenAI SDK, direct" sdkdirect - - "$o"
  sleep 1.1
  sdk_gateway "OpenAI SDK through polite gateway (base URL)" sdkgw
  sleep 1.1
  sdk_gateway "the same, gateway --retry-writes" sdkgwrw --retry-writes
  sleep 1.1
  sdk_gateway "the same, gateway told the limit (--rate ${SDK_RATE}/s)" sdkgwrate --rate "${SDK_RATE}/s"
}
[ "${SDK:-1}" = 0 ] || { sdk_bench; sdk_cleanup; }
