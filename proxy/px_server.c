/* polite proxy: the engine's loop: the requests net/ hands over (their one
 * owner from arrival to the log line), signals, reports, start and stop. */
#define _GNU_SOURCE
#include "px_engine.h"
#include "px_report_html.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* One event loop: net/'s HTTP/1.1 server for the clients and its lean
 * HTTP/1.1 client for the upstream (net/net_upstream.h says why), so a
 * response streams from one socket to the other without threads. Where a
 * request goes is px_route.c, the checks px_decide.c, the answers the proxy
 * makes up px_answer.c, forwarding px_forward.c. */

px_now polite__px_now(const px_server *s) {
  px_now n = {polite_env_mono_us(s->env), polite_env_wall_ms(s->env)};
  return n;
}

/* ---- A request's life ------------------------------------------------------
 */

static px_req *req_new(px_server *s, net_req *nr) {
  px_req *r = calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  r->out = &r->out_fields; /* inside r: one allocation fewer per request */
  r->out->tqh_first = NULL;
  r->out->tqh_last = &r->out->tqh_first;
  r->s = s;
  r->nr = nr;
  nr->data = r;
  r->in = nr->in;
  r->target = nr->target;
  r->now = polite__px_now(s);
  /* Whole arrays, not printf: this runs once per request (the CPU target
   * of bench/proxy/cpu.sh), and each source is a NUL-terminated array of
   * at most the destination's size. */
  _Static_assert(sizeof r->method == sizeof nr->method, "method");
  _Static_assert(sizeof r->client >= sizeof nr->peer, "client");
  _Static_assert(sizeof r->conn_id == sizeof nr->conn_id, "conn_id");
  memcpy(r->method, nr->method, sizeof r->method);
  memcpy(r->client, nr->peer, sizeof nr->peer);
  memcpy(r->conn_id, nr->conn_id, sizeof r->conn_id);
  return r;
}

static void act(px_req *r) {
  if (r->act == ACT_FORWARD)
    polite__px_forward(r);
  else
    polite__px_send_own(r);
}

static void latency_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  px_req *r = arg;
  event_free(r->timer);
  r->timer = NULL;
  r->now = polite__px_now(r->s);
  act(r);
}

void polite__px_run_action(px_req *r) {
  px_server *s = r->s;
  const px_config *c = s->cfg;
  if (c->latency_max_ms > 0 &&
      polite__px_plugin_watches(c, PX_PLUG_LATENCY, r->raw_url, r->path)) {
    /* A timer of the request's own, never a sleep: other requests go on
     * meanwhile, and a client that leaves cancels it (on_gone). */
    int64_t d = c->latency_min_ms +
                polite_rand_uniform(polite_rand_next(&s->rng),
                                    c->latency_max_ms - c->latency_min_ms);
    struct timeval tv = {(time_t)(d / 1000), (suseconds_t)((d % 1000) * 1000)};
    r->timer = evtimer_new(s->base, latency_cb, r);
    if (r->timer && event_add(r->timer, &tv) == 0)
      return;
    if (r->timer)
      event_free(r->timer);
    r->timer = NULL;
  }
  act(r);
}

void polite__px_on_request(void *ud, net_req *nr) {
  px_req *r = req_new(ud, nr);
  if (r == NULL) {
    polite__net_req_end(nr, 0); /* out of memory: drop the connection */
    polite__net_req_free(nr);
    return;
  }
  polite__px_route(r);
}

/* The client left before its answer ended: whatever the request started is
 * cancelled (the upstream exchange, so that a 50 MB answer stops; the
 * --latency timer), then it is logged and freed like any other: 499 (as
 * nginx logs it) when nothing was sent yet, and client_gone. */
void polite__px_on_gone(void *ud, net_req *nr) {
  (void)ud;
  px_req *r = nr->data;
  r->now = polite__px_now(r->s);
  if (r->x) {
    polite__net_up_cancel(r->x);
    r->x = NULL;
  }
  if (r->timer) {
    event_free(r->timer);
    r->timer = NULL;
  }
  if (!r->headers_sent)
    r->status = 499;
  size_t n = strlen(r->note);
  snprintf(r->note + n, sizeof r->note - n, "%sclient_gone", n ? " " : "");
  polite__px_finish(r);
}

/* A closed connection's pending deadline may pass to the client's next
 * connection (px_track.c says why). */
void polite__px_on_conn_closed(void *ud, const char *conn_id) {
  px_server *s = ud;
  polite__px_conn_closed(s->st, conn_id);
}

/* A new connection: the judge tells it from the told client coming back
 * (px_track.c). */
