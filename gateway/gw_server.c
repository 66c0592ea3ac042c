/* polite gateway: the event loop: start (the server, the upstreams, the
 * local CA, the engine), the loop's turn (answers, then one engine step,
 * then a timer for the engine's next wake), signals and the drain. */
#define _GNU_SOURCE
#include "gw_net.h"

#include "url_glob.h"

#include <errno.h>
#include <event2/dns.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a stopping gateway waits for its last answers to reach their
 * clients' sockets before it closes them. */
#define FLUSH_WAIT_MS 2000
/* Accounts the metrics endpoint asks the engine about. */
#define METRICS_ACCOUNTS 1024

polite_engine_now polite__gw_now(const gw_server *s) {
  polite_engine_now n = {polite_env_mono_us(s->env),
                         polite_env_wall_ms(s->env)};
  return n;
}

void polite__gw_kick(gw_server *s) {
  if (s->turn_armed || s->turn == NULL)
    return;
  s->turn_armed = 1;
  event_active(s->turn, EV_TIMEOUT, 1);
}

void polite__gw_done(gw_server *s, gw_req *g) {
  g->next_done = NULL;
  *s->done_tail = g;
  s->done_tail = &g->next_done;
  polite__gw_kick(s);
}

/* Answers every request whose result came (outside any engine call: an
 * answer may let net/ hand over the connection's next request, which is
 * submitted at once). */
static void answer_done(gw_server *s) {
  while (s->done) {
    gw_req *g = s->done;
    s->done = g->next_done;
    if (s->done == NULL)
      s->done_tail = &s->done;
    polite__gw_answer(g);
  }
}

/* Bytes not yet flushed to clients, polled every 10 ms for at most
 * FLUSH_WAIT_MS once the gateway has stopped: then the loop ends. */
static void flush_tick(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  gw_server *s = arg;
  int64_t waited_ms = (polite_env_mono_us(s->env) - s->flush_from_us) / 1000;
  if (polite__net_unsent(s->srv) == 0 || waited_ms >= FLUSH_WAIT_MS) {
    event_base_loopbreak(s->base);
    return;
  }
  struct timeval tv = {0, 10000};
  event_add(s->wake, &tv);
}

/* The run is over (drained, or the engine failed): flush, then stop. */
static void stop(gw_server *s) {
  s->stopped = 1;
  s->flush_from_us = polite_env_mono_us(s->env);
  event_del(s->wake);
  event_assign(s->wake, s->base, -1, 0, flush_tick, s);
  flush_tick(-1, 0, s);
}

/* One turn: the answers due, one engine step (it starts what the budget
 * admits), the answers that step settled, and a timer for its next wake. */
static void on_turn(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  gw_server *s = arg;
  s->turn_armed = 0;
  if (s->stopped)
    return;
  answer_done(s);
  polite_engine_now now = polite__gw_now(s);
  int64_t wake = now.mono_us + 1000000;
  int rc = polite_engine_step(s->e, &now, &wake);
  answer_done(s);
  if (rc < 0) {
    fprintf(stderr, "polite gateway: %s\n", polite_engine_errstr(s->e));
    s->failed = 1;
  }
  if (rc != 0) {
    stop(s);
    return;
  }
  int64_t d = wake - now.mono_us;
  if (d < 0)
    d = 0;
  if (d > 1000000)
    d = 1000000; /* a second at most: the budget's leases, a changed clock */
  struct timeval tv = {(time_t)(d / 1000000), (suseconds_t)(d % 1000000)};
  event_add(s->wake, &tv);
}

/* ---- The engine's callbacks ------------------------------------------ */

static void on_flush(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  gw_server *s = arg;
  s->flush_armed = 0;
  s->cfg->on_flush(s->cfg->ud);
}

/* Asks for the command's on_flush after what the loop runs now: an answer
 * relayed from the callback that logged its attempt goes out first. */
static void want_flush(gw_server *s) {
  if (s->cfg->on_flush == NULL || s->flush_armed || s->flush == NULL)
    return;
  s->flush_armed = 1;
  event_active(s->flush, EV_TIMEOUT, 1);
}

/* An attempt ended: the metrics see the pause it caused, the command's
 * hook (the attempt log) the rest. */
static void on_attempt(void *ud, const polite_attempt *a) {
  gw_server *s = ud;
  const polite_decision *d = &a->decision;
  if (d->account_pause && d->server_wait_ms > 0) {
    gw_req *g = a->req->user;
    const char *acct = s->bo.scope_host && g ? g->dest.authority : NULL;
    polite__gw_metrics_pause(s->m, acct, d->server_wait_ms);
  }
  if (s->cfg->on_attempt)
    s->cfg->on_attempt(s->cfg->ud, a);
  want_flush(s);
}

