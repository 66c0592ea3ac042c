#!/usr/bin/env bash
# bench/micro: ns per call of polite's Retry-After parser, header reader,
# decision, GCRA and diagnosis, side by side with libcurl's curl_getdate(),
# glibc strptime()+timegm(), urllib3's Retry.parse_retry_after and
# email.utils.parsedate_to_datetime on the same inputs; then what each of
# them makes of tricky Retry-After values. A benchmark, not a test: it
# prints markdown tables and never fails on a slow machine.
# Usage: bench/micro/run.sh [BUILD_DIR]   (default: build-bench, a Release
# build made here; pass an existing Release build to skip that)
# Env: PYTHON (default python3), PB_DEBUG=1 (libcurl verbose for the
# CURLINFO_RETRY_AFTER column).
set -euo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$src/build-bench}"
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
if [ ! -f "$build/libpolite.a" ]; then
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j2 --target polite_static >/dev/null
fi
tmp="$(mktemp -d /tmp/polite-bench-micro.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

# The pkg-config output is a list of flags: split on purpose.
# shellcheck disable=SC2046
cc -O2 -std=gnu11 -Wall -Wextra -Wshadow -I"$src/include" \
  "$src/bench/micro/parse_bench.c" "$build/libpolite.a" \
  $(pkg-config --libs libcurl jansson hiredis sqlite3) -lpthread -lm \
  -o "$tmp/parse_bench"

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(curl-config --version), $(ldd --version | head -1)"
"$tmp/parse_bench" bench >"$tmp/bench.tsv"
"$tmp/parse_bench" correct >"$tmp/correct.tsv"
"${PYTHON:-python3}" "$src/bench/micro/py_peers.py" "$tmp/bench.tsv" "$tmp/correct.tsv"
