#!/usr/bin/env bash
# Integration test of `polite delay` and `polite plan`: every Retry-After
# form on a fixed clock, the README's plan example, and usage errors.
. "$(dirname "$0")/lib.sh"
tmp=$TMP

# expect NAME JSON EXPR WANT: EXPR, a Python expression over the parsed
# object `j`, must give WANT (a string as it is, anything else as JSON:
# true/false/null). The checks are only recorded here, NUL-separated in
# $CHECKS, and judged together by one python3 (judge): a python3 per check
# made the test mostly python start-up.
CHECKS=$tmp/checks
: >"$CHECKS"
nchecks=0
expect() {
  printf '%s\0%s\0%s\0%s\0' "$1" "$2" "$3" "$4" >>"$CHECKS"
  nchecks=$((nchecks + 1))
}

# judge: evaluates every recorded check, one "ok" or failure line each,
# and counts them; a check the judge did not report (it died) fails.
judge() {
  local line n=0
  while IFS= read -r line; do
    n=$((n + 1))
    if [ "$line" = ok ]; then ok; else bad "$line"; fi
  done < <(python3 - "$CHECKS" <<'EOF'
import json, sys
f = open(sys.argv[1], encoding="utf-8", errors="surrogateescape").read().split("\0")
for i in range(0, len(f) - 1, 4):
    name, text, expr, want = f[i:i + 4]
    try:
        j = json.loads(text)
        v = eval(expr)
        got = v if isinstance(v, str) else json.dumps(v)
    except Exception:
        got = "<unparseable: %s>" % text
    msg = "%s: %s = '%s', want '%s' (json: %s)" % (name, expr, got, want, text)
    print("ok" if got == want else msg.replace("\n", " "))
EOF
  )
  [ "$n" = "$nchecks" ] || bad "the judge reported $n of $nchecks checks"
}

# run_json ARGS...: runs polite with ARGS; the output must be exactly one
# line of JSON and the exit status 0.
run_json() {
  local out rc
  out=$("$POLITE" "$@" 2>"$tmp/err")
  rc=$?
  if [ $rc -ne 0 ]; then
    bad "polite $* exited $rc: $(cat "$tmp/err")"
  fi
  printf '%s' "$out"
}

# ---- polite delay: valid values ------------------------------------------
# 784111777 is Sun, 06 Nov 1994 08:49:37 GMT; "now" is two minutes earlier.
NOW=784111657

j=$(run_json delay --json --now $NOW 120)
expect "seconds" "$j" 'j["source"]' seconds
expect "seconds" "$j" 'j["delay_ms"]' 120000
expect "seconds" "$j" 'j["seconds"]' 120
expect "seconds" "$j" 'j["saturated"]' false

j=$(run_json delay --json --now $NOW "  12  ")
expect "seconds with spaces" "$j" 'j["delay_ms"]' 12000

j=$(run_json delay --json --now $NOW 0)
expect "zero seconds" "$j" '[j["source"], j["delay_ms"]]' '["seconds", 0]'

for form in "Sun, 06 Nov 1994 08:49:37 GMT" "Sunday, 06-Nov-94 08:49:37 GMT" \
  "Sun Nov  6 08:49:37 1994"; do
  j=$(run_json delay --json --now $NOW "$form")
  expect "date '$form'" "$j" 'j["source"]' date
  expect "date '$form'" "$j" 'j["delay_ms"]' 120000
  expect "date '$form'" "$j" 'j["date_unix"]' 784111777
  expect "date '$form'" "$j" 'j["past"]' false
done

# A past date: delay 0 (one prompt retry).
j=$(run_json delay --json --now 784111877 "Sun, 06 Nov 1994 08:49:37 GMT")
expect "past date" "$j" '[j["source"], j["delay_ms"], j["past"]]' '["date", 0, true]'
j=$(run_json delay --json --now 784111777 "Sun, 06 Nov 1994 08:49:37 GMT")
expect "date equal to now" "$j" 'j["delay_ms"]' 0

# Too large to represent: saturates at 2^31 s, never wraps.
j=$(run_json delay --json --now $NOW 99999999999999999999999999)
expect "saturated" "$j" '[j["source"], j["saturated"], j["delay_ms"]]' \
  '["seconds", true, 2147483648000]'
