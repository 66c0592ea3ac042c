/* polite proxy: upstream HTTP/1.1 client over TCP or TLS (keep-alive pool,
 * response parser, body streaming, a reason for every failure). */
#define _GNU_SOURCE
#include "net_upstream.h"
#include "net_http.h"
#include "net_server.h" /* polite__net_event_add_ms */
#include "net_tls.h"
#include "net_up_int.h"

#include <errno.h>
#include <event2/dns.h>
#include <event2/http.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* Seconds an exchange may wait for upstream bytes. */
#define EXCHANGE_TIMEOUT_S 120
/* Seconds a new connection may take to connect and finish its TLS
 * handshake: an upstream that accepts and then says nothing gets a 502,
 * not a hang. */
#define CONNECT_TIMEOUT_S 10

/* Records why the current exchange fails, for polite__net_up_error. The
 * text ends up in a JSON string the server writes without escaping, so
 * quotes, backslashes and control bytes are blanked. */
void polite__net_up_set_error(net_upstream *u, const char *fmt, ...) {
  int n =
      snprintf(u->err, sizeof u->err, "polite proxy: upstream %s: ", u->where);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof u->err)
    vsnprintf(u->err + n, sizeof u->err - (size_t)n, fmt, ap);
  va_end(ap);
  for (char *p = u->err; *p; p++)
    if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
      *p = '?';
}

const char *polite__net_up_error(const net_upstream *u) {
  return u->err[0] ? u->err : "upstream failed";
}

unsigned polite__net_up_active(const net_upstream *u) {
  return u->active + u->expected; /* an upstream awaited is kept too */
}

