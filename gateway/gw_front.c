/* polite gateway: a client's request from its arrival to its answer: where
 * it goes (gw_route.c), the gateway's own endpoints and refusals, CONNECT
 * (intercepted with the local CA or tunnelled), the polite_request handed
 * to the engine, a client that leaves, and the answer: the upstream's,
 * relayed as it came (gw_attempt.c), or the gateway's own honest one. */
#define _GNU_SOURCE
#include "gw_net.h"

#include "http_syntax.h"
#include "url_glob.h"

#include <event2/http.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header fields of a request the gateway reads as polite_header_field
 * (the retry-count and idempotency-key headers); more are not looked at. */
#define FIELDS_MAX 128

/* ---- Answers of the gateway's own ----------------------------------- */

static void headers_init(struct evkeyvalq *h) {
  h->tqh_first = NULL;
  h->tqh_last = &h->tqh_first;
}

/* Sends status with headers h and body[0..len) on nr, whole, then ends it.
 * A HEAD gets the head only. */
static void send_whole(net_req *nr, int status, const char *reason,
                       const struct evkeyvalq *h, const char *body,
                       size_t len) {
  int head = strcmp(nr->method, "HEAD") == 0;
  polite__net_req_head(nr, status, reason, h, (int64_t)len, head,
                       NET_HEAD_DATE);
  struct evbuffer *b = head || len == 0 ? NULL : evbuffer_new();
  if (b) {
    evbuffer_add(b, body, len);
    polite__net_req_body(nr, b);
    evbuffer_free(b);
  }
  polite__net_req_end(nr, 1);
}

/* error.type for a status, as the OpenAI and Anthropic SDKs read it. */
static const char *error_type(int status) {
  return status == 429   ? "rate_limit_error"
         : status == 503 ? "overloaded_error"
         : status == 502 ? "api_error"
         : status == 504 ? "timeout_error"
         : status == 403 ? "permission_error"
         : status == 404 ? "not_found_error"
                         : "invalid_request_error";
}

void polite__gw_own_error(gw_server *s, net_req *nr, int status,
                          const char *code, const char *message) {
  (void)s;
  json_t *o =
      json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "error", "error", "message",
                message, "type", error_type(status), "code", code);
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  struct evkeyvalq h;
  headers_init(&h);
  polite__net_field_add(&h, "Content-Type", 12, "application/json", 16);
  polite__net_field_add(&h, "Cache-Control", 13, "no-store", 8);
  polite__net_field_add(&h, "X-Polite-Outcome", 16, code, strlen(code));
  send_whole(nr, status, NULL, &h, text ? text : "", text ? strlen(text) : 0);
  polite__net_fields_clear(&h);
  free(text);
}

/* The honest answer gw_answer.c built (polite__gw_reply) on g's client. */
static void send_reply(net_req *nr, const gw_reply *r) {
  struct evkeyvalq h;
  headers_init(&h);
  for (size_t i = 0; i < r->nheaders; i++)
    polite__net_field_add(&h, r->headers[i].name, strlen(r->headers[i].name),
                          r->headers[i].value, strlen(r->headers[i].value));
  send_whole(nr, r->status, r->reason, &h, r->body, r->body_len);
  polite__net_fields_clear(&h);
}

/* ---- A request's life ---------------------------------------------------- */

/* A zeroed request with its timer: a spare one when there is (its timer,
 * made for it, is kept: the timer's argument is the request itself), else
 * a new one. NULL out of memory. */
static gw_req *req_alloc(gw_server *s) {
  gw_req *g = s->spare;
  if (g != NULL) {
    s->spare = g->next_done;
    s->nspare--;
    struct event *timer = g->timer;
    memset(g, 0, sizeof *g);
    g->timer = timer;
    return g;
  }
  g = calloc(1, sizeof *g);
  if (g == NULL)
    return NULL;
  g->timer = evtimer_new(s->base, polite__gw_on_timer, g);
  if (g->timer == NULL) {
    free(g);
    return NULL;
  }
  return g;
}

