# shellcheck shell=bash
# shellcheck disable=SC2154 # tmp is the sourcing test's (see below)
# Sourced by test_budget_file.sh and test_budget_redis.sh: two `polite run`
# processes share one budget against tests/integration/upstream.py.
# Needs: POLITE, tmp, ok, bad, pids. Usage: run_e2e URI_FOR_RATE URI_FOR_PAUSE
# Until the lead wires file:/redis:// into polite_budget_open, `polite run`
# refuses the URI and this prints "skip" (neither passed nor failed).
run_e2e() {
  local u_rate="$1" u_pause="$2" here_e2e
  here_e2e="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [ ! -x "${POLITE:-}" ]; then
    echo "skip - polite run: no binary (POLITE unset)"
    return 0
  fi
  local rec="$tmp/e2e.rec" pf="$tmp/e2e.port"
  : >"$rec"
  python3 "$here_e2e/upstream.py" "$pf" "$rec" &
  local spid=$!
  pids+=("$spid")
  for _ in $(seq 100); do [ -s "$pf" ] && break; sleep 0.05; done
  local B i
  B="http://127.0.0.1:$(cat "$pf")"
  for i in $(seq 15); do echo "$B/ok/a$i"; done >"$tmp/e2e.a"
  for i in $(seq 15); do echo "$B/ok/b$i"; done >"$tmp/e2e.b"
  "$POLITE" run --no-progress -q --rate 20/s --burst 1 --budget "$u_rate" \
    "$tmp/e2e.a" >"$tmp/e2e.oa" 2>"$tmp/e2e.ea" &
  local pa=$!
  "$POLITE" run --no-progress -q --rate 20/s --burst 1 --budget "$u_rate" \
    "$tmp/e2e.b" >"$tmp/e2e.ob" 2>"$tmp/e2e.eb"
  wait "$pa"
  if grep -q "not available" "$tmp/e2e.ea" "$tmp/e2e.eb"; then
    echo "skip - polite run --budget ${u_rate%%:*}: not wired into polite_budget_open yet"
    kill "$spid" 2>/dev/null
    return 0
  fi
  # The times are the upstream's (arrivals), not the admissions: one
  # request held up 50 ms or more on its way (a loaded machine) puts the
  # next 21 admissions in the 1 s window that starts at its arrival, so the
  # window may hold rate + burst + 1 = 22 (seen beside chromium at ctest
  # -j4). The admissions' own windows are contract.sh's (at most rate +
  # burst); this checks that two processes share 20/s, not 40/s.
  if python3 - "$rec" <<'PY'; then
import json, sys
t = sorted(json.loads(l)["t"] for l in open(sys.argv[1]) if l.strip())
n = len(t)
got = (n - 1) / (t[-1] - t[0]) if n > 1 else 0
w = max(sum(1 for y in t if x <= y < x + 1) for x in t) if t else 0
print(f"polite run x2: {n} requests at {got:.2f}/s (budget 20/s), busiest 1 s window {w}")
sys.exit(0 if n == 30 and abs(got - 20) <= 1.0 and w <= 22 else 1)
PY
    ok "two polite run processes share 20/s through ${u_rate%%:*} (not 40/s)"
  else
    bad "two polite run processes share the rate through $u_rate"
  fi
  # A 429 with Retry-After: 1 seen by one process pauses the other too.
  : >"$rec"
  { echo "$B/once429/p1"; for i in $(seq 5); do echo "$B/ok/c$i"; done; } >"$tmp/e2e.c"
  for i in $(seq 8); do echo "$B/ok/d$i"; done >"$tmp/e2e.d"
  "$POLITE" run --no-progress -q --rate 10/s --budget "$u_pause" \
    "$tmp/e2e.c" >"$tmp/e2e.oc" 2>&1 &
  pa=$!
  sleep 0.05
  "$POLITE" run --no-progress -q --rate 10/s --budget "$u_pause" \
    "$tmp/e2e.d" >"$tmp/e2e.od" 2>&1
  wait "$pa"
  if python3 - "$rec" <<'PY'; then
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t429 = min(r["t"] for r in recs if r["path"].startswith("/once429"))
inside = [r["path"] for r in recs if t429 + 0.05 < r["t"] < t429 + 0.95]
print(f"after the 429: {len(inside)} requests in the next 0.05-0.95 s {inside}")
sys.exit(0 if len(recs) == 15 and not inside else 1)
PY
    ok "a 429 seen by one polite run pauses the other (shared pause)"
  else
    bad "shared pause between two polite run processes"
  fi
  kill "$spid" 2>/dev/null
  wait "$spid" 2>/dev/null
  return 0
}
