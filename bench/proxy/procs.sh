# shellcheck shell=bash
# bench/proxy/procs.sh: what cpu.sh, instr.sh and syscalls.sh share (sourced, not run): the polite builds
# given are checked, a temporary directory, the processes to stop on exit, a free port, and (instr.sh,
# syscalls.sh) the upstream nginx and nginx proxy_pass's configuration. BINS is set by the caller.
for b in "${BINS[@]}"; do [ -x "$b" ] || { echo "no polite binary at $b" >&2; exit 2; }; done
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# nginx_conf DIR SERVERS: a one-process nginx configuration.
nginx_conf() {
  mkdir -p "$1"
  cat >"$1/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $1/nginx.pid; error_log $1/error.log warn;
events { worker_connections 4096; }
http {
  access_log off; keepalive_requests 1000000;
  client_body_temp_path $1/b; proxy_temp_path $1/p; fastcgi_temp_path $1/f; uwsgi_temp_path $1/u; scgi_temp_path $1/s;
$2
}
CONF
}

# nginx_upstream_and_proxy: starts the upstream (an nginx serving a small fixed JSON body on port UP) and writes
# nginx proxy_pass's configuration (port NG, upstream keepalive) to $tmp/ng, for the caller to start its own way.
nginx_upstream_and_proxy() {
  UP=$(free_port)
  nginx_conf "$tmp/up" "  server { listen 127.0.0.1:$UP;
    location / { default_type application/json; return 200 '{\"ok\":true,\"data\":\"0123456789abcdef0123456789abcdef\"}'; } }"
  nginx -c "$tmp/up/nginx.conf" -p "$tmp/up" &
  pids+=($!)
  NG=$(free_port)
  nginx_conf "$tmp/ng" "  upstream backend { server 127.0.0.1:$UP; keepalive 128; keepalive_requests 1000000; }
  server { listen 127.0.0.1:$NG;
    location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
}

# write_client FILE: the Python client of instr.sh and syscalls.sh: `python3 FILE HOST:PORT N T` sends N
# keep-alive GETs on each of T connections (User-Agent, Accept and an Authorization header, as an SDK sends)
# and exits 1 if any answer is not 200 or the connection fails.
write_client() {
  cat >"$1" <<'PY'
import http.client, sys, threading
host, port = sys.argv[1].rsplit(":", 1)
n, t = int(sys.argv[2]), int(sys.argv[3])
hdrs = {"User-Agent": "bench/1", "Accept": "application/json", "Authorization": "Bearer sk-bench"}
failed = []
def run():
    try:
        c = http.client.HTTPConnection(host, int(port))
        for _ in range(n):
            c.request("GET", "/v1/items?limit=10", headers=hdrs)
            r = c.getresponse()
            r.read()
            if r.status != 200:
                failed.append("status %d" % r.status)
                return
    except OSError as e:  # not listening yet: the caller tries again
        failed.append(str(e))
ts = [threading.Thread(target=run) for _ in range(t)]
for x in ts: x.start()
for x in ts: x.join()
sys.exit(1 if failed else 0)
PY
}
