/* polite net: the upstream client's internals, shared by net_upstream.c
 * (connections, TLS, parsing) and px_up_dns.c (lazy resolution). */
#ifndef POLITE_NET_UP_INT_H
#define POLITE_NET_UP_INT_H

#include "net_http.h"
#include "net_upstream.h"

#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

typedef struct net_up_exch {
  const net_up_handler *h;
  struct net_upstream *u;
  struct upconn *c; /* the connection it is on; NULL while queued */
  void *arg;
  /* The request's bytes, kept for one retry (malloc'ed; NULL: none). A
   * flat copy, not an evbuffer: one malloc instead of an evbuffer_new, its
   * chain and its free, for nearly every request (a reused connection). */
  char *copy;
  size_t copy_n;
  int retried;
  int got_bytes;
  net_http_parser p;
  struct evbuffer *held;     /* the request, while the host is being resolved */
  struct net_up_exch *qnext; /* exchanges waiting for the address */
  net_fields headers;        /* the answer's, in block (net_fields.c) */
  _Alignas(void *) char block[768]; /* an exch stays within malloc's cache */
} exch;

typedef struct upconn {
  net_upstream *u;
  evutil_socket_t fd;
  struct event *rev; /* EV_READ | EV_PERSIST, for the connection's life */
  struct event *wev; /* EV_WRITE: connect completion and partial writes */
  struct evbuffer *in;
  struct evbuffer *out;
  /* The answer's body bytes on their way to on_body: the connection's, not
   * one per exchange (an evbuffer_new and _free fewer per request). */
  struct evbuffer *body;
  int connecting;
  SSL *ssl;        /* NULL: plain TCP */
  int handshaking; /* TLS: the handshake has not finished */
  int reused;
  exch *x;
  struct upconn *prev, *next; /* idle list */
  int idle;
  struct event *pause_ev; /* back-pressure: polls the receiver while paused */
  int paused;
} upconn;

struct net_upstream {
  struct event_base *base;
  struct sockaddr_storage addr;
  socklen_t addrlen;
  upconn *idle;         /* most recently used first */
  SSL_CTX *tls;         /* NULL: plain TCP; else one reference of ours */
  SSL_SESSION *session; /* the last TLS session, resumed by new connections */
  char host[256];       /* SNI and the name the certificate must carry */
  char dial[256];       /* where connections go (host, or --connect-to's) */
  char where[600];      /* "host:port" (and where it dials) in messages */
  char err[512];        /* why the exchange now failing failed */
  unsigned active;      /* exchanges in flight */
  /* Lazy resolution (polite__net_up_new_dns): the address is looked up with
   * evdns when the first exchange starts, which waits in a queue. */
  int port;
  int resolved;
  struct evdns_base *dns;
  net_lookup *lookup; /* the lookup in flight, or NULL */
  exch *queue, **queue_tail;
  /* Warm connections (net_up_warm.c): requests about to be sent here, and
   * the deferred check that keeps a spare connection open for them. */
  unsigned n_idle;   /* on the idle list, warm ones still opening included */
  unsigned expected; /* polite__net_up_expect's count */
  struct event *warm_ev;
};

/* A new connection to u, connecting (NULL with the reason recorded). */
upconn *polite__net_up_conn_new(net_upstream *u);
/* Puts c on u's idle list (most recently used first). */
void polite__net_up_idle_push(upconn *c);
/* Arms c's read event with the timeout of its state: connecting or in the
 * handshake, in an exchange, or idle. */
void polite__net_up_arm(upconn *c);
/* Records why the current exchange fails, for polite__net_up_error. */
void polite__net_up_set_error(net_upstream *u, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* An upstream for host:port with no address yet (tls: a reference is
 * taken). NULL with err. */
net_upstream *polite__net_up_alloc(struct event_base *base, const char *host,
                                   int port, SSL_CTX *tls, char *err,
                                   size_t errlen);
void polite__net_up_exch_free(exch *x);
/* Resolves u->dial:u->port now (getaddrinfo). 0, or -1 with err. */
int polite__net_up_resolve_now(net_upstream *u, char *err, size_t errlen);
/* Starts exchange x with request req (drained) on an idle or new
 * connection, or queues it while u has no address. 0, or -1 with the
 * reason recorded (x is then the caller's). */
int polite__net_up_start(net_upstream *u, exch *x, struct evbuffer *req);
/* net_up_dns.c: queues x until the address is known, starting the lookup. */
int polite__net_up_queue(net_upstream *u, exch *x, struct evbuffer *req);

#endif
