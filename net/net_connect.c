/* polite net: CONNECT: a byte-for-byte tunnel to the destination, or
 * intercepted (TLS terminated with a certificate the owner chose, or plain
 * HTTP read as it is: the first byte says which), whose requests then come
 * to the owner like any other. Names are resolved with evdns, never
 * blocking the loop. */
#define _GNU_SOURCE
#include "net_conn.h"
#include "net_upstream.h" /* net_lookup */

#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A tunnel side whose peer has this much unwritten is not read until the
 * peer's backlog halves: a slow reader costs the proxy at most ~1 MiB. */
#define TUNNEL_BACKLOG_MAX (1024 * 1024)

static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";

/* ---- The byte-for-byte tunnel -------------------------------------------- */

static void tunnel_end(net_conn *c) {
  c->state = C_DEAD;
  polite__net_conn_settle(c);
}

/* Moves what `from` read to `to`'s output. */
static void relay(struct bufferevent *from, struct bufferevent *to) {
  struct evbuffer *out = bufferevent_get_output(to);
  evbuffer_add_buffer(out, bufferevent_get_input(from));
  if (evbuffer_get_length(out) > TUNNEL_BACKLOG_MAX)
    bufferevent_disable(from, EV_READ);
}

/* `to` wrote some of its backlog: read `from` again, or end a tunnel
 * whose other side is gone once everything is written. */
static void drained(net_conn *c, struct bufferevent *from,
                    struct bufferevent *to) {
  if (evbuffer_get_length(bufferevent_get_output(to)) > 0 && c->tunnel_closing)
    return;
  if (c->tunnel_closing) {
    tunnel_end(c);
    return;
  }
  bufferevent_enable(from, EV_READ);
}

static void client_read(struct bufferevent *b, void *arg) {
  net_conn *c = arg;
  relay(b, c->dest);
}

static void peer_read(struct bufferevent *b, void *arg) {
  net_conn *c = arg;
  relay(b, c->bev);
}

static void client_write(struct bufferevent *b, void *arg) {
  net_conn *c = arg;
  drained(c, c->dest, b);
}

static void peer_write(struct bufferevent *b, void *arg) {
  net_conn *c = arg;
  drained(c, c->bev, b);
}

/* One side closed: what it sent is delivered to the other, then both close.
 * An error or a timeout closes both at once. */
static void side_event(net_conn *c, struct bufferevent *other, short what) {
  if ((what & BEV_EVENT_EOF) &&
      evbuffer_get_length(bufferevent_get_output(other)) > 0) {
    c->tunnel_closing = 1;
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_disable(c->dest, EV_READ);
    return;
  }
  tunnel_end(c);
}

static void client_event(struct bufferevent *b, short what, void *arg) {
  (void)b;
  net_conn *c = arg;
  side_event(c, c->dest, what);
}

static void peer_event(struct bufferevent *b, short what, void *arg) {
  (void)b;
  net_conn *c = arg;
  side_event(c, c->bev, what);
}

/* A CONNECT being set up: the lookup of the destination, then its TCP
 * connection. It belongs to the request (rq->pending) and goes with it:
 * polite__net_pending_cancel frees it whenever the client leaves first. */
typedef struct net_pending {
  net_req *rq;
  struct bufferevent *peer;
  net_lookup *lookup; /* in flight, or NULL */
  struct event *ev;   /* dials an IP literal from the loop */
  struct sockaddr_storage addr;
  socklen_t addrlen;
  int port;
  char where[300]; /* "host:port" in messages */
  net_tunnel_cb done;
  void *ud;
} net_pending;

void polite__net_pending_cancel(net_req *rq) {
  net_pending *p = rq->pending;
  if (p == NULL)
    return;
  rq->pending = NULL;
  polite__net_lookup_cancel(p->lookup);
  if (p->ev)
    event_free(p->ev);
  if (p->peer)
    bufferevent_free(p->peer);
  free(p);
}

/* Ends the setup with a failure: the owner answers rq. */
static void setup_failed(net_pending *p, const char *why) {
  net_req *rq = p->rq;
  char err[600];
  snprintf(err, sizeof err, "cannot connect to %s: %s", p->where, why);
  net_tunnel_cb done = p->done;
  void *ud = p->ud;
  polite__net_pending_cancel(rq);
  done(ud, rq, 0, err);
}

