#!/usr/bin/env bash
# The runs docs/learned-rate.md is rendered from, for `make sim` and ctest
# sim/report alike: the zoo (seed 1 and SEEDS), the held-out shapes (seed 1
# and SEEDS, tests/sim/heldout.c) and the zoo on the loaded machine's
# model (--net loaded), each into its own directory under OUT.
#   run_all.sh POLITE_SIM OUT [SEEDS...]
set -u
SIM=$1 OUT=$2
shift 2
SEEDS=${*:-2 3 4 5}
run() { # dir args...
  local d=$1
  shift
  "$SIM" --out "$d" "$@" >/dev/null || { echo "polite_sim $* failed" >&2; exit 1; }
}
run "$OUT"
run "$OUT/heldout" --heldout
run "$OUT/loaded" --net loaded
for s in $SEEDS; do
  run "$OUT/seed$s" --seed "$s"
  run "$OUT/heldout/seed$s" --heldout --seed "$s"
done