void polite__px_on_conn_opened(void *ud, const char *conn_id) {
  px_server *s = ud;
  polite__px_conn_opened(s->st, conn_id, polite__px_now(s).mono_us / 1000);
}

/* ---- Start, reports, stop ----------------------------------------------- */

static int write_file_atomic(const char *path, const char *text, size_t len) {
  size_t n = strlen(path) + 16;
  char *tmp = malloc(n);
  if (tmp == NULL)
    return -1;
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (f == NULL) {
    free(tmp);
    return -1;
  }
  int ok = fwrite(text, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) != 0)
    ok = 0;
  if (!ok)
    unlink(tmp);
  free(tmp);
  return ok ? 0 : -1;
}

static void write_reports(px_server *s) {
  int64_t now = polite_env_wall_ms(s->env);
  if (s->cfg->report) {
    char *text = polite__px_report_json(s->st, s->started_wall_ms, now);
    if (text == NULL ||
        write_file_atomic(s->cfg->report, text, strlen(text)) < 0)
      fprintf(stderr, "polite proxy: cannot write report %s: %s\n",
              s->cfg->report, strerror(errno));
    free(text);
  }
  if (s->cfg->report_md) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f) {
      polite__px_report_md(s->st, f, s->started_wall_ms, now);
      fclose(f);
      if (write_file_atomic(s->cfg->report_md, buf, len) < 0)
        fprintf(stderr, "polite proxy: cannot write report %s: %s\n",
                s->cfg->report_md, strerror(errno));
    }
    free(buf);
  }
  if (s->cfg->report_html)
    polite__px_report_html(s->cfg, s->st, s->started_wall_ms, now, s->log);
}

static void flush_log(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  px_server *s = arg;
  if (s->log)
    fflush(s->log);
}

/* pxlimits hook: errors and mocks files reloaded when they change. */
static void reload_files(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  px_server *s = arg;
  polite__px_config_reload(s->cfg, stderr);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
  (void)what;
  px_server *s = arg;
  fprintf(stderr, "polite proxy: %s, writing the report and stopping\n",
          sig == SIGINT ? "interrupted" : "terminated");
  write_reports(s);
  event_base_loopbreak(s->base);
}

static int split_upstream(px_server *s, const char *url) {
  struct evhttp_uri *u = evhttp_uri_parse(url);
  if (u == NULL || evhttp_uri_get_host(u) == NULL) {
    if (u)
      evhttp_uri_free(u);
    char *shown = polite__px_redact_url(url);
    fprintf(stderr, "polite proxy: --upstream %s: not a valid http URL\n",
            shown ? shown : "?");
    free(shown);
    return -1;
  }
  const char *host = evhttp_uri_get_host(u);
  int port = evhttp_uri_get_port(u);
  snprintf(s->up_host, sizeof s->up_host, "%s", host);
  /* evhttp keeps IPv6 literals bracketed; sockets want them bare. */
  size_t hl = strlen(s->up_host);
  if (hl > 2 && s->up_host[0] == '[' && s->up_host[hl - 1] == ']') {
    memmove(s->up_host, s->up_host + 1, hl - 2);
    s->up_host[hl - 2] = '\0';
  }
  s->up_port = port > 0 ? port : strncasecmp(url, "https", 5) == 0 ? 443 : 80;
  if (port > 0)
    snprintf(s->up_authority, sizeof s->up_authority, "%s:%d", host, port);
  else
    snprintf(s->up_authority, sizeof s->up_authority, "%s", host);
  const char *path = evhttp_uri_get_path(u);
  snprintf(s->up_prefix, sizeof s->up_prefix, "%s", path ? path : "");
  size_t pl = strlen(s->up_prefix);
  while (pl > 0 && s->up_prefix[pl - 1] == '/')
    s->up_prefix[--pl] = '\0';
  evhttp_uri_free(u);
  return 0;
}

/* 1 when the --listen address is on loopback. */
static int loopback_listen(const char *listen) {
  return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "[::1]:", 6) == 0 ||
         strncmp(listen, "localhost:", 10) == 0;
}

/* Forward mode: the upstream pool, and the local CA when some host is
 * watched (created on first use, see docs/proxy-https.md). Refuses to be an
 * open relay: off loopback, --allow-host must say where it may connect. */
