#!/usr/bin/env bash
# Shared budget across processes (--budget file:PATH): several budget_worker
# processes on one file keep the aggregate rate, the concurrency limit and a
# shared pause; a participant killed with SIGKILL gives its slots back
# within the lease TTL; mismatched settings are refused.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${POLITE_BUILD:=$here/../../build}"
W="$POLITE_BUILD/tools/budget_worker"
A="python3 $here/budget/analyse.py"
[ -x "$W" ] || { echo "missing $W (build the tests)"; exit 1; }

tmp="$(mktemp -d /tmp/polite-budget-file.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
mono_us() { python3 -c 'import time; print(int(time.monotonic() * 1e6))'; }

# 1. Eight processes joining one after another share 40/s, burst 2.
f="file:$tmp/rate.budget"
for i in 1 2 3 4 5 6 7 8; do
  "$W" "$f" --rate 40 --burst 2 --count 12 >"$tmp/out.rate.$i" 2>&1 &
  pids+=($!)
  sleep 0.05
done
wait
if $A rate 40 2 96 "$tmp"/out.rate.*; then
  ok "8 processes: aggregate rate within 2%, no 1 s window over rate + burst"
else
  bad "8 processes share the rate"
fi

# 2. Mismatched settings are refused, naming the file.
if "$W" "$f" --rate 20 --burst 2 --count 1 >"$tmp/mm.out" 2>&1; then
  bad "a joiner with another rate was accepted"
elif grep -q "rate.budget was created with rate 40/s" "$tmp/mm.out"; then
  ok "mismatched settings refused: ...$(grep -o "was created with.*" "$tmp/mm.out" | cut -c1-60)..."
else
  bad "mismatch message: $(cat "$tmp/mm.out")"
fi

# 3. Four processes, concurrency 3, each holding its slot 30 ms.
f="file:$tmp/conc.budget"
for i in 1 2 3 4; do
  "$W" "$f" --rate 200 --burst 1 --concurrency 3 --count 12 --hold 30 \
    >"$tmp/out.conc.$i" 2>&1 &
  pids+=($!)
done
wait
if $A overlap 3 "$tmp"/out.conc.* && [ "$(cat "$tmp"/out.conc.* | grep -c START)" = 48 ] &&
  ! $A overlap 2 "$tmp"/out.conc.* >/dev/null; then
  ok "concurrency 3 across 4 processes: never over, and used in full"
else
  bad "concurrency across processes"
fi

# 4. A participant killed by SIGKILL while holding both slots: the waiter
# starts only after the kill, and within the lease TTL (1 s) of it.
f="file:$tmp/kill.budget?lease=1s"
"$W" "$f" --concurrency 2 --count 2 --hold-forever >"$tmp/kill.holder" 2>&1 &
holder=$!
pids+=($holder)
for _ in $(seq 100); do
  [ "$(grep -c START "$tmp/kill.holder")" = 2 ] && break
  sleep 0.05
done
"$W" "$f" --concurrency 2 --count 1 >"$tmp/kill.waiter" 2>&1 &
waiter=$!
pids+=($waiter)
sleep 1.5 # longer than the TTL: the holder's renewals keep its lease
early="$(grep -c START "$tmp/kill.waiter")"
t_kill="$(mono_us)"
kill -9 "$holder"
wait "$holder" 2>/dev/null
wait "$waiter"
t_start="$($A first "$tmp/kill.waiter")"
if [ "$early" = 0 ] && [ "$t_start" != none ] && [ "$t_start" -gt "$t_kill" ] &&
  [ $((t_start - t_kill)) -le 1300000 ]; then
  ok "SIGKILLed holder's slots back after $(((t_start - t_kill) / 1000)) ms (lease 1 s)"
else
  bad "killed holder: early=$early kill=$t_kill waiter start=$t_start"
fi

# 5. One process pauses the account for 1.5 s: another one starts only
# after the pause, then at the planned spacing.
f="file:$tmp/pause.budget"
"$W" "$f" --rate 20 --burst 3 --count 0 --pause-ms 1500 >"$tmp/pause.a" 2>&1
t_pause="$(awk '/READY/{print $3}' "$tmp/pause.a")"
"$W" "$f" --rate 20 --burst 3 --count 4 >"$tmp/pause.b" 2>&1
t_first="$($A first "$tmp/pause.b")"
t_last="$(grep START "$tmp/pause.b" | tail -1 | awk '{print $3}')"
if [ "$t_first" != none ] && [ $((t_first - t_pause)) -ge 1490000 ] &&
  [ $((t_last - t_first)) -ge 140000 ]; then
  ok "pause shared: first start $(((t_first - t_pause) / 1000)) ms after the pause began, no burst after it"
