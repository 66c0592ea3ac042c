#!/usr/bin/env bash
# The work queue takes its randomness from the env it is given, as the
# scheduler and the client do (issue 25): a worker attached with batch
# options whose env fills every random byte with 0x5a is named
# HOST:PID:5a5a5a5a, whatever the system's random source says
# (tests/tools/queue_env.c). Its clock decisions (leases, renewals,
# outages) read the same env; the other queue tests run them on the real one.
. "$(dirname "$0")/lib.sh"
. "$IT/queue/lib.sh"
start_redis || exit 1
TOOL=$POLITE_BUILD/tools/queue_env
"$TOOL" "redis://127.0.0.1:$RPORT/envq" >"$TMP/names" 2>"$TMP/err"
check_eq "the worker showed in the queue's status" "$?" 0
check_grep "... named with the env's random bytes" '^[^:]+:[0-9]+:5a5a5a5a$' "$TMP/names"
sed 's/^/#   /' "$TMP/names" "$TMP/err" | head -3
finish