/* An upstream for host:port with no address yet. */
net_upstream *polite__net_up_alloc(struct event_base *base, const char *host,
                                   int port, SSL_CTX *tls, char *err,
                                   size_t errlen) {
  net_upstream *u = calloc(1, sizeof *u);
  if (u == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  u->base = base;
  u->port = port;
  u->queue_tail = &u->queue;
  snprintf(u->host, sizeof u->host, "%s", host);
  snprintf(u->dial, sizeof u->dial, "%s", host);
  snprintf(u->where, sizeof u->where, strchr(host, ':') ? "[%s]:%d" : "%s:%d",
           host, port);
  if (tls && SSL_CTX_up_ref(tls) != 1) {
    snprintf(err, errlen, "cannot use the TLS context");
    free(u);
    return NULL;
  }
  u->tls = tls;
  return u;
}

/* Resolves u->dial now with getaddrinfo (blocking: at start, or for an IP
 * literal, which needs no lookup). 0, or -1 with err. */
int polite__net_up_resolve_now(net_upstream *u, char *err, size_t errlen) {
  char ps[16];
  snprintf(ps, sizeof ps, "%d", u->port);
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(u->dial, ps, &hints, &ai);
  if (rc != 0 || ai == NULL) {
    snprintf(err, errlen, "cannot resolve upstream host '%s': %s", u->dial,
             gai_strerror(rc));
    return -1;
  }
  memcpy(&u->addr, ai->ai_addr, ai->ai_addrlen);
  u->addrlen = ai->ai_addrlen;
  u->resolved = 1;
  freeaddrinfo(ai);
  return 0;
}

net_upstream *polite__net_up_new_tls(struct event_base *base, const char *host,
                                     int port, SSL_CTX *tls, char *err,
                                     size_t errlen) {
  return polite__net_up_new_via(base, NULL, host, port, host, port, tls, err,
                                errlen);
}

net_upstream *polite__net_up_new(struct event_base *base, const char *host,
                                 int port, char *err, size_t errlen) {
  return polite__net_up_new_tls(base, host, port, NULL, err, errlen);
}

static void idle_remove(upconn *c) {
  if (!c->idle)
    return;
  if (c->prev)
    c->prev->next = c->next;
  else
    c->u->idle = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->prev = c->next = NULL;
  c->idle = 0;
  c->u->n_idle--;
}

void polite__net_up_idle_push(upconn *c) {
  c->prev = NULL;
  c->next = c->u->idle;
  if (c->next)
    c->next->prev = c;
  c->u->idle = c;
  c->idle = 1;
  c->u->n_idle++;
}

static void conn_close(upconn *c) {
  idle_remove(c);
  if (c->rev)
    event_free(c->rev);
  if (c->wev)
    event_free(c->wev);
  if (c->pause_ev)
    event_free(c->pause_ev);
  if (c->ssl) {
    /* No close_notify (the upstream needs none), but marked as shut down:
     * SSL_free of a connection that is not would make its session (shared
     * with u->session) non-resumable. A fatal TLS error has already done
     * so where it should. */
    SSL_set_shutdown(c->ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
    SSL_free(c->ssl);
  }
  if (c->fd >= 0)
    close(c->fd);
  if (c->in)
    evbuffer_free(c->in);
  if (c->out)
    evbuffer_free(c->out);
  if (c->body)
    evbuffer_free(c->body);
  free(c);
}

void polite__net_up_free(net_upstream *u) {
  if (u == NULL)
    return;
  while (u->idle)
    conn_close(u->idle);
  if (u->warm_ev)
    event_free(u->warm_ev);
  polite__net_lookup_cancel(u->lookup);
  SSL_SESSION_free(u->session);
  SSL_CTX_free(u->tls);
  free(u);
}

void polite__net_up_exch_free(exch *x) {
  if (x->held)
    evbuffer_free(x->held);
  free(x->copy);
  polite__net_fields_reset(&x->headers);
  free(x);
}

static void on_read(evutil_socket_t fd, short what, void *arg);
static void on_write(evutil_socket_t fd, short what, void *arg);

/* Ends the exchange on connection c; the connection is kept only when the
 * response ended cleanly and both sides allow keep-alive. */
static void finish(upconn *c, int ok) {
  exch *x = c->x;
  c->x = NULL;
  int keep = ok && x->p.keepalive && x->p.state == NET_HTTP_DONE &&
             evbuffer_get_length(c->in) == 0 &&
             evbuffer_get_length(c->out) == 0;
  const net_up_handler *h = x->h;
  void *arg = x->arg;
  polite__net_up_exch_free(x);
  if (c->paused) {
    event_del(c->pause_ev);
    c->paused = 0;
  }
  c->u->active--;
  if (keep && c->ssl && !SSL_session_reused(c->ssl)) {
    /* TLS 1.3 tickets arrive after the handshake: by now we have one. */
    SSL_SESSION *sess = SSL_get1_session(c->ssl);
    if (sess) {
      SSL_SESSION_free(c->u->session);
      c->u->session = sess;
    }
  }
  if (keep && c->u->n_idle < NET_UP_IDLE_MAX) {
    c->reused = 1;
    polite__net_up_arm(c); /* idle: watched for a close, until its timeout */
    polite__net_up_idle_push(c);
  } else {
    conn_close(c);
  }
  h->on_done(arg, ok);
}

/* Sends x's kept copy again, on another connection (x->retried is set, so
 * no copy is kept of it). The copy is used up. 0, or -1. */
static int resend(net_upstream *u, exch *x) {
  struct evbuffer *req = evbuffer_new();
  int rc = -1;
  if (req != NULL && evbuffer_add(req, x->copy, x->copy_n) == 0) {
    free(x->copy);
    x->copy = NULL;
    rc = polite__net_up_start(u, x, req);
  }
  free(x->copy);
  x->copy = NULL;
  if (req != NULL)
    evbuffer_free(req);
  return rc;
}

/* A kept-alive connection that closed before answering: send the request
 * again on a fresh connection, once. Returns 1 when the exchange was taken
 * over (c is then freed), 0 when the caller must fail it. */
static int try_retry(upconn *c) {
  exch *x = c->x;
  if (x == NULL || x->got_bytes || !c->reused || x->copy == NULL || x->retried)
    return 0;
  net_upstream *u = c->u;
  c->x = NULL;
  conn_close(c);
  x->retried = 1;
  if (resend(u, x) != 0) {
    const net_up_handler *h = x->h;
    void *arg = x->arg;
    polite__net_up_exch_free(x);
    u->active--;
    h->on_done(arg, 0);
  }
  return 1;
}

static void fail(upconn *c) {
  if (try_retry(c))
    return;
  finish(c, 0);
}

/* A failure of connection c (NULL-safe on the exchange): the exchange, if
 * any, fails with the reason already recorded; an idle one just closes. */
static void conn_fail(upconn *c) {
  if (c->x)
    fail(c);
  else
    conn_close(c);
}

static void arm_read(upconn *c, int seconds) {
  polite__net_event_add_ms(c->u->base, c->rev, seconds * 1000);
}

void polite__net_up_arm(upconn *c) {
  arm_read(c, c->connecting || c->handshaking ? CONNECT_TIMEOUT_S
              : c->x                          ? EXCHANGE_TIMEOUT_S
                                              : NET_UP_IDLE_TIMEOUT_S);
}

/* TLS writes: what SSL_write takes now; the rest waits for the socket
 * (WANT_WRITE) or for the next read (WANT_READ: on_read flushes). */
static int flush_tls(upconn *c) {
  while (evbuffer_get_length(c->out) > 0) {
    size_t n = evbuffer_get_length(c->out);
    if (n > 64 * 1024)
      n = 64 * 1024;
    const unsigned char *p = evbuffer_pullup(c->out, (ssize_t)n);
    ERR_clear_error();
    int w = p ? SSL_write(c->ssl, p, (int)n) : -1;
    if (w > 0) {
      evbuffer_drain(c->out, (size_t)w);
      continue;
    }
    int e = SSL_get_error(c->ssl, w);
    if (e == SSL_ERROR_WANT_WRITE) {
      event_add(c->wev, NULL);
      return 0;
    }
    if (e == SSL_ERROR_WANT_READ)
      return 0;
    char why[256];
    polite__net_tls_describe(c->ssl, w, why, sizeof why);
    polite__net_up_set_error(c->u, "sending the request failed: %s", why);
    return -1;
  }
  return 0;
}

/* Writes what it can now; arms the write event for the rest. Nothing is
 * written before the connection (and its handshake) is up. */
static int flush_out(upconn *c) {
  if (c->connecting || c->handshaking)
    return 0;
  if (c->ssl)
    return flush_tls(c);
  while (evbuffer_get_length(c->out) > 0) {
    int n = evbuffer_write(c->out, c->fd);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        break;
      polite__net_up_set_error(c->u, "sending the request failed: %s",
                               strerror(errno));
      return -1;
    }
    if (n == 0)
      break;
  }
  if (evbuffer_get_length(c->out) > 0)
    event_add(c->wev, NULL);
  return 0;
}

/* Sets up TLS on a new connection: SNI (for names; RFC 6066 forbids it for
 * addresses), the name or address the certificate must carry, and the
 * session to resume. */
static int tls_setup(upconn *c) {
  net_upstream *u = c->u;
  unsigned char bin[16];
  int is_ip = inet_pton(AF_INET, u->host, bin) == 1 ||
              inet_pton(AF_INET6, u->host, bin) == 1;
  c->ssl = SSL_new(u->tls);
  if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1)
    return -1;
  SSL_set_connect_state(c->ssl);
  if (is_ip) {
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), u->host) != 1)
      return -1;
  } else if (SSL_set_tlsext_host_name(c->ssl, u->host) != 1 ||
             SSL_set1_host(c->ssl, u->host) != 1) {
    return -1;
  }
  if (u->session)
    SSL_set_session(c->ssl, u->session);
  c->handshaking = 1;
  return 0;
}

