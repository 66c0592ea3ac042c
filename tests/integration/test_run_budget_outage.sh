#!/usr/bin/env bash
# A budget outage is waited out, not fatal (issue #21 item 3): real
# `polite run` processes on a real redis-server that is stopped (SIGSTOP)
# in the middle of the run.
#  - Stopped for 10 s: the run pauses (nothing is sent while Redis is gone,
#    the messages say so), then finishes: every id ok exactly once, 0
#    answers recorded as `cancelled`.
#  - Stopped for longer than --budget-outage: exit 1 with a message that
#    says why; the requests in flight finished as what they were, the
#    others were not sent; a plain --resume sends the rest, nothing twice.
# The two parts mostly wait, so they run side by side, each on a
# redis-server of its own (one part's SIGSTOP must not be the other's).
. "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || { echo "redis-server not installed"; exit 1; }
# own_redis PART: a redis-server of the part's own, in $TMP/PART (port,
# rpid, R); the script's exit trap stops it whatever the part did.
own_redis() {
  tmp=$TMP/$1
  mkdir -p "$tmp"
  . "$IT/budget/redis.sh"
  echo "$rpid" >"$tmp/redis.pid"
  R="redis://127.0.0.1:$port"
}
at_exit() {
  local f p
  for f in "$TMP"/[ab]/redis.pid; do
    p=$(cat "$f" 2>/dev/null) && { kill -CONT "$p"; kill -9 "$p"; } 2>/dev/null
  done
}
on_exit at_exit
start_pyserver
B=http://127.0.0.1:$PY_PORT
# twice PREFIX: paths under PREFIX the server received more than once.
twice() {
  grep -o "\"path\": \"$1[^\"]*\"" "$PY_REC" | sort | uniq -d | wc -l
}
mk_input() { # NAME N
  for i in $(seq 1 "$2"); do
    printf '{"id":"%s%d","url":"%s/slow?ms=200&n=%s%d"}\n' "$1" "$i" "$B" "$1" "$i"
  done >"$TMP/$1.jsonl"
}

# --- 1. Redis stopped for 10 s: waited out ------------------------------------
part_a() {
  own_redis a
  mk_input a 60
  "$POLITE" run --no-progress --rate 20/s --concurrency 4 \
    --budget "$R/a?timeout=200ms" --journal "$TMP/a.journal" --out "$TMP/a.out" \
    --summary-json "$TMP/a.sum" "$TMP/a.jsonl" 2>"$TMP/a.err" &
  pid=$!
  sleep 1.5
  kill -STOP "$rpid"
  t_stop=$(now)
  sleep 10
  t_cont=$(now)
  kill -CONT "$rpid"
  wait $pid
  check_eq "Redis stopped for 10 s: the run finishes, exit 0" "$?" 0
  check_eq "... every id ok exactly once" \
    "$(jq -r 'select(.outcome=="ok") | .id' "$TMP/a.out" | sort -u | wc -l) $(wc -l <"$TMP/a.out")" "60 60"
  check_eq "... 0 answers recorded as cancelled" \
    "$(jq -r 'select(.outcome=="cancelled") | .id' "$TMP/a.out" | wc -l)" 0
  check_eq "... nothing sent while Redis was gone" \
    "$(sent_between "$(calc "$t_stop + 0.5")" "$t_cont" "/slow?ms=200&n=a")" 0
  check "... but sent before and after it" \
    [ "$(sent_between 0 "$t_stop" "/slow?ms=200&n=a")" -gt 0 ]
  check_grep "... the message says nothing is sent and for how long it asks" \
    "nothing is sent while the budget cannot be used; asking again .* for up to 60 s \(--budget-outage\)" "$TMP/a.err"
  check_grep "... and names the budget and the cause" \
    "budget 'redis://127.0.0.1:$port/a\?timeout=200ms': .*(no answer within the timeout of 200 ms|cannot connect)" "$TMP/a.err"
  check_grep "... and when it is back" "the budget answers again; sending" "$TMP/a.err"
  check_grep "... the summary counts the outage" \
    "budget outages: [0-9]+, (9|1[0-9])\.[0-9] s in all" "$TMP/a.err"
  check_eq "... no id was sent twice" "$(twice "/slow?ms=200&n=a")" 0
}

# --- 2. longer than --budget-outage: stop, then resume -------------------------
# The stopped run cannot give its slots back (Redis is gone when it ends),
# so the resume waits for their leases: 5 s here rather than the default
# 30 s, which only made the test slower.
part_b() {
  own_redis b
  mk_input b 60
  "$POLITE" run --no-progress -q --rate 20/s --concurrency 4 --budget-outage 3s \
    --budget "$R/b?timeout=200ms&lease=5s" --journal "$TMP/b.journal" --out "$TMP/b.out" \
    "$TMP/b.jsonl" 2>"$TMP/b.err" &
  pid=$!
  sleep 1.5
  kill -STOP "$rpid"
  t_stop=$(now)
  wait $pid
  st=$?
  t_end=$(now)
  kill -CONT "$rpid"
  check_eq "Redis gone longer than --budget-outage 3s: exit 1" "$st" 1
  check "... after about 3 s (took $(calc "$t_end - $t_stop") s)" \
    python3 -c "import sys; sys.exit(not 2.8 <= $t_end - $t_stop <= 6)"
  check_grep "... saying why and what happened" \
    "the budget could not be used for 3\.[0-9] s \(the limit is 3\.0 s\): .*stopping: requests in flight finish, the others were not sent" "$TMP/b.err"
  check_eq "... the requests in flight were not cut (none cancelled after an attempt)" \
    "$(jq -r 'select(.outcome=="cancelled" and .attempts > 0) | .id' "$TMP/b.out" | wc -l)" 0
  ncan=$(jq -r 'select(.outcome=="cancelled") | .id' "$TMP/b.out" | wc -l)
  check "... the others are cancelled, never sent ($ncan)" [ "$ncan" -gt 0 ]
  "$POLITE" run --no-progress -q --rate 20/s --concurrency 4 \
    --budget "$R/b?timeout=200ms&lease=5s" --journal "$TMP/b.journal" --out "$TMP/b.out" \
    --resume "$TMP/b.jsonl" 2>"$TMP/b2.err"
  check_eq "a plain --resume exits 0" "$?" 0
  check_eq "... every id ok exactly once" \
    "$(jq -r 'select(.outcome=="ok") | .id' "$TMP/b.out" | sort -u | wc -l) $(wc -l <"$TMP/b.out")" "60 60"
  check_eq "... and nothing was sent twice" "$(twice "/slow?ms=200&n=b")" 0
}

side_by_side a part_a
side_by_side b part_b
side_by_side_wait
finish
