/* polite proxy: a lean HTTP/1.1 client for the upstream, on raw sockets in the
 * proxy's event loop. */
#ifndef POLITE_NET_UPSTREAM_H
#define POLITE_NET_UPSTREAM_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/keyvalq_struct.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

/* Why not evhttp's client: it re-arms epoll on every state change and waits
 * for EPOLLOUT before each write, about 8 extra syscalls per request. Here
 * a connection registers its read event once, requests are written at
 * once, and reads size themselves without FIONREAD. */

typedef struct net_upstream net_upstream;
/* One request-response exchange in flight (net_up_send's handle). */
typedef struct net_up_exch net_up_exch;

/* Callbacks for one exchange. Exactly one on_done ends it; on_head comes
 * before any on_body. */
typedef struct {
  /* The response head. `headers` (hop-by-hop included; Content-Length
   * removed when the body is chunked) is valid during the call only. */
  void (*on_head)(void *arg, int status, const char *reason, int http_minor,
                  struct evkeyvalq *headers);
  /* Body bytes, de-chunked; the callee drains `data`. */
  void (*on_body)(void *arg, struct evbuffer *data);
  /* ok = 1: the whole response arrived. ok = 0: it failed (before on_head:
   * nothing was received; after: the body is cut short);
   * polite__net_up_error says why. */
  void (*on_done)(void *arg, int ok);
  /* May be NULL. Returns 1 while the receiver cannot take more body (its
   * client is slow): the upstream socket is then not read (back-pressure
   * reaches the upstream through TCP) and busy is asked again every 20 ms
   * until it returns 0. */
  int (*busy)(void *arg);
} net_up_handler;

/* Resolves host:port once (getaddrinfo: blocking). Returns NULL with a
 * message in err. Connections are plain TCP. */
net_upstream *polite__net_up_new(struct event_base *base, const char *host,
                                 int port, char *err, size_t errlen);
/* The same over TLS when tls is not NULL (a client context, e.g. from
 * polite__net_tls_client_ctx; the upstream takes a reference of its own):
 * SNI is host (unless it is an IP literal), and the certificate must name
 * host (DNS name or IP address) unless tls verifies nothing. The last TLS
 * session is resumed by new connections. */
net_upstream *polite__net_up_new_tls(struct event_base *base, const char *host,
                                     int port, SSL_CTX *tls, char *err,
                                     size_t errlen);
/* The same, but host (unless it is an IP literal, or dns is NULL) is
 * resolved with evdns when the first exchange starts, without blocking the
 * loop; exchanges wait for the answer. A failed lookup fails the waiting
 * exchanges ("cannot resolve the host: ...") and is tried again by the
 * next one; a successful one is kept for the upstream's life. dns must
 * outlive u. */
struct evdns_base;
net_upstream *polite__net_up_new_dns(struct event_base *base,
                                     struct evdns_base *dns, const char *host,
                                     int port, SSL_CTX *tls, char *err,
                                     size_t errlen);
/* Closes the idle connections. Exchanges still in flight must have ended
 * (polite__net_up_active() == 0). */
void polite__net_up_free(net_upstream *u); /* cancels a lookup in flight */

/* Why the exchange failed, for the 502 body: valid during on_done(arg, 0)
 * and after polite__net_up_send returned -1, until the next exchange on u
 * fails. One line without quotes or backslashes, e.g. "upstream
 * api.example.com:443: certificate verify failed: self-signed certificate",
 * "... cannot connect: Connection refused", "... timed out connecting
 * (10 s)". Never contains the request (no secrets). */
const char *polite__net_up_error(const net_upstream *u);
/* Exchanges sent on u whose on_done has not been called yet, and
 * requests announced with polite__net_up_expect (u is in use while any
 * wait: a pool does not drop it). */
unsigned polite__net_up_active(const net_upstream *u);

/* Keep-alive bounds: at most NET_UP_IDLE_MAX idle connections per
 * upstream (an answer past that closes its connection), each closed after
 * NET_UP_IDLE_TIMEOUT_S unused (docs/gateway.md, "Upstream connections"). */
#define NET_UP_IDLE_MAX 64
#define NET_UP_IDLE_TIMEOUT_S 30
/* Warm connections: while requests are announced for u, up to this many
 * connections are kept idle or opening ahead of them, so that a paced
 * request is sent at its time, not a connect (and TLS handshake) later. */
#define NET_UP_SPARE_MAX 2

/* Announces (delta 1) a request that will be sent on u when its time
 * comes, or withdraws one (-1: sent, or given up). While any is announced,
 * a deferred check (after the caller's current turn, so that a request
 * sent at once needs none) opens connections until min(announced,
 * NET_UP_SPARE_MAX) are idle or opening. u must have an address or a
 * lookup under way; without one nothing is opened. */
void polite__net_up_expect(net_upstream *u, int delta);

/* Sends one request: `req` holds the request line, headers, blank line and
 * body, and is drained. `is_head`: the response has no body. `retryable`:
 * the request may be sent again on a fresh connection when a kept-alive one
 * turns out to be closed before any response byte (idempotent methods).
 * Returns the exchange (h->on_done will be called, unless it is cancelled
 * first), or NULL when it cannot even start (nothing is called). */