/* Drives the client handshake. Returns 0 (done, or waiting for the
 * socket) or -1 with the reason recorded. */
static int tls_handshake(upconn *c) {
  ERR_clear_error(); /* SSL_get_error reads the queue: only ours in it */
  int r = SSL_connect(c->ssl);
  if (r == 1) {
    c->handshaking = 0;
    polite__net_up_arm(c); /* a warm one waits idle for its exchange */
    return flush_out(c);
  }
  int e = SSL_get_error(c->ssl, r);
  if (e == SSL_ERROR_WANT_READ)
    return 0; /* rev is armed for the whole connection */
  if (e == SSL_ERROR_WANT_WRITE) {
    event_add(c->wev, NULL);
    return 0;
  }
  char why[300];
  polite__net_tls_describe(c->ssl, r, why, sizeof why);
  polite__net_up_set_error(c->u, "%s", why);
  return -1;
}

upconn *polite__net_up_conn_new(net_upstream *u) {
  upconn *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->u = u;
  c->fd =
      socket(u->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  c->in = evbuffer_new();
  c->out = evbuffer_new();
  c->body = evbuffer_new();
  if (c->fd < 0 || c->in == NULL || c->out == NULL || c->body == NULL)
    goto bad;
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->rev = event_new(u->base, c->fd, EV_READ | EV_PERSIST, on_read, c);
  c->wev = event_new(u->base, c->fd, EV_WRITE, on_write, c);
  if (c->rev == NULL || c->wev == NULL)
    goto bad;
  if (u->tls && tls_setup(c) < 0)
    goto bad;
  /* Even a connect that succeeds at once goes through on_write, which
   * starts the handshake: a failure then reaches on_done from the loop,
   * never from inside polite__net_up_send. */
  if (connect(c->fd, (struct sockaddr *)&u->addr, u->addrlen) != 0 &&
      errno != EINPROGRESS)
    goto bad;
  c->connecting = 1;
  return c;
bad:
  polite__net_up_set_error(u, "cannot open a connection: %s",
                           errno ? strerror(errno) : "out of memory");
  ERR_clear_error();
  conn_close(c);
  return NULL;
}

int polite__net_up_start(net_upstream *u, exch *x, struct evbuffer *req) {
  if (!u->resolved)
    return polite__net_up_queue(u, x, req);
  /* A connected one first; else one still opening (a warm one) is sooner
   * than a new one. */
  upconn *c = u->idle;
  while (c && (c->connecting || c->handshaking))
    c = c->next;
  if (c == NULL)
    c = u->idle;
  if (c)
    idle_remove(c);
  else if ((c = polite__net_up_conn_new(u)) == NULL)
    return -1;
  c->x = x;
  x->c = c;
  if (c->reused && !x->retried) {
    /* Keep a copy: this connection may have been closed by the upstream
     * just now, and then the request is sent again on a fresh one. */
    size_t n = evbuffer_get_length(req);
    x->copy = malloc(n ? n : 1);
    if (x->copy) {
      x->copy_n = n;
      evbuffer_copyout(req, x->copy, n);
    }
  }
  evbuffer_add_buffer(c->out, req);
  if (c->connecting) {
    arm_read(c, CONNECT_TIMEOUT_S);
    event_add(c->wev, NULL);
    return 0;
  }
  polite__net_up_arm(c); /* a warm one may still be in its handshake */
  if (flush_out(c) < 0) {
    /* A kept-alive connection the upstream closed: EPIPE/ECONNRESET. Sent
     * again once on a fresh connection, here and not through try_retry,
     * whose failure calls on_done: this runs inside polite__net_up_send,
     * which reports a failure by returning it. */
    int again = c->reused && x->copy && !x->retried;
    c->x = NULL;
    x->c = NULL;
    conn_close(c);
    int rc = -1;
    if (again) {
      x->retried = 1;
      rc = resend(u, x);
    }
    free(x->copy);
    x->copy = NULL;
    return rc;
  }
  return 0;
}

net_up_exch *polite__net_up_send(net_upstream *u, struct evbuffer *req,
                                 int is_head, int retryable,
                                 const net_up_handler *h, void *arg) {
  exch *x = malloc(sizeof *x);
  if (x == NULL) {
    polite__net_up_set_error(u, "out of memory");
    return NULL;
  }
  /* All but the field block, whose bytes are written before read. */
  memset(x, 0, offsetof(exch, headers));
  x->h = h;
  x->arg = arg;
  x->u = u;
  polite__net_http_init(&x->p, is_head);
  x->retried = !retryable; /* not retryable: as if the retry were used */
  polite__net_fields_init(&x->headers, x->block, sizeof x->block);
  u->active++;
  if (polite__net_up_start(u, x, req) != 0) {
    u->active--;
    polite__net_up_exch_free(x);
    return NULL;
  }
  return x;
}

void polite__net_up_cancel(net_up_exch *x) {
  if (x == NULL)
    return;
  upconn *c = x->c;
  net_upstream *u = c ? c->u : x->u;
  if (c) {
    c->x = NULL;
    conn_close(c);
  } else {
    /* Still waiting for the address: out of the queue. */
    exch **pp = &u->queue;
    while (*pp && *pp != x)
      pp = &(*pp)->qnext;
    if (*pp) {
      *pp = x->qnext;
      if (u->queue_tail == &x->qnext)
        u->queue_tail = pp;
    }
  }
  u->active--;
  polite__net_up_exch_free(x);
}

static void on_write(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  upconn *c = arg;
  if (c->connecting) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err == EINPROGRESS || err == EALREADY) {
      event_add(c->wev, NULL);
      return;
    }
    c->connecting = 0;
    if (err != 0) {
      polite__net_up_set_error(c->u, "cannot connect: %s", strerror(err));
      conn_fail(c);
      return;
    }
    if (!c->ssl)
      polite__net_up_arm(c);
  }
  if ((c->handshaking ? tls_handshake(c) : flush_out(c)) < 0)
    conn_fail(c);
}

