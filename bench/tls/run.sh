#!/usr/bin/env bash
# bench/tls: what a certificate that does not verify costs each client, side
# by side in one run: N requests to an HTTPS server (openssl s_server) whose
# self-signed certificate the clients do not trust, each client allowed 5
# attempts. Columns: the TLS handshakes the server saw refused (its own
# log, not the client's word), wall time, CPU per request (perf task-clock
# of the client's whole process tree; getrusage when perf is not usable),
# and how the requests ended. A benchmark, not a test: it prints numbers and
# never fails on a slow machine.
# Usage: bench/tls/run.sh [POLITE] [OLD_POLITE] [N]
#   POLITE      the binary to measure (default build/polite)
#   OLD_POLITE  another build to put beside it, e.g. one from before
#               tls_error (default: none)
#   N           requests per client (default 20)
set -uo pipefail
src="$(cd "$(dirname "$0")/../.." && pwd)"
P="${1:-$src/build/polite}"
OLD="${2:-}"
N="${3:-20}"
tmp="$(mktemp -d /tmp/polite-bench-tls.XXXXXX)"
spid=""
cleanup() {
  { [ -n "$spid" ] && kill "$spid" && wait "$spid"; } 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
unset CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$tmp/ss.key" -out "$tmp/ss.pem" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
openssl s_server -accept "127.0.0.1:$port" -cert "$tmp/ss.pem" \
  -key "$tmp/ss.key" -www >"$tmp/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.05
done
for i in $(seq "$N"); do echo "https://127.0.0.1:$port/r$i"; done >"$tmp/urls"

cat >"$tmp/requests_client.py" <<'EOF'
# Python requests with urllib3's Retry: 4 retries (5 attempts), backoff 0.5.
import sys, collections, requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry
s = requests.Session()
s.mount("https://", HTTPAdapter(max_retries=Retry(total=4, backoff_factor=0.5)))
ends = collections.Counter()
for url in open(sys.argv[1]).read().split():
    try:
        ends[str(s.get(url, timeout=10).status_code)] += 1
    except requests.exceptions.SSLError:
        ends["SSLError"] += 1
    except Exception as e:
        ends[type(e).__name__] += 1
print(" ".join(f"{k} {v}" for k, v in sorted(ends.items())))
EOF

perf_ok=0
perf stat -e task-clock -x, -o "$tmp/p" true 2>/dev/null && perf_ok=1

# measure LABEL CMD...: one row of the table.
measure() {
  local label=$1
  shift
  local before after t0 t1 cpu ends
  before=$(grep -c alert "$tmp/server.log")
  t0=$(date +%s.%N)
  if [ "$perf_ok" = 1 ]; then
    perf stat -e task-clock -x, -o "$tmp/perf" "$@" >"$tmp/out" 2>"$tmp/err"
    cpu=$(awk -F, '/task-clock/ {print $1 / 1000}' "$tmp/perf")
  else
    /usr/bin/time -f '%U %S' -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err"
    cpu=$(awk '{print $1 + $2}' "$tmp/time")
  fi
  t1=$(date +%s.%N)
  sleep 0.2 # the server logs the last alert after the client has gone
  after=$(grep -c alert "$tmp/server.log")
  case $label in
  polite*) ends=$(jq -r .outcome "$tmp/out" | sort | uniq -c | awk '{printf "%s %s ", $2, $1}') ;;
  curl*) ends="exit $(cat "$tmp/rc")" ;;
  *) ends=$(cat "$tmp/out") ;;
  esac
  printf '| %s | %d | %d | %.2f | %.4f | %s|\n' "$label" "$N" \
    $((after - before)) "$(echo "$t1 - $t0" | bc)" "$(echo "$cpu / $N" | bc -l)" "$ends"
}
# curl --retry 4 over the URLs, 4 at a time; its exit status in rc.
{
  printf 'curl -s --retry 4 --parallel --parallel-max 4'
  sed 's|^| -o /dev/null |' "$tmp/urls" | tr -d '\n'
  printf '\necho $? >%s/rc\n' "$tmp"
} >"$tmp/curl_all.sh"

echo "bench/tls: $N requests per client to a self-signed certificate, 5 attempts allowed;"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| client | requests | handshakes refused (server log) | wall s | CPU s / request | ended |"
echo "|---|---:|---:|---:|---:|---|"
measure "polite run --max-attempts 5" "$P" run --no-progress -q --max-attempts 5 --concurrency 4 "$tmp/urls"
measure "polite run --max-attempts 5 --rate none" "$P" run --no-progress -q --max-attempts 5 --concurrency 4 --rate none "$tmp/urls"
[ -n "$OLD" ] && measure "polite run --max-attempts 5 ($OLD)" "$OLD" run --no-progress -q --max-attempts 5 --concurrency 4 "$tmp/urls"
measure "curl --retry 4 --parallel-max 4" bash "$tmp/curl_all.sh"
measure "python requests, Retry(total=4)" python3 "$tmp/requests_client.py" "$tmp/urls"
