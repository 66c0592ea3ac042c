/* polite gateway: the engine's transport: an attempt's request sent
 * upstream (net/'s client), its answer's head handed to the engine, a
 * 429/503/403 body read for it, the final answer relayed to the client as
 * it arrives (a server-sent-events stream is not held back), a dropped
 * answer's exchange cancelled, and the attempt's timeout. Also the
 * untouched forwarding of an unwatched request. */
#define _GNU_SOURCE
#include "gw_net.h"

#include "net_head.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More than this waiting for a slow client pauses reading the upstream
 * (net/ then stops reading its socket: back-pressure through TCP). */
#define CLIENT_BUFFER_MAX (4 * 1024 * 1024)
/* Header fields of an answer the engine is shown; the rest are relayed
 * but not read (a hostile upstream may send many). */
#define HEAD_FIELDS_MAX 256

static const net_up_handler handler;

/* ---- The request sent upstream ------------------------------------------ */

/* Methods whose requests carry a body, so that an empty one is sent with
 * Content-Length: 0 (as the client framed it). */
static int body_method(const char *m) {
  return !strcmp(m, "POST") || !strcmp(m, "PUT") || !strcmp(m, "PATCH");
}

/* g's request as bytes, into the server's scratch buffer (empty; net/
 * drains it when it sends: one buffer for every request, not an
 * evbuffer_new and free each): request line, the client's fields, the key
 * the engine adds (NULL: none), Via, the body's length, the body (copied
 * when kept for a retry, else moved: it is sent once). NULL out of
 * memory. */
static struct evbuffer *request_bytes(gw_req *g, const char *add_key) {
  struct evbuffer *out = g->s->reqbuf;
  size_t blen = g->body ? evbuffer_get_length(g->body) : 0;
  net_req_line rl = {
      .method = g->method,
      .path = g->target,
      .authority = g->dest.authority,
      .in = g->nr->in,
      .extra_name = add_key ? "Idempotency-Key" : NULL,
      .extra_value = add_key,
      .minor = g->nr->minor,
      .length = blen > 0 || body_method(g->method) ? (int64_t)blen : -1,
  };
  polite__net_request_head(out, &rl);
  if (blen > 0 && g->keep_body &&
      evbuffer_add(out, evbuffer_pullup(g->body, -1), blen) != 0) {
    evbuffer_drain(out, evbuffer_get_length(out));
    return NULL;
  }
  if (blen > 0 && !g->keep_body)
    evbuffer_add_buffer(out, g->body); /* sent once: not kept */
  return out;
}

net_upstream *polite__gw_upstream_of(gw_req *g, char *err, size_t errlen) {
  gw_server *s = g->s;
  if (g->dest.kind == GW_DEST_BASE)
    return g->up = s->up;
  /* The pool keeps an upstream only while a request is announced to it or
   * in flight on it. Between attempts (a retry's wait) it may be evicted
   * for another host, so a request that is neither is looked up again
   * rather than trusting the pointer of its last attempt. */
  if (g->up && (g->expecting || g->x))
    return g->up;
  g->up = polite__net_up_pool_get(s->pool, g->dest.https, g->dest.host,
                                  g->dest.port, err, errlen);
  return g->up;
}

