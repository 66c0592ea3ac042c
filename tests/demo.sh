#!/usr/bin/env bash
# The built-in demo (make demo): a throttled API on loopback, a batch run
# against it under one budget, and the proxy's verdict on the client.
#   1. `polite proxy` in mock mode plays a rate-limited API: 10 requests/s,
#      plus 10% injected 429s with Retry-After, on a free loopback port.
#   2. `polite plan` shows the arithmetic for 60 requests at 8/s.
#   3. `polite run` sends the 60 requests at 8/s with a progress bar and prints
#      its summary; results and the attempt log land in build/demo/.
#   4. The proxy's report says whether any retry came back too early.
set -euo pipefail
POLITE=${1:-build/polite}
OUT=$(dirname "$POLITE")/demo
mkdir -p "$OUT"
rm -f "$OUT"/*

"$POLITE" proxy --listen 127.0.0.1:0 --rate-limit 10/s --failure-rate 10 \
  --retry-after 1 --seed 7 2>"$OUT/proxy.log" &
proxy_pid=$!
trap 'kill $proxy_pid 2>/dev/null || true; wait $proxy_pid 2>/dev/null || true' EXIT

addr=
for _ in $(seq 1 100); do
  addr=$(sed -n 's/^polite proxy: listening on \([0-9.:]*\).*/\1/p' "$OUT/proxy.log" | head -1)
  [ -n "$addr" ] && break
  sleep 0.05
done
[ -n "$addr" ] || { echo "demo: the proxy did not start:" >&2; cat "$OUT/proxy.log" >&2; exit 1; }

echo "== A throttled API is listening on http://$addr (10 requests/s, 10% injected 429s)"
echo
echo "== polite plan --allowance 10/s --target 8/s --requests 60 --latency 50ms"
"$POLITE" plan --allowance 10/s --target 8/s --requests 60 --latency 50ms
echo

for i in $(seq 1 60); do echo "http://$addr/items/$i"; done >"$OUT/input.txt"

echo "== polite run --rate 8/s --concurrency 4 --progress $OUT/input.txt"
status=0
"$POLITE" run --rate 8/s --concurrency 4 --max-attempts 5 --progress \
  --out "$OUT/results.jsonl" --log "$OUT/attempts.jsonl" \
  --summary-json "$OUT/summary.json" "$OUT/input.txt" || status=$?
echo
echo "== Results: $(wc -l <"$OUT/results.jsonl") lines in $OUT/results.jsonl; attempt log in $OUT/attempts.jsonl"
curl -s "http://$addr/__polite/report" >"$OUT/proxy-report.json"
python3 - "$OUT/proxy-report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("== The proxy saw %d requests, injected %d failures, and caught %d early retries."
      % (r["requests"], r["injected"], r["early_retries"]))
PY
exit $status
