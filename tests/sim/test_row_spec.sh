#!/usr/bin/env bash
# ctest sim/row_spec: polite_sim --row takes a limit that changes mid-run
# (change_at_ms, change_by), so that a limit raised without a fall first
# can be measured: the floor of 20 r/s doubled at 10 s over 1000 requests
# is 200 requests in 10 s and 800 at 40/s, 30 s (50 s if the change were
# ignored); a bad value is refused, naming the pair. It also takes a
# share of answers stalled (slow_ms, slow_share): 80 requests, 8 in
# flight, 100 ms answers take longer when all of them stall 100 ms more,
# and half of them stalled falls between.
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
wall() { # extra spec -> the polite row's wall_s
  "$SIM" --row "kind=conc inflight=100 latency_ms=100 jitter_ms=0 n=80 conc=8 $1" \
    --procs 1 --json | grep '"client": "polite"' |
    sed -n 's/.*"wall_s": \([0-9.]*\).*/\1/p'
}
w0=$(wall "") w1=$(wall "slow_ms=100 slow_share=1") wh=$(wall "slow_ms=100 slow_share=0.5")
if ! awk -v a="$w0" -v b="$wh" -v c="$w1" 'BEGIN { exit !(a > 0 && c > a + 0.5 && b > a && b < c) }'; then
  echo "not ok: walls without a stall $w0 s, half stalled $wh s, all stalled $w1 s"
  exit 1
fi
echo "ok: --row applies change_at_ms/change_by (floor ${floor} s) and refuses a bad value; stalls ${w0} < ${wh} < ${w1} s"
