# shellcheck shell=bash
# shellcheck disable=SC2154 # tmp and here are the sourcing test's (see below)
# The budget contract seen from several processes, written once and run per
# backend: sourced by test_budget_file.sh and test_budget_redis.sh, which
# set W (budget_worker), A (analyse.py), tmp, pids, ok/bad and mono_us, and
# call
#   run_contract MK [PAUSE_MIN_US]
# MK is a function: `MK NAME [QUERY]` prints a fresh URI of the backend for
# the case NAME (with ?QUERY). PAUSE_MIN_US is how long after the pause
# began the first start may come at the earliest (default 1490000; Redis
# passes less, its clock is not this host's).
# (The in-process half of the contract, for local too, is
# tests/tools/budget_contract.c, run by test_budget_contract.sh.)

# Starts N workers with the given arguments on one URI and waits for them.
# Their output goes to $tmp/out.TAG.1..N.
contract_workers() {
  local n="$1" tag="$2" uri="$3" gap="$4"
  shift 4
  local batch=()
  for i in $(seq "$n"); do
    "$W" "$uri" "$@" >"$tmp/out.$tag.$i" 2>&1 &
    pids+=($!)
    batch+=($!)
    [ "$gap" = 0 ] || sleep "$gap"
  done
  wait "${batch[@]}"
}

run_contract() {
  local mk="$1" pause_min="${2:-1490000}" u

  # 1. Eight processes joining one after another share 40/s, burst 2.
  contract_workers 8 rate "$($mk rate)" 0.05 --rate 40 --burst 2 --count 12
  if $A rate 40 2 96 "$tmp"/out.rate.*; then
    ok "8 participants: aggregate rate within 2%, no 1 s window over rate + burst"
  else
    bad "8 participants share the rate"
  fi

  # 2. Four processes, concurrency 3, each holding its slot 30 ms.
  contract_workers 4 conc "$($mk conc)" 0 --rate 200 --burst 1 \
    --concurrency 3 --count 12 --hold 30
  if $A overlap 3 "$tmp"/out.conc.* &&
    [ "$(cat "$tmp"/out.conc.* | grep -c START)" = 48 ] &&
    ! $A overlap 2 "$tmp"/out.conc.* >/dev/null; then
    ok "concurrency 3 across 4 participants: never over, and used in full"
  else
    bad "concurrency across participants"
  fi

  # 3. A participant killed by SIGKILL while holding both slots: the waiter
  # starts only after the kill, and at most the lease TTL (1 s) + 0.5 s +
  # the delays the waiter measured after the holder's last renewal (it
  # renews every 100 ms, printing RENEW; analyse.py lease) (a fixed
  # 1.5 s from the kill failed at a load of 10: the waiter's wake-up was
  # late, and nothing said by how much).
  u="$($mk kill lease=1s)"
  "$W" "$u" --concurrency 2 --count 2 --hold-forever >"$tmp/kill.holder" 2>&1 &
  local holder=$!
  pids+=("$holder")
  for _ in $(seq 100); do
    [ "$(grep -c START "$tmp/kill.holder")" = 2 ] && break
    sleep 0.05
  done
  "$W" "$u" --concurrency 2 --count 1 >"$tmp/kill.waiter" 2>&1 &
  local waiter=$!
  pids+=("$waiter")
  sleep 1.5 # longer than the TTL: the holder's renewals keep its lease
  local early t_kill t_start why
  early="$(grep -c START "$tmp/kill.waiter")"
  t_kill="$(mono_us)"
  kill -9 "$holder"
  wait "$holder" 2>/dev/null
  wait "$waiter"
  t_start="$($A first "$tmp/kill.waiter")"
  if why="$($A lease 1000000 "$tmp/kill.holder" "$tmp/kill.waiter")" &&
    [ "$early" = 0 ] && [ "$t_start" -gt "$t_kill" ]; then
    ok "SIGKILLed holder's slots back after $(((t_start - t_kill) / 1000)) ms: $why"
  else
    bad "killed holder: early=$early kill=$t_kill waiter start=$t_start: $why"
  fi

  # 4. One process pauses the account for 1.5 s: another one starts only
  # after the pause, then at the planned spacing.
  u="$($mk pause)"
  "$W" "$u" --rate 20 --burst 3 --count 0 --pause-ms 1500 >"$tmp/pause.a" 2>&1
  local t_pause t_first t_last
  t_pause="$(awk '/READY/{print $3}' "$tmp/pause.a")"
  "$W" "$u" --rate 20 --burst 3 --count 4 >"$tmp/pause.b" 2>&1
  t_first="$($A first "$tmp/pause.b")"
  t_last="$(grep START "$tmp/pause.b" | tail -1 | awk '{print $3}')"
  if [ "$t_first" != none ] && [ $((t_first - t_pause)) -ge "$pause_min" ] &&
    [ $((t_last - t_first)) -ge 140000 ]; then
    ok "pause shared: first start $(((t_first - t_pause) / 1000)) ms after the pause began, no burst after it"
  else
    bad "shared pause: pause at $t_pause, starts $t_first..$t_last"
  fi

  # 5. Cost: a request of cost 3 advances the rate by 3 intervals (600 ms
  # at 5/s), not 2 or 4 (400 or 800 ms): each gap is at most 600 ms + 30 ms
  # + what the worker measured of its delay (the start's late wake-up and
  # the previous start's round trip), so that 800 fails unless the machine
  # made it 170 ms late, and says so.
  "$W" "$($mk cost)" --rate 5 --burst 1 --count 3 --cost 3 >"$tmp/cost.rate" 2>&1
  local gaps
  gaps="$(awk '/START/ {
      if (p) printf "%d/%d ", ($3 - p) / 1000, 630 + ($6 + rt) / 1000
      p = $3; rt = $5 - $3
    }' "$tmp/cost.rate")"
  if [ "$(echo "$gaps" | wc -w)" = 2 ] && echo "$gaps" | tr ' /' '\n ' |
    awk 'NF {n++; if ($1 < 599 || $1 > $2) bad = 1} END {exit n != 2 || bad}'; then
    ok "cost 3 at 5/s: starts $gaps ms apart (gap/bound)"
  else
    bad "cost 3 at 5/s: gaps (ms, gap/bound) $gaps"
  fi
  # Slots are asked for separately: one holding 3 of 4 slots makes one
  # asking for 2 wait for its release.
  u="$($mk cost2)"
  "$W" "$u" --concurrency 4 --count 1 --slots 3 --hold 600 >"$tmp/cost.a" 2>&1 &
  local ca=$!
  pids+=("$ca")
  for _ in $(seq 500); do grep -q START "$tmp/cost.a" && break; sleep 0.02; done
  "$W" "$u" --concurrency 4 --count 1 --slots 2 >"$tmp/cost.b" 2>&1
  wait "$ca"
  local a_start a_end b_start
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
  u="$($mk cost3)"
  "$W" "$u" --rate 10 --burst 1 --concurrency 3 --count 1 --cost 3 --hold 1500 >"$tmp/one.a" 2>&1 &
  ca=$!
  pids+=("$ca")
  for _ in $(seq 500); do grep -q START "$tmp/one.a" && break; sleep 0.02; done
  "$W" "$u" --rate 10 --burst 1 --concurrency 3 --count 1 --slots 2 >"$tmp/one.b" 2>&1
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

  # 6. End to end: two `polite run` processes on one budget.
  # shellcheck source=run_e2e.sh
  . "$here/budget/run_e2e.sh"
  run_e2e "$($mk e2e-rate)" "$($mk e2e-pause)"
}
