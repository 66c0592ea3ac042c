#!/usr/bin/env bash
# scripts/fuzz_one.sh BUILD SECONDS TARGET: one bounded libFuzzer run of
# BUILD/TARGET (make fuzz runs JOBS of these at once), seeded from
# tests/fuzz/corpus/TARGET and the directories tests/fuzz/TARGET.seeds lists.
# On a finding prints the run's last 40 lines and fails.
set -eu
build=$1 secs=$2 n=$3
mkdir -p "$build/corpus/$n"
seeds=
[ -d "tests/fuzz/corpus/$n" ] && seeds="tests/fuzz/corpus/$n"
[ -f "tests/fuzz/$n.seeds" ] && seeds="$seeds $(cat "tests/fuzz/$n.seeds")"
echo "fuzz: $n for ${secs}s"
# shellcheck disable=SC2086 # the seed directories are words
if ! "$build/$n" -max_total_time="$secs" -max_len=4096 -print_final_stats=0 \
  "$build/corpus/$n" $seeds >"$build/$n.log" 2>&1; then
  echo "fuzz: $n found something:"
  tail -40 "$build/$n.log"
  exit 1
fi