static int cb_header(void *arg, const char *name, size_t nlen,
                     const char *value, size_t vlen) {
  exch *x = arg;
  return polite__net_fields_add(&x->headers, name, nlen, value, vlen);
}

static int cb_head(void *arg, int status, const char *reason, size_t rlen,
                   int minor) {
  (void)rlen;
  exch *x = arg;
  /* A chunked body is re-framed for the client: its Content-Length (if the
   * upstream sent both) would be wrong. */
  if (x->p.has_te)
    polite__net_fields_remove(&x->headers, "Content-Length");
  x->h->on_head(x->arg, status, reason, minor, &x->headers.list);
  return 0;
}

static int cb_body(void *arg, const char *data, size_t len) {
  exch *x = arg;
  if (len == 0)
    return 0;
  struct evbuffer *b = x->c->body;
  if (evbuffer_add(b, data, len) != 0)
    return -1;
  x->h->on_body(x->arg, b);
  evbuffer_drain(b, evbuffer_get_length(b));
  return 0;
}

static const net_http_cb parse_cb = {cb_header, cb_head, cb_body};

/* Back-pressure: while the receiver is busy, stop reading this socket
 * (the upstream then blocks on a full TCP window) and check again soon. */
static void pause_tick(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  upconn *c = arg;
  if (c->x == NULL || !c->paused)
    return;
  if (c->x->h->busy(c->x->arg)) {
    struct timeval tick = {0, 20000};
    event_add(c->pause_ev, &tick);
    return;
  }
  c->paused = 0;
  arm_read(c, EXCHANGE_TIMEOUT_S);
}

