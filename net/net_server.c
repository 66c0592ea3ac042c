/* polite net: the client side, our own HTTP/1.1 server on bufferevents:
 * keep-alive, pipelining answered in order, bounded heads and bodies,
 * deadlines, a connection limit that sheds idle connections first, and one
 * owner per request (net_server.h says who frees what). */
#define _GNU_SOURCE
#include <sys/queue.h> /* before libevent: its TAILQ macros */

#include "http_syntax.h"

#include "net_conn.h"
#include "net_head.h"

#include <arpa/inet.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Why not evhttp: it cannot do CONNECT, it reads a request head without a
 * limit and with a quadratic search, buffers whole bodies, and cost half
 * the throughput (docs/proxy.md, "Why this design"). Here one request of a
 * connection is read, decided and answered at a time; pipelined requests
 * wait in the input buffer (bounded by a read watermark), so their answers
 * leave in order without a queue. */

/* ---- The connection list (for the limit) --------------------------------- */

static void list_unlink(net_conn *c) {
  net_server *s = c->s;
  if (c->prev)
    c->prev->next = c->next;
  else
    s->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  else
    s->conns_tail = c->prev;
  c->prev = c->next = NULL;
}

static void list_append(net_conn *c) {
  net_server *s = c->s;
  c->prev = s->conns_tail;
  c->next = NULL;
  if (s->conns_tail)
    s->conns_tail->next = c;
  else
    s->conns = c;
  s->conns_tail = c;
}

/* Frees c. A request it holds that was handed to the owner is detached
 * and the owner told (on_gone), whatever state the connection was in: the
 * owner, not the connection, frees what it owns. One never handed out is
 * freed here. */
static void conn_free(net_conn *c) {
  net_server *s = c->s;
  list_unlink(c);
  s->nconns--;
  net_req *rq = c->cur;
  if (rq) {
    c->cur = NULL;
    rq->conn = NULL;
    if (rq->handed) {
      polite__net_pending_cancel(rq);
      s->cb.on_gone(s->ud, rq);
    } else {
      polite__net_req_free(rq);
    }
  }
  if (s->cb.on_conn_closed)
    s->cb.on_conn_closed(s->ud, c->id);
  if (c->timer)
    event_free(c->timer);
  polite__net_sniff_cancel(c);
  polite__net_conn_raw_stop(c);
  if (c->dest)
    bufferevent_free(c->dest);
  if (c->stage)
    evbuffer_free(c->stage);
  if (c->spare)
    evbuffer_free(c->spare);
  if (c->bev)
    bufferevent_free(c->bev);
  free(c);
}

static void arm(net_conn *c, int ms) {
  polite__net_event_add_ms(c->s->base, c->timer, ms);
}

void polite__net_conn_arm(net_conn *c, int ms) {
  arm(c, ms);
}

/* Frees c when it is done with; called last by every callback. */
/* Bytes written to c's client not yet in its socket. Behind TLS they may
 * have left the filter and still wait in the socket's own bufferevent:
 * freeing the connection then would lose the end of the last answer. */
static size_t unsent(net_conn *c) {
  struct bufferevent *under = bufferevent_get_underlying(c->bev);
  return evbuffer_get_length(bufferevent_get_output(c->bev)) +
         (under ? evbuffer_get_length(bufferevent_get_output(under)) : 0);
}

/* How often a closing TLS connection looks whether its socket took the
 * rest (no callback says so: the filter's fires when it hands its bytes
 * to the socket's bufferevent, not when that one drains). */
#define CLOSING_POLL_MS 10

static void settle(net_conn *c) {
  if (c->busy)
    return;
  if (c->state == C_DEAD || (c->state == C_CLOSING && unsent(c) == 0)) {
    conn_free(c);
    return;
  }
  polite__net_conn_raw_resume(c);
  if (c->state == C_CLOSING && c->origin_host[0] &&
      evbuffer_get_length(bufferevent_get_output(c->bev)) == 0 &&
      !c->closing_poll) {
    c->closing_poll = 1;
    c->closing_left_ms = c->s->bounds.idle_timeout_ms;
    arm(c, CLOSING_POLL_MS);
  }
}