static void on_rate(void *ud, const polite_rate_change *c) {
  gw_server *s = ud;
  if (s->cfg->on_rate)
    s->cfg->on_rate(s->cfg->ud, c);
  want_flush(s);
}

/* ---- Signals and the drain ------------------------------------------- */

/* The drain's time is up: what is still in flight is cancelled (after the
 * engine's grace) and answered. */
static void on_drain_timeout(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  gw_server *s = arg;
  polite_engine_cancel(s->e);
  polite__gw_kick(s);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
  (void)what;
  gw_server *s = arg;
  const char *name = sig == SIGINT ? "interrupted" : "terminated";
  if (s->draining) {
    /* A second signal: stop now, cancelling what is in flight. */
    fprintf(stderr, "polite gateway: %s again, stopping now\n", name);
    polite_engine_cancel(s->e);
    polite__gw_kick(s);
    return;
  }
  s->draining = 1;
  fprintf(stderr,
          "polite gateway: %s: not accepting connections; finishing or "
          "answering what is queued within %lld ms\n",
          name, (long long)s->cfg->drain_timeout_ms);
  polite__net_unlisten(s->srv);
  polite__net_quiesce(s->srv);
  polite_engine_now now = polite__gw_now(s);
  polite_engine_drain(s->e, s->cfg->drain_timeout_ms, &now);
  int64_t ms = s->cfg->drain_timeout_ms;
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
  event_add(s->drain_timer, &tv);
  polite__gw_kick(s);
}

/* ---- Start and stop ---------------------------------------------------- */

int polite__gw_listen_loopback(const char *listen) {
  return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "[::1]:", 6) == 0 ||
         strncmp(listen, "localhost:", 10) == 0;
}

/* The documented bounds (docs/gateway.md, "Bounds"), and room in the
 * descriptor limit for two descriptors per connection (the client's and
 * its upstream's). */
static void set_bounds(net_bounds *b, const gw_config *c) {
  b->head.head_max = c->max_head;
  b->head.headers_max = c->max_headers;
  b->body_max = (int64_t)c->max_body;
  b->header_timeout_ms = (int)c->header_timeout_ms;
  b->idle_timeout_ms = (int)c->idle_timeout_ms;
  b->conns_max = c->max_connections;
  b->conns_max = polite__net_fit_conns(b->conns_max, 64, "polite gateway");
}

/* The base URL's upstream (TLS for https, sent elsewhere by a matching
 * --connect-to), resolved with evdns when first used. 0, or -1. */
static int start_base(gw_server *s) {
  const gw_config *c = s->cfg;
  char err[512], dial[256];
  gw_base *b = &s->ubase;
  int dport = b->port;
  polite__net_connect_to_map(s->cto, b->host, b->port, dial, sizeof dial,
                             &dport);
  SSL_CTX *tls = b->https ? polite__net_tls_client_ctx(c->upstream_cacert,
                                                       c->upstream_insecure,
                                                       err, sizeof err)
                          : NULL;
  s->up = b->https && tls == NULL
              ? NULL
              : polite__net_up_new_via(
                    s->base, polite__net_up_pool_dns(s->pool), b->host, b->port,
                    dial, dport, tls, err, sizeof err);
  SSL_CTX_free(tls);
  if (s->up == NULL) {
    fprintf(stderr, "polite gateway: --upstream %s://%s: %s\n",
            b->https ? "https" : "http", b->authority, err);
    return -1;
  }
  return 0;
}

/* The engine over the config's options, with the gateway's callbacks. */
static int start_engine(gw_server *s) {
  s->bo = s->cfg->bo;
  s->bo.next = NULL;
  s->bo.on_result = polite__gw_on_result;
  s->bo.on_attempt = on_attempt;
  s->bo.on_rate = on_rate;
  s->bo.on_tick = NULL;
  s->bo.on_attempt_start = NULL;
  s->bo.ud = s;
  s->bo.env = s->env;
  polite_engine_io io = {polite__gw_io_start, polite__gw_io_abort, s};
  char err[256];
  s->e = polite_engine_new(&s->bo, &io, err, sizeof err);
  if (s->e == NULL) {
    fprintf(stderr, "polite gateway: %s\n", err);
    return -1;
  }
  return 0;
}

/* The loop, net/'s server, the upstreams, the CA and the engine. 0, or -1
 * after a message. */