static void pause_if_busy(upconn *c) {
  exch *x = c->x;
  if (c->paused || x->h->busy == NULL || !x->h->busy(x->arg))
    return;
  if (c->pause_ev == NULL &&
      (c->pause_ev = evtimer_new(c->u->base, pause_tick, c)) == NULL)
    return; /* no timer: keep reading rather than stall for ever */
  event_del(c->rev);
  c->paused = 1;
  struct timeval tick = {0, 20000};
  event_add(c->pause_ev, &tick);
}

/* Feeds newly read bytes (data, n; n may be 0) after whatever c->in
 * still holds. In the common case c->in is empty and the bytes are parsed
 * where they were read, with no copy; only an incomplete line (or bytes
 * after the response) is kept in c->in. Returns 1 when the exchange ended
 * (finish or fail was called: c may be gone), 0 when more bytes are needed. */
static int parse(upconn *c, const char *data, size_t n) {
  exch *x = c->x;
  int from_in = evbuffer_get_length(c->in) > 0;
  if (from_in) {
    if (n > 0 && evbuffer_add(c->in, data, n) != 0) {
      polite__net_up_set_error(c->u, "out of memory");
      finish(c, 0);
      return 1;
    }
    n = evbuffer_get_length(c->in);
    data = (const char *)evbuffer_pullup(c->in, -1);
  }
  if (n > 0) {
    ssize_t used =
        data ? polite__net_http_feed(&x->p, data, n, &parse_cb, x) : -1;
    if (used < 0) {
      polite__net_up_set_error(c->u, "the response is not valid HTTP/1.1 (%s)",
                               x->p.error ? x->p.error : "out of memory");
      finish(c, 0);
      return 1;
    }
    if (from_in)
      evbuffer_drain(c->in, (size_t)used);
    else if ((size_t)used < n &&
             evbuffer_add(c->in, data + used, n - (size_t)used) != 0) {
      polite__net_up_set_error(c->u, "out of memory");
      finish(c, 0);
      return 1;
    }
  }
  if (x->p.state == NET_HTTP_DONE) {
    finish(c, 1);
    return 1;
  }
  pause_if_busy(c);
  return 0;
}