/* Sends g's request; 0, or -1 with why in err. */
static int send_request(gw_req *g, const char *add_key, char *err,
                        size_t errlen) {
  net_upstream *u = polite__gw_upstream_of(g, err, errlen);
  if (u == NULL)
    return -1;
  struct evbuffer *b = request_bytes(g, add_key);
  if (b == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  int retryable = polite_method_idempotent(g->method) ||
                  (g->pr && g->pr->idempotency_key) || add_key;
  g->x = polite__net_up_send(u, b, strcmp(g->method, "HEAD") == 0, retryable,
                             &handler, g);
  evbuffer_drain(b, evbuffer_get_length(b)); /* empty for the next */
  if (g->expecting) { /* sent: a spare for the next, if any waits */
    g->expecting = 0;
    polite__net_up_expect(u, -1);
  }
  if (g->x == NULL) {
    snprintf(err, errlen, "%s", polite__net_up_error(u));
    return -1;
  }
  g->xs = X_SENT;
  return 0;
}

/* ---- The attempt's timer: its timeout, or a deferred cancel ------------- */

void polite__gw_attempt_stop(gw_req *g) {
  if (g->x)
    polite__net_up_cancel(g->x);
  g->x = NULL;
  g->xs = X_NONE;
  g->cancel_due = 0;
  if (g->timer)
    event_del(g->timer);
}

/* A dropped answer's exchange cannot be cancelled from inside net/'s
 * callback that delivered it (net/ goes on using it): the timer does it
 * from the loop, at once. */
static void cancel_soon(gw_req *g) {
  static const struct timeval now = {0, 0};
  g->cancel_due = 1;
  event_del(g->timer);
  event_add(g->timer, &now);
}

/* Ends g's attempt at the engine (before or while its body was read). */
static void end_attempt(gw_req *g, const char *error, int timed_out) {
  gw_server *s = g->s;
  polite_engine_attempt *a = g->a;
  g->a = NULL;
  g->xs = X_NONE;
  if (a == NULL)
    return;
  polite_engine_now now = polite__gw_now(s);
  polite_engine_end(s->e, a, error, timed_out, &now);
}

void polite__gw_on_timer(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  gw_req *g = arg;
  if (g->cancel_due) {
    g->cancel_due = 0;
    if (g->xs == X_DISCARD)
      polite__gw_attempt_stop(g);
    return;
  }
  /* The attempt's time ran out before its final head. */
  if (g->x)
    polite__net_up_cancel(g->x);
  g->x = NULL;
  end_attempt(g, "timed out waiting for the answer's head (--timeout)", 1);
  polite__gw_kick(g->s);
}

/* ---- The engine's transport --------------------------------------------- */

int polite__gw_io_start(void *ud, polite_engine_attempt *a,
                        const polite_engine_send *send, char *err,
                        size_t errlen) {
  gw_server *s = ud;
  gw_req *g = send->req->user;
  polite__gw_attempt_stop(g); /* a dropped answer still draining */
  if (g->first_start_us < 0) {
    g->first_start_us = polite_env_mono_us(s->env);
    polite__gw_metrics_queue_wait(s->m, g->first_start_us - g->arrival_us);
  }
  if (send_request(g, send->add_idempotency_key, err, errlen) != 0)
    return -1;
  polite__gw_metrics_attempt(s->m, send->attempt);
  g->a = a;
  polite_engine_attempt_set_private(a, g);
  if (send->timeout_ms > 0) {
    struct timeval tv = {(time_t)(send->timeout_ms / 1000),
                         (suseconds_t)((send->timeout_ms % 1000) * 1000)};
    event_add(g->timer, &tv);
  }
  return 0;
}

void polite__gw_io_abort(void *ud, polite_engine_attempt *a) {
  (void)ud;
  gw_req *g = polite_engine_attempt_private(a);
  if (g == NULL)
    return;
  polite__gw_attempt_stop(g);
  g->a = NULL;
  g->relay_ok = 0; /* a relay cut short closes the client's connection */
}

/* ---- The answer ---------------------------------------------------------- */

/* Sends the answer's head to g's client as the upstream sent it. A 429 or
 * 503 relayed is remembered, to know the client's retry of it. */
static void relay_head(gw_req *g, int status, const char *reason, int minor,
                       const struct evkeyvalq *h) {
  char via[NET_VIA_LINE_MAX];
  polite__net_via_line(via, polite__net_find(h, "Via"), minor);
  /* net/'s parser checked Content-Length and dropped it from a chunked
   * answer: it is the body's length here. */
  const char *cl = polite__net_find(h, "Content-Length");
  int64_t length = cl ? strtoll(cl, NULL, 10) : -1;
  int no_body = strcmp(g->method, "HEAD") == 0 || status < 200 ||
                status == 204 || status == 304;
  polite__net_req_head_fwd(
      g->nr, status, reason, NULL, h, polite__net_answer_skip,
      (void *)polite__net_find(h, "Connection"), via, length, no_body, 0);
  g->head_sent = 1;
  if (status == 429 || status == 503) {
    const char *ra = polite__net_find(h, "Retry-After");
    polite_retry_after p;
    polite_engine_now now = polite__gw_now(g->s);
    polite_retry_after_parse(ra ? ra : "", ra ? strlen(ra) : 0,
                             now.wall_ms / 1000, &p);
    polite__gw_seen_note(g->s->seen, g->method, g->url, status,
                         polite_retry_after_delay_ms(&p, now.wall_ms, -1),
                         now.mono_us);
  }
}

/* Keeps a 429/503/403's head while the engine reads its body. 0, or -1. */
static int keep_head(gw_req *g, int status, const char *reason, int minor,
                     const struct evkeyvalq *h) {
  g->rstatus = status;
  g->rminor = minor;
  snprintf(g->rreason, sizeof g->rreason, "%s", reason ? reason : "");
  g->rhead = malloc(sizeof *g->rhead);
  g->rbody = evbuffer_new();
  if (g->rhead == NULL || g->rbody == NULL)
    return -1;
  g->rhead->tqh_first = NULL;
  g->rhead->tqh_last = &g->rhead->tqh_first;
  for (const struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next)
    if (polite__net_field_add(g->rhead, kv->key, strlen(kv->key), kv->value,
                              strlen(kv->value)) != 0)
      return -1;
  return 0;
}

static void drop_kept(gw_req *g) {
  if (g->rhead) {
    polite__net_fields_clear(g->rhead);
    free(g->rhead);
  }
  if (g->rbody)
    evbuffer_free(g->rbody);
  g->rhead = NULL;
  g->rbody = NULL;
}

/* The engine decides on the body read so far (more: it goes on). RELAY:
 * the kept head and those bytes go to the client and the rest streams;
 * DROP: the exchange is cancelled (soon) and the engine retries. */
static void decide_body(gw_req *g, int more) {
  gw_server *s = g->s;
  polite_engine_now now = polite__gw_now(s);
  size_t len = evbuffer_get_length(g->rbody);
  const char *b = len ? (const char *)evbuffer_pullup(g->rbody, -1) : "";
  polite_engine_verdict v = polite_engine_body(s->e, g->a, b, len, more, &now);
  if (v == POLITE_ENGINE_RELAY) {
    g->xs = X_RELAYING;
    event_del(g->timer);
    relay_head(g, g->rstatus, g->rreason, g->rminor, g->rhead);
    polite__net_req_body(g->nr, g->rbody);
  } else {
    g->a = NULL; /* the engine dropped it */
    g->xs = X_DISCARD;
    if (more)
      cancel_soon(g);
  }
  drop_kept(g);
}

static void up_head(void *arg, int status, const char *reason, int minor,
                    struct evkeyvalq *h) {
  gw_req *g = arg;
  if (g->passthrough) {
    g->xs = X_RELAYING;
    relay_head(g, status, reason, minor, h);
    return;
  }
  polite_header_field f[HEAD_FIELDS_MAX];
  size_t n = 0;
  for (const struct evkeyval *kv = h->tqh_first; kv && n < HEAD_FIELDS_MAX;
       kv = kv->next.tqe_next, n++) {
    f[n].name = kv->key;
    f[n].name_len = strlen(kv->key);
    f[n].value = kv->value;
    f[n].value_len = strlen(kv->value);
  }
  gw_server *s = g->s;
  polite_engine_now now = polite__gw_now(s);
  polite_engine_verdict v = polite_engine_head(s->e, g->a, status, f, n, &now);
  if (v == POLITE_ENGINE_RELAY) {
    g->xs = X_RELAYING;
    event_del(g->timer);
    relay_head(g, status, reason, minor, h);
  } else if (v == POLITE_ENGINE_READ_BODY) {
    g->xs = X_READING;
    if (keep_head(g, status, reason, minor, h) != 0) {
      drop_kept(g);
      g->xs = X_DISCARD;
      cancel_soon(g);
      end_attempt(g, "out of memory", 0);
      g->xs = X_DISCARD;
    }
  } else {
    g->a = NULL;
    g->xs = X_DISCARD;
    cancel_soon(g);
  }
  polite__gw_kick(s);
}

static void up_body(void *arg, struct evbuffer *data) {
  gw_req *g = arg;
  if (g->xs == X_READING) {
    size_t max = polite_engine_body_max(g->s->e);
    size_t have = evbuffer_get_length(g->rbody);
    size_t n = evbuffer_get_length(data);
    size_t take = n < max - have ? n : max - have;
    evbuffer_remove_buffer(data, g->rbody, take);
    if (evbuffer_get_length(g->rbody) >= max)
      decide_body(g, 1);
    polite__gw_kick(g->s);
  }
  if (g->xs == X_RELAYING)
    polite__net_req_body(g->nr, data);
  evbuffer_drain(data, evbuffer_get_length(data));
}

/* An untouched request's exchange ended: its answer ends at the next turn
 * (a 502 when none came). */
static void pass_done(gw_req *g, int ok) {
  g->resulted = 1;
  g->relay_ok = ok;
  if (!g->head_sent) {
    polite_result r;
    memset(&r, 0, sizeof r);
    r.outcome = POLITE_OUT_NETWORK_ERROR;
    r.error = g->up ? polite__net_up_error(g->up) : "no upstream";
    r.retry_after_ms = -1;
    (void)polite__gw_make_reply(g, &r, NULL);
  }
  polite__gw_done(g->s, g);
}

static void up_done(void *arg, int ok) {
  gw_req *g = arg;
  g->x = NULL; /* net/ freed it */
  if (!g->cancel_due)
    event_del(g->timer);
  const char *err = ok ? NULL : polite__net_up_error(g->up);
  if (g->passthrough) {
    g->xs = X_NONE;
    pass_done(g, ok);
    return;
  }
  switch (g->xs) {
  case X_SENT: end_attempt(g, err, 0); break;
  case X_READING:
    if (ok)
      decide_body(g, 0);
    if (g->xs == X_RELAYING)
      g->relay_ok = 1;
    end_attempt(g, ok ? NULL : err, 0);
    break;
  case X_RELAYING:
    g->relay_ok = ok;
    end_attempt(g, err, 0);
    break;
  case X_DISCARD:
  case X_NONE: g->xs = X_NONE; break;
  }
  polite__gw_kick(g->s);
}

static int up_busy(void *arg) {
  const gw_req *g = arg;
  return g->nr && polite__net_req_backlog(g->nr) > CLIENT_BUFFER_MAX;
}

static const net_up_handler handler = {up_head, up_body, up_done, up_busy};

void polite__gw_pass(gw_req *g) {
  char err[400];
  g->keep_body = 0;
  if (send_request(g, NULL, err, sizeof err) != 0) {
    char msg[480];
    snprintf(msg, sizeof msg, "polite gateway: %s", err);
    polite__gw_own_error(g->s, g->nr, 502, "bad_gateway", msg);
    polite__gw_req_free(g);
  }
}