else
  bad "shared pause: pause at $t_pause, starts $t_first..$t_last"
fi

# Cost: a request of cost 3 advances the rate by 3 intervals. Slots are
# asked for separately: one holding 3 of 4 slots makes one asking for 2
# wait for its release.
"$W" "file:$tmp/cost.budget" --rate 10 --burst 1 --count 3 --cost 3 >"$tmp/cost.rate" 2>&1
gaps="$(awk '/START/{if (p) printf "%d ", ($3 - p) / 1000; p = $3}' "$tmp/cost.rate")"
set -- $gaps
if [ $# = 2 ] && [ "$1" -ge 299 ] && [ "$1" -le 340 ] && [ "$2" -ge 299 ] && [ "$2" -le 340 ]; then
  ok "cost 3 at 10/s: starts ${1} ms and ${2} ms apart"
else
  bad "cost 3 at 10/s: gaps (ms) $gaps"
fi
"$W" "file:$tmp/cost2.budget" --concurrency 4 --count 1 --slots 3 --hold 600 >"$tmp/cost.a" 2>&1 &
ca=$!
pids+=($ca)
for _ in $(seq 100); do grep -q START "$tmp/cost.a" && break; sleep 0.02; done
"$W" "file:$tmp/cost2.budget" --concurrency 4 --count 1 --slots 2 >"$tmp/cost.b" 2>&1
wait "$ca"
a_end="$(awk '/^END/{print $3}' "$tmp/cost.a")"
b_start="$($A first "$tmp/cost.b")"
if [ -n "$a_end" ] && [ "$b_start" != none ] && [ "$b_start" -ge "$a_end" ]; then
  ok "2 slots waited for the release of 3 (concurrency 4)"
else
  bad "slots: a ended $a_end, b started $b_start"
fi
# A request of cost 3 with ONE slot (what polite run asks for): it charges
# 3 units and holds one of 3 slots, so one asking for the 2 other slots
# starts after the 3 units' spacing (300 ms at 10/s) while the first one
# still runs (with 3 slots taken it would wait for the end).
"$W" "file:$tmp/cost3.budget" --rate 10 --burst 1 --concurrency 3 --count 1 --cost 3 --hold 1500 >"$tmp/one.a" 2>&1 &
ca=$!
pids+=($ca)
for _ in $(seq 100); do grep -q START "$tmp/one.a" && break; sleep 0.02; done
"$W" "file:$tmp/cost3.budget" --rate 10 --burst 1 --concurrency 3 --count 1 --slots 2 >"$tmp/one.b" 2>&1
wait "$ca"
a_start="$($A first "$tmp/one.a")"
a_end="$(awk '/^END/{print $3}' "$tmp/one.a")"
b_start="$($A first "$tmp/one.b")"
if [ -n "$a_end" ] && [ "$a_start" != none ] && [ "$b_start" != none ] &&
  [ $((b_start - a_start)) -ge 280000 ] && [ "$b_start" -lt "$a_end" ]; then
  ok "cost 3, one slot: next start $(((b_start - a_start) / 1000)) ms later, during the first"
else
  bad "cost 3, one slot: a $a_start..$a_end, b started $b_start"
fi

# 6. Not a budget file: refused, untouched.
echo "precious" >"$tmp/notours"
if "$W" "file:$tmp/notours" --count 1 >"$tmp/notours.out" 2>&1; then
  bad "a foreign file was used"
elif grep -q "not a polite budget file" "$tmp/notours.out" &&
  [ "$(cat "$tmp/notours")" = precious ]; then
  ok "a foreign file is refused and left as it was"
else
  bad "foreign file: $(cat "$tmp/notours.out")"
fi

# 8. End to end: two `polite run` processes on one budget.
. "$here/budget/run_e2e.sh"
run_e2e "file:$tmp/e2e-rate.budget" "file:$tmp/e2e-pause.budget"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