void polite__gw_spares_free(gw_server *s) {
  while (s->spare) {
    gw_req *g = s->spare;
    s->spare = g->next_done;
    event_free(g->timer);
    free(g);
  }
  s->nspare = 0;
}

static gw_req *req_new(gw_server *s, net_req *nr) {
  gw_req *g = req_alloc(s);
  if (g == NULL)
    return NULL;
  g->magic = GW_REQ_MAGIC;
  g->s = s;
  g->nr = nr;
  g->first_start_us = -1;
  g->client_retries = -1;
  g->arrival_us = nr->t0_us;
  /* Cut to the field as snprintf did, without its format machinery. */
  size_t ml = strnlen(nr->method, sizeof g->method - 1);
  memcpy(g->method, nr->method, ml);
  g->method[ml] = '\0';
  nr->data = g;
  return g;
}

void polite__gw_req_free(gw_req *g) {
  if (g == NULL)
    return;
  polite__gw_attempt_stop(g);
  if (g->expecting)
    polite__net_up_expect(g->up, -1);
  if (g->body)
    evbuffer_free(g->body);
  if (g->rbody)
    evbuffer_free(g->rbody);
  if (g->rhead) {
    polite__net_fields_clear(g->rhead);
    free(g->rhead);
  }
  if (g->reply) {
    polite__gw_reply_free(g->reply);
    free(g->reply);
  }
  if (g->nr)
    polite__net_req_free(g->nr);
  free(g->target);
  free(g->url);
  g->magic = 0;
  gw_server *s = g->s;
  if (s->nspare < GW_REQ_SPARE) {
    event_del(g->timer);
    g->next_done = s->spare;
    s->spare = g;
    s->nspare++;
    return;
  }
  event_free(g->timer);
  free(g);
}

int polite__gw_attempt_info(const polite_request *r, gw_attempt_info *out) {
  const gw_req *g = r ? r->user : NULL;
  if (g == NULL || g->magic != GW_REQ_MAGIC)
    return -1;
  out->queued_ms =
      g->first_start_us >= 0 ? (g->first_start_us - g->arrival_us) / 1000 : -1;
  out->client_retries = g->client_retries;
  return 0;
}

/* The request's fields as the policy functions read them. */
static size_t fields_of(const struct evkeyvalq *in, polite_header_field *f,
                        size_t max) {
  size_t n = 0;
  for (const struct evkeyval *kv = in->tqh_first; kv && n < max;
       kv = kv->next.tqe_next, n++) {
    f[n].name = kv->key;
    f[n].name_len = strlen(kv->key);
    f[n].value = kv->value;
    f[n].value_len = strlen(kv->value);
  }
  return n;
}

/* --allow-host: forward mode connects only to hosts a glob names (any
 * when none is given; the listener is then loopback-only). */
static int host_allowed(const gw_config *c, const char *host) {
  if (c->allow_host.n == 0)
    return 1;
  for (size_t i = 0; i < c->allow_host.n; i++)
    if (polite__url_glob(c->allow_host.v[i], host, NULL))
      return 1;
  return 0;
}

/* The request-target sent upstream and the canonical URL (the engine's,
 * the watch list's, the log's). 0, or -1 out of memory. */
/* a, b and c end to end in one allocation (the caller frees it); NULL when
 * out of memory. asprintf did this three times per request, its format
 * machinery the largest cost of the request's entry in the profile. */
static char *cat3(const char *a, const char *b, const char *c) {
  size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
  char *s = malloc(na + nb + nc + 1);
  if (s == NULL)
    return NULL;
  memcpy(s, a, na);
  memcpy(s + na, b, nb);
  memcpy(s + na + nb, c, nc + 1);
  return s;
}

static int urls_of(gw_req *g) {
  const gw_dest *d = &g->dest;
  const char *prefix = d->kind == GW_DEST_BASE ? g->s->ubase.prefix : "";
  const char *slash = d->path[0] == '?' ? "/" : "";
  g->target = cat3(prefix, slash, d->path);
  if (g->target == NULL)
    return -1;
  g->url = cat3(d->https ? "https://" : "http://", d->authority, g->target);
  return g->url ? 0 : -1;
}

