#!/usr/bin/env bash
# bench/adaptive/ab.sh: two polite binaries (say main's and a branch's) run
# alternately through bench/adaptive/bench.sh --only-polite, ROUNDS rounds
# (A B A B ...), so that a noisy machine's load falls on both alike; prints
# one Markdown table: per row (nginx limit_req 40 r/s burst 1 with 1 and 2
# processes, polite proxy 10/s with RateLimit headers with 1 and 2), each
# run's wall / floor and 429s, for A beside B, and the CPU each binary's
# `polite run` processes spent per request (perf task-clock, '-' without
# perf). Not a
# test: it never fails on a slow machine.
#   bench/adaptive/ab.sh A_BINARY B_BINARY [ROUNDS]   (default 2)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
A=$1 B=$2 ROUNDS=${3:-2}
tmp=$(mktemp -d /tmp/polite-bench-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
rows=("nginx, 1 process" "nginx, 2 processes" "headers, 1 process" "headers, 2 processes")

# A wrapper per binary that appends each `polite run`'s task-clock to a
# file. Not `polite proxy` (the server of the headers rows): bench.sh stops
# it with a signal, which perf stat would not pass on.
wrap() { # name binary
  cat >"$tmp/$1.sh" <<EOF
#!/usr/bin/env bash
if [ "\$1" = run ] && perf stat -x, -e task-clock -o "$tmp/$1.perf.\$\$" true 2>/dev/null; then
  exec perf stat -x, -e task-clock -o "$tmp/$1.perf.\$\$" "$2" "\$@"
fi
exec "$2" "\$@"
EOF
  chmod +x "$tmp/$1.sh"
}
wrap A "$A"
wrap B "$B"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "A = $A"
echo "B = $B"
for r in $(seq "$ROUNDS"); do
  for w in A B; do
    # The four polite rows of bench.sh, in order: wall / floor and 429s.
    bash "$HERE/bench.sh" --only-polite "$tmp/$w.sh" 2>/dev/null |
      awk -F'|' '/^\| (2 x )?polite run/ {gsub(/ /, "", $4); gsub(/ /, "", $5); print $4, $5}' \
        >"$tmp/$w.$r"
  done
done
cpu() { # name: ms of task-clock over every process, per request (600 + 600 + 300 + 300 per round)
  awk -F, -v n=$((1800 * ROUNDS)) '/task-clock/ {s += $1} END {if (s > 0) printf "%.0f us", s * 1000 / n; else print "-"}' "$tmp/$1".perf.* 2>/dev/null || echo -
}
echo
echo "| row | A: wall / floor (429s), each round | B: wall / floor (429s), each round |"
echo "|---|---|---|"
for i in 0 1 2 3; do
  a='' b=''
  for r in $(seq "$ROUNDS"); do
    a="$a $(sed -n "$((i + 1))p" "$tmp/A.$r" | awk '{printf "%s (%s)", $1, $2}')"
    b="$b $(sed -n "$((i + 1))p" "$tmp/B.$r" | awk '{printf "%s (%s)", $1, $2}')"
  done
  echo "| ${rows[$i]} |$a |$b |"
done
echo "| CPU per request, every polite run process | $(cpu A) | $(cpu B) |"
