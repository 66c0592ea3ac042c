#!/usr/bin/env bash
# Redis killed mid-run and restarted from its append-only file (issue 24):
# the workers stop taking work while it is down (what they already hold
# runs on while its lease is surely theirs, nothing more), keep the results
# they could not record, and carry on when it is back. Nothing is lost, no
# id gets two results, writes keep their keys. With appendfsync always a
# result Redis acknowledged survives the crash (with everysec the last
# second may not: see docs/queue.md). Then: unreachable past
# --queue-outage, a worker gives up with exit 1 and keeps its results.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
start_redis --appendonly yes --appendfsync always || exit 1
start_upstream
Q="redis://127.0.0.1:$RPORT/aof?timeout=300ms"
N=150
: >"$TMP/in.txt"
for i in $(seq 0 $((N - 1))); do
  m=GET
  [ $((i % 3)) = 0 ] && m=POST
  printf '{"id":"q%d","method":"%s","url":"http://127.0.0.1:%s/echo/q%d"}\n' \
    "$i" "$m" "$UP_PORT" "$i" >>"$TMP/in.txt"
done
"$POLITE" queue push "$Q" "$TMP/in.txt" >/dev/null
for w in w1 w2; do
  worker $w --queue "$Q" --rate 20/s --concurrency 4 --lease 3s \
    --idempotency-key auto
done
wait_for 40 "/echo/q" || exit 1
{ kill -9 "$RPID" && wait "$RPID"; } 2>/dev/null
t_down=$(python3 -c 'import time; print(time.time())')
sleep 2
t_up=$(python3 -c 'import time; print(time.time())')
start_redis "${REDIS_ARGS[@]}" || { echo "redis did not come back"; exit 1; }
rc=0
for w in w1 w2; do
  wait "${WPID[$w]}" || { rc=$?; sed 's/^/#   /' "$TMP/$w.err"; }
done
check_eq "both workers end 0 after the restart" "$rc" 0
during=$(python3 - "$UP_REC" "$t_down" "$t_up" <<'PY'
import json, sys
a, b = float(sys.argv[2]), float(sys.argv[3])
print(sum(1 for l in open(sys.argv[1])
          if '"ev": "in"' in l and a + 0.1 < json.loads(l)["t"] < b))
PY
)
check "while Redis was down only entries already held were sent ($during <= 2 x 8)" \
  [ "$during" -le 16 ]
"$POLITE" queue results "$Q" >"$TMP/results.jsonl"
check "one result per id, none lost" qcheck results $N "$TMP/results.jsonl"
check "the workers' --out share no id" qcheck union $N "$TMP"/w[12].jsonl
check "every write kept one key" qcheck keys "$UP_REC"
check_grep "the summary tells of the outage" \
  "Redis was unreachable 1 time\(s\), [0-9.]+ s in all" "$TMP/w1.err"

# Down for good: --queue-outage 1s gives up, exit 1, results kept in --out.
push_ids 20 ok
"$POLITE" queue push "redis://127.0.0.1:$RPORT/gone" "$TMP/in.txt" >/dev/null
worker gone --queue "redis://127.0.0.1:$RPORT/gone?timeout=200ms" \
  --rate 4/s --concurrency 2 --lease 3s --queue-outage 1s
G=${WPID[gone]}
wait_for 2 "/ok/q" || exit 1
{ kill -9 "$RPID" && wait "$RPID"; } 2>/dev/null
wait "$G"
check_eq "Redis gone past --queue-outage: exit 1" "$?" 1
check_grep "... saying why" "unreachable for 1 s \(the outage bound\): gave up" "$TMP/gone.err"
lines=$(grep -c . "$TMP/gone.jsonl")
check "... with what it did in --out ($lines lines)" [ "$lines" -ge 1 ]
finish