static int start_forward(px_server *s) {
  const px_config *c = s->cfg;
  if (c->upstream) {
    fprintf(stderr, "polite proxy: --mode forward takes no --upstream (each "
                    "request names its destination; --connect-to sends a "
                    "host elsewhere)\n");
    return -1;
  }
  if (!loopback_listen(c->listen) && c->nallow_host == 0) {
    fprintf(stderr,
            "polite proxy: --mode forward on %s (not loopback) would relay "
            "to any host: give --allow-host GLOB\n",
            c->listen);
    return -1;
  }
  s->pool = polite__net_up_pool_new(s->base, c->upstream_cacert,
                                    c->upstream_insecure, s->cto);
  if (s->pool == NULL) {
    fprintf(stderr, "polite proxy: out of memory\n");
    return -1;
  }
  if (c->nwatch > 0) {
    char err[512];
    if (polite__net_ca_open(NULL, 1, &s->ca, err, sizeof err) < 0) {
      fprintf(stderr, "polite proxy: the local CA: %s\n", err);
      return -1;
    }
    fprintf(stderr,
            "polite proxy: intercepting watched HTTPS hosts with the "
            "CA in %s\n",
            polite__net_ca_cert_path(s->ca));
  }
  return 0;
}

/* Reverse mode: the one upstream (resolved now, once: nothing else runs
 * yet), over TLS for https://, its connections sent elsewhere by a
 * matching --connect-to. */
static int start_reverse(px_server *s) {
  const px_config *c = s->cfg;
  char err[512], dial[256];
  int https = strncasecmp(c->upstream, "https://", 8) == 0;
  int dport = s->up_port;
  polite__net_connect_to_map(s->cto, s->up_host, s->up_port, dial, sizeof dial,
                             &dport);
  SSL_CTX *tls =
      https ? polite__net_tls_client_ctx(c->upstream_cacert,
                                         c->upstream_insecure, err, sizeof err)
            : NULL;
  s->up = https && tls == NULL
              ? NULL
              : polite__net_up_new_via(s->base, NULL, s->up_host, s->up_port,
                                       dial, dport, tls, err, sizeof err);
  SSL_CTX_free(tls);
  if (s->up == NULL) {
    fprintf(stderr, "polite proxy: --upstream %s://%s: %s\n",
            https ? "https" : "http", s->up_authority, err);
    return -1;
  }
  if (https && c->upstream_insecure)
    fprintf(stderr, "polite proxy: --upstream-insecure: the upstream's "
                    "certificate is NOT verified\n");
  return 0;
}

/* The documented defaults (docs/proxy.md, "Bounds") where the config leaves
 * a bound at 0. Each connection may hold two descriptors (client and
 * upstream): the soft descriptor limit is raised towards the hard one for
 * --max-connections, and when even that is too low the cap is lowered and
 * the start says so (docs/proxy.md, "Bounds"). */
static void set_bounds(px_bounds *b, const px_config *c) {
  b->head.head_max = c->max_head ? (size_t)c->max_head : 64 * 1024;
  b->head.headers_max = c->max_headers ? (size_t)c->max_headers : 100;
  b->body_max = c->max_body ? c->max_body : 16 * 1024 * 1024;
  b->header_timeout_ms = c->header_timeout_ms ? c->header_timeout_ms : 10000;
  b->idle_timeout_ms = c->idle_timeout_ms ? c->idle_timeout_ms : 60000;
  b->conns_max = c->max_connections ? (size_t)c->max_connections : 4096;
  b->conns_max = polite__net_fit_conns(b->conns_max, 32, "polite proxy");
}

/* Frees what run() made, whatever it got to. */
static void release(px_server *s) {
  polite__net_server_free(s->srv); /* requests still out end (on_gone) */
  polite__net_up_free(s->up);
  if (s->pool)
    polite__net_up_pool_free(s->pool);
  if (s->ca)
    polite__net_ca_free(s->ca);
  if (s->fwd_out)
    evbuffer_free(s->fwd_out);
  if (s->base)
    event_base_free(s->base);
  polite__net_connect_to_free(s->cto);
  polite__px_state_free(s->st);
  if (s->log && s->log != stderr)
    fclose(s->log);
}

/* --log FILE (else stderr). 0, or -1 with a message. */
static int open_log(px_server *s) {
  const px_config *c = s->cfg;
  if (c->log == NULL || strcmp(c->log, "-") == 0) {
    s->log = stderr;
    return 0;
  }
  if (strcmp(c->log, "none") == 0) {
    s->log = NULL; /* no request log (nginx's access_log off) */
    return 0;
  }
  s->log = fopen(c->log, "a");
  if (s->log == NULL) {
    fprintf(stderr, "polite proxy: --log %s: %s\n", c->log, strerror(errno));
    return -1;
  }
  /* Fully buffered, flushed by a timer every 200 ms and at exit: one
   * write per batch instead of one per request. */
  setvbuf(s->log, NULL, _IOFBF, 1 << 16);
  return 0;
}

/* The loop, the tracking state, net/'s server and the upstreams. 0, or -1
 * with a message. */
