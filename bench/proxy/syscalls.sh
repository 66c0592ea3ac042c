#!/usr/bin/env bash
# bench/proxy/syscalls.sh: system calls per proxied request, nginx proxy_pass against polite proxy builds,
# counted by strace -c -f on the proxy process alone. Like instr.sh's count it does not move with the load of a
# shared machine (apart from epoll_wait, which batches more when the proxy falls behind), so it tells whether the
# kernel's share of cpu.sh's CPU per request differs by design: reads, writes and wakeups per request.
#
# Usage: bench/proxy/syscalls.sh [N] [POLITE_BINARY...]
#   N               requests per client (default 500); 4 keep-alive clients (Python http.client, as in instr.sh)
#   POLITE_BINARY   one or more polite builds side by side (default build/polite)
#
# Prints one table: per target, the calls per request of each system call made at least 0.05 times a
# request, and their total. Start-up calls (a few hundred) are spread over 4 x N requests and show as 0.0x.
set -euo pipefail
N=${1:-500}
shift || true
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || BINS=(build/polite)
for t in strace nginx python3; do
  command -v "$t" >/dev/null || { echo "$t is not installed (apt-get install strace nginx)" >&2; exit 2; }
done
# shellcheck source=bench/proxy/procs.sh
. "$(dirname "$0")/procs.sh"

# The same client as instr.sh's (procs.sh), so that both measure the same requests.
write_client "$tmp/client.py"

# The upstream nginx (started) and nginx proxy_pass's configuration in $tmp/ng (procs.sh); sets UP and NG.
nginx_upstream_and_proxy

# count NAME ADDR-OR-READYFILE CMD...: the target under strace, 10 requests of warm-up and 4 x N, then
# SIGTERM; its strace summary goes to $tmp/NAME.strace.
count() {
  local name=$1 ready=$2 addr
  shift 2
  rm -f "$tmp/ready"
  strace -c -f -o "$tmp/$name.strace" "$@" 2>>"$tmp/err" &
  local sp=$!
  for _ in $(seq 100); do
    addr=$ready
    [ -f "$ready" ] && addr=$(cat "$ready")
    python3 "$tmp/client.py" "$addr" 10 1 2>/dev/null && break
    sleep 0.2
  done
  python3 "$tmp/client.py" "$addr" "$N" 4 || echo "bench: requests failed ($name)" >&2
  # strace's child is the target: stop it, and strace writes its summary.
  kill -TERM "$(pgrep -P "$sp" | head -1)" 2>/dev/null || kill -TERM "$sp"
  wait "$sp" 2>/dev/null || true
}

names=(nginx)
count nginx "127.0.0.1:$NG" nginx -c "$tmp/ng/nginx.conf" -p "$tmp/ng"
i=0
for b in "${BINS[@]}"; do
  i=$((i + 1))
  names+=("p$i")
  count "p$i" "$tmp/ready" "$b" proxy --listen 127.0.0.1:0 --ready-file "$tmp/ready" --log none \
    --upstream "http://127.0.0.1:$UP"
done

python3 - "$tmp" "$((4 * N + 10))" "${names[@]}" -- "${BINS[@]}" <<'PY'
import sys
tmp, reqs = sys.argv[1], int(sys.argv[2])
rest = sys.argv[3:]
names, bins = rest[:rest.index("--")], rest[rest.index("--") + 1:]
per = {}
for n in names:
    calls = {}
    for line in open("%s/%s.strace" % (tmp, n)):
        f = line.split()
        # "% time seconds usecs/call calls [errors] syscall"; the total line has no name.
        if len(f) >= 5 and f[0][0].isdigit() and f[-1] != "total":
            calls[f[-1]] = int(f[3])
    per[n] = {k: v / reqs for k, v in calls.items()}
shown = sorted({k for n in names for k, v in per[n].items() if v >= 0.05},
               key=lambda k: -max(per[n].get(k, 0) for n in names))
label = {"nginx": "nginx proxy_pass"}
for i, b in enumerate(bins):
    label["p%d" % (i + 1)] = "polite " + b[-24:]
print("\n%-16s" % "syscall / req" + "".join("%34s" % label[n] for n in names))
for k in shown:
    print("%-16s" % k + "".join("%34.2f" % per[n].get(k, 0) for n in names))
print("%-16s" % "total" + "".join("%34.2f" % sum(per[n].values()) for n in names))
print("\nstrace -c -f of the proxy process alone; 4 clients x %d keep-alive GETs (+10 of warm-up)" % ((reqs - 10) // 4))
PY
