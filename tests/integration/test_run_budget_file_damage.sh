#!/usr/bin/env bash
# A budget file damaged under real `polite run` processes (issue #21 item
# 2): truncated, zeroed or overwritten with random bytes, mid-run. No
# process dies of a signal or hangs: each stops sending, says why (naming
# the file), and exits within 5 s of SIGTERM; a third `polite run` and
# `polite budget show` on the damaged file answer at once. Damage polite
# can prove is to its own file is repaired and the runs go on after the
# account settles; a file overwritten beyond proof is left alone until it
# is removed.
. "$(dirname "$0")/lib.sh"
start_pyserver
B=http://127.0.0.1:$PY_PORT
# random_bytes FILE OFFSET COUNT: COUNT random bytes at OFFSET, in place, in
# one write. The bytes are drawn once, before: the damage runs under the
# file's lock, which a participant waits for 250 ms at most, and starting
# an interpreter there takes longer than that on a loaded machine.
head -c 266240 /dev/urandom >"$TMP/random.bin"
random_bytes() {
  dd if="$TMP/random.bin" of="$1" bs="$3" count=1 seek="$2" oflag=seek_bytes \
    conv=notrunc status=none
}

# case NAME DAMAGE REPAIRED [STOP]: two runs of 400 requests each on one
# file budget; DAMAGE (a shell command on $F) at 1.5 s; REPAIRED 1 when the
# runs must send again after the account settled (2 s), 0 when they must
# stay stopped until the file is removed; STOP 0 when the damage touched
# no account in use (said once, not a stop of 1 s).
case_() {
  local name=$1 damage=$2 repaired=$3 stop=${4:-1}
  F=$TMP/$name.budget # global: the damage command reads it (a subshell's own)
  local U="file:$F" pids=() i
  for i in 1 2; do
    for k in $(seq 1 400); do echo "$B/ok/$name-$i-$k"; done >"$TMP/$name.$i.in"
    "$POLITE" run --no-progress -q --rate 40/s --concurrency 4 --budget "$U" \
      --out "$TMP/$name.$i.out" "$TMP/$name.$i.in" 2>"$TMP/$name.$i.err" &
    pids+=($!)
  done
  sleep 1.5
  local t_before t_dmg t_mid
  t_before=$(now)
  # Under the file's lock (flock(1)), as between two calls of polite's: a
  # write landing between a participant's read and its write back would
  # be overwritten by it (and the file then proved polite's again).
  export F TMP
  export -f random_bytes
  flock "$F" bash -c "$damage"
  t_dmg=$(now) # after it: the write itself may take a while under load
  sleep 1.2
  # The window: from when the damage was surely seen (the next call, within
  # 0.6 s even on a loaded machine) to before a rebuilt account settled (2 s
  # after the damage at the earliest).
  t_mid=$(python3 -c "print(min($(now), $t_before + 1.9))")
  [ "$stop" = 1 ] && check_eq "$name: nothing sent once the damage was seen" \
    "$(sent_between "$(calc "$t_dmg + 0.6")" "$t_mid" "/ok/$name-")" 0
  # A third participant and the inspector answer at once, with a reason.
  timeout 5 "$POLITE" budget show "$U" >"$TMP/$name.show" 2>&1
  local st=$?
  check "$name: polite budget show answers at once (exit $st)" [ $st -ne 124 ]
  echo "$B/ok/$name-third" >"$TMP/$name.3.in"
  timeout 10 "$POLITE" run --no-progress -q --rate 40/s --concurrency 4 \
    --budget "$U" --budget-outage 1s "$TMP/$name.3.in" >/dev/null 2>"$TMP/$name.3.err"
  st=$?
  check "$name: a third polite run does not hang (exit $st)" [ $st -ne 124 ] && [ $st -lt 128 ]
  if [ "$repaired" = 1 ]; then
    sleep 1.5
    check "$name: sending again after the account settled" \
      [ "$(sent_between "$(calc "$t_dmg + 2.1")" "$(now)" "/ok/$name-")" -gt 0 ]
  fi
  local t_term
  t_term=$(now)
  kill -TERM "${pids[@]}"
  for i in 0 1; do
    wait "${pids[$i]}"
    st=$?
    check_eq "$name: run $((i + 1)) exits 130 on SIGTERM, not by a signal" "$st" 130
  done
  local took
  took=$(calc "$(now) - $t_term")
  check "$name: both exited within 5 s of SIGTERM (${took} s)" \
    python3 -c "import sys; sys.exit(not $took < 5)"
  for i in 1 2; do
    check_grep "$name: run $i says why, naming the file" \
      "budget 'file:$F': .*(damaged|overwritten|cut short|removed)" "$TMP/$name.$i.err"
  done
}

# The cases mostly wait (sleeps, the 40/s rate, the settling), each on its
# own budget file and paths: they run side by side.
each() { side_by_side "$1" case_ "$@"; }
# shellcheck disable=SC2016 # each DAMAGE is code for case_'s bash -c, on that shell's $F
{
  each truncated0 'truncate -s 0 "$F"' 1
  each truncated4096 'truncate -s 4096 "$F"' 1
  each zeroed 'dd if=/dev/zero of="$F" bs=266240 count=1 conv=notrunc status=none' 1
  each random_account 'random_bytes "$F" 4096 4096' 1
  each random_elsewhere 'random_bytes "$F" $((8192 + RANDOM % 150000)) 70000' 1 0
  each random_header 'random_bytes "$F" 0 512' 1 0
  each random_all 'random_bytes "$F" 0 266240' 0
}
side_by_side_wait
check_grep "random_all: the file is left alone and the message says to remove it" \
  "remove it and the participants make a new one" "$TMP/random_all.1.err"
finish
