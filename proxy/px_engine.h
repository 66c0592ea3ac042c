/* polite proxy: the engine's shared state (server, request) and its internal
 * functions. */
#ifndef POLITE_PX_ENGINE_H
#define POLITE_PX_ENGINE_H

#include "px.h"
#include "px_upstream.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

/* The proxy: one per process, alive for the whole run. */
typedef struct {
  px_config *cfg;
  struct event_base *base;
  struct evhttp *http;
  px_state *st;
  uint64_t rng;
  uint64_t salt; /* per-process key for hashing Authorization values */
  FILE *log;
  int64_t started_wall_ms;
  /* Upstream, split once at start. */
  char up_host[256];
  int up_port;
  char up_authority[300]; /* host[:port] for the Host header and URLs */
  char up_prefix[1024];   /* path prefix without the trailing '/' */
  px_upstream *up;
  char listen_addr[128];
  struct evconnlistener *listener;
  struct event *resume; /* re-enables accepting after EMFILE */
  int64_t accept_warned_ms;
} px_server;

typedef enum { ACT_OWN = 0, ACT_FORWARD = 1 } px_action;

/* One client request from arrival to the last byte of its response. */
typedef struct {
  px_server *s;
  struct evhttp_request *req;
  int64_t t0_us;
  char method[16];
  char *url;        /* absolute URL, secrets redacted: logs, keys, report */
  char *raw_url;    /* absolute URL as requested: rule matching only */
  const char *path; /* points into the request's URI */
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
  char conn[80];          /* client connection "ADDR:PORT" */
  uint64_t client_id;     /* logical client (retry chains) */
  int64_t tell_wait_ms;   /* a wait to remember when the answer leaves */
  int tell_flags;         /* PX_TELL_* for it */
  char *conc_key;         /* holds a concurrency slot on this key */
  int64_t fwd_us;         /* when it was sent to the upstream */
  int charge_tokens;      /* count the answer's usage in the token window */
  struct evbuffer *usage; /* the upstream answer's first bytes, for usage */
} px_req;

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
void polite__px_answer_metrics(px_server *s, struct evhttp_request *req);
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
void polite__px_add_cors(struct evhttp_request *req);
/* Sends the prepared own response, then polite__px_finish. */
void polite__px_send_own(px_req *r);
/* Records the request in the stats, logs one line, frees r. */
void polite__px_finish(px_req *r);
void polite__px_req_free(px_req *r);
/* GET /__polite/report. */
void polite__px_answer_report(px_server *s, struct evhttp_request *req);

/* ---- px_decide.c: the checks for a watched request ----------------------- */

/* The key a Retry-After (or a limiter) applies to under `scope`; malloc'ed,
 * NULL when out of memory. Never contains a credential. */
char *polite__px_scope_key(px_server *s, px_req *r, px_scope scope,
                           struct evkeyvalq *in);
/* Early retry, rate limit, quota, random failure, in that order. Returns 1
 * when one of them answers (prepared in r), 0 when the request goes on. */
int polite__px_decide(px_req *r, int64_t now_us, const char *body,
                      size_t body_len);

/* ---- px_forward.c: the reverse proxy ------------------------------------ */

/* Sends r to the upstream and streams the answer back; ends with
 * polite__px_finish (a 502 when the upstream cannot be used). */
void polite__px_forward(px_req *r);

#endif