static void close_after_write(net_conn *c) {
  c->state = C_CLOSING;
  bufferevent_disable(c->bev, EV_READ);
  polite__net_conn_raw_pause(c);
  event_del(c->timer);
}

/* ---- Answers without a request (the head itself was refused) ------------ */

/* Date header value on the server's wall clock, formatted once per
 * second. */
static const char *http_date(net_server *s) {
  int64_t now = polite_env_wall_ms(s->env) / 1000;
  if (now != s->date_s || s->date[0] == '\0') {
    time_t t = (time_t)now;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(s->date, sizeof s->date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    s->date_s = now;
  }
  return s->date;
}

/* A refused head: a short text answer, then close (RFC 9112 says the
 * connection cannot be trusted to frame another request). */
static void refuse(net_conn *c, int status, const char *why) {
  struct evbuffer *out = bufferevent_get_output(c->bev);
  evbuffer_add_printf(out,
                      "HTTP/1.1 %d %s\r\nServer: polite-proxy\r\nDate: "
                      "%s\r\nContent-Type: text/plain\r\nContent-Length: "
                      "%zu\r\nConnection: close\r\n\r\npolite proxy: %s\n",
                      status, polite__net_reason(status), http_date(c->s),
                      strlen(why) + 15, why);
  if (c->cur) {
    polite__net_req_free(c->cur);
    c->cur = NULL;
  }
  close_after_write(c);
}

/* ---- Reading requests ---------------------------------------------------- */

static int add_header(void *arg, const char *name, size_t nlen,
                      const char *value, size_t vlen) {
  return polite__net_fields_add(arg, name, nlen, value, vlen);
}

/* A request for c, its fields and target not read yet: its head is parsed
 * straight into its own block (no list to move, no allocation per field).
 * NULL when out of memory. */
static net_req *req_alloc(net_conn *c) {
  net_req *r = malloc(sizeof *r);
  if (r == NULL)
    return NULL;
  /* Every member but the field block (its bytes are written before they
   * are read): a 1 KB memset per request saved. */
  memset(r, 0, offsetof(net_req, fields));
  polite__net_fields_init(&r->fields, r->block, sizeof r->block);
  r->in = &r->fields.list;
  r->conn = c;
  return r;
}

/* The rest of r from its parsed head h. -1 when out of memory. */
static int req_fill(net_conn *c, net_req *r, const net_req_head *h) {
  r->target = polite__net_fields_str(&r->fields, h->target, h->target_len);
  if (r->target == NULL)
    return -1;
  /* Whole arrays of the same size, not printf: once per request. */
  _Static_assert(sizeof r->method == sizeof h->method, "method");
  memcpy(r->method, h->method, sizeof r->method);
  r->minor = h->minor;
  r->keepalive = h->keepalive;
  r->t0_us = polite_env_mono_us(c->s->env);
  r->origin_plain = c->origin_plain; /* with origin_host, below */
  _Static_assert(sizeof r->peer == sizeof c->peer, "peer");
  _Static_assert(sizeof r->conn_id == sizeof c->id, "conn_id");
  _Static_assert(sizeof r->origin_host == sizeof c->origin_host, "origin");
  memcpy(r->peer, c->peer, sizeof r->peer);
  memcpy(r->conn_id, c->id, sizeof r->conn_id);
  memcpy(r->origin_host, c->origin_host, sizeof r->origin_host);
  r->origin_port = c->origin_port;
  return 0;
}

void polite__net_req_detach(net_req *rq) {
  net_conn *c = rq->conn;
  if (c && c->cur == rq)
    c->cur = NULL;
  rq->conn = NULL;
}

void polite__net_req_free(net_req *rq) {
  if (rq == NULL)
    return;
  polite__net_pending_cancel(rq);
  polite__net_req_detach(rq);
  if (rq->body)
    evbuffer_free(rq->body);
  polite__net_fields_free_str(&rq->fields, rq->target);
  polite__net_fields_reset(&rq->fields);
  free(rq);
}

int polite__net_req_attached(const net_req *rq) {
  return rq->conn != NULL;
}

/* Drops empty lines before a request line (RFC 9112 §2.2). Returns 0 when
 * it needs more bytes to tell. */
static int skip_empty_lines(struct evbuffer *in) {
  for (;;) {
    unsigned char two[2];
    ssize_t n = evbuffer_copyout(in, two, 2);
    if (n <= 0)
      return 0;
    if (two[0] == '\n')
      evbuffer_drain(in, 1);
    else if (two[0] == '\r' && n == 1)
      return 0;
    else if (two[0] == '\r' && two[1] == '\n')
      evbuffer_drain(in, 2);
    else
      return 1;
  }
}

static void start_body(net_conn *c, const net_req_head *h) {
  net_req *r = c->cur;
  /* The last request's buffer when it ended empty: one evbuffer_new and
   * evbuffer_free fewer per request on a kept-alive connection. */
  r->body = c->spare ? c->spare : evbuffer_new();
  c->spare = NULL;
  if (r->body == NULL) {
    refuse(c, 503, "out of memory");
    return;
  }
  if (!h->chunked && h->content_length <= 0) {
    c->state = C_WAIT;
    return;
  }
  if (h->content_length > c->s->bounds.body_max) {
    refuse(c, 413, "request body larger than --max-body");
    return;
  }
  polite__net_http_body_init(&c->body, h->chunked, h->content_length);
  if (h->expect_continue && h->minor >= 1)
    evbuffer_add(bufferevent_get_output(c->bev),
                 "HTTP/1.1 100 Continue\r\n\r\n", 25);
  c->state = C_BODY;
  arm(c, c->s->bounds.idle_timeout_ms);
}

/* Reads one request head. Returns 1 when it moved on (to C_BODY, C_WAIT or
 * a refusal), 0 when it needs more bytes. */
static int read_head(net_conn *c) {
  net_server *s = c->s;
  struct evbuffer *in = bufferevent_get_input(c->bev);
  if (c->scan == 0 && !skip_empty_lines(in))
    return 0;
  size_t len = evbuffer_get_length(in);
  if (!c->head_started) {
    c->head_started = 1;
    arm(c, s->bounds.header_timeout_ms);
  }
  size_t want =
      len < s->bounds.head.head_max + 3 ? len : s->bounds.head.head_max + 3;
  const char *d = (const char *)evbuffer_pullup(in, (ssize_t)want);
  if (d == NULL) {
    refuse(c, 503, "out of memory");
    return 1;
  }
  long end = polite__net_req_head_end(d, want, &c->scan, &s->bounds.head);
  if (end < 0) {
    refuse(c, 431, "request head larger than --max-head");
    return 1;
  }
  if (end == 0)
    return 0;
  net_req_head h;
  net_req *r = req_alloc(c);
  if (r == NULL) {
    refuse(c, 503, "out of memory");
    return 1;
  }
  if (polite__net_req_parse(&h, d, (size_t)end, &s->bounds.head, add_header,
                            &r->fields) < 0) {
    polite__net_req_free(r);
    refuse(c, h.status, h.error);
    return 1;
  }
  if (req_fill(c, r, &h) < 0) {
    polite__net_req_free(r);
    refuse(c, 503, "out of memory");
    return 1;
  }
  c->cur = r;
  if (c->eof || s->quiesced)
    c->cur->keepalive = 0;
  evbuffer_drain(in, (size_t)end);
  c->scan = 0;
  c->head_started = 0;
  event_del(c->timer);
  start_body(c, &h);
  c->fresh = c->state == C_WAIT;
  return 1;
}

static int body_append(void *arg, const char *data, size_t len) {
  return evbuffer_add(arg, data, len);
}

static const net_http_cb body_cb = {NULL, NULL, body_append};

/* Reads body bytes of c->cur. Returns 1 when the body is complete or was
 * refused, 0 when it needs more bytes. */
static int read_body(net_conn *c) {
  net_req *r = c->cur;
  struct evbuffer *in = bufferevent_get_input(c->bev);
  for (;;) {
    size_t len = evbuffer_get_length(in);
    if (c->body.state == NET_HTTP_DONE)
      break;
    if (len == 0)
      return 0;
    if (c->body.state == NET_HTTP_FIXED) {
      /* The common case moves the bytes' chains, copying nothing. */
      size_t n =
          len < (uint64_t)c->body.remaining ? len : (size_t)c->body.remaining;
      evbuffer_remove_buffer(in, r->body, n);
      c->body.remaining -= (int64_t)n;
      arm(c, c->s->bounds.idle_timeout_ms); /* a stall is what times out */
      if (c->body.remaining == 0)
        c->body.state = NET_HTTP_DONE;
      continue;
    }
    size_t want = len < 65536 ? len : 65536;
    const char *d = (const char *)evbuffer_pullup(in, (ssize_t)want);
    ssize_t used =
        d ? polite__net_http_feed(&c->body, d, want, &body_cb, r->body) : -1;
    if (used < 0) {
      refuse(c, 400, c->body.error ? c->body.error : "bad chunked body");
      return 1;
    }
    evbuffer_drain(in, (size_t)used);
    if ((int64_t)evbuffer_get_length(r->body) > c->s->bounds.body_max) {
      refuse(c, 413, "request body larger than --max-body");
      return 1;
    }
    if (used > 0) /* --idle-timeout counts stalls: progress re-arms it */
      arm(c, c->s->bounds.idle_timeout_ms);
    if (used == 0 && c->body.state != NET_HTTP_DONE)
      return 0; /* an incomplete chunk-size line */
  }
  if ((int64_t)evbuffer_get_length(r->body) > c->s->bounds.body_max) {
    refuse(c, 413, "request body larger than --max-body");
    return 1;
  }
  event_del(c->timer);
  c->state = C_WAIT;
  c->fresh = 1;
  return 1;
}

/* Reads and answers requests while whole ones are there. */
static void process(net_conn *c) {
  if (c->busy)
    return;
  c->busy = 1;
  for (;;) {
    if (c->state == C_HEAD) {
      if (!read_head(c))
        break;
    } else if (c->state == C_BODY) {
      if (!read_body(c))
        break;
    } else if (c->state == C_WAIT && c->fresh) {
      /* A request just read: decide and answer it. The answer may end at
       * once (own answers), which puts the connection back in C_HEAD. */
      c->fresh = 0;
      c->cur->handed = 1;
      c->s->cb.on_request(c->s->ud, c->cur);
    } else {
      break;
    }
  }
  if (c->state == C_HEAD && c->eof &&
      evbuffer_get_length(bufferevent_get_input(c->bev)) == 0)
    c->state = C_DEAD;
  else if ((c->state == C_HEAD || c->state == C_BODY) && c->eof)
    c->state = C_DEAD; /* a partial request that will never end */
  c->busy = 0;
}

void polite__net_conn_on_read(struct bufferevent *bev, void *arg) {
  (void)bev;
  net_conn *c = arg;
  process(c);
  settle(c);
}

static void on_write(struct bufferevent *bev, void *arg) {
  (void)bev;
  settle(arg);
}

void polite__net_conn_on_event(struct bufferevent *bev, short what, void *arg) {
  (void)bev;
  net_conn *c = arg;
  if (what & BEV_EVENT_CONNECTED)
    return; /* a TLS filter's handshake is done: requests follow */
  if (what & BEV_EVENT_EOF) {
    /* A half-closed client may still wait for its answers. */
    c->eof = 1;
    if (c->cur)
      c->cur->keepalive = 0;
    process(c);
    if (c->state == C_WAIT)
      return;
  }
  if (c->state != C_CLOSING || (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
    c->state = C_DEAD;
  settle(c);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  net_conn *c = arg;
  if (c->state == C_CLOSING && c->closing_poll && unsent(c) > 0 &&
      (c->closing_left_ms -= CLOSING_POLL_MS) > 0) {
    arm(c, CLOSING_POLL_MS); /* TLS: the socket has not taken it all yet */
    return;
  }
  /* Idle keep-alive, a head that took too long, a stalled body, a stalled
   * reader of the last answer. */
  c->state = C_DEAD;
  settle(c);
}

/* ---- Accepting, with the connection limit -------------------------------- */

static int idle(const net_conn *c) {
  return c->state == C_HEAD && !c->head_started &&
         evbuffer_get_length(bufferevent_get_input(c->bev)) == 0;
}

static int partial(const net_conn *c) {
  return c->state == C_HEAD || c->state == C_BODY;
}

/* At the limit, a new client is served by closing the least recently
 * active idle connection, else the oldest one still sending its request;
 * connections with a request being answered are kept. Returns 0 when room
 * was made. */
static int shed_one(net_server *s) {
  int (*const order[])(const net_conn *) = {idle, partial};
  for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
    for (net_conn *c = s->conns; c; c = c->next)
      if (!c->busy && order[k](c)) {
        s->shed++;
        conn_free(c);
        return 0;
      }
  return -1;
}

/* The peer's address, and "ADDR:PORT" for the judge. */
static void peer_name(const struct sockaddr *a, char *out, size_t size,
                      char *id, size_t idsize) {
  unsigned port = 0;
  snprintf(out, size, "-");
  if (a->sa_family == AF_INET) {
    inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, out,
              (socklen_t)size);
    port = ntohs(((const struct sockaddr_in *)a)->sin_port);
  } else if (a->sa_family == AF_INET6) {
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, out,
              (socklen_t)size);
    port = ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
  }
  snprintf(id, idsize, "%s:%u", out, port);
}

int polite__net_conn_accept(net_server *s, evutil_socket_t fd,
                            const struct sockaddr *addr) {
  if (s->nconns >= s->bounds.conns_max && shed_one(s) < 0) {
    close(fd);
    return -1;
  }
  net_conn *c = calloc(1, sizeof *c);
  if (c == NULL) {
    close(fd);
    return -1;
  }
  c->s = s;
  peer_name(addr, c->peer, sizeof c->peer, c->id, sizeof c->id);
  c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
  c->timer = evtimer_new(s->base, on_timer, c);
  c->stage = evbuffer_new();
  if (c->bev == NULL || c->timer == NULL || c->stage == NULL) {
    if (c->stage)
      evbuffer_free(c->stage);
    if (c->bev)
      bufferevent_free(c->bev);
    else
      close(fd);
    if (c->timer)
      event_free(c->timer);
    free(c);
    return -1;
  }
  s->nconns++;
  list_append(c);
  polite__net_conn_setup(c);
  c->state = C_HEAD;
  arm(c, s->bounds.idle_timeout_ms);
  /* Its owner may want to know (the proxy's judge follows a client onto a
   * new connection); on_conn_closed will match this call. */
  if (s->cb.on_conn_opened)
    s->cb.on_conn_opened(s->ud, c->id);
  return 0;
}

void polite__net_conn_setup(net_conn *c) {
  net_server *s = c->s;
  bufferevent_setcb(c->bev, polite__net_conn_on_read, on_write,
                    polite__net_conn_on_event, c);
  bufferevent_setwatermark(c->bev, EV_READ, 0, polite__net_conn_input_max(c));
  struct timeval wt = {s->bounds.idle_timeout_ms / 1000,
                       (s->bounds.idle_timeout_ms % 1000) * 1000};
  bufferevent_set_timeouts(c->bev, NULL, &wt);
  /* A plain client's reads are net/'s own (net_conn_read.c) once, right
   * after accepting; else (or failing that) the bufferevent reads. */
  int raw = c->origin_host[0] == '\0' && c->rev == NULL &&
            polite__net_conn_raw_start(c) == 0;
  bufferevent_enable(c->bev, raw ? EV_WRITE : EV_READ | EV_WRITE);
}

void polite__net_conn_idle(net_conn *c) {
  c->state = C_HEAD;
  c->scan = 0;
  c->head_started = 0;
  arm(c, c->s->bounds.idle_timeout_ms);
  if (!c->busy && evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
    process(c);
}

void polite__net_conn_settle(net_conn *c) {
  settle(c);
}

net_server *polite__net_server_new(struct event_base *base, const net_bounds *b,
                                   const net_server_cb *cb, void *ud,
                                   const polite_env *env) {
  net_server *s = calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->base = base;
  s->bounds = *b;
  s->cb = *cb;
  s->ud = ud;
  s->env = env;
  s->date_s = -1;
  return s;
}

void polite__net_server_free(net_server *s) {
  if (s == NULL)
    return;
  net_conn *c = s->conns;
  while (c) {
    net_conn *next = c->next; /* conn_free unlinks c only */
    conn_free(c);
    c = next;
  }
  if (s->listener)
    evconnlistener_free(s->listener);
  if (s->resume)
    event_free(s->resume);
  free(s);
}

void polite__net_quiesce(net_server *s) {
  s->quiesced = 1;
  net_conn *c = s->conns;
  while (c) {
    net_conn *next = c->next; /* conn_free unlinks c only */
    if (!c->busy && idle(c))
      conn_free(c);
    c = next;
  }
}

size_t polite__net_unsent(const net_server *s) {
  size_t n = 0;
  for (net_conn *c = s->conns; c; c = c->next)
    if (c->state != C_TUNNEL)
      n += unsent(c);
  return n;
}

size_t polite__net_conns(const net_server *s) {
  return s->nconns;
}

uint64_t polite__net_shed(const net_server *s) {
  return s->shed;
}

/* ---- Writing answers ----------------------------------------------------- */

/* Fields the framing below writes itself. */
static int framing_header(const char *name, size_t n) {
  return polite__ci_eq(name, n, "Content-Length") ||
         polite__ci_eq(name, n, "Transfer-Encoding") ||
         polite__ci_eq(name, n, "Connection");
}

/* The fields of h but the framing ones and those skip refuses. */
static void add_fields(net_wbuf *w, const struct evkeyvalq *h,
                       int (*skip)(const char *name, size_t n, void *arg),
                       void *arg) {
  for (struct evkeyval *f = h ? h->tqh_first : NULL; f; f = f->next.tqe_next) {
    size_t n = strlen(f->key); /* once, for the three looks at it */
    if (!framing_header(f->key, n) && !(skip && skip(f->key, n, arg)))
      polite__net_wbuf_field_n(w, f->key, n, f->value);
  }
}

void polite__net_req_head_fwd(
    net_req *r, int status, const char *reason, const struct evkeyvalq *own,
    const struct evkeyvalq *fwd,
    int (*skip)(const char *name, size_t n, void *arg), void *arg,
    const char *extra, int64_t length, int no_body, int flags) {
  net_conn *c = r->conn;
  if (c == NULL)
    return;
  c->resp_nobody = no_body;
  c->resp_chunked = !no_body && length < 0 && r->minor >= 1;
  c->resp_close = !r->keepalive || c->eof || c->s->quiesced ||
                  (!no_body && length < 0 && r->minor == 0);
  /* Staged, and sent with the first body bytes or the end: one write (one
   * TLS record on an intercepted connection) for a small answer. Gathered
   * on the stack first, without printf: a dozen fields per answer. */
  net_wbuf w;
  w.out = c->stage;
  w.n = 0;
  polite__net_wbuf_put(&w, "HTTP/1.1 ", 9);
  polite__net_wbuf_uint(&w, (uint64_t)(status > 0 ? status : 0));
  polite__net_wbuf_put(&w, " ", 1);
  polite__net_wbuf_str(&w, reason && reason[0] ? reason
                                               : polite__net_reason(status));
  polite__net_wbuf_put(&w, "\r\n", 2);
  if (flags & NET_HEAD_DATE)
    polite__net_wbuf_field(&w, "Date", http_date(c->s));
  add_fields(&w, own, NULL, NULL);
  add_fields(&w, fwd, skip, arg);
  if (extra)
    polite__net_wbuf_str(&w, extra);
  if (length >= 0 && status >= 200 && status != 204) {
    polite__net_wbuf_put(&w, "Content-Length: ", 16);
    polite__net_wbuf_uint(&w, (uint64_t)length);
    polite__net_wbuf_put(&w, "\r\n", 2);
  }
  if (c->resp_chunked)
    polite__net_wbuf_put(&w, "Transfer-Encoding: chunked\r\n", 28);
  if (c->resp_close)
    polite__net_wbuf_put(&w, "Connection: close\r\n", 19);
  else if (r->minor == 0)
    polite__net_wbuf_put(&w, "Connection: keep-alive\r\n", 24);
  polite__net_wbuf_put(&w, "\r\n", 2);
  polite__net_wbuf_flush(&w);
}

void polite__net_req_head(net_req *r, int status, const char *reason,
                          const struct evkeyvalq *headers, int64_t length,
                          int no_body, int flags) {
  polite__net_req_head_fwd(r, status, reason, headers, NULL, NULL, NULL, NULL,
                           length, no_body, flags);
}

/* Sends what is staged. On a plain socket with nothing queued it is
 * written at once: the bufferevent would first wait for the socket to be
 * writable (an epoll_ctl to add the write event, a loop turn, another to
 * remove it), a third of the syscalls of a small proxied request. What the
 * socket does not take is queued on the bufferevent as usual. */
static void flush_stage(net_conn *c) {
  struct evbuffer *out = bufferevent_get_output(c->bev);
  if (c->origin_host[0] == '\0' && evbuffer_get_length(out) == 0) {
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    while (fd >= 0 && evbuffer_get_length(c->stage) > 0)
      if (evbuffer_write(c->stage, fd) <= 0)
        break; /* EAGAIN, or an error the bufferevent will meet too */
  }
  evbuffer_add_buffer(out, c->stage);
}

void polite__net_req_body(net_req *r, struct evbuffer *data) {
  net_conn *c = r->conn;
  size_t n = evbuffer_get_length(data);
  if (c == NULL || c->resp_nobody || n == 0) {
    evbuffer_drain(data, n);
    return;
  }
  struct evbuffer *out = c->stage;
  if (c->resp_chunked) {
    char size[20]; /* 16 hex digits at most, then CRLF */
    size_t k = 0, at = sizeof size - 2, left = n;
    memcpy(size + at, "\r\n", 2);
    do {
      size[--at] = "0123456789abcdef"[left & 15];
      left >>= 4;
      k++;
    } while (left);
    evbuffer_add(out, size + at, k + 2);
  }
  evbuffer_add_buffer(out, data);
  if (c->resp_chunked)
    evbuffer_add(out, "\r\n", 2);
  flush_stage(c);
}

int polite__net_req_fd(const net_req *r) {
  return r->conn ? (int)bufferevent_getfd(r->conn->bev) : -1;
}

size_t polite__net_req_backlog(const net_req *r) {
  return r->conn ? evbuffer_get_length(bufferevent_get_output(r->conn->bev))
                 : 0;
}

void polite__net_req_end(net_req *r, int ok) {
  net_conn *c = r->conn;
  if (c == NULL)
    return;
  polite__net_req_detach(r);
  /* An ended request's body is read no more (the proxy moved or read it
   * before its answer; the gateway took it). */
  if (c->spare == NULL && r->body && evbuffer_get_length(r->body) == 0) {
    c->spare = r->body;
    r->body = NULL;
  }
  if (ok && c->resp_chunked)
    evbuffer_add(c->stage, "0\r\n\r\n", 5);
  flush_stage(c);
  if (!ok) {
    /* What arrived is flushed, then the connection closes: no terminating
     * chunk, and a Content-Length left unmet, so the client sees the
     * truncation instead of a well-formed short answer. */
    close_after_write(c);
  } else if (c->resp_close || c->s->quiesced) {
    close_after_write(c);
  } else {
    c->state = C_HEAD;
    list_unlink(c);
    list_append(c); /* most recently active last */
    arm(c, c->s->bounds.idle_timeout_ms);
  }
  if (!c->busy) {
    process(c);
    settle(c);
  }
}
