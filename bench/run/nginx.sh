# Sourced by the bench scripts (bench/run, bench/adaptive): starts nginx
# with $T/ng/nginx.conf in the foreground, without a master process (with
# one when NGINX_MASTER=on: `nginx -s reload` needs it), and
# waits until http://127.0.0.1:$PORT/probe answers. Returns 0 with its pid
# added to PIDS, or 1 (nginx stopped again) when it did not come up, e.g.
# because $PORT was taken: the caller picks another port and retries.
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
