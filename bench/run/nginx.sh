# shellcheck shell=bash
# Sourced by the bench scripts (bench/run, bench/adaptive): starts nginx
# with $T/ng/nginx.conf in the foreground, without a master process (with
# one when NGINX_MASTER=on: `nginx -s reload` needs it), and
# waits until http://127.0.0.1:$PORT/probe answers. Returns 0 with its pid
# added to PIDS, or 1 (nginx stopped again) when it did not come up, e.g.
# because $PORT was taken: the caller picks another port and retries.
# The EXIT trap of the bench/run scripts: stops every process in PIDS and
# removes $T. A kill that finds its process already gone is not an error.
bench_cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null
  rm -rf "$T"
}

bench_nginx_start() {
  nginx -p "$T/ng" -c "$T/ng/nginx.conf" -g "daemon off; master_process ${NGINX_MASTER:-off};" \
    2>"$T/ng/stderr" &
  local pid=$!
  for _ in $(seq 50); do
    if curl -s -o /dev/null "http://127.0.0.1:$PORT/probe"; then
      PIDS+=("$pid")
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 1
}

# bench_nginx_limited UP RATE: nginx from bench/gateway/nginx.conf.in in
# front of 127.0.0.1:UP, limit_req at RATE r/s with burst 1 (429 for the
# rest), on a free port (20 tries): sets PORT and returns 0, or 1 when it
# never started. Needs T (with $T/ng) and src, as bench_nginx_start does.
bench_nginx_limited() {
  local up=$1 rate=$2 _
  for _ in $(seq 20); do
    PORT=$((20000 + RANDOM % 30000))
    # shellcheck disable=SC2154 # src (the checkout) is the sourcing script's
    sed -e "s|@T@|$T|g" -e "s|@UP@|$up|g" -e "s|@PORT@|$PORT|g" \
      -e "s|@HTTP@|limit_req_zone \$binary_remote_addr zone=z:1m rate=${rate}r/s;|" \
      -e "s|@LOCATION@|limit_req zone=z burst=1 nodelay; limit_req_status 429; error_page 429 = @limited;|" \
      "$src/bench/gateway/nginx.conf.in" >"$T/ng/nginx.conf"
    bench_nginx_start && return 0
  done
  return 1
}

# bench_nginx_conf <<CONF ... CONF: writes $T/ng/nginx.conf: one worker,
# logs and temporary files under $T/ng, and the http block's own lines read
# from stdin (upstreams, zones, the server) inside http { }.
bench_nginx_conf() {
  mkdir -p "$T/ng/logs" "$T/ng/tmp"
  cat >"$T/ng/nginx.conf" <<CONF
worker_processes 1;
error_log $T/ng/logs/error.log warn;
pid $T/ng/nginx.pid;
events { worker_connections 4096; }
http {
  client_body_temp_path $T/ng/tmp/cb;
  proxy_temp_path $T/ng/tmp/p;
  fastcgi_temp_path $T/ng/tmp/f;
  uwsgi_temp_path $T/ng/tmp/u;
  scgi_temp_path $T/ng/tmp/s;
$(cat)
}
CONF
}
