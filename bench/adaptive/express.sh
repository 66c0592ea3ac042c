#!/usr/bin/env bash
# bench/adaptive/express.sh: `polite run --concurrency 8` (no --rate)
# against a real limiter that states its limit in headers: Express with
# express-rate-limit (tests/node, committed lock, installed with npm ci),
# a fixed window of LIMIT requests per WINDOW_MS per client, a 100 ms
# handler, in each header form it sends (IETF draft-6, draft-7, draft-8,
# legacy X-RateLimit-* with an epoch reset); one process, then two sharing
# a file: budget. With a second binary BEFORE, the same rows for it, side
# by side. Prints a markdown table. Not a test (the test is
# tests/integration/test_run_express_rate_limit.sh).
#   bench/adaptive/express.sh [POLITE] [BEFORE] [N] [LIMIT] [WINDOW_MS]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
NODE_DIR=$HERE/../../tests/node
POLITE=${1:-$HERE/../../build/polite}
BEFORE=${2:-}
N=${3:-120}
LIMIT=${4:-20}
WINDOW_MS=${5:-2000}
T=$(mktemp -d /tmp/polite-bench-express.XXXXXX)
trap '[ -n "${SP:-}" ] && kill "$SP" 2>/dev/null; rm -rf "$T"' EXIT
"$NODE_DIR/install.sh" || exit 1
FLOOR_MS=$((N * WINDOW_MS / LIMIT))

now_ms() { date +%s%3N; }

# row LABEL BINARY MODE PROCS
row() {
  : >"$T/log"
  rm -f "$T/port"
  node "$NODE_DIR/ratelimit_server.mjs" "$T/port" "$3" "$LIMIT" "$WINDOW_MS" \
    100 "$T/log" &
  SP=$!
  for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
  seq "$N" | sed "s|.*|http://127.0.0.1:$(cat "$T/port")/&|" >"$T/in"
  split -n "l/$4" -d "$T/in" "$T/part."
  local t0 t1 pids=()
  t0=$(now_ms)
  for f in "$T"/part.*; do
    "$2" run --no-progress -q --concurrency 8 --max-attempts 5 \
      --budget "file:$T/budget" "$f" >"$f.out" 2>/dev/null &
    pids+=($!)
  done
  wait "${pids[@]}"
  t1=$(now_ms)
  kill "$SP" 2>/dev/null
  wait "$SP" 2>/dev/null
  SP=
  local ok
  ok=$(cat "$T"/part.*.out | grep -c '"outcome":"ok"')
  rm -f "$T"/part.* "$T/budget"
  awk -v l="$1" -v m="$3" -v p="$4" -v w=$((t1 - t0)) -v f="$FLOOR_MS" \
    -v ok="$ok" -v n="$N" '
    { sent++; if ($2 == 429) r++; if ($3 == 1) e++ }
    END { printf "| %s | %s | %d | %.2f s | %.2f x | %d | %d | %d/%d |\n",
          l, m, p, w / 1000, w / f, r, e, ok, n }' "$T/log"
}

echo "N=$N GETs, express-rate-limit $LIMIT per $((WINDOW_MS / 1000)) s, floor N / (q/w) = $((FLOOR_MS / 1000)) s"
echo
echo "| polite | headers | processes | wall | / floor | 429s | early | ok |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for mode in draft-6 draft-7 draft-8 legacy; do
  for procs in 1 2; do
    [ -n "$BEFORE" ] && row before "$BEFORE" "$mode" "$procs"
    row after "$POLITE" "$mode" "$procs"
  done
done
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