static int start(px_server *s) {
  const px_config *c = s->cfg;
  s->base = polite__net_base_new();
  s->st = polite__px_state_new();
  if (s->st)
    polite__px_track_setup(s->st, &c->track); /* the judge's switch, bounds */
  static const net_server_cb cb = {polite__px_on_request, polite__px_on_gone,
                                   polite__px_on_conn_closed,
                                   polite__px_on_conn_opened};
  s->srv = s->base ? polite__net_server_new(s->base, &s->bounds, &cb, s, s->env)
                   : NULL;
  if (s->base == NULL || s->st == NULL || s->srv == NULL) {
    fprintf(stderr, "polite proxy: cannot start the event loop\n");
    return -1;
  }
  if (polite__net_connect_to_add_all(&s->cto,
                                     (const char *const *)c->connect_to,
                                     c->nconnect_to, "polite proxy") < 0)
    return -1;
  if (c->forward_mode && start_forward(s) < 0)
    return -1;
  if (c->upstream && start_reverse(s) < 0)
    return -1;
  return 0;
}

/* Says where it listens and in which mode, and writes --ready-file. */
static void announce(px_server *s) {
  const px_config *c = s->cfg;
  fprintf(stderr, "polite proxy: listening on %s\n", s->listen_addr);
  if (c->warning) /* pxlimits hook: what a devproxyrc asks, not simulated */
    fprintf(stderr, "polite proxy: warning: %s\n", c->warning);
  if (c->mode_note)
    fprintf(stderr, "polite proxy: mode: %s\n", c->mode_note);
  if (c->upstream)
    fprintf(stderr, "polite proxy: forwarding to %s://%s%s\n",
            strncasecmp(c->upstream, "https://", 8) == 0 ? "https" : "http",
            s->up_authority, s->up_prefix);
  else if (c->forward_mode)
    fprintf(stderr, "polite proxy: forward mode (HTTP_PROXY/HTTPS_PROXY "
                    "clients)\n");
  else
    fprintf(stderr, "polite proxy: mock mode (no --upstream)\n");
  if (c->test_clock)
    fprintf(stderr, "polite proxy: --test-clock: time moves only through "
                    "POST /__polite/clock\n");
  if (c->ready_file) {
    char line[160];
    int n = snprintf(line, sizeof line, "%s\n", s->listen_addr);
    if (write_file_atomic(c->ready_file, line, (size_t)n) < 0)
      fprintf(stderr, "polite proxy: cannot write --ready-file %s\n",
              c->ready_file);
  }
}

/* Runs the loop until a signal (which writes the reports). */
static int serve(px_server *s) {
  const px_config *c = s->cfg;
  /* Signals are caught before the address is announced, so that a script
   * that stops the proxy right after reading --ready-file gets a report. */
  struct event *si = evsignal_new(s->base, SIGINT, on_signal, s);
  struct event *st = evsignal_new(s->base, SIGTERM, on_signal, s);
  struct event *fl = event_new(s->base, -1, EV_PERSIST, flush_log, s);
  struct event *rl = event_new(s->base, -1, EV_PERSIST, reload_files, s);
  struct timeval every = {0, 200000}, second = {1, 0};
  if (rl)
    event_add(rl, &second); /* pxlimits hook */
  int rc = 1;
  char err[512];
  if (si && st && fl && event_add(si, NULL) == 0 && event_add(st, NULL) == 0 &&
      (s->log == NULL || s->log == stderr || event_add(fl, &every) == 0)) {
    if (polite__net_listen(s->srv, c->listen, s->listen_addr,
                           sizeof s->listen_addr, err, sizeof err) == 0) {
      announce(s);
      event_base_dispatch(s->base);
      rc = 0;
    } else {
      fprintf(stderr, "polite proxy: --listen %s\n", err);
    }
  }
  if (si)
    event_free(si);
  if (st)
    event_free(st);
  if (fl)
    event_free(fl);
  if (rl)
    event_free(rl);
  return rc;
}

int polite__px_run(px_config *c) {
  px_server s;
  memset(&s, 0, sizeof s);
  s.cfg = c;
  polite__px_clock_init(&s);
  s.rng = c->has_seed ? c->seed : polite_random_seed();
  s.salt = polite_random_seed();
  s.started_wall_ms = polite_env_wall_ms(s.env);
  set_bounds(&s.bounds, c);
  signal(SIGPIPE, SIG_IGN);
  if ((c->upstream && split_upstream(&s, c->upstream) < 0) || open_log(&s) < 0)
    return 1;
  int rc = start(&s) == 0 ? serve(&s) : 1;
  release(&s);
  return rc;
}
