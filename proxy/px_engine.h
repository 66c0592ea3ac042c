/* polite proxy: the engine's shared state (server, connection, request) and
 * its internal functions. */
#ifndef POLITE_PX_ENGINE_H
#define POLITE_PX_ENGINE_H

#include "px.h"
#include "px_http.h"
#include "px_upstream.h"

#include <openssl/ssl.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

typedef struct px_conn px_conn;
typedef struct px_ca px_ca;

/* The server's bounds against hostile or careless clients (docs/proxy.md,
 * "Bounds"): each has a flag and a documented default. */
typedef struct {
  px_req_limits head;    /* request head bytes and header count */
  int64_t body_max;      /* request body bytes */
  int header_timeout_ms; /* from a head's first byte to its end */
  int idle_timeout_ms;   /* keep-alive idle, body reads, stalled writes */
  size_t conns_max;      /* client connections at once */
} px_bounds;

/* The proxy: one per process, alive for the whole run. */
typedef struct {
  px_config *cfg;
  struct event_base *base;
  px_state *st;
  uint64_t rng;
  uint64_t salt; /* per-process key for hashing Authorization values */
  FILE *log;
  int64_t started_wall_ms;
  px_bounds bounds;
  /* Upstream (reverse mode), split once at start. */
  char up_host[256];
  int up_port;
  char up_authority[300]; /* host[:port] for the Host header and URLs */
  char up_prefix[1024];   /* path prefix without the trailing '/' */
  px_upstream *up;
  px_up_pool *pool; /* forward mode: upstreams by scheme, host, port */
  px_ca *ca;        /* forward mode with --watch: the local CA */
  char listen_addr[128];
  struct evconnlistener *listener;
  struct event *resume; /* re-enables accepting after EMFILE */
  int64_t accept_warned_ms;
  px_conn *conns, *conns_tail; /* every client connection, oldest first */
  size_t nconns;
  uint64_t shed; /* connections closed to make room for new ones */
} px_server;

typedef enum { ACT_OWN = 0, ACT_FORWARD = 1 } px_action;

/* One client request from arrival to the last byte of its response. It may
 * outlive its connection (a client that goes away while the upstream
 * answers): conn is then NULL and what would be sent is dropped. */
typedef struct {
  px_server *s;
  px_conn *conn;            /* NULL once the client has gone */
  struct evkeyvalq *in;     /* request headers (owned) */
  struct evkeyvalq *out;    /* response headers being prepared (owned) */
  struct evbuffer *reqbody; /* the request body, complete (owned) */
  char *target;             /* request-target as received (owned) */
  int minor;                /* the client's HTTP/1.minor */
  int keepalive;            /* the client allows another request after */
  int64_t t0_us;
  char method[16];
  char *url;           /* absolute URL, secrets redacted: logs, keys, report */
  char *raw_url;       /* absolute URL as requested: rule matching only */
  const char *path;    /* points into target */
  px_upstream *up;     /* where ACT_FORWARD sends it */
  char authority[300]; /* Host for the upstream request */
  const char *prefix;  /* path prefix for the upstream request */
  /* Forward mode: the real destination (dest_host empty: none). */
  char dest_host[256];
  int dest_port;
  int dest_https;
  char client[96];
  char *key;
  int watched;
  px_action act;
  px_kind kind;
  int status;
  struct evbuffer *body; /* own responses */
  int headers_sent;
  char note[96];
  /* pxlimits: the judge and the limits (filled by describe and decide). */
  char conn_id[80];       /* client connection "ADDR:PORT" */
  uint64_t client_id;     /* logical client (retry chains) */
  int64_t tell_wait_ms;   /* a wait to remember when the answer leaves */
  int tell_flags;         /* PX_TELL_* for it */
  char *conc_key;         /* holds a concurrency slot on this key */
  int64_t fwd_us;         /* when it was sent to the upstream */
  int charge_tokens;      /* count the answer's usage in the token window */
  struct evbuffer *usage; /* the upstream answer's first bytes, for usage */
} px_req;

/* ---- px_conn.c: the client side (our HTTP/1.1 server) -------------------- */

/* Takes over an accepted socket. Returns 0, or -1 (the socket is closed). */
int polite__px_conn_accept(px_server *s, evutil_socket_t fd,
                           const struct sockaddr *addr, int addrlen);
/* Frees every connection (at exit). */
void polite__px_conn_close_all(px_server *s);

/* The response head: status line, r->out, framing. `length` is the body's
 * length, or -1 when unknown (then chunked for HTTP/1.1 clients, else
 * until close); `no_body` for HEAD, 1xx, 204 and 304. `own`: an answer the
 * proxy made (Server: polite-proxy), else forwarded. */
void polite__px_conn_head(px_req *r, int status, const char *reason,
                          int64_t length, int no_body, int own);
/* Body bytes (drained from data), framed as the head said. */
void polite__px_conn_body(px_req *r, struct evbuffer *data);
/* The end of the response. ok = 0: the body was cut short; the client's
 * connection is closed without a terminating chunk so that the truncation
 * shows. Detaches r from its connection (which goes on with the next
 * request); r itself is not freed. */
void polite__px_conn_end(px_req *r, int ok);
/* The socket of r's client connection (-1 when gone or behind TLS: the
 * judge's liveness probe then assumes it is alive). */
int polite__px_conn_fd(const px_req *r);
/* Bytes of answers waiting to be written to r's client (0 when gone). */
size_t polite__px_conn_backlog(const px_req *r);
/* The request is fully decided: run its action (dispatch in px_server.c). */
void polite__px_dispatch(px_req *r);