j=$(run_json delay --json --now $NOW 2147483648)
expect "at the cap" "$j" '[j["saturated"], j["delay_ms"]]' '[false, 2147483648000]'

# Without --now the real clock is used: a date far ahead is a long wait,
# one long ago is 0.
j=$(run_json delay --json "Fri, 31 Dec 9999 23:59:59 GMT")
expect "real clock future" "$j" '[j["source"], j["delay_ms"] > 10**12]' '["date", true]'
j=$(run_json delay --json "Thu, 01 Jan 1970 00:00:00 GMT")
expect "real clock past" "$j" 'j["delay_ms"]' 0

# ---- polite delay: invalid and empty values -> backoff -------------------
for v in soon "Sun, 06 Nov 1994 08:49:37 PST" "12s" "-5" "1.5" \
  "Sun, 31 Nov 1994 08:49:37 GMT" "Sun, 06 Nov 1994 25:49:37 GMT"; do
  j=$(run_json delay --json --now $NOW --seed 1 -- "$v")
  expect "invalid '$v'" "$j" '[j["source"], j["invalid"], j["window_ms"]]' \
    '["backoff", true, 1000]'
  expect "invalid '$v'" "$j" '0 <= j["delay_ms"] <= 1000' true
done

j=$(run_json delay --json --now $NOW --seed 1 "")
expect "empty" "$j" '[j["source"], j["invalid"], j["window_ms"]]' '["backoff", false, 1000]'
j=$(run_json delay --json --now $NOW --seed 1 "   ")
expect "blank" "$j" '[j["source"], j["invalid"]]' '["backoff", false]'

# Deterministic with --seed, and the seed really matters.
a=$(run_json delay --json --seed 42 --attempt 4 soon)
b=$(run_json delay --json --seed 42 --attempt 4 soon)
expect "seeded repeat" "[$a, $b]" 'j[0]["delay_ms"] == j[1]["delay_ms"]' true
expect "attempt 4 window" "$a" '[j["window_ms"], 0 <= j["delay_ms"] <= 8000]' '[8000, true]'
seeds=$(for s in 1 2 3 4 5 6 7 8 9 10; do
  printf '%s,' "$(run_json delay --json --seed $s --attempt 6 "")"
done)
expect "10 seeds give at least 5 distinct delays" "[${seeds%,}]" \
  'len(j) == 10 and len({x["delay_ms"] for x in j}) >= 5' true

j=$(run_json delay --json --seed 3 --attempt 40 "")
expect "capped window" "$j" 'j["window_ms"]' 30000
j=$(run_json delay --json --seed 3 --attempt 4294967295 "")
expect "huge attempt" "$j" 'j["window_ms"]' 30000
j=$(run_json delay --json --seed 3 --attempt 3 --base 100ms --cap=350ms "")
expect "base/cap" "$j" '[j["window_ms"], j["base_ms"], j["cap_ms"]]' '[350, 100, 350]'
j=$(run_json delay --json --seed 3 --attempt 2 --base 250ms "")
expect "base" "$j" 'j["window_ms"]' 500

# Plain output explains in words.
out=$("$POLITE" delay --now $NOW 120)
case "$out" in *"120000 ms"*) ok ;; *) bad "plain seconds: $out" ;; esac
out=$("$POLITE" delay --now 784111877 "Sun, 06 Nov 1994 08:49:37 GMT")
case "$out" in *"prompt retry"*) ok ;; *) bad "plain past date: $out" ;; esac
out=$("$POLITE" delay --seed 5 soon)
case "$out" in *"not a valid Retry-After"*"uniform in [0, 1000] ms"*) ok ;;
  *) bad "plain invalid: $out" ;; esac

