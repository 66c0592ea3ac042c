/* polite proxy: CONNECT in forward mode: a byte-for-byte tunnel to an
 * unwatched host, or TLS terminated with a leaf certificate of the local CA
 * for a watched one, whose requests then take the usual pipeline. */
#define _GNU_SOURCE
#include "px_conn.h"

#include <event2/bufferevent_ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* A tunnel side whose peer has this much unwritten is not read until the
 * peer's backlog halves: a slow reader costs the proxy at most ~1 MiB. */
#define TUNNEL_BACKLOG_MAX (1024 * 1024)

static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";

/* ---- The byte-for-byte tunnel -------------------------------------------- */

static void tunnel_end(px_conn *c) {
  c->state = C_DEAD;
  polite__px_conn_settle(c);
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
static void drained(px_conn *c, struct bufferevent *from,
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
  px_conn *c = arg;
  relay(b, c->dest);
}

static void peer_read(struct bufferevent *b, void *arg) {
  px_conn *c = arg;
  relay(b, c->bev);
}

static void client_write(struct bufferevent *b, void *arg) {
  px_conn *c = arg;
  drained(c, c->dest, b);
}

static void peer_write(struct bufferevent *b, void *arg) {
  px_conn *c = arg;
  drained(c, c->bev, b);
}

/* One side closed: what it sent is delivered to the other, then both close.
 * An error or a timeout closes both at once. */
static void side_event(px_conn *c, struct bufferevent *other, short what) {
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
  px_conn *c = arg;
  side_event(c, c->dest, what);
}

static void peer_event(struct bufferevent *b, short what, void *arg) {
  (void)b;
  px_conn *c = arg;
  side_event(c, c->bev, what);
}

/* A CONNECT waiting for its TCP connection. The request may lose its client
 * meanwhile (r->conn becomes NULL). */
typedef struct {
  px_req *r;
  struct bufferevent *peer;
} pending;

static void connected(struct bufferevent *b, short what, void *arg) {
  pending *p = arg;
  px_req *r = p->r;
  px_conn *c = r->conn;
  free(p);
  if (!(what & BEV_EVENT_CONNECTED) || c == NULL) {
    int err = EVUTIL_SOCKET_ERROR();
    bufferevent_free(b);
    if (c == NULL) {
      polite__px_finish(r);
      return;
    }
    char msg[400];
    snprintf(msg, sizeof msg, "polite proxy: cannot connect to %s:%d: %s",
             r->dest_host, r->dest_port,
             (what & BEV_EVENT_CONNECTED) ? "client gone"
             : err                        ? evutil_socket_error_to_string(err)
                                          : "failed");
    r->kind = PX_KIND_ERROR;
    r->keepalive = 0;
    polite__px_own_json_error(r, 502, "bad_gateway", msg);
    polite__px_send_own(r);
    return;
  }
  px_server *s = c->s;
  evbuffer_add(bufferevent_get_output(c->bev), established,
               sizeof established - 1);
  r->status = 200;
  snprintf(r->note, sizeof r->note, "tunnel");
  c->cur = NULL;
  r->conn = NULL;
  c->dest = b;
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
  bufferevent_setcb(c->bev, client_read, client_write, client_event, c);
  bufferevent_setcb(c->dest, peer_read, peer_write, peer_event, c);
  bufferevent_enable(c->dest, EV_READ | EV_WRITE);
  bufferevent_enable(c->bev, EV_READ | EV_WRITE);
  /* Bytes the client sent right after its CONNECT head (a TLS hello). */
  relay(c->bev, c->dest);
  polite__px_finish(r);
}

static void tunnel(px_req *r) {
  px_server *s = r->s;
  pending *p = calloc(1, sizeof *p);
  struct bufferevent *b =
      p ? bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE) : NULL;
  if (b == NULL) {
    free(p);
    r->kind = PX_KIND_ERROR;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              "polite proxy: out of memory");
    polite__px_send_own(r);
    return;
  }
  p->r = r;
  p->peer = b;
  bufferevent_setcb(b, NULL, NULL, connected, p);
  /* Without a DNS base libevent resolves with getaddrinfo, blocking the
   * loop once per CONNECT, as the upstream pool does per new host. */
  if (bufferevent_socket_connect_hostname(b, NULL, AF_UNSPEC, r->dest_host,
                                          r->dest_port) != 0) {
    /* It fails only before starting, so the callback never ran: p and b
     * are still ours. */
    free(p);
    bufferevent_free(b);
    char msg[400];
    snprintf(msg, sizeof msg, "polite proxy: cannot resolve %s", r->dest_host);
    r->kind = PX_KIND_ERROR;
    r->keepalive = 0;
    polite__px_own_json_error(r, 502, "bad_gateway", msg);
    polite__px_send_own(r);
  }
}

/* ---- Interception -------------------------------------------------------- */

static void intercept(px_req *r, SSL_CTX *ctx) {
  px_conn *c = r->conn;
  SSL *ssl = SSL_new(ctx);
  if (ssl == NULL) {
    r->kind = PX_KIND_ERROR;
    r->keepalive = 0;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              "polite proxy: cannot start TLS");
    polite__px_send_own(r);
    return;
  }
  evbuffer_add(bufferevent_get_output(c->bev), established,
               sizeof established - 1);
  struct bufferevent *tls = bufferevent_openssl_filter_new(
      c->s->base, c->bev, ssl, BUFFEREVENT_SSL_ACCEPTING,
      BEV_OPT_CLOSE_ON_FREE);
  r->status = 200;
  snprintf(r->note, sizeof r->note, "intercepted");
  c->cur = NULL;
  r->conn = NULL;
  if (tls == NULL) {
    SSL_free(ssl);
    r->kind = PX_KIND_ERROR;
    c->state = C_DEAD;
    polite__px_finish(r);
    return;
  }
  /* From here c reads and writes through TLS; the requests inside go
   * through the same pipeline as reverse-proxy traffic. */
  c->bev = tls;
  snprintf(c->origin_host, sizeof c->origin_host, "%s", r->dest_host);
  c->origin_port = r->dest_port;
  polite__px_conn_setup(c);
  polite__px_conn_idle(c);
  polite__px_finish(r);
}

void polite__px_connect(px_req *r, SSL_CTX *ctx) {
  if (r->conn == NULL) {
    polite__px_finish(r);
    return;
  }
  if (ctx)
    intercept(r, ctx);
  else
    tunnel(r);
}
