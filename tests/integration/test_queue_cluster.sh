#!/usr/bin/env bash
# The work queue on a 3-master Redis Cluster (issue 24): every key of a
# queue carries the hash tag {NAME}, so they live in one slot and one
# script may touch them all. Push and workers are pointed at nodes that do
# not own the slot and follow MOVED to the one that does; then the slot is
# migrated to another master mid-run, key by key (ASK and TRYAGAIN while
# it moves), and the workers follow it. Nothing is lost, no id gets two
# results.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
start_cluster || exit 1
start_upstream
owner=$(slot_owner 'polite:queue:{cl}:work')
others=()
for p in "${CPORTS[@]}"; do [ "$p" != "$owner" ] && others+=("$p"); done
N=200
push_ids $N ok
"$POLITE" queue push "redis://127.0.0.1:${others[0]}/cl" "$TMP/in.txt" >"$TMP/push.out"
check_grep "push through a node that does not own the slot" "$N added" "$TMP/push.out"
check_eq "... every key is on the owner" \
  "$(redis-cli -p "$owner" exists 'polite:queue:{cl}:work' 'polite:queue:{cl}:ids' 'polite:queue:{cl}:meta')" 3
check_eq "... none on the others" \
  "$(( $(redis-cli -p "${others[0]}" dbsize) + $(redis-cli -p "${others[1]}" dbsize) ))" 0
worker c1 --queue "redis://127.0.0.1:${others[0]}/cl" --rate 25/s --lease 3s
worker c2 --queue "redis://127.0.0.1:${others[1]}/cl" --rate 25/s --lease 3s
wait_for 40 "/ok/q" || exit 1
# Move the slot to another master, one key every 0.2 s.
dst=${others[1]}
slot=$(redis-cli -p "$owner" cluster keyslot 'polite:queue:{cl}:work')
src_id=$(redis-cli -p "$owner" cluster myid)
dst_id=$(redis-cli -p "$dst" cluster myid)
redis-cli -p "$dst" cluster setslot "$slot" importing "$src_id" >/dev/null
redis-cli -p "$owner" cluster setslot "$slot" migrating "$dst_id" >/dev/null
for k in $(redis-cli -p "$owner" cluster getkeysinslot "$slot" 100); do
  redis-cli -p "$owner" migrate 127.0.0.1 "$dst" "$k" 0 5000 >/dev/null
  sleep 0.2
done
for p in "${CPORTS[@]}"; do
  redis-cli -p "$p" cluster setslot "$slot" node "$dst_id" >/dev/null
done
rc=0
for w in c1 c2; do
  wait "${WPID[$w]}" || { rc=$?; sed 's/^/#   /' "$TMP/$w.err"; }
done
check_eq "both workers end 0 across the migration" "$rc" 0
check_eq "the queue now lives on the new owner" \
  "$(slot_owner 'polite:queue:{cl}:work')" "$dst"
"$POLITE" queue results "redis://127.0.0.1:$owner/cl" >"$TMP/results.jsonl"
check "one result per id, none lost" qcheck results $N "$TMP/results.jsonl"
check "the workers' --out share no id" qcheck union $N "$TMP"/c[12].jsonl
check_eq "status through the old owner follows MOVED" \
  "$("$POLITE" queue status --json "redis://127.0.0.1:$owner/cl" | jq -c '[.done, .pending, .in_flight]')" \
  "[$N,0,0]"
finish
