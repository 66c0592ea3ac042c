#!/usr/bin/env bash
# polite run with request costs: a line of cost N spends N rate units (so a
# tokens-per-minute allowance is budgeted like a requests-per-minute one),
# holds one concurrency slot, and every retry pays the cost again.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
R=$PY_REC
P=$POLITE

# gaps PREFIX: the gaps (s) between arrivals of paths starting with PREFIX.
gaps() {
  python3 - "$R" "$1" <<'PY'
import json, sys
t = [json.loads(l)["t"] for l in open(sys.argv[1])
     if json.loads(l)["path"].startswith(sys.argv[2])]
print(" ".join("%.3f" % (b - a) for a, b in zip(t, t[1:])))
PY
}
# spaced "GAPS" LO HI: every gap within [LO, HI] and at least one gap.
spaced() {
  python3 -c '
import sys
g = [float(x) for x in sys.argv[1].split()]
lo, hi = float(sys.argv[2]), float(sys.argv[3])
sys.exit(0 if g and all(lo <= x <= hi for x in g) else 1)' "$@"
}

# --- cost 5 at 10/s: starts 0.5 s apart (cost > --concurrency 4) ------------
for i in 1 2 3 4 5; do echo "{\"url\":\"$B/ok/c5-$i\",\"cost\":5}"; done >"$TMP/c5.txt"
"$P" run --no-progress --rate 10/s --summary-json "$TMP/c5.sum" "$TMP/c5.txt" >"$TMP/c5.out" 2>"$TMP/c5.err"
check "cost 5: all ok" [ "$(jq -r .outcome "$TMP/c5.out" | sort -u)" = "ok" ]
check "summary counts 25 units in 5 attempts" jq -e '.units==25 and .network_attempts==5' "$TMP/c5.sum"
check "summary plans 2 starts/s from --rate and the cost" grep -q "2.00/s planned (--rate 10.00 units/s, mean cost 5.00" "$TMP/c5.err"
check "no false 'faster than planned' reading" jq -e '.interval_p50_ms >= 475' "$TMP/c5.sum"
g=$(gaps /ok/c5-)
echo "# cost 5, 10/s, concurrency 4: gaps $g"
check "cost 5: starts ~0.5 s apart ($g)" spaced "$g" 0.45 0.75

# --- a cost above the burst starts at once on an idle budget -----------------
# (the GCRA rule: admitted when the account is idle; the 2 s of debt then
# space the requests that follow). Cost 20 at 10/s under --concurrency 4.
t0=$(python3 -c 'import time; print(time.time())')
echo "{\"url\":\"$B/ok/first20\",\"cost\":20}" |
  "$P" run --no-progress -q --rate 10/s --concurrency 4 >"$TMP/first.out"
d=$(python3 - "$R" "$t0" <<'PY'
import json, sys
t = [json.loads(l)["t"] for l in open(sys.argv[1])
     if json.loads(l)["path"] == "/ok/first20"]
print("%.3f" % (t[0] - float(sys.argv[2])) if t else "none")
PY
)
echo "# cost 20 at 10/s: first start ${d} s after launch"
check "cost 20: first start at once, not after its 2 s of units ($d s)" \
  python3 -c 'import sys; sys.exit(0 if sys.argv[1] != "none" and float(sys.argv[1]) < 1.0 else 1)' "$d"

# --- the same with --cost and a concurrency above the cost ------------------
for i in 1 2 3 4; do echo "$B/ok/g5-$i"; done >"$TMP/g5.txt"
"$P" run --no-progress -q --rate 10/s --cost 5 --concurrency 8 "$TMP/g5.txt" >"$TMP/g5.out"
g=$(gaps /ok/g5-)
echo "# --cost 5, 10/s, concurrency 8: gaps $g"
check "--cost 5: starts ~0.5 s apart ($g)" spaced "$g" 0.45 0.75

