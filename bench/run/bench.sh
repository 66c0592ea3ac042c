#!/usr/bin/env bash
# bench/run: N GETs against nginx limit_req (RATE r/s, burst 1, 429 with
# Retry-After: 1) in front of a 100 ms upstream: polite run side by side with
# curl --parallel --retry, curl --rate, and Python requests + urllib3 Retry
# with a thread pool. Prints a markdown table. Not a test.
#   bench/run/bench.sh [POLITE_BINARY] [N] [RATE]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
POLITE=${1:-$HERE/../../build/polite}
N=${2:-600}
RATE=${3:-40}
CONC=8
T=$(mktemp -d /tmp/polite-bench-run.XXXXXX)
PIDS=()
# shellcheck source=nginx.sh
. "$HERE/nginx.sh"
trap bench_cleanup EXIT

python3 "$HERE/upstream.py" "$T/up.port" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$T/up.port" ] && break; sleep 0.05; done
UP=$(cat "$T/up.port")

for _ in $(seq 20); do
  PORT=$((20000 + RANDOM % 30000))
  bench_nginx_conf <<CONF
  log_format bench '\$msec \$request_time \$status \$request_uri';
  access_log $T/ng/logs/access.log bench;
  upstream up { server 127.0.0.1:$UP; keepalive 64; }
  limit_req_zone \$binary_remote_addr zone=z:1m rate=${RATE}r/s;
  server {
    listen 127.0.0.1:$PORT;
    location / {
      limit_req zone=z burst=1 nodelay;
      limit_req_status 429;
      error_page 429 = @limited;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass http://up;
    }
    location @limited {
      add_header Retry-After 1 always;
      return 429 "limited\n";
    }
  }
CONF
  started=
  bench_nginx_start && { started=1; break; }
done
[ -n "${started:-}" ] || { echo "bench: nginx did not start:" >&2; cat "$T/ng/stderr" "$T/ng/logs/error.log" >&2; exit 1; }
B=http://127.0.0.1:$PORT
LOG=$T/ng/logs/access.log

urls() { for i in $(seq 1 "$N"); do echo "$B/item/$i?tool=$1"; done; }
now() { date +%s.%N; }
row() { # name start end ok
  read -r seen n429 early < <(python3 "$HERE/analyse.py" "$LOG" "$1")
  local wall
  wall=$(echo "$3 - $2" | bc)
  printf '| %s | %.1f s | %s | %s | %s | %s |\n' "$5" "$wall" "$n429" "$early" \
    "$((N - $4))" "$seen"
}

echo "N=$N GETs, nginx limit_req ${RATE} r/s burst 1 (Retry-After: 1 on 429), 100 ms upstream, concurrency/threads $CONC"
echo "ideal wall time N/rate = $(echo "scale=1; $N / $RATE" | bc) s"
echo
echo "| client | wall time | 429s | early requests | lost | requests sent |"
echo "|---|---:|---:|---:|---:|---:|"

sleep 1.1
urls polite >"$T/polite.txt"
s=$(now)
/usr/bin/time -f "%M" -o "$T/polite.rss" "$POLITE" run --no-progress --rate "$RATE/s" --concurrency $CONC \
  --summary-json "$T/polite.sum" "$T/polite.txt" >"$T/polite.out" 2>"$T/polite.err"
e=$(now)
ok=$(grep -c '"outcome":"ok"' "$T/polite.out")
row polite "$s" "$e" "$ok" "polite run --rate $RATE/s --concurrency $CONC"

sleep 2
urls cpar | sed 's/^/url = /' >"$T/cpar.cfg"
s=$(now)
curl -s --parallel --parallel-max $CONC --retry 5 -K "$T/cpar.cfg" -o /dev/null \
  -w '%{http_code}\n' >"$T/cpar.out" 2>/dev/null
e=$(now)
ok=$(grep -c '^200$' "$T/cpar.out")
row cpar "$s" "$e" "$ok" "curl --parallel --parallel-max $CONC --retry 5"

sleep 2
urls crate | sed 's/^/url = /' >"$T/crate.cfg"
s=$(now)
curl -s --rate "$RATE/s" --retry 5 -K "$T/crate.cfg" -o /dev/null \
  -w '%{http_code}\n' >"$T/crate.out" 2>/dev/null
e=$(now)
ok=$(grep -c '^200$' "$T/crate.out")
row crate "$s" "$e" "$ok" "curl --rate $RATE/s --retry 5 (sequential)"

sleep 2
urls py >"$T/py.txt"
s=$(now)
python3 "$HERE/py_client.py" "$T/py.txt" $CONC >"$T/py.out" 2>/dev/null
e=$(now)
ok=$(grep -c '^200$' "$T/py.out")
row py "$s" "$e" "$ok" "Python requests + urllib3 Retry(5), $CONC threads"

echo
jq -r '"polite: measured start rate \(.rate_measured*100|round/100)/s, start-interval error p50 \(.interval_error_p50_ms*1000|round/1000) ms, p99 \(.interval_error_p99_ms*1000|round/1000) ms, in flight mean \(.in_flight_mean*100|round/100) (Little: \(.littles_law_in_flight*100|round/100)), peak \(.in_flight_peak)"' "$T/polite.sum"
echo "polite peak RSS: $(cat "$T/polite.rss") KiB"