/* The tunnel is up: 200 to the client, then both sides relay. */
static void tunnel_start(net_pending *p) {
  net_req *rq = p->rq;
  net_conn *c = rq->conn;
  net_server *s = c->s;
  c->dest = p->peer;
  p->peer = NULL;
  net_tunnel_cb done = p->done;
  void *ud = p->ud;
  polite__net_pending_cancel(rq);
  evbuffer_add(bufferevent_get_output(c->bev), established,
               sizeof established - 1);
  polite__net_req_detach(rq);
  c->state = C_TUNNEL;
  event_del(c->timer);
  struct timeval idle = {s->bounds.idle_timeout_ms / 1000,
                         (s->bounds.idle_timeout_ms % 1000) * 1000};
  struct bufferevent *sides[2] = {c->bev, c->dest};
  for (int i = 0; i < 2; i++) {
    bufferevent_setwatermark(sides[i], EV_READ, 0, 0);
    bufferevent_setwatermark(sides[i], EV_WRITE, TUNNEL_BACKLOG_MAX / 2, 0);
    bufferevent_set_timeouts(sides[i], &idle, &idle);
  }
  polite__net_conn_raw_stop(c);
  bufferevent_setcb(c->bev, client_read, client_write, client_event, c);
  bufferevent_setcb(c->dest, peer_read, peer_write, peer_event, c);
  bufferevent_enable(c->dest, EV_READ | EV_WRITE);
  bufferevent_enable(c->bev, EV_READ | EV_WRITE);
  /* Bytes the client sent right after its CONNECT head (a TLS hello). */
  relay(c->bev, c->dest);
  done(ud, rq, 1, NULL);
}

static void connected(struct bufferevent *b, short what, void *arg) {
  (void)b;
  net_pending *p = arg;
  if (what & BEV_EVENT_CONNECTED) {
    tunnel_start(p);
    return;
  }
  int err = EVUTIL_SOCKET_ERROR();
  setup_failed(p, err ? evutil_socket_error_to_string(err) : "failed");
}

/* Starts the TCP connection to p->addr. */
static void dial(net_pending *p) {
  bufferevent_setcb(p->peer, NULL, NULL, connected, p);
  if (bufferevent_socket_connect(p->peer, (struct sockaddr *)&p->addr,
                                 (int)p->addrlen) != 0)
    setup_failed(p, strerror(errno ? errno : ECONNREFUSED));
}

/* An IP literal's dial, run from the loop (p->ev). */
static void dial_soon(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  dial(arg);
}

/* The lookup's answer (from the loop). */
static void resolved(void *arg, int rc, const struct sockaddr *addr,
                     socklen_t len) {
  net_pending *p = arg;
  p->lookup = NULL;
  if (rc != 0 || len > sizeof p->addr) {
    char why[200];
    snprintf(why, sizeof why, "cannot resolve the host: %s",
             evutil_gai_strerror(rc ? rc : EVUTIL_EAI_FAIL));
    setup_failed(p, why);
    return;
  }
  memcpy(&p->addr, addr, len);
  p->addrlen = len;
  dial(p);
}

/* Fills p->addr from an IP literal host. 0, or -1 when host is a name. */
static int literal(net_pending *p, const char *host) {
  struct sockaddr_in *a4 = (struct sockaddr_in *)&p->addr;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&p->addr;
  memset(&p->addr, 0, sizeof p->addr);
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)p->port);
    p->addrlen = sizeof *a4;
    return 0;
  }
  if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)p->port);
    p->addrlen = sizeof *a6;
    return 0;
  }
  return -1;
}

