#!/usr/bin/env bash
# The budget contract, written once (tests/tools/budget_contract.c) and run
# per backend: local, file:PATH and redis:// against a real redis-server on
# a free loopback port. Then `polite budget show|clear` on what it left.
. "$(dirname "$0")/lib.sh"
set -o pipefail
C="$POLITE_BUILD/tools/budget_contract"
W="$POLITE_BUILD/tools/budget_worker"
P="$POLITE"
[ -x "$C" ] || { echo "missing $C (build the tests)"; exit 1; }
command -v redis-server >/dev/null || { echo "redis-server not installed"; exit 1; }
tmp=$TMP
at_exit() {
  [ -n "$rpid" ] && kill -9 "$rpid" 2>/dev/null
  wait 2>/dev/null
}
on_exit at_exit

. "$(dirname "$0")/budget/redis.sh"

# 1. The same contract on every backend.
for uri in local "file:$tmp/c.budget" "redis://127.0.0.1:$port/contract"; do
  "$C" "$uri" >"$tmp/out" 2>&1
  rc=$?
  sed "s|^|  [$uri] |" "$tmp/out"
  n="$(grep -c '^ok' "$tmp/out")"
  if [ "$rc" = 0 ] && [ "$n" -ge 13 ]; then
    ok "contract holds on ${uri%%:*} ($n checks)"
  else
    bad "contract on $uri (exit $rc)"
  fi
done

# 2. polite budget show|clear on file: and redis://, with a worker holding
#    slots, a pause and a learned rate set.
for uri in "file:$tmp/s.budget" "redis://127.0.0.1:$port/show"; do
  "$W" "$uri" --rate 0 --concurrency 4 --slots 3 --count 1 --hold-forever \
    >"$tmp/w.out" 2>&1 &
  wpid=$!
  for _ in $(seq 100); do grep -q '^START' "$tmp/w.out" && break; sleep 0.05; done
  "$W" "$uri" --rate 0 --concurrency 4 --pause-ms 30000 --count 0 \
    >/dev/null 2>&1
  "$P" budget show "$uri" >"$tmp/show.txt" 2>&1
  src=$?
  "$P" budget show --json "$uri" >"$tmp/show.json" 2>&1
  if [ "$src" = 0 ] && grep -q "slots in use: 3" "$tmp/show.txt" &&
    jq -e '.slots_in_use == 3 and .pause_left_ms > 20000 and
           (.holders | length) == 1' "$tmp/show.json" >/dev/null; then
    ok "budget show ${uri%%:*}: pause, slots and holders ($(grep -c . "$tmp/show.txt") lines)"
  else
    bad "budget show $uri: $(cat "$tmp/show.txt" "$tmp/show.json")"
  fi
  "$P" budget clear "$uri" >"$tmp/clear.txt" 2>&1
  crc=$?
  "$P" budget show --json "$uri" >"$tmp/show2.json" 2>&1
  if [ "$crc" = 0 ] && jq -e '.pause_left_ms == 0 and .slots_in_use == 3' \
    "$tmp/show2.json" >/dev/null; then
    ok "budget clear ${uri%%:*}: the pause is gone, the slots stay"
  else
    bad "budget clear $uri: $(cat "$tmp/clear.txt" "$tmp/show2.json")"
  fi
  kill -9 "$wpid" 2>/dev/null
  wait "$wpid" 2>/dev/null
done

# 3. Errors: a missing file is not created, a password never printed.
if "$P" budget show "file:$tmp/none.budget" >"$tmp/e1" 2>&1; then
  bad "show of a missing file succeeded"
elif [ ! -e "$tmp/none.budget" ] && grep -q "none.budget" "$tmp/e1"; then
  ok "show of a missing file fails without creating it: $(head -1 "$tmp/e1")"
else
  bad "show of a missing file: $(cat "$tmp/e1")"
fi
if "$P" budget show "redis://u:SECRET/x@127.0.0.1:99999/n" >"$tmp/e2" 2>&1; then
  bad "a port of 99999 was accepted"
elif ! grep -q SECRET "$tmp/e2" && grep -q "port" "$tmp/e2"; then
  ok "a bad port is named and the password hidden: $(head -1 "$tmp/e2")"
else
  bad "port error: $(cat "$tmp/e2")"
fi
for u in "file:$tmp/p.budget?token=SEKRIT1&lease=1s" \
  "redis://127.0.0.1:$port/n?api_key=SEKRIT1"; do
  if "$P" budget show "$u" >"$tmp/e4" 2>&1; then
    bad "an unknown parameter was accepted: $u"
  elif ! grep -q SEKRIT1 "$tmp/e4" && grep -q "unknown parameter" "$tmp/e4"; then
    ok "an unknown parameter is named, its value never printed: $(head -1 "$tmp/e4")"
  else
    bad "unknown parameter: $(cat "$tmp/e4")"
  fi
done
"$P" budget show local >"$tmp/e3" 2>&1
if [ $? = 2 ]; then ok "show local is a usage error"; else bad "show local: $(cat "$tmp/e3")"; fi

finish
