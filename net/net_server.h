/* polite net: the HTTP/1.1 server both proxies stand on (listener,
 * connections, requests, answers, CONNECT). It knows no throttling rule: its
 * owner gets each request through a callbacks struct and answers it. */
#ifndef POLITE_NET_SERVER_H
#define POLITE_NET_SERVER_H

#include "net_http.h"

#include <polite/clock.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/keyvalq_struct.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

typedef struct net_server net_server;
typedef struct net_conn net_conn;

/* The server's bounds against hostile or careless clients; each has a flag
 * and a documented default in the owner's docs (docs/proxy.md, "Bounds"). */
typedef struct {
  net_limits head;       /* request head bytes and header count */
  int64_t body_max;      /* request body bytes */
  int header_timeout_ms; /* from a head's first byte to its end */
  int idle_timeout_ms;   /* keep-alive idle, a stalled body or reader */
  size_t conns_max;      /* client connections at once */
} net_bounds;

/* The bytes of a request's own field block: a net_req stays within
 * malloc's per-thread cache (net_http.h, net_fields). */
#define NET_REQ_BLOCK 480

/* One client request. The server fills the public part; from on_request on
 * the owner owns it and frees it with polite__net_req_free, once, whatever
 * happened to the client. */
typedef struct net_req {
  char method[16];
  char *target;  /* request-target as received */
  int minor;     /* the client's HTTP/1.minor */
  int keepalive; /* another request may follow (the owner may clear it) */
  struct evkeyvalq *in;  /* request headers */
  struct evbuffer *body; /* the whole request body, de-chunked (NULL after
                            polite__net_req_end when it was empty) */
  char peer[64];         /* the client's address */
  char conn_id[80];      /* its connection, "ADDR:PORT" */
  char origin_host[256]; /* inside an intercepted CONNECT: its host, else "" */
  int origin_port;
  int origin_plain; /* that CONNECT carries plain HTTP, not TLS */
  int64_t t0_us;    /* arrival, on the server's monotonic clock */
  void *data;       /* the owner's */
  /* Private to net/. */
  net_conn *conn; /* NULL once detached (answer ended, or client gone) */
  int handed;     /* given to the owner */
  struct net_pending *pending; /* a CONNECT being set up by net/ */
  net_fields fields;           /* `in` and `target` live in block */
  _Alignas(void *) char block[NET_REQ_BLOCK];
} net_req;

/* What the server calls. Each is called from the event loop, never from
 * inside a polite__net_* call made by the owner for the same request. */
typedef struct {
  /* A whole request (head and body) arrived: the owner answers it
   * (polite__net_req_head/body/end, or polite__net_tunnel/intercept for a
   * CONNECT) and frees it. */
  void (*on_request)(void *ud, net_req *rq);
  /* rq's client left (closed, reset or timed out) before rq's answer
   * ended; rq is detached (what would be sent is dropped). The owner must
   * cancel what it started for rq (an upstream exchange, a timer) and free
   * it, now or later. Called at most once per request. */
  void (*on_gone)(void *ud, net_req *rq);
  /* A client connection closed (its "ADDR:PORT"). May be NULL. */
  void (*on_conn_closed)(void *ud, const char *conn_id);
  /* A client connection was accepted (its "ADDR:PORT"), before any of its
   * requests; on_conn_closed follows for it. May be NULL (a struct
   * initialised without it has it NULL). */
  void (*on_conn_opened)(void *ud, const char *conn_id);
} net_server_cb;

/* The event base both servers run on: epoll's changelist, which folds the
 * add/remove pairs made within one loop turn into one epoll_ctl each (a
 * plain base when the backend cannot). NULL when out of memory. */
struct event_base *polite__net_base_new(void);

/* Adds ev (of base) with a timeout of ms milliseconds through libevent's
 * common timeouts: the events of one duration wait in a queue, so adding
 * and removing one is O(1) instead of a walk of the timer heap (five
 * timeouts are set per proxied request, each on a different connection
 * or request). An ordinary timeout when the base has no slot left. */
int polite__net_event_add_ms(struct event_base *base, struct event *ev, int ms);

/* A server on base with bounds b, calling cb with ud; env gives the clocks
 * (NULL: the real ones): Date headers and request arrival times. NULL when
 * out of memory. */
net_server *polite__net_server_new(struct event_base *base, const net_bounds *b,
                                   const net_server_cb *cb, void *ud,
                                   const polite_env *env);
/* Closes every connection (requests handed out get on_gone first) and the
 * listener. */
void polite__net_server_free(net_server *srv);
/* Listens on "ADDR:PORT" (port 0: any free one; "[v6]:port" too) with a
 * deep backlog. Writes the bound address as "ADDR:PORT" into bound.
 * Returns 0, or -1 with a message in err. */
