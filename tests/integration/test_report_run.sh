#!/usr/bin/env bash
# polite report: the numbers on the page equal the run's --summary-json, for
# a run throttled by polite proxy's rate limit and one against a server that
# answers 429 (OpenAI-shaped and bare), 503 and 404; polite run --report and
# polite report on the log agree; malformed lines are named and skipped;
# two logs make one picture (two processes sharing a file: budget); the page
# is self-contained and accessible.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
CHECK="python3 $here/../report/page_check.py"
export PYTHONDONTWRITEBYTECODE=1

# Answers take tens of milliseconds, so the mean in flight (which the run
# samples at each step of its loop) is measured on more than rounding.
# --- 1. polite proxy --rate-limit 10/s, polite run planning 15/s ----------
"$POLITE" proxy --listen 127.0.0.1:0 --rate-limit 10/s --burst 2 --retry-after 1 --latency 40-80 \
  --ready-file "$TMP/px.addr" --log "$TMP/px.log" 2>"$TMP/px.err" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$TMP/px.addr" ] && break; sleep 0.05; done
PX=$(cat "$TMP/px.addr")
for i in $(seq 1 16); do echo "http://$PX/v1/items/$i"; done >"$TMP/a.txt"
"$POLITE" run --rate 15/s --concurrency 3 --max-attempts 6 -q \
  --log "$TMP/a.jsonl" --summary-json "$TMP/a.sum" --report "$TMP/a-run.html" \
  -o "$TMP/a.out" "$TMP/a.txt"
echo "run against the proxy: exit $?"
n429=$(jq .status_429 "$TMP/a.sum")
if [ "$n429" -gt 0 ]; then ok "the proxy throttled the run ($n429 x 429)"; else bad "no 429 from the proxy"; fi
check "the log starts with the run line" \
  sh -c "head -1 '$TMP/a.jsonl' | jq -e '.event == \"run\" and .rate_per_s == 15 and .concurrency == 3 and .max_attempts == 6'"
check "the log ends with the end line" \
  sh -c "tail -1 '$TMP/a.jsonl' | jq -e '.event == \"end\" and (.wall_ms | type) == \"number\"'"
check "one result line per request" \
  test "$(grep -c '"event":"result"' "$TMP/a.jsonl")" -eq 16
"$POLITE" report "$TMP/a.jsonl" -o "$TMP/a.html" 2>"$TMP/a.rep.err"
check "polite report exits 0" test $? -eq 0
if $CHECK summary "$TMP/a.html" "$TMP/a.sum" "$TMP/a.jsonl"; then ok "report from the log = --summary-json"; else bad "report from the log differs from --summary-json"; fi
if $CHECK summary "$TMP/a-run.html" "$TMP/a.sum" "$TMP/a.jsonl"; then ok "run --report = --summary-json"; else bad "run --report differs from --summary-json"; fi
if $CHECK same "$TMP/a.html" "$TMP/a-run.html"; then ok "run --report and polite report agree"; else bad "run --report and polite report differ"; fi
if $CHECK static "$TMP/a.html"; then ok "self-contained, charts titled and described, print style"; else bad "static checks"; fi
check "pauses are shaded" grep -q 'class="pause"' "$TMP/a.html"
check "the planned rate is drawn" grep -q 'planned 15.00/s' "$TMP/a.html"
check "429s are marked" grep -q '<use href="#m0"' "$TMP/a.html"

# --- 2. a server with 429s from two senders, 503s and 404s --------------
start_pyserver
B=http://127.0.0.1:$PY_PORT
{
  for i in $(seq 1 6); do echo "$B/slow?ms=$((30 + 10 * i))"; done
  echo "$B/openai429/o1"
  echo "$B/openai429/o2"
  echo "$B/bare429/b1"
  echo "{\"id\":\"f1\",\"url\":\"$B/fail503x2\",\"cost\":3}"
  echo "$B/status/404"
  echo "$B/always503"
  echo "not a url"
} >"$TMP/b.txt"
"$POLITE" run --rate 20/s --concurrency 2 --max-attempts 3 -q \
  --log "$TMP/b.jsonl" --summary-json "$TMP/b.sum" -o "$TMP/b.out" "$TMP/b.txt"
"$POLITE" report "$TMP/b.jsonl" -o "$TMP/b.html"
if $CHECK summary "$TMP/b.html" "$TMP/b.sum" "$TMP/b.jsonl"; then ok "mixed outcomes: page = --summary-json"; else bad "mixed outcomes: page differs"; fi
check "the OpenAI sender is named" grep -q 'origin:openai' "$TMP/b.html"
check "outcomes include invalid_input" grep -q 'data-key="failures.invalid_input"' "$TMP/b.html"