/* The connection closed (EOF, or TLS close_notify) during exchange x. */
static void on_eof(upconn *c) {
  exch *x = c->x;
  if (parse(c, NULL, 0))
    return;
  if (polite__net_http_eof(&x->p)) {
    finish(c, 1);
    return;
  }
  polite__net_up_set_error(
      c->u, "%s",
      x->got_bytes ? "the connection closed in the middle of the response"
                   : "the upstream closed the connection without "
                     "answering");
  fail(c);
}

static void on_timeout(upconn *c) {
  if (c->x == NULL) {
    conn_close(c); /* idle (or warm) past NET_UP_IDLE_TIMEOUT_S */
    return;
  }
  if (c->connecting)
    polite__net_up_set_error(c->u, "timed out connecting (%d s)",
                             CONNECT_TIMEOUT_S);
  else if (c->handshaking)
    polite__net_up_set_error(c->u, "timed out in the TLS handshake (%d s)",
                             CONNECT_TIMEOUT_S);
  else
    polite__net_up_set_error(c->u, "timed out waiting for the response (%d s)",
                             EXCHANGE_TIMEOUT_S);
  finish(c, 0);
}

/* TLS: one SSL_read per readiness event, like the plain path (no read-ahead:
 * what OpenSSL has not read stays in the socket and the event fires again).
 * An idle connection may receive records that carry no data (TLS 1.3
 * session tickets): it stays idle. */
static void read_tls(upconn *c, char *buf, size_t size) {
  ERR_clear_error();
  int n = SSL_read(c->ssl, buf, (int)size);
  if (n > 0) {
    if (c->x == NULL) {
      conn_close(c); /* bytes nobody asked for: of no more use */
      return;
    }
    c->x->got_bytes = 1;
    if (parse(c, buf, (size_t)n) == 0 && evbuffer_get_length(c->out) > 0 &&
        flush_out(c) < 0)
      fail(c);
    return;
  }
  int e = SSL_get_error(c->ssl, n);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    if (c->x && evbuffer_get_length(c->out) > 0 && flush_out(c) < 0)
      fail(c);
    return;
  }
  if (c->x == NULL) {
    conn_close(c);
    return;
  }
  if (e == SSL_ERROR_ZERO_RETURN) {
    on_eof(c);
    return;
  }
  char why[300];
  polite__net_tls_describe(c->ssl, n, why, sizeof why);
  polite__net_up_set_error(c->u, "reading the response failed: %s", why);
  fail(c);
}

static void on_read(evutil_socket_t fd, short what, void *arg) {
  /* One loop, one thread: a static buffer serves every connection. */
  static char buf[64 * 1024];
  upconn *c = arg;
  if (what & EV_TIMEOUT) {
    on_timeout(c);
    return;
  }
  if (c->connecting)
    return; /* on_write reports how the connect ended */
  if (c->handshaking) {
    if (tls_handshake(c) < 0)
      conn_fail(c);
    return;
  }
  if (c->ssl) {
    read_tls(c, buf, sizeof buf);
    return;
  }
  if (c->x == NULL) {
    /* Idle: the upstream closed it (or sent garbage). Either way it is of
     * no more use. */
    conn_close(c);
    return;
  }
  /* One read per readiness event: if more is waiting, the (level-
   * triggered) event fires again; no extra read just to see EAGAIN. */
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      polite__net_up_set_error(c->u, "reading the response failed: %s",
                               strerror(errno));
      fail(c);
    }
    return;
  }
  if (n == 0) {
    on_eof(c);
    return;
  }
  c->x->got_bytes = 1;
  parse(c, buf, (size_t)n);
}
