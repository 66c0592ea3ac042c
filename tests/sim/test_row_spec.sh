#!/usr/bin/env bash
# ctest sim/row_spec: polite_sim --row takes a limit that changes mid-run
# (change_at_ms, change_by), so that a limit raised without a fall first
# can be measured: the floor of 20 r/s doubled at 10 s over 1000 requests
# is 200 requests in 10 s and 800 at 40/s, 30 s (50 s if the change were
# ignored); a bad value is refused, naming the pair.
#   test_row_spec.sh POLITE_SIM
set -u
SIM=$1
row=$("$SIM" --row "rate=20 change_at_ms=10000 change_by=2 n=1000" --procs 1 --json |
  grep '"client": "polite"') || { echo "not ok: no polite row"; exit 1; }
floor=$(printf '%s\n' "$row" | sed -n 's/.*"floor_s": \([0-9.]*\).*/\1/p')
if ! awk -v f="$floor" 'BEGIN { exit !(f > 29.9 && f < 30.2) }'; then
  echo "not ok: floor_s $floor, want 30 s (the change applied)"
  exit 1
fi
err=$("$SIM" --row "rate=20 change_by=x" 2>&1 >/dev/null) && { echo "not ok: change_by=x accepted"; exit 1; }
case $err in *"change_by=x"*) ;; *) echo "not ok: error '$err' does not name the pair"; exit 1 ;; esac
echo "ok: --row applies change_at_ms/change_by (floor ${floor} s) and refuses a bad value"