# --- 3. malformed lines, unknown events and fields, the learned rate ------
{
  head -3 "$TMP/a.jsonl"
  echo '{"event":"rate","wall_ms":'"$(sed -n 2p "$TMP/a.jsonl" | jq .start_ms)"',"rate_per_s":4.5,"previous_per_s":null,"reason":"throttle","detail":"x"}'
  echo 'this is not json'
  echo '{"event":"frobnicate","x":1}'
  echo '{"id":"x","attempt":"one","start_ms":1,"end_ms":2,"action":"done"}'
  tail -n +4 "$TMP/a.jsonl" | sed 's/"action":/"future_field":[1,2],"action":/'
} >"$TMP/c.jsonl"
"$POLITE" report "$TMP/c.jsonl" -o "$TMP/c.html" 2>"$TMP/c.err"
check "malformed lines do not fail the report" test $? -eq 0
check "stderr names file:line of the bad JSON" grep -q "c.jsonl:5: not JSON" "$TMP/c.err"
check "stderr names the bad field" grep -q "c.jsonl:7: attempt: field 'attempt'" "$TMP/c.err"
check "the page counts the malformed lines" grep -q 'Malformed lines: 2' "$TMP/c.html"
if $CHECK same "$TMP/a.html" "$TMP/c.html"; then ok "bad lines and unknown fields change no count"; else bad "bad lines changed the counts"; fi
check "the learned rate is drawn" grep -q 'class="learned"' "$TMP/c.html"

# --- 4. two logs, one picture ---------------------------------------------
"$POLITE" report "$TMP/a.jsonl" "$TMP/a.jsonl" -o "$TMP/aa.html" 2>/dev/null
if $CHECK scale "$TMP/a.html" "$TMP/aa.html" 2; then ok "two logs add up"; else bad "two logs do not add up"; fi
check "both logs are listed" test "$(grep -c '<tr><td class="l">.*a.jsonl' "$TMP/aa.html")" -eq 2

# --- 5. two processes sharing one budget (file:), one picture --------------
for h in 1 2; do
  for i in $(seq 1 16); do echo "$B/slow?ms=20&h=$h&i=$i"; done >"$TMP/f$h.txt"
done
for h in 1 2; do
  "$POLITE" run --rate 20/s --concurrency 4 --budget "file:$TMP/fleet.budget" -q \
    --log "$TMP/f$h.jsonl" --summary-json "$TMP/f$h.sum" -o /dev/null "$TMP/f$h.txt" &
  PIDS+=($!)
done
wait "${PIDS[-1]}" "${PIDS[-2]}"
"$POLITE" report "$TMP/f1.jsonl" "$TMP/f2.jsonl" -o "$TMP/fleet.html"
check "two hosts' logs: counts add up, rates add up to both runs'" python3 - "$TMP/fleet.html" "$TMP/f1.sum" "$TMP/f2.sum" <<'PY'
import json, re, sys
v = dict((k, float(x)) for k, x in re.findall(r'data-key="([^"]+)" data-value="([^"]+)"', open(sys.argv[1]).read()))
s = [json.load(open(p)) for p in sys.argv[2:]]
bad = [k for k in ("requests", "network_attempts", "retries", "status_429") if v[k] != sum(x[k] for x in s)]
rate = sum(x["rate_measured"] for x in s)
if abs(v["rate_measured"] - rate) > 0.05 * rate:
    bad.append("rate_measured %s vs %s" % (v["rate_measured"], rate))
if bad:
    print(bad)
sys.exit(1 if bad else 0)
PY

# --- 6. usage and unreadable input ----------------------------------------
"$POLITE" report -o "$TMP/x.html" 2>"$TMP/x.err"
check "no log is a usage error" test $? -eq 2
"$POLITE" report "$TMP/a.jsonl" "$TMP/missing.jsonl" -o "$TMP/m.html" 2>"$TMP/m.err"
check "a missing log exits 1" test $? -eq 1
check "... naming it" grep -q "cannot open '$TMP/missing.jsonl'" "$TMP/m.err"
check "... and the page is written from the others" test -s "$TMP/m.html"
"$POLITE" run --report "$TMP/nodir/r.html" -q -o /dev/null "$TMP/a.txt" --first 1 2>"$TMP/r.err"
check "an unwritable --report fails the run" test $? -eq 1
check "... saying so" grep -q -- "--report: cannot create" "$TMP/r.err"

finish
