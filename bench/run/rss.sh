#!/usr/bin/env bash
# bench/run/rss.sh: peak RSS of `polite run` for growing inputs (10k, 100k,
# 1M lines) against a local nginx serving a static file with no limit, so
# the input streams as fast as the engine goes (--rate none: unpaced, as
# before the learned rate became the default). Not a test.
#   bench/run/rss.sh [POLITE_BINARY] [SIZES...]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
POLITE=${1:-$HERE/../../build/polite}
shift || true
SIZES=${*:-10000 100000 1000000}
T=$(mktemp -d /tmp/polite-bench-rss.XXXXXX)
PIDS=()
# shellcheck source=nginx.sh
. "$HERE/nginx.sh"
trap bench_cleanup EXIT
mkdir -p "$T/ng/www"
echo ok >"$T/ng/www/ok.txt"
for _ in $(seq 20); do
  PORT=$((20000 + RANDOM % 30000))
  bench_nginx_conf <<CONF
  access_log off;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$PORT;
    location / { root $T/ng/www; try_files /ok.txt =404; }
  }
CONF
  started=
  bench_nginx_start && { started=1; break; }
done
[ -n "${started:-}" ] || { echo "rss: nginx did not start:" >&2; cat "$T/ng/stderr" >&2; exit 1; }
echo "| input lines | wall time | requests/s | peak RSS |"
echo "|---:|---:|---:|---:|"
for n in $SIZES; do
  awk -v n="$n" -v p="$PORT" 'BEGIN { for (i = 1; i <= n; i++) printf "http://127.0.0.1:%d/item/%d\n", p, i }' >"$T/in.txt"
  s=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$T/rss" "$POLITE" run -q --no-progress --rate none --concurrency 16 \
    --max-attempts 1 --out /dev/null "$T/in.txt"
  e=$(date +%s.%N)
  w=$(echo "$e - $s" | bc)
  printf '| %d | %.1f s | %.0f | %.1f MB |\n' "$n" "$w" "$(echo "$n / $w" | bc -l)" \
    "$(echo "$(cat "$T/rss") / 1024" | bc -l)"
done