int polite__net_tunnel(net_req *rq, struct evdns_base *dns, const char *host,
                       int port, net_tunnel_cb done, void *ud, char *err,
                       size_t errlen) {
  net_conn *c = rq->conn;
  if (c == NULL || rq->pending) {
    snprintf(err, errlen, "the client is gone");
    return -1;
  }
  net_pending *p = calloc(1, sizeof *p);
  if (p == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  p->rq = rq;
  p->port = port;
  p->done = done;
  p->ud = ud;
  snprintf(p->where, sizeof p->where, strchr(host, ':') ? "[%s]:%d" : "%s:%d",
           host, port);
  p->peer = bufferevent_socket_new(c->s->base, -1, BEV_OPT_CLOSE_ON_FREE);
  p->ev = event_new(c->s->base, -1, 0, dial_soon, p);
  rq->pending = p;
  int is_literal = literal(p, host) == 0;
  if (!is_literal && dns && p->peer && p->ev)
    p->lookup = polite__net_lookup(c->s->base, dns, host, port, resolved, p);
  if (p->peer == NULL || p->ev == NULL || (!is_literal && p->lookup == NULL)) {
    snprintf(err, errlen, "cannot connect to %s: %s", p->where,
             dns == NULL ? "no resolver" : "out of memory");
    polite__net_pending_cancel(rq);
    return -1;
  }
  if (is_literal)
    event_active(p->ev, EV_TIMEOUT, 1); /* dial from the loop, not from here */
  return 0;
}

/* ---- Interception -------------------------------------------------------- */

/* The first byte of a TLS connection: a handshake record (RFC 8446 §5.1).
 * No HTTP method starts with it. */
#define TLS_HANDSHAKE 0x16

/* An intercepted CONNECT answered 200, waiting for the client's first
 * byte to say TLS or plain HTTP. The SSL is made up front so that a
 * certificate the CA's cache drops meanwhile stays alive (SSL_new takes a
 * reference to its context). */
typedef struct net_sniff {
  struct event *ev; /* the client's socket readable, once */
  SSL *ssl;
} net_sniff;

void polite__net_sniff_cancel(net_conn *c) {
  net_sniff *sn = c->sniff;
  if (sn == NULL)
    return;
  c->sniff = NULL;
  if (sn->ev)
    event_free(sn->ev);
  if (sn->ssl)
    SSL_free(sn->ssl);
  free(sn);
}

/* The first byte, peeked: what the server already read (a client that
 * did not wait for the 200), else the socket's, left in the kernel for the
 * TLS filter or the HTTP reader. 1 with *b set, 0 when none came yet, -1
 * when the client closed or failed. */
static int first_byte(net_conn *c, unsigned char *b) {
  if (evbuffer_copyout(bufferevent_get_input(c->bev), b, 1) == 1)
    return 1;
  ssize_t n = recv((int)bufferevent_getfd(c->bev), b, 1, MSG_PEEK);
  if (n == 1)
    return 1;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  return -1;
}

/* The client's socket is readable: TLS goes through a filter with the
 * certificate, anything else is read as HTTP as it is; then c reads
 * requests again. */
static void sniffed(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  net_conn *c = arg;
  net_sniff *sn = c->sniff;
  unsigned char b = 0;
  int got = first_byte(c, &b);
  if (got == 0) {
    event_add(sn->ev, NULL);
    return;
  }
  SSL *ssl = sn->ssl;
  sn->ssl = NULL;
  polite__net_sniff_cancel(c);
  struct bufferevent *tls = NULL;
  if (got == 1 && b == TLS_HANDSHAKE) {
    tls = bufferevent_openssl_filter_new(c->s->base, c->bev, ssl,
                                         BUFFEREVENT_SSL_ACCEPTING,
                                         BEV_OPT_CLOSE_ON_FREE);
    if (tls == NULL)
      SSL_free(ssl);
  } else {
    SSL_free(ssl);
    c->origin_plain = 1;
  }
  if (got < 0 || (b == TLS_HANDSHAKE && tls == NULL)) {
    c->state = C_DEAD;
    polite__net_conn_settle(c);
    return;
  }
  if (tls)
    c->bev = tls; /* from here c reads and writes through TLS */
  polite__net_conn_setup(c);
  polite__net_conn_idle(c);
  polite__net_conn_settle(c);
}

int polite__net_intercept(net_req *rq, SSL_CTX *ctx, const char *host,
                          int port) {
  net_conn *c = rq->conn;
  net_sniff *sn = c ? calloc(1, sizeof *sn) : NULL;
  if (sn == NULL)
    return -1;
  sn->ssl = SSL_new(ctx);
  sn->ev =
      event_new(c->s->base, bufferevent_getfd(c->bev), EV_READ, sniffed, c);
  if (sn->ssl == NULL || sn->ev == NULL) {
    c->sniff = sn;
    polite__net_sniff_cancel(c);
    return -1;
  }
  /* net/ reads nothing more until the first byte is known: the raw reads
   * stop and the bufferevent does not read (it still writes the 200). */
  polite__net_conn_raw_stop(c);
  bufferevent_disable(c->bev, EV_READ);
  evbuffer_add(bufferevent_get_output(c->bev), established,
               sizeof established - 1);
  polite__net_req_detach(rq);
  c->sniff = sn;
  c->state = C_SNIFF;
  snprintf(c->origin_host, sizeof c->origin_host, "%s", host);
  c->origin_port = port;
  polite__net_conn_arm(c, c->s->bounds.idle_timeout_ms);
  if (evbuffer_get_length(bufferevent_get_input(c->bev)) > 0)
    event_active(sn->ev, EV_READ, 1); /* decided from the loop, not here */
  else
    event_add(sn->ev, NULL);
  return 0;
}