/* "gw-N" for the request's log id, N in decimal without printf. */
static char *request_id(unsigned long long n) {
  char digits[24];
  size_t i = sizeof digits;
  digits[--i] = '\0';
  do
    digits[--i] = (char)('0' + n % 10);
  while ((n /= 10) != 0 && i > 0);
  return cat3("gw-", digits + i, "");
}

/* The client's own retries: what its headers say, or the same method and
 * URL after a 429/503 the gateway gave it (early when before the
 * Retry-After it was told). */
static void client_retries(gw_req *g, const polite_header_field *f, size_t n) {
  gw_server *s = g->s;
  int hdr = polite__gw_client_retries(f, n);
  int64_t early_us = 0;
  int seen = polite__gw_seen_retry(s->seen, g->method, g->url, g->arrival_us,
                                   &early_us);
  g->client_retries = hdr >= 0 ? hdr : seen ? 1 : -1;
  polite__gw_metrics_request(s->m, hdr > 0 || seen, early_us > 0);
}

/* The polite_request the engine gets: the canonical URL (its account), the
 * method, the client's idempotency key, and one attempt only when the body
 * is not kept. NULL when out of memory. */
static polite_request *request_of(gw_req *g, const polite_header_field *f,
                                  size_t n) {
  gw_server *s = g->s;
  polite_request *r = polite_request_new();
  if (r == NULL)
    return NULL;
  size_t klen = 0;
  const char *key = polite__gw_idempotency_key(f, n, &klen);
  r->id = request_id((unsigned long long)++s->seq);
  r->method = strdup(g->method);
  r->url = strdup(g->url);
  r->idempotency_key = key ? strndup(key, klen) : NULL;
  if (!r->id || !r->method || !r->url || (key && !r->idempotency_key)) {
    polite_request_free(r);
    return NULL;
  }
  size_t blen = g->body ? evbuffer_get_length(g->body) : 0;
  int may = polite__gw_may_retry(
      g->method, key != NULL || s->bo.idempotency_auto, s->bo.retry_writes);
  g->keep_body = may && blen <= s->cfg->retry_body_max;
  if (may && !g->keep_body)
    r->max_attempts = 1; /* a body too large to keep is sent once */
  r->user = g;
  return r;
}

/* Hands g to the engine; an engine that stops taking requests (draining)
 * answers it as the engine would have: 503, cancelled. */
static void submit(gw_req *g) {
  gw_server *s = g->s;
  polite_header_field f[FIELDS_MAX];
  size_t n = fields_of(g->nr->in, f, FIELDS_MAX);
  client_retries(g, f, n);
  polite_request *r = request_of(g, f, n);
  if (r == NULL) {
    polite__gw_own_error(s, g->nr, 503, "out_of_memory",
                         "polite gateway: out of memory");
    polite__gw_req_free(g);
    return;
  }
  g->pr = r;
  g->submitted = 1;
  polite_engine_now now = polite__gw_now(s);
  int rc = polite_engine_submit(s->e, r, &now);
  if (rc != 0) {
    g->submitted = 0;
    g->pr = NULL;
    polite_request_free(r);
    polite_result res;
    memset(&res, 0, sizeof res);
    res.outcome = POLITE_OUT_CANCELLED;
    res.error = "the gateway is stopping; not sent";
    res.retry_after_ms = -1;
    if (polite__gw_make_reply(g, &res, NULL) == 0) {
      g->nr->keepalive = 0;
      send_reply(g->nr, g->reply);
    } else {
      polite__net_req_end(g->nr, 0);
    }
    polite__gw_req_free(g);
    return;
  }
  polite__gw_kick(s); /* its result may be in already; else a step */
  /* Announced after the kick: the check for a warm connection runs after
   * the engine's step, and finds nothing to do for a request it sent. */
  char err[256];
  net_upstream *u = polite__gw_upstream_of(g, err, sizeof err);
  if (u != NULL) {
    g->expecting = 1;
    polite__net_up_expect(u, 1);
  }
}

