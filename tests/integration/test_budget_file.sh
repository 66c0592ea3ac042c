#!/usr/bin/env bash
# Shared budget across processes (--budget file:PATH): several budget_worker
# processes on one file keep the aggregate rate, the concurrency limit and a
# shared pause; a participant killed with SIGKILL gives its slots back
# within the lease TTL; mismatched settings are refused.
. "$(dirname "$0")/lib.sh"
set -o pipefail
here=$IT
W="$POLITE_BUILD/tools/budget_worker"
A="python3 $here/budget/analyse.py"
[ -x "$W" ] || { echo "missing $W (build the tests)"; exit 1; }
tmp=$TMP
pids=()
at_exit() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
}
on_exit at_exit
mono_us() { python3 -c 'import time; print(int(time.monotonic() * 1e6))'; }

# 1. The contract shared with the Redis backend (tests/integration/budget/
# contract.sh): rate, concurrency, a SIGKILLed holder, the pause, cost.
file_uri() { echo "file:$tmp/$1.budget${2:+?$2}"; }
. "$here/budget/contract.sh"
run_contract file_uri

# 2. Mismatched settings are refused, naming the file (the contract's rate
# case created it at 40/s, burst 2).
f="$(file_uri rate)"
if "$W" "$f" --rate 20 --burst 2 --count 1 >"$tmp/mm.out" 2>&1; then
  bad "a joiner with another rate was accepted"
elif grep -q "rate.budget was created with rate 40/s" "$tmp/mm.out"; then
  ok "mismatched settings refused: ...$(grep -o "was created with.*" "$tmp/mm.out" | cut -c1-60)..."
else
  bad "mismatch message: $(cat "$tmp/mm.out")"
fi

# 3. Not a budget file: refused, untouched.
echo "precious" >"$tmp/notours"
if "$W" "file:$tmp/notours" --count 1 >"$tmp/notours.out" 2>&1; then
  bad "a foreign file was used"
elif grep -q "not a polite budget file" "$tmp/notours.out" &&
  [ "$(cat "$tmp/notours")" = precious ]; then
  ok "a foreign file is refused and left as it was"
else
  bad "foreign file: $(cat "$tmp/notours.out")"
fi

finish