static int start(gw_server *s) {
  const gw_config *c = s->cfg;
  char err[512];
  if (polite__net_connect_to_add_all(&s->cto,
                                     (const char *const *)c->connect_to.v,
                                     c->connect_to.n, "polite gateway") < 0)
    return -1;
  s->base = polite__net_base_new();
  net_bounds bounds;
  memset(&bounds, 0, sizeof bounds);
  set_bounds(&bounds, c);
  static const net_server_cb cb = {polite__gw_on_request, polite__gw_on_gone,
                                   NULL, NULL};
  s->srv =
      s->base ? polite__net_server_new(s->base, &bounds, &cb, s, s->env) : NULL;
  s->pool = s->base ? polite__net_up_pool_new(s->base, c->upstream_cacert,
                                              c->upstream_insecure, s->cto)
                    : NULL;
  s->m = polite__gw_metrics_new();
  s->seen = polite__gw_seen_new(4096, INT64_C(600) * 1000000);
  s->turn = s->base ? event_new(s->base, -1, 0, on_turn, s) : NULL;
  s->wake = s->base ? evtimer_new(s->base, on_turn, s) : NULL;
  s->drain_timer = s->base ? evtimer_new(s->base, on_drain_timeout, s) : NULL;
  s->flush = s->base ? event_new(s->base, -1, 0, on_flush, s) : NULL;
  s->reqbuf = evbuffer_new();
  if (!s->srv || !s->pool || !s->m || !s->seen || !s->turn || !s->wake ||
      !s->drain_timer || !s->flush || !s->reqbuf) {
    fprintf(stderr, "polite gateway: cannot start the event loop\n");
    return -1;
  }
  if (s->has_base && start_base(s) < 0)
    return -1;
  if (c->watch.n > 0) {
    if (polite__net_ca_open(NULL, 1, &s->ca, err, sizeof err) < 0) {
      fprintf(stderr, "polite gateway: the local CA: %s\n", err);
      return -1;
    }
  }
  if (c->upstream_insecure)
    fprintf(stderr, "polite gateway: --upstream-insecure: https upstreams' "
                    "certificates are NOT verified\n");
  return start_engine(s);
}

static int write_ready(const char *path, const char *addr) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL)
    return -1;
  int ok = fprintf(f, "%s\n", addr) > 0;
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) != 0)
    ok = 0;
  if (!ok)
    unlink(tmp);
  return ok ? 0 : -1;
}

/* Says where it listens and how it is reached, and writes --ready-file. */
static void announce(gw_server *s) {
  const gw_config *c = s->cfg;
  fprintf(stderr, "polite gateway: listening on %s\n", s->self);
  fprintf(stderr,
          "polite gateway: as a proxy: HTTP_PROXY=http://%s "
          "HTTPS_PROXY=http://%s\n",
          s->self, s->self);
  if (s->has_base)
    fprintf(stderr,
            "polite gateway: as a base URL: http://%s%s for %s://%s%s\n",
            s->self, s->ubase.prefix, s->ubase.https ? "https" : "http",
            s->ubase.authority, s->ubase.prefix);
  if (s->ca)
    fprintf(stderr,
            "polite gateway: intercepting watched HTTPS hosts with the CA "
            "in %s\n",
            polite__net_ca_cert_path(s->ca));
  if (c->ready_file && write_ready(c->ready_file, s->self) < 0)
    fprintf(stderr, "polite gateway: cannot write --ready-file %s: %s\n",
            c->ready_file, strerror(errno));
}

/* Frees what start() made, whatever it got to: requests still out end
 * first (net/ calls on_gone; the engine then aborts their attempts). */
static void release(gw_server *s) {
  if (s->srv)
    polite__net_server_free(s->srv);
  answer_done(s);
  polite_engine_free(s->e);
  s->e = NULL;
  answer_done(s);
  polite__net_up_free(s->up);
  if (s->pool)
    polite__net_up_pool_free(s->pool);
  if (s->ca)
    polite__net_ca_free(s->ca);
  polite__net_connect_to_free(s->cto);
  polite__gw_metrics_free(s->m);
  polite__gw_seen_free(s->seen);
  struct event *evs[] = {s->turn,     s->wake,    s->drain_timer,
                         s->sig_term, s->sig_int, s->flush};
  for (size_t i = 0; i < sizeof evs / sizeof evs[0]; i++)
    if (evs[i])
      event_free(evs[i]);
  polite__gw_spares_free(s); /* their timers, before the base */
  if (s->reqbuf)
    evbuffer_free(s->reqbuf);
  if (s->base)
    event_base_free(s->base);
}

