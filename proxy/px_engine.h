/* polite proxy: the engine's shared state (the proxy, its requests) and its
 * internal functions, on net/'s server and upstream client. */
#ifndef POLITE_PX_ENGINE_H
#define POLITE_PX_ENGINE_H

#include "net_server.h"
#include "net_tls.h"
#include "net_upstream.h"
#include "px.h"
#include "px_decide.h"

#include <openssl/ssl.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

typedef net_bounds px_bounds;

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
  const polite_env *env; /* the clocks (--test-clock: a controlled one) */
  net_server *srv;       /* the clients' side (net/) */
  net_connect_to *cto;   /* --connect-to rules (NULL: none) */
  /* Upstream (reverse mode), split once at start. */
  char up_host[256];
  int up_port;
  char up_authority[300]; /* host[:port] for the Host header and URLs */
  char up_prefix[1024];   /* path prefix without the trailing '/' */
  net_upstream *up;
  net_up_pool *pool; /* forward mode: upstreams by scheme, host, port */
  net_ca *ca;        /* forward mode with --watch: the local CA */
  char listen_addr[128];
  /* The head of a forwarded request is written here and moved to the
   * upstream's output (empty between requests; NULL while in use or
   * before the first): one evbuffer for the run, not one per request. */
  struct evbuffer *fwd_out;
} px_server;

typedef enum { ACT_OWN = 0, ACT_FORWARD = 1 } px_action;

/* One client request from arrival to the last byte of its response, owned
 * by the proxy (polite__px_req_new; polite__px_finish frees it) whatever
 * its client does: when the client leaves first (net's on_gone), what the
 * request started (an upstream exchange, a --latency timer) is cancelled
 * and the request is finished as 499 client_gone. */
typedef struct {
  px_server *s;
  net_req *nr;           /* the client's side (owned): head, body, answer */
  struct evkeyvalq *in;  /* request headers (nr's) */
  struct evkeyvalq *out; /* response headers being prepared: out_fields */
  struct evkeyvalq out_fields; /* inside r, not a malloc of its own */
  /* Host, Authorization and User-Agent (values in nr, NULL when absent),
   * looked up once by describe for the key and the decision. */
  const char *h_host, *h_auth, *h_ua;
  const char *target; /* request-target as received (nr's) */
  px_now now;         /* the clocks at the event being handled */
  char method[16];
  char *url;           /* absolute URL, secrets redacted: logs, keys, report */
  char *raw_url;       /* absolute URL as requested: rule matching only */
  const char *path;    /* points into target */
  net_upstream *up;    /* where ACT_FORWARD sends it */
  net_up_exch *x;      /* the exchange in flight on up, or NULL */
  struct event *timer; /* --latency before the action, or NULL */
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
  char cat[32]; /* the log's category when not the kind's */
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

/* ---- px_server.c: requests in and out ------------------------------------ */

/* The clocks now (one reading: call once per event). */
px_now polite__px_now(const px_server *s);
/* px_clock.c: s->env, the real clocks or (--test-clock) the controlled one,
 * and POST /__polite/clock?advance=MS that moves it (answered, r freed). */
void polite__px_clock_init(px_server *s);
void polite__px_answer_clock(px_req *r);
/* net's callbacks: a request arrived (polite__px_route decides it), its
 * client left, a connection closed, one opened. */
void polite__px_on_request(void *ud, net_req *nr);
void polite__px_on_gone(void *ud, net_req *nr);
void polite__px_on_conn_closed(void *ud, const char *conn_id);
void polite__px_on_conn_opened(void *ud, const char *conn_id);
/* The request is decided: its action runs, after --latency. */
void polite__px_run_action(px_req *r);

/* ---- px_route.c: which handler a request goes to ------------------------- */

/* Routes r (a table: the report, the metrics, CONNECT, a CORS preflight,
 * the checks, a mock, the default) and runs what it says. */
void polite__px_route(px_req *r);

/* ---- px_connect.c: CONNECT (forward mode) -------------------------------- */

/* A CONNECT to r->dest_host:r->dest_port: tunnelled, or intercepted with a
 * leaf of the local CA when --watch names the host; an error is answered
 * (502). Ends r either way. */
void polite__px_connect(px_req *r);

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
/* pxlimits hook: GET /__polite/metrics (Prometheus text). */
void polite__px_answer_metrics(px_req *r);
/* A response from an errors file or mocks file (@dynamic resolved to
 * --retry-after; the Retry-After of a 429 or 503 remembered when it
 * leaves, that of any other status only sent). */
void polite__px_own_canned(px_req *r, const px_response *resp);
/* Same with @dynamic = dynamic_s seconds. */
void polite__px_own_canned_wait(px_req *r, const px_response *resp,
                                int64_t dynamic_s);
/* pxlimits hooks: an upstream body chunk passes (a bounded copy is kept
 * when tokens are counted), and the upstream answer ended. */
void polite__px_upstream_chunk(px_req *r, struct evbuffer *data);
void polite__px_upstream_end(px_req *r);
/* The default mock: 200 {"ok":true,"path":PATH}. */
void polite__px_default_mock(px_req *r);
/* CORS headers on an own answer when the request has an Origin. */
void polite__px_add_cors(px_req *r);
/* Sends the prepared own response, then polite__px_finish. */
void polite__px_send_own(px_req *r);
/* Records the request in the stats, logs one line, frees r. */
void polite__px_finish(px_req *r);
void polite__px_req_free(px_req *r);
/* Sends the prepared answer of one of the proxy's own endpoints (not
 * counted, not logged) and frees r. */
void polite__px_send_endpoint(px_req *r);
/* GET /__polite/report: sends the live report and frees r (not counted). */
void polite__px_answer_report(px_req *r);

/* Carries out the verdict of polite__px_decide on r: the limits' headers
 * go on r's answer whichever it is, what the request holds (a concurrency
 * slot, the charging of tokens) passes to r, and an answer of the proxy's
 * own is prepared when the verdict says so (sent by polite__px_send_own).
 * Takes d->conc_key. */
void polite__px_carry(px_req *r, px_decision *d);

/* ---- px_forward.c: to the upstream or the real destination -------------- */

/* Sends r to r->up and streams the answer back; ends with
 * polite__px_finish (a 502 when the upstream cannot be used). */
void polite__px_forward(px_req *r);

#endif