/* ---- CONNECT ------------------------------------------------------------- */

static void connect_failed(gw_server *s, net_req *nr, const char *why) {
  char msg[640];
  snprintf(msg, sizeof msg, "polite gateway: %s", why);
  nr->keepalive = 0;
  polite__gw_own_error(s, nr, 502, "bad_gateway", msg);
  polite__net_req_free(nr);
}

static void tunnel_done(void *ud, net_req *nr, int ok, const char *err) {
  if (!ok) {
    connect_failed(ud, nr, err);
    return;
  }
  polite__net_req_free(nr); /* the bytes flow: nothing of the gateway's */
}

/* A watched host is intercepted (its requests then come one by one, made
 * polite, over TLS or in plain HTTP as the client sends them); any other is
 * tunnelled untouched. */
static void do_connect(gw_server *s, net_req *nr, const gw_dest *d) {
  const gw_config *c = s->cfg;
  if (s->ca &&
      polite__url_watch_connect(c->watch.v, c->watch.n, d->host, d->port)) {
    char err[256];
    SSL_CTX *ctx = polite__net_ca_ctx_for(s->ca, d->host, err, sizeof err);
    if (ctx == NULL) {
      char why[600];
      snprintf(why, sizeof why, "no certificate for %s: %s", d->host, err);
      connect_failed(s, nr, why);
      return;
    }
    if (polite__net_intercept(nr, ctx, d->host, d->port) != 0) {
      connect_failed(s, nr, "cannot start TLS");
      return;
    }
    polite__net_req_free(nr);
    return;
  }
  char dial[256], err[400];
  int port = d->port;
  polite__net_connect_to_map(s->cto, d->host, d->port, dial, sizeof dial,
                             &port);
  if (polite__net_tunnel(nr, polite__net_up_pool_dns(s->pool), dial, port,
                         tunnel_done, s, err, sizeof err) != 0)
    connect_failed(s, nr, err);
}

/* ---- Arrival ------------------------------------------------------------- */

/* The gateway's own endpoints: GET /__polite/metrics; nothing else. */
static void own_endpoint(gw_server *s, net_req *nr, const char *path) {
  int get = strcmp(nr->method, "GET") == 0 || strcmp(nr->method, "HEAD") == 0;
  size_t n = strcspn(path, "?");
  if (get && n == strlen(GW_OWN_PREFIX "metrics") &&
      strncmp(path, GW_OWN_PREFIX "metrics", n) == 0)
    polite__gw_metrics_answer_req(s, nr);
  else
    polite__gw_own_error(s, nr, 404, "not_found",
                         "polite gateway: its own endpoint is GET "
                         "/__polite/metrics");
  polite__net_req_free(nr);
}

/* A request for an upstream: refused outside --allow-host, forwarded
 * untouched when unwatched, else made polite. */
static void to_upstream(gw_server *s, net_req *nr, const gw_dest *d) {
  const gw_config *c = s->cfg;
  if (d->kind == GW_DEST_FORWARD && !host_allowed(c, d->host)) {
    polite__gw_own_error(s, nr, 403, "host_not_allowed",
                         "polite gateway: this host is not allowed "
                         "(--allow-host)");
    polite__net_req_free(nr);
    return;
  }
  gw_req *g = req_new(s, nr);
  if (g != NULL) {
    g->dest = *d;
    g->body = nr->body;
    nr->body = NULL; /* the gateway's now: moved into the attempt, or kept */
  }
  if (g == NULL || urls_of(g) != 0) {
    polite__gw_own_error(s, nr, 503, "out_of_memory",
                         "polite gateway: out of memory");
    if (g)
      polite__gw_req_free(g);
    else
      polite__net_req_free(nr);
    return;
  }
  const char *path = d->path; /* the client's, before a base URL's prefix */
  if (!polite__url_watch(c->watch.v, c->watch.n, g->url, path)) {
    g->passthrough = 1;
    s->passed.passed++;
    polite__gw_pass(g);
    return;
  }
  submit(g);
}

