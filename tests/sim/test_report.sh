#!/usr/bin/env bash
# ctest sim/report: docs/learned-rate.md is what `make sim` renders from a
# fresh run of the zoo (deterministic: the fake clock and every random draw
# are seeded), so the committed report cannot drift from the code.
#   test_report.sh POLITE_SIM SOURCE_DIR
set -u
SIM=$1 SRC=$2
T=$(mktemp -d /tmp/polite-sim-report.XXXXXX)
trap 'rm -rf "$T"' EXIT
"$SIM" --out "$T" >/dev/null || { echo "polite_sim failed"; exit 1; }
for s in 2 3 4 5; do # the Makefile's SIM_SEEDS
  "$SIM" --seed "$s" --out "$T/seed$s" >/dev/null || { echo "polite_sim --seed $s failed"; exit 1; }
done
python3 "$SRC/tests/sim/render.py" "$T" "$T/learned-rate.md" || exit 1
if ! cmp -s "$T/learned-rate.md" "$SRC/docs/learned-rate.md"; then
  diff -u "$SRC/docs/learned-rate.md" "$T/learned-rate.md" | head -40
  echo "not ok: docs/learned-rate.md is stale; run 'make sim' and commit it"
  exit 1
fi
echo "ok: docs/learned-rate.md matches a fresh run"
