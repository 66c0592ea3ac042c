#!/usr/bin/env bash
# bench/proxy/instr.sh: user-space instructions per proxied request, nginx proxy_pass against polite proxy
# builds, counted by callgrind (valgrind). Unlike task-clock (bench/proxy/cpu.sh) the count does not move with
# the load of a shared machine, so a change of a few percent in the proxy's own work shows in one run. It
# counts user space only: the system calls (the same count per request as nginx's, see cpu.sh) and the
# kernel's TCP work are not in it.
#
# Usage: [KIND=gateway] bench/proxy/instr.sh [N] [POLITE_BINARY...]
#   N               requests per client (default 500); 4 keep-alive clients (Python http.client, each with
#                   User-Agent, Accept and an Authorization header, as an SDK sends)
#   POLITE_BINARY   one or more polite builds side by side (default build/polite), e.g. before and after
#   KIND=gateway    measures `polite gateway` (--rate none, the attempt log on, as users run it; GW_LOG=none
#                   turns it off) instead of `polite proxy` (--log none): net/ is shared by both
#   CG_KEEP=DIR     keeps each run's callgrind file there, for callgrind_annotate
#
# Each proxy runs under callgrind in front of the same nginx upstream (a small fixed body), twice: 4 x N
# requests and 4 x N/5, after 10 of warm-up; the difference per request is shown. Prints one table.
set -euo pipefail
N=${1:-500}
shift || true
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || BINS=(build/polite)
for t in valgrind callgrind_control callgrind_annotate nginx python3; do
  command -v "$t" >/dev/null || { echo "$t is not installed (apt-get install valgrind nginx)" >&2; exit 2; }
done
# shellcheck source=bench/proxy/procs.sh
. "$(dirname "$0")/procs.sh"

# The client (procs.sh): 4 keep-alive threads, each with User-Agent, Accept and Authorization.
write_client "$tmp/client.py"

# The upstream nginx (started) and nginx proxy_pass's configuration in $tmp/ng (procs.sh); sets UP and NG.
nginx_upstream_and_proxy

# start_nginx OUT / start_polite BIN OUT: a proxy under callgrind; sets ADDR and PID.
start_nginx() {
  valgrind --tool=callgrind --callgrind-out-file="$1" nginx -c "$tmp/ng/nginx.conf" -p "$tmp/ng" 2>>"$tmp/err" &
  PID=$!
  ADDR=127.0.0.1:$NG
}
KIND=${KIND:-proxy}
case $KIND in
  proxy) ARGS=(proxy --log none) ;;
  gateway)
    ARGS=(gateway --rate none --quiet)
    [ "${GW_LOG:-on}" = none ] || ARGS+=(--log "$tmp/gw.log")
    ;;
  *) echo "KIND is proxy or gateway" >&2; exit 2 ;;
esac
start_polite() {
  rm -f "$tmp/ready" "$tmp/gw.log"
  valgrind --tool=callgrind --callgrind-out-file="$2" "$1" "${ARGS[@]}" --listen 127.0.0.1:0 \
    --ready-file "$tmp/ready" --upstream "http://127.0.0.1:$UP" 2>>"$tmp/err" &
  PID=$!
  for _ in $(seq 200); do [ -s "$tmp/ready" ] && break; sleep 0.1; done
  ADDR=$(cat "$tmp/ready")
}

# total START... N: the instructions of a whole run (start, 10 requests of warm-up, 4 x N, SIGTERM). Zeroing
# the counters with callgrind_control is not used: a process asleep in epoll_wait takes the command late.
total() {
  local n=${*: -1} out=$tmp/cg.$RANDOM
  "${@:1:$#-1}" "$out"
  for _ in $(seq 100); do python3 "$tmp/client.py" "$ADDR" 10 1 && break; sleep 0.2; done
  [ "$n" -gt 0 ] && { python3 "$tmp/client.py" "$ADDR" "$n" 4 || echo "bench: requests failed" >&2; }
  kill -TERM "$PID"
  wait "$PID" 2>/dev/null || true
  callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
  [ -z "${CG_KEEP:-}" ] || cp "$out" "$CG_KEEP/callgrind.$KIND.$n.$(basename "$(dirname "$(dirname "$(realpath "${2:-x}" 2>/dev/null || echo x)")")")"
}
# per_request START...: the difference of a run of 4 x N requests and one of 4 x N/5, per request: what
# starting, warming up and stopping cost cancels out.
per_request() {
  local a b small=$((N / 5))
  a=$(total "$@" "$small")
  b=$(total "$@" "$N")
  echo $(((b - a) / (4 * (N - small))))
}

declare -A IR
IR[nginx]=$(per_request start_nginx)
i=0
for b in "${BINS[@]}"; do
  i=$((i + 1))
  IR[p$i]=$(per_request start_polite "$b")
done

printf '\n%-40s %14s %10s\n' "proxy" "instr / req" "/ nginx"
printf '%-40s %14s %9.2fx\n' "nginx proxy_pass" "${IR[nginx]}" 1
i=0
for b in "${BINS[@]}"; do
  i=$((i + 1))
  printf '%-40s %14s %9.2fx\n' "polite $KIND $(tail -c 27 <<<"$b")" "${IR[p$i]}" \
    "$(awk -v a="${IR[p$i]}" -v b="${IR[nginx]}" 'BEGIN {print a / b}')"
done
echo
echo "user-space instructions (callgrind Ir) per request, 4 clients x $N keep-alive GETs (less a run of"
echo "4 x $((N / 5))); the kernel's share (system calls, TCP) is not counted: bench/proxy/cpu.sh measures the"
echo "whole CPU."