void polite__gw_on_request(void *ud, net_req *nr) {
  gw_server *s = ud;
  gw_dest d;
  polite__gw_dest(nr->method, nr->target, nr->origin_host, nr->origin_port,
                  nr->origin_plain, s->has_base ? &s->ubase : NULL, s->self,
                  &d);
  switch (d.kind) {
  case GW_DEST_OWN: own_endpoint(s, nr, d.path); return;
  case GW_DEST_CONNECT:
    if (!host_allowed(s->cfg, d.host)) {
      nr->keepalive = 0;
      polite__gw_own_error(s, nr, 403, "host_not_allowed",
                           "polite gateway: this host is not allowed "
                           "(--allow-host)");
      polite__net_req_free(nr);
      return;
    }
    do_connect(s, nr, &d);
    return;
  case GW_DEST_FORWARD:
  case GW_DEST_BASE: to_upstream(s, nr, &d); return;
  case GW_DEST_BAD:
  case GW_DEST_NONE: break;
  }
  char msg[300];
  snprintf(msg, sizeof msg, "polite gateway: %s", d.why);
  nr->keepalive = d.kind == GW_DEST_NONE;
  polite__gw_own_error(
      s, nr, 400, d.kind == GW_DEST_NONE ? "no_destination" : "bad_request",
      msg);
  polite__net_req_free(nr);
}

/* The client left before its answer ended: the engine withdraws the
 * request (its attempt, if any, is aborted) and its result frees it; one
 * never submitted (forwarded untouched) is freed now. */
void polite__gw_on_gone(void *ud, net_req *nr) {
  gw_server *s = ud;
  gw_req *g = nr->data;
  if (g == NULL) {
    polite__net_req_free(nr);
    return;
  }
  g->gone = 1;
  if (g->submitted && !g->resulted) {
    polite_engine_now now = polite__gw_now(s);
    polite_engine_withdraw(s->e, g->pr, "the client left", &now);
    return; /* on_result queued it: freed at the next turn */
  }
  if (!g->resulted)
    polite__gw_req_free(g); /* passthrough: nothing else holds it */
}

/* ---- Results and answers ---------------------------------------------- */

int polite__gw_make_reply(gw_req *g, const polite_result *r,
                          const char *account) {
  gw_reply *rep = malloc(sizeof *rep);
  if (rep == NULL)
    return -1;
  if (polite__gw_reply(r, account, rep) != 0) {
    polite__gw_reply_free(rep);
    free(rep);
    return -1;
  }
  g->reply = rep;
  return 0;
}

void polite__gw_on_result(void *ud, const polite_result *r) {
  gw_server *s = ud;
  gw_req *g = r->req->user;
  g->resulted = 1;
  g->pr = NULL; /* the engine frees it after this call */
  g->a = NULL;
  const char *acct = s->bo.scope_host ? g->dest.authority : NULL;
  if (!g->head_sent && !g->gone) {
    if (polite__gw_make_reply(g, r, acct) == 0) {
      polite__gw_seen_note(s->seen, g->method, g->url, g->reply->status,
                           r->retry_after_ms, polite_env_mono_us(s->env));
    }
    polite__gw_metrics_answer(s->m, g->reply ? g->reply->status : 0, 0,
                              r->outcome);
  } else {
    polite__gw_metrics_answer(s->m, r->status, 1, r->outcome);
  }
  polite__gw_done(s, g);
}

void polite__gw_answer(gw_req *g) {
  net_req *nr = g->nr;
  if (nr && nr->body == NULL && g->body && evbuffer_get_length(g->body) == 0) {
    /* Its body buffer, empty (none came, or it was sent), goes back to
     * net/, which keeps it for the connection's next request: one
     * evbuffer_new and evbuffer_free fewer per request. */
    nr->body = g->body;
    g->body = NULL;
  }
  if (nr && polite__net_req_attached(nr)) {
    if (g->head_sent)
      polite__net_req_end(nr, g->relay_ok);
    else if (g->reply)
      send_reply(nr, g->reply);
    else
      polite__net_req_end(nr, 0); /* no answer could be made: close */
  }
  polite__gw_req_free(g);
}
