#!/usr/bin/env bash
# bench/proxy/cpu.sh: CPU per proxied request and requests/s, polite proxy against nginx proxy_pass, each
# proxy in its own process apart from the upstream (issue 20's target: polite's CPU per request <= 1.1 x
# nginx's and its requests/s >= 0.9 x nginx's in the same run).
#
# Usage: bench/proxy/cpu.sh [SECONDS] [POLITE_BINARY...]
#   SECONDS         wrk duration per target (default 10)
#   POLITE_BINARY   one or more polite builds side by side (default build/polite), e.g. before and after
#
# The upstream is an nginx (one worker) serving a small fixed body; nginx proxy_pass runs as a second nginx
# process (one worker, upstream keepalive, no access log) and each polite as `polite proxy --upstream`
# (--log none, as nginx has access_log off). Per target: one wrk run (2 threads, 64 connections, keep-alive) while
# `perf stat -e task-clock` counts the proxy process alone for the same time (instruction counters are
# not on every VM). CPU per request = task-clock / requests answered. Rounds alternate the targets
# (ROUNDS, default 3) and the median round is shown, so that noise from a shared machine hits all alike.
set -euo pipefail
SECS=${1:-10}
shift || true
BINS=("$@")
[ ${#BINS[@]} -gt 0 ] || BINS=(build/polite)
ROUNDS=${ROUNDS:-3}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 2; }
command -v nginx >/dev/null || { echo "nginx is not installed" >&2; exit 2; }
command -v perf >/dev/null || { echo "perf is not installed (linux-perf)" >&2; exit 2; }
# shellcheck source=bench/proxy/procs.sh
. "$(dirname "$0")/procs.sh"

declare -A URL PID # each target's URL and the pid perf counts
# nginx_run NAME SERVERS: one nginx process of its own (own prefix, pid, config), started in the background.
nginx_run() {
  local d=$tmp/$1
  mkdir -p "$d"
  cat >"$d/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $d/nginx.pid; error_log $d/error.log warn;
events { worker_connections 4096; }
http {
  access_log off; keepalive_requests 1000000;
  client_body_temp_path $d/b; proxy_temp_path $d/p; fastcgi_temp_path $d/f; uwsgi_temp_path $d/u; scgi_temp_path $d/s;
$2
}
CONF
  nginx -c "$d/nginx.conf" -p "$d" &
  pids+=($!)
  PID[$1]=$!
}

UP=$(free_port); NG=$(free_port)
nginx_run upstream "  server { listen 127.0.0.1:$UP;
    location / { default_type application/json; return 200 '{\"ok\":true,\"data\":\"0123456789abcdef0123456789abcdef\"}'; } }"
nginx_run nginx "  upstream backend { server 127.0.0.1:$UP; keepalive 128; keepalive_requests 1000000; }
  server { listen 127.0.0.1:$NG;
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
targets=(nginx)
URL[nginx]="http://127.0.0.1:$NG/"
i=0
for b in "${BINS[@]}"; do
  i=$((i + 1))
  # An older build without --log none logs to /dev/null (and formats every line).
  nolog=none; "$b" proxy --help 2>/dev/null | grep -q 'none: no request log' || nolog=/dev/null
  "$b" proxy --listen 127.0.0.1:0 --ready-file "$tmp/p$i.ready" --log "$nolog" --upstream "http://127.0.0.1:$UP" \
    2>"$tmp/p$i.err" &
  pids+=($!)
  PID[polite$i]=$!
  for _ in $(seq 100); do [ -s "$tmp/p$i.ready" ] && break; sleep 0.05; done
  URL[polite$i]="http://$(cat "$tmp/p$i.ready")/"
  targets+=("polite$i")
done
sleep 0.3
for t in "${targets[@]}"; do
  curl -sf "${URL[$t]}" >/dev/null || { echo "$t is not answering" >&2; exit 1; }
  wrk -t2 -c16 -d2s "${URL[$t]}" >/dev/null 2>&1 # warm up
done

# one TARGET ROUND: wrk and perf stat of the target's process over the same seconds.
one() {
  local t=$1 r=$2
  perf stat -e task-clock -x, -p "${PID[$t]}" -o "$tmp/$t-$r.perf" -- sleep "$SECS" &
  local pp=$!
  wrk -t2 -c64 -d"${SECS}s" "${URL[$t]}" >"$tmp/$t-$r.wrk" 2>&1
  wait $pp
}
for r in $(seq "$ROUNDS"); do
  for t in "${targets[@]}"; do one "$t" "$r"; done
done

python3 - "$tmp" "$ROUNDS" "${targets[@]}" -- "${BINS[@]}" <<'PY'
import re, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
rest = sys.argv[3:]
sep = rest.index("--")
targets, bins = rest[:sep], rest[sep + 1:]
def wrk(p):
    t = open(p).read()
    reqs = int(re.search(r"(\d+) requests in", t).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    return reqs, rps, int(bad.group(1)) if bad else 0
def cpu_ms(p):
    for line in open(p):
        f = line.strip().split(",")
        if len(f) > 2 and f[2] == "task-clock":
            return float(f[0])
    raise SystemExit("no task-clock in " + p)
rows = {}
for t in targets:
    runs = []
    for r in range(1, rounds + 1):
        reqs, rps, bad = wrk("%s/%s-%d.wrk" % (tmp, t, r))
        ms = cpu_ms("%s/%s-%d.perf" % (tmp, t, r))
        runs.append((ms * 1000.0 / reqs, rps, ms, reqs, bad))
    runs.sort()
    rows[t] = runs[len(runs) // 2]  # the median round by CPU per request
    rows[t + "_all"] = runs
n_us, n_rps = rows["nginx"][0], rows["nginx"][1]
print("\n%-9s %-28s %10s %12s %14s %10s %10s" % ("target", "binary", "req/s", "CPU ms", "CPU us/req", "CPU/nginx", "rps/nginx"))
for t in targets:
    us, rps, ms, reqs, bad = rows[t]
    name = "nginx proxy_pass" if t == "nginx" else bins[int(t[6:]) - 1]
    print("%-9s %-28s %10.0f %12.1f %14.2f %9.2fx %9.2fx%s" % (t, name[-28:], rps, ms, us, us / n_us, rps / n_rps,
          "  (%d non-2xx)" % bad if bad else ""))
print("\nevery round (CPU us/req):")
for t in targets:
    print("  %-9s %s" % (t, " ".join("%.2f" % x[0] for x in rows[t + "_all"])))
print("\ntargets: CPU/nginx <= 1.10, rps/nginx >= 0.90 (issue 20); %d rounds of %s; machine load: %s"
      % (rounds, "wrk -t2 -c64", open("/proc/loadavg").read().split()[0]))
PY