int polite__net_listen(net_server *srv, const char *where, char *bound,
                       size_t boundlen, char *err, size_t errlen);
/* Stops accepting: the listener is closed (new connects are refused by the
 * kernel); connections already open go on. */
void polite__net_unlisten(net_server *srv);
/* How many client connections fit in the descriptor limit, two each (the
 * client's and its upstream's) plus `spare`: raises the soft limit toward
 * that when the hard one allows, and when even that is too low returns
 * fewer than `want` after a line on stderr naming `who` ("polite proxy")
 * and --max-connections. */
size_t polite__net_fit_conns(size_t want, unsigned spare, const char *who);
/* For a server that is stopping: closes the idle keep-alive connections
 * now, and every answer from now on ends its connection (Connection:
 * close), so that the clients still being answered leave after their
 * answer. */
void polite__net_quiesce(net_server *srv);
/* Bytes written to clients and not yet taken by their sockets, over every
 * connection: a server that stops waits for 0 before it closes them. */
size_t polite__net_unsent(const net_server *srv);
/* Client connections open now, and connections closed to make room. */
size_t polite__net_conns(const net_server *srv);
uint64_t polite__net_shed(const net_server *srv);

/* ---- Answers ------------------------------------------------------------ */

#define NET_HEAD_DATE 1 /* add a Date header (an answer the owner made) */

/* The response head: status line, headers (framing fields are left out and
 * written here), framing. `length` is the body's length, or -1 when
 * unknown (then chunked for HTTP/1.1 clients, else until close); no_body
 * for HEAD, 1xx, 204 and 304. Sent with the first body bytes or the end.
 * A no-op once rq is detached. */
void polite__net_req_head(net_req *rq, int status, const char *reason,
                          const struct evkeyvalq *headers, int64_t length,
                          int no_body, int flags);
/* The head of a forwarded answer without copying its fields: own (the
 * owner's, may be NULL), then the upstream's fwd but those skip(name,
 * strlen(name), arg) refuses (hop-by-hop fields), then extra, raw lines
 * ("Via: 1.1 polite\r\n", may be NULL); framing as polite__net_req_head. */
void polite__net_req_head_fwd(
    net_req *rq, int status, const char *reason, const struct evkeyvalq *own,
    const struct evkeyvalq *fwd,
    int (*skip)(const char *name, size_t n, void *arg), void *arg,
    const char *extra, int64_t length, int no_body, int flags);
/* Body bytes (drained from data), framed as the head said. */
void polite__net_req_body(net_req *rq, struct evbuffer *data);
/* The end of the answer. ok = 0: the body was cut short; the connection is
 * closed without a terminating chunk so that the truncation shows. Detaches
 * rq (its connection goes on with the next request); rq is not freed. */
void polite__net_req_end(net_req *rq, int ok);
/* Bytes written to rq's client but not yet taken by its socket (0 when
 * detached): a receiver over a threshold pauses its source. */
size_t polite__net_req_backlog(const net_req *rq);
/* The socket of rq's connection (-1 when detached). */
int polite__net_req_fd(const net_req *rq);
/* 1 while rq's client is still there. */
int polite__net_req_attached(const net_req *rq);
/* Frees rq (detaching it first if need be). NULL is a no-op. */
void polite__net_req_free(net_req *rq);

/* ---- CONNECT ------------------------------------------------------------ */

/* How a tunnel's setup ended: ok = 1, the client got "200 Connection
 * Established", rq is detached and its connection relays bytes; ok = 0,
 * rq is still attached and the owner answers it (err says why, for a 502).
 * Never called after on_gone for rq. */
typedef void (*net_tunnel_cb)(void *ud, net_req *rq, int ok, const char *err);

/* Connects to host:port (resolved with dns, never blocking the loop; an IP
 * literal needs none) and relays the bytes of rq's connection to it, at
 * most 1 MiB queued per direction. 0 (done will be called), or -1 with err
 * when it could not even start (done is not called). */
struct evdns_base;
int polite__net_tunnel(net_req *rq, struct evdns_base *dns, const char *host,
                       int port, net_tunnel_cb done, void *ud, char *err,
                       size_t errlen);
/* Answers 200 to rq's CONNECT and looks at the first byte the client then
 * sends: a TLS handshake record is terminated with ctx (a certificate for
 * rq's host), anything else is read as plain HTTP/1.1 (undici's ProxyAgent
 * tunnels http:// URLs so). Either way later requests on it come through
 * on_request with origin_host/origin_port set, and origin_plain says which
 * it was. Returns 0 (rq detached), or -1 (rq still attached: answer it). */
int polite__net_intercept(net_req *rq, SSL_CTX *ctx, const char *host,
                          int port);

#endif