# ---- polite plan ------------------------------------------------------------
j=$(run_json plan --allowance 120/min --target 90/min --requests 600 --latency 2s --json)
expect "plan example" "$j" 'j["rate_per_s"]' 1.5
expect "plan example" "$j" 'j["start_interval_ms"]' 667
expect "plan example" "$j" 'abs(j["start_interval_ms_exact"] - 666.667) < 0.001' true
expect "plan example" "$j" 'j["min_duration_s"]' 400
expect "plan example" "$j" 'j["in_flight"]' 3
expect "plan example" "$j" 'j["concurrency"]' 7
expect "plan example" "$j" 'j["concurrency"] > 3' true
expect "plan example" "$j" '[j["allowance_per_s"], j["target_per_s"], j["requests"], j["latency_ms"]]' \
  '[2, 1.5, 600, 2000]'
expect "plan example" "$j" 'j["exceeds_allowance"]' false
expect "plan example" "$j" '"fits_deadline" in j' false

j=$(run_json plan --allowance 120/min --target 90/min --requests 600 --latency 2s --deadline 10m --json)
expect "plan fits" "$j" '[j["fits_deadline"], j["deadline_ms"]]' '[true, 600000]'
j=$(run_json plan --allowance 120/min --target 90/min --requests 600 --latency 2s --deadline 5m --json)
expect "plan does not fit" "$j" '[j["fits_deadline"], j["max_requests_in_deadline"]]' '[false, 450]'

# Default target: 75% of the allowance.
j=$(run_json plan --allowance 120/min --json)
expect "default target" "$j" '[j["target_per_s"], j["target_default"], j["start_interval_ms"]]' \
  '[1.5, true, 667]'
expect "default target" "$j" '[j["requests"], j["concurrency"]]' '[null, null]'
j=$(run_json plan --allowance 5000/h --target 1/s --requests 3600 --latency 350ms --json)
expect "per hour" "$j" '[j["start_interval_ms"], j["min_duration_s"], j["in_flight"], j["concurrency"]]' \
  '[1000, 3600, 0.35, 2]'

# Target above the allowance: a warning, not an error.
out=$("$POLITE" plan --allowance 120/min --target 150/min --json 2>"$tmp/err")
rc=$?
if [ $rc -eq 0 ]; then ok; else bad "target above allowance exited $rc"; fi
expect "exceeds" "$out" 'j["exceeds_allowance"]' true
if grep -q "warning" "$tmp/err"; then ok; else bad "no warning on stderr: $(cat "$tmp/err")"; fi

out=$("$POLITE" plan --allowance 120/min --target 90/min --requests 600 --latency 2s)
case "$out" in *"667 ms"*"400 s"*"3 on average"*"--concurrency 7"*) ok ;;
  *) bad "plain plan: $out" ;; esac

# ---- usage errors: exit 2, the argument named ---------------------------
# usage_error NAME-IN-MESSAGE ARGS...
usage_error() {
  local want=$1
  shift
  "$POLITE" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  if [ $rc -ne 2 ]; then
    bad "polite $*: exit $rc, want 2"
  elif ! grep -qF -- "$want" "$tmp/err"; then
    bad "polite $*: stderr does not name '$want': $(cat "$tmp/err")"
  else
    ok
  fi
}
usage_error "--attempt" delay --attempt x 12
usage_error "--attempt" delay --attempt 0 12
usage_error "--attempt" delay --attempt -1 12
usage_error "--now" delay --now yesterday 12
usage_error "--now" delay --now -5 12
usage_error "--seed" delay --seed 1.5 12
usage_error "--base" delay --base 0 12
usage_error "--cap" delay --cap soon 12
usage_error "--seed" delay 12 --seed
usage_error "--bogus" delay --bogus 12
usage_error "VALUE" delay
usage_error "VALUE" delay 1 2
usage_error "-5" delay -5
usage_error "--allowance" plan
usage_error "--allowance" plan --allowance 120
usage_error "--allowance" plan --allowance 0/min
usage_error "--target" plan --allowance 120/min --target 90/fortnight
usage_error "--requests" plan --allowance 120/min --requests 0
usage_error "--latency" plan --allowance 120/min --latency fast
usage_error "--deadline" plan --allowance 120/min --deadline 0
usage_error "extra" plan --allowance 120/min extra

judge

for c in delay plan; do
  if "$POLITE" $c --help | grep -q "Usage: polite $c"; then ok; else bad "$c --help"; fi
done

finish