/* The totals for the summary. */
static void totals(const gw_server *s, gw_totals *t) {
  polite__gw_metrics_totals(s->m, t);
  t->passed = s->passed.passed;
}

/* Listens, then runs the loop until the drain ends. 0, or -1. */
static int serve(gw_server *s) {
  char err[512];
  s->sig_term = evsignal_new(s->base, SIGTERM, on_signal, s);
  s->sig_int = evsignal_new(s->base, SIGINT, on_signal, s);
  if (!s->sig_term || !s->sig_int || event_add(s->sig_term, NULL) != 0 ||
      event_add(s->sig_int, NULL) != 0) {
    fprintf(stderr, "polite gateway: cannot catch signals\n");
    return -1;
  }
  if (polite__net_listen(s->srv, s->cfg->listen, s->self, sizeof s->self, err,
                         sizeof err) != 0) {
    fprintf(stderr, "polite gateway: --listen %s\n", err);
    return -1;
  }
  announce(s);
  s->started_us = polite_env_mono_us(s->env);
  polite__gw_kick(s);
  event_base_dispatch(s->base);
  return 0;
}

int polite__gw_run(const gw_config *c) {
  gw_server s;
  memset(&s, 0, sizeof s);
  s.cfg = c;
  s.env = polite_env_real();
  s.done_tail = &s.done;
  s.loopback = polite__gw_listen_loopback(c->listen);
  signal(SIGPIPE, SIG_IGN);
  char err[300];
  if (c->upstream) {
    if (polite__gw_base_parse(c->upstream, &s.ubase, err, sizeof err) != 0) {
      char *shown = polite_redact_url(c->upstream);
      fprintf(stderr, "polite gateway: --upstream %s: %s\n",
              shown ? shown : "?", err);
      free(shown);
      return 1;
    }
    s.has_base = 1;
  }
  if (!s.loopback && c->allow_host.n == 0) {
    fprintf(stderr,
            "polite gateway: --listen %s is not loopback: as a forward proxy "
            "it would relay to any host; give --allow-host GLOB\n",
            c->listen);
    return 1;
  }
  int rc = start(&s) == 0 && serve(&s) == 0 ? 0 : 1;
  if (rc == 0 && s.failed)
    rc = 1;
  if (c->on_flush)
    c->on_flush(c->ud); /* what the last pass logged */
  if (s.e && c->on_end) {
    gw_totals t;
    totals(&s, &t);
    c->on_end(c->ud, polite_engine_stats(s.e), &t,
              (polite_env_mono_us(s.env) - s.started_us) / 1000);
  }
  release(&s);
  return rc;
}

int polite__gw_connect_to_check(const char *spec, char *err, size_t errlen) {
  net_connect_to *probe = NULL;
  int rc = polite__net_connect_to_add(&probe, spec, err, errlen);
  polite__net_connect_to_free(probe);
  return rc < 0 ? -1 : 0;
}

void polite__gw_metrics_answer_req(gw_server *s, net_req *nr) {
  polite_engine_account acc[METRICS_ACCOUNTS];
  polite_engine_now now = polite__gw_now(s);
  size_t n = polite_engine_accounts(s->e, acc, METRICS_ACCOUNTS, &now);
  if (n > METRICS_ACCOUNTS)
    n = METRICS_ACCOUNTS;
  char *text = polite__gw_metrics_text(s->m, acc, n, polite_engine_stats(s->e));
  if (text == NULL) {
    polite__gw_own_error(s, nr, 503, "out_of_memory",
                         "polite gateway: out of memory");
    return;
  }
  struct evkeyvalq h;
  h.tqh_first = NULL;
  h.tqh_last = &h.tqh_first;
  static const char ct[] = "text/plain; version=0.0.4; charset=utf-8";
  polite__net_field_add(&h, "Content-Type", 12, ct, sizeof ct - 1);
  polite__net_field_add(&h, "Cache-Control", 13, "no-store", 8);
  size_t len = strlen(text);
  polite__net_req_head(nr, 200, NULL, &h, (int64_t)len,
                       strcmp(nr->method, "HEAD") == 0, NET_HEAD_DATE);
  struct evbuffer *b = evbuffer_new();
  if (b) {
    evbuffer_add(b, text, len);
    polite__net_req_body(nr, b);
    evbuffer_free(b);
  }
  polite__net_req_end(nr, b != NULL);
  polite__net_fields_clear(&h);
  free(text);
}