# --- the same over a shared budget (file backend) -----------------------------
for i in 1 2 3; do echo "$B/ok/f5-$i"; done >"$TMP/f5.txt"
"$P" run --no-progress -q --rate 10/s --cost 5 --budget "file:$TMP/budget" "$TMP/f5.txt" >"$TMP/f5.out"
g=$(gaps /ok/f5-)
echo "# --cost 5, 10/s, file budget: gaps $g"
check "file budget: starts ~0.5 s apart ($g)" spaced "$g" 0.45 0.75

# --- control: cost 1 is ~0.1 s apart, and a line's cost wins over --cost ----
for i in 1 2 3 4; do echo "{\"url\":\"$B/ok/c1-$i\",\"cost\":1}"; done >"$TMP/c1.txt"
"$P" run --no-progress -q --rate 10/s --cost 5 "$TMP/c1.txt" >"$TMP/c1.out"
g=$(gaps /ok/c1-)
echo "# line cost 1 over --cost 5, 10/s: gaps $g"
check "cost 1: starts ~0.1 s apart ($g)" spaced "$g" 0.07 0.3

# --- a cost-N request holds one slot, not N ---------------------------------
# Two slow requests of cost 3 under --concurrency 3 (at 100 units/s): with
# one slot each they run side by side; with 3 slots each the second would
# wait for the first to end.
for i in 1 2; do echo "{\"url\":\"$B/slow?ms=800&s=$i\",\"cost\":3}"; done >"$TMP/slot.txt"
"$P" run --no-progress --rate 100/s --concurrency 3 --summary-json "$TMP/slot.sum" "$TMP/slot.txt" >"$TMP/slot.out" 2>/dev/null
check "cost 3 under concurrency 3: both in flight at once" jq -e '.in_flight_peak==2' "$TMP/slot.sum"

# --- retries pay the cost again ----------------------------------------------
# 503 + Retry-After: 0 twice, then 200: the first retry is a prompt one (no
# wait of its own), yet it comes 0.5 s after the first attempt, as the cost
# says at 10/s; the second waits for its backoff (>= 0.5 s).
echo "{\"url\":\"$B/fail503x2/cost\",\"cost\":5}" |
  "$P" run --no-progress -q --rate 10/s --spread 0ms >"$TMP/retry.out"
check "retried request ok after 3 attempts" jq -e '.attempts==3 and .outcome=="ok"' "$TMP/retry.out"
g=$(gaps /fail503x2/cost)
echo "# retries of a cost-5 request at 10/s: gaps $g"
check "prompt retry spaced by the cost ($g)" spaced "${g%% *}" 0.45 0.9
check "no retry closer than the cost ($g)" spaced "$g" 0.45 30

# --- invalid costs --------------------------------------------------------------
printf '{"url":"%s/ok/bad1","cost":0}\n{"url":"%s/ok/bad2","cost":"5"}\n%s/ok/good\n' "$B" "$B" "$B" >"$TMP/bad.txt"
"$P" run --no-progress -q "$TMP/bad.txt" >"$TMP/bad.out"
check "invalid cost exits 1" [ $? -eq 1 ]
check "cost 0: invalid_input naming field and value" jq -e -s 'map(select(.line==1))[0] | .outcome=="invalid_input" and (.error|test("field \"cost\"")) and (.error|test("got 0"))' "$TMP/bad.out"
check "cost \"5\": invalid_input naming the value" jq -e -s 'map(select(.line==2))[0] | .outcome=="invalid_input" and (.error|test("got \"5\""))' "$TMP/bad.out"
check "invalid lines were not sent" [ "$(grep -c '/ok/bad' "$R")" -eq 0 ]
check "valid line still ok" jq -e -s 'map(select(.line==3))[0] | .outcome=="ok"' "$TMP/bad.out"
for v in 0 -1 abc 1000000001; do
  "$P" run --cost "$v" "$TMP/bad.txt" >/dev/null 2>"$TMP/err"
  rc=$?
  check "--cost $v exits 2 naming --cost" bash -c "[ $rc -eq 2 ] && grep -q -- '--cost' '$TMP/err'"
done

finish
