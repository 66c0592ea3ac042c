#!/usr/bin/env bash
# The test tools' numbers (tests/tools/budget_worker.c, budget_client.c)
# are checked: a value that is not a number of the option's kind, or does
# not fit, is a usage error (exit 2) that names the option and the value,
# before any budget is opened; it is never read as 0 or wrapped (atoi's
# "-1" as 4294967295 slots). Good values still run.
. "$(dirname "$0")/lib.sh"
W=$POLITE_BUILD/tools/budget_worker
C=$POLITE_BUILD/tools/budget_client
for t in "$W" "$C"; do [ -x "$t" ] || { echo "missing $t (build the tests)"; exit 1; }; done
B="file:$TMP/w.budget"

# refused TOOL-NAME OPTION VALUE CMD...: CMD exits 2, its stderr names
# OPTION and 'VALUE', and the budget file was not made.
refused() {
  local name=$1 opt=$2 val=$3 rc
  shift 3
  "$@" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  check_eq "$name $opt '$val': a usage error" "$rc" 2
  if grep -qF -- "$name: $opt: '$val' is not a" "$TMP/err"; then
    ok "... naming the option and the value"
  else
    bad "... naming the option and the value: $(cat "$TMP/err")"
  fi
  check "... before the budget is opened" [ ! -e "$TMP/w.budget" ]
}
wbad() { refused budget_worker "$1" "$2" "$W" "$B" --count 1 "$1" "$2"; }

wbad --rate abc
wbad --rate -1
wbad --rate 5/s
wbad --rate 1e999
wbad --rate ''
wbad --burst -1
wbad --burst 4294967296
wbad --concurrency 2.5
wbad --count 10x
wbad --count 99999999999999999999
wbad --hold ''
wbad --cost ' 1'
wbad --slots +1
wbad --pause-ms 1s
check_grep "a whole number's message gives its range" \
  "is not a whole number from 0 to [0-9]+$" "$TMP/err"

refused budget_client COUNT -3 "$C" "$B" http://127.0.0.1:9/ -3
refused budget_client COUNT 2x "$C" "$B" http://127.0.0.1:9/ 2x
refused budget_client OUTAGE_MS 1s "$C" "$B" http://127.0.0.1:9/ 1 1s

# The same options with good values: parsed and used (the line counts
# follow --count). Each run has a budget file of its own: a file keeps the
# settings it was made with.
"$W" "file:$TMP/ok1.budget" --rate 1e3 --burst 3 --concurrency 2 --count 3 --hold 0 \
  --cost 1 --slots 1 --pause-ms 0 >"$TMP/ok.out" 2>"$TMP/ok.err"
check_eq "good values run (exit 0)" "$?" 0
check_eq "... starting --count 3 requests" "$(grep -c '^START ' "$TMP/ok.out")" 3
check_grep "... and ending with 3 admissions, no error" '^DONE [0-9]+ [0-9]+ 3 0$' "$TMP/ok.out"
"$W" "file:$TMP/ok2.budget" --rate .5 --count 0 >/dev/null 2>"$TMP/ok2.err"
check_eq "a rate written from its point (.5) runs" "$?" 0
"$C" "file:$TMP/ok3.budget" http://127.0.0.1:9/ 0 0 >"$TMP/c.out" 2>"$TMP/c.err"
check_eq "budget_client: COUNT 0, OUTAGE_MS 0 run (exit 0, no call)" "$?:$(wc -l <"$TMP/c.out")" "0:0"
finish