/* ---- px_connect.c: CONNECT (forward mode) -------------------------------- */

/* For a CONNECT to r->dest_host:r->dest_port: `ctx` NULL tunnels the bytes
 * to the destination untouched; else the proxy answers 200, terminates TLS
 * with ctx (a certificate for the host) and serves the decrypted requests
 * on the same connection through the usual pipeline. Ends r (logged and
 * freed) either way. */
void polite__px_connect(px_req *r, SSL_CTX *ctx);
/* The host and port the client's connection was CONNECTed to and whose TLS
 * the proxy terminated; NULL for a plain connection. */
const char *polite__px_conn_origin(const px_req *r, int *port);

/* ---- px_answer.c: answers the proxy makes up, and the end of a request --- */

/* Prepares an own response: status, optional Content-Type, body bytes
 * (copied). Sent later by polite__px_send_own (after --latency). */
void polite__px_own(px_req *r, int status, const char *ctype, const char *body,
                    size_t len);
/* Same with {"error":{"code":CODE,"type":CODE,"message":MESSAGE}}; code and
 * message are trusted text (no escaping). */
void polite__px_own_json_error(px_req *r, int status, const char *code,
                               const char *message);
/* Sets (replaces) one response header. */
void polite__px_set_header(px_req *r, const char *name, const char *value);
/* Sets Retry-After: SECONDS; the wait is remembered for r's client (and,
 * with PX_TELL_THROTTLE, throttles r->key) when the answer leaves. */
void polite__px_send_retry_after(px_req *r, int64_t seconds, int flags);
/* The rate-limit headers of the mode in force from a limiter's state:
 * RateLimit-Policy + RateLimit and/or Dev Proxy's RateLimit-Limit,
 * -Remaining, -Reset (from the warning threshold on). wall_ms: the wall
 * clock, for resetFormat UtcEpochSeconds. */
void polite__px_rate_headers(px_req *r, const px_lim_state *st,
                             int64_t wall_ms);
/* OpenAI's x-ratelimit-{limit,remaining,reset}-WHAT ("requests" or
 * "tokens"), the reset as a duration rounded up ("20ms", "7s", "1m0s"). */
void polite__px_openai_headers(px_req *r, const char *what, int64_t limit,
                               int64_t remaining, int64_t reset_ms);
/* pxlimits hook: the answer's head leaves the proxy now (after any
 * --latency): remembers the wait it told. Own answers and forwarded ones. */
void polite__px_answer_left(px_req *r);
/* pxlimits hook: the upstream's answer head arrived (code, headers): its
 * Retry-After on a 429/503 is remembered, its latency measured. */
void polite__px_upstream_answer(px_req *r, int code, struct evkeyvalq *in);
/* pxlimits hook: a client connection closed. */
void polite__px_conn_gone(px_server *s, const char *conn_id);
/* pxlimits hook: GET /__polite/metrics (Prometheus text). */
void polite__px_answer_metrics(px_req *r);
/* A response from an errors file or mocks file (@dynamic resolved to
 * --retry-after; the Retry-After of a 429 or 503 remembered when it
 * leaves, that of any other status only sent). */
void polite__px_own_canned(px_req *r, const px_response *resp);
/* Same with @dynamic = dynamic_s seconds. */
void polite__px_own_canned_wait(px_req *r, const px_response *resp,
                                int64_t dynamic_s);
/* px_decide.c: counts the tokens of an answer body in the token window
 * (when the request was admitted under a token limit). */
void polite__px_charge_tokens(px_req *r, const char *body, size_t len);
/* pxlimits hooks: an upstream body chunk passes (a bounded copy is kept
 * when tokens are counted), and the upstream answer ended. */
void polite__px_upstream_chunk(px_req *r, struct evbuffer *data);
void polite__px_upstream_end(px_req *r);
/* px_decide.c: gives back r's concurrency slot, if it holds one. */
void polite__px_release(px_req *r);
/* The default mock: 200 {"ok":true,"path":PATH}. */
void polite__px_default_mock(px_req *r);
/* CORS headers on an own answer when the request has an Origin. */
void polite__px_add_cors(px_req *r);
/* Sends the prepared own response, then polite__px_finish. */
void polite__px_send_own(px_req *r);
/* Records the request in the stats, logs one line, frees r. */
void polite__px_finish(px_req *r);
void polite__px_req_free(px_req *r);
/* GET /__polite/report: sends the live report and frees r (not counted). */
void polite__px_answer_report(px_req *r);

/* ---- px_decide.c: the checks for a watched request ----------------------- */

/* The key a Retry-After (or a limiter) applies to under `scope`; malloc'ed,
 * NULL when out of memory. Never contains a credential. */
char *polite__px_scope_key(px_server *s, px_req *r, px_scope scope,
                           struct evkeyvalq *in);
/* Early retry, rate limit, quota, random failure, in that order. Returns 1
 * when one of them answers (prepared in r), 0 when the request goes on. */
int polite__px_decide(px_req *r, int64_t now_us, const char *body,
                      size_t body_len);

/* ---- px_forward.c: to the upstream or the real destination -------------- */

/* Sends r to r->up and streams the answer back; ends with
 * polite__px_finish (a 502 when the upstream cannot be used). */
void polite__px_forward(px_req *r);
/* Hop-by-hop headers (RFC 9110 §7.6.1), also every header `connection`
 * (the Connection field's value, may be NULL) names. */
int polite__px_hop_by_hop(const char *name, const char *connection);

#endif