net_up_exch *polite__net_up_send(net_upstream *u, struct evbuffer *req,
                                 int is_head, int retryable,
                                 const net_up_handler *h, void *arg);
/* Ends exchange x at once, whatever it was doing (waiting for the address,
 * connecting, streaming the answer): its connection is closed (a half-read
 * answer leaves it unusable), no callback of x is called again, x is freed.
 * For a receiver that went away (a client that left mid-answer). */
void polite__net_up_cancel(net_up_exch *x);

/* The same as polite__net_up_new_dns, but the connections go to
 * dial_host:dial_port (resolved like host) while TLS still names host: SNI
 * and the certificate check are host's (--connect-to). */
net_upstream *polite__net_up_new_via(struct event_base *base,
                                     struct evdns_base *dns, const char *host,
                                     int port, const char *dial_host,
                                     int dial_port, SSL_CTX *tls, char *err,
                                     size_t errlen);

/* ---- net_lookup.c: a name lookup that never blocks the loop ------------ */

typedef struct net_lookup net_lookup;
/* The answer: rc 0 and the first address, or an EVUTIL_EAI_* code (addr
 * NULL; evutil_gai_strerror says why). */
typedef void (*net_lookup_cb)(void *arg, int rc, const struct sockaddr *addr,
                              socklen_t len);
/* Looks host:port up with dns (resolv.conf and the hosts file); done is
 * called once, from the loop, never from inside this call, unless the
 * lookup is cancelled first. NULL when out of memory (done is not
 * called). */
net_lookup *polite__net_lookup(struct event_base *base, struct evdns_base *dns,
                               const char *host, int port, net_lookup_cb done,
                               void *arg);
/* Ends a lookup whose answer is no longer wanted: done is not called. */
void polite__net_lookup_cancel(net_lookup *l);

/* ---- net_connect_to.c: --connect-to HOST:PORT:HOST2:PORT2 ---------------- */

/* curl's --connect-to: a connection to HOST:PORT goes to HOST2:PORT2
 * instead, while the request, SNI and certificate still name HOST. An
 * empty HOST or PORT matches any; an empty HOST2 or PORT2 keeps the
 * original; IPv6 literals are bracketed ("[::1]:443::8443"). Rules are
 * tried in the order given; the first that matches wins. At most
 * NET_CONNECT_TO_MAX rules. */
typedef struct net_connect_to net_connect_to;
#define NET_CONNECT_TO_MAX 1024

/* Appends the rule `spec` to *list (made on first use). Returns 0, or -1
 * with a message naming the problem in err. */
int polite__net_connect_to_add(net_connect_to **list, const char *spec,
                               char *err, size_t errlen);
/* Appends the n rules of specs to *list; a bad one is named on stderr after
 * `who` ("polite proxy: --connect-to: ..."). 0, or -1. */
int polite__net_connect_to_add_all(net_connect_to **list,
                                   const char *const *specs, size_t n,
                                   const char *who);
/* Where a connection to host:port goes: *dial_host (copied into a buffer
 * of dlen bytes) and *dial_port. Returns 1 when a rule matched, 0 when it
 * goes to host:port itself (copied too). host may be bracketed. */
int polite__net_connect_to_map(const net_connect_to *list, const char *host,
                               int port, char *dial_host, size_t dlen,
                               int *dial_port);
void polite__net_connect_to_free(net_connect_to *list);

/* ---- net_up_pool.c: upstreams by scheme, host and port ------------------- */

/* For the forward proxy: one net_upstream (with its keep-alive connections)
 * per (https, host, port), made on first use. https upstreams share one
 * client context (verification as polite__net_tls_client_ctx(cafile,
 * insecure), made on the first https use). At most NET_UP_POOL_MAX
 * upstreams; past that the least recently used one with no exchange in
 * flight is dropped. */
typedef struct net_up_pool net_up_pool;
#define NET_UP_POOL_MAX 256

/* cafile may be NULL (the system store); it is copied. cto (may be NULL,
 * borrowed: it must outlive the pool) sends connections elsewhere. NULL
 * when out of memory. */
net_up_pool *polite__net_up_pool_new(struct event_base *base,
                                     const char *cafile, int insecure,
                                     const net_connect_to *cto);
/* The upstream for https://host:port (https != 0) or http://host:port,
 * owned by the pool; host may be an IP literal, with or without brackets.
 * NULL with a message in err when the CA file cannot be loaded or the pool
 * is full of busy upstreams. Names are resolved with evdns (resolv.conf and
 * the hosts file; 5 s timeout, 2 attempts) when the first exchange starts,
 * never blocking the loop; a name that does not resolve fails that
 * exchange with "cannot resolve the host: ..." (polite__net_up_error). */
net_upstream *polite__net_up_pool_get(net_up_pool *p, int https,
                                      const char *host, int port, char *err,
                                      size_t errlen);
/* The pool's resolver (made on first use; NULL when evdns cannot start),
 * for other lookups of the same loop (a CONNECT tunnel's). */
struct evdns_base *polite__net_up_pool_dns(net_up_pool *p);
/* Frees every upstream (none may have an exchange in flight). */
void polite__net_up_pool_free(net_up_pool *p);

#endif
