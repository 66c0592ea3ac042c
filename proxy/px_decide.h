/* polite proxy: the decision for a watched request as a function of the
 * request's facts, the proxy's state and one reading of the clocks: a
 * verdict out, which px_answer.c (an answer of the proxy's own) and
 * px_forward.c (the request goes on) carry out. Nothing here touches a
 * socket, reads a clock or builds an answer, so the unit tests decide on a
 * fake clock (tests/unit/test_proxy_decide.c). */
#ifndef POLITE_PX_DECIDE_H
#define POLITE_PX_DECIDE_H

#include "px.h"

/* One reading of the clocks, taken once at the start of each event (a
 * request arrives, an upstream answer begins or ends, a timer fires) and
 * passed down, so that one decision sees one time (libuv's uv_now). */
typedef struct {
  int64_t mono_us; /* intervals, deadlines, the judge and the limiters */
  int64_t wall_ms; /* HTTP-dates, the log, the report */
} px_now;

/* What the decision reads of a request (every pointer is borrowed for the
 * call). */
typedef struct {
  const char *method;
  const char *url;     /* absolute, secrets redacted: keys, the report */
  const char *raw_url; /* absolute, as requested: watch lists, rules */
  const char *path;    /* path and query */
  const char *key;     /* the judge's key (--retry-after-scope); NULL: none
                          yet (polite__px_scope_key makes it) */
  const char *client;  /* the report's client: "ADDR" or "ADDR auth:HASH" */
  const char *conn_id; /* its connection, "ADDR:PORT" */
  int conn_handle;     /* the connection's socket, for the judge's probe
                          (-1: none) */
  const char *host;    /* header values, NULL when absent */
  const char *authorization;
  const char *user_agent;
  const char *body; /* the request body (may be NULL) */
  size_t body_len;
} px_ask;

/* What a decision needs beyond the request. */
typedef struct {
  const px_config *cfg;
  px_state *st;  /* the judge, the limiters, the early-retry list */
  uint64_t *rng; /* the random source (--failure-rate, errors files) */
  uint64_t salt; /* the process's key for hashing Authorization values */
} px_decider;

/* How the body of an answer the proxy makes is written. */
typedef enum {
  PX_BODY_ERROR = 0,  /* {"error":{"code":CODE,"type":CODE,"message":TEXT}} */
  PX_BODY_JSON = 1,   /* TEXT as it is, application/json */
  PX_BODY_CANNED = 2, /* `canned` (an errors file's, a customResponseFile) */
} px_body;

/* The verdict. answer = 0: the request goes on (to the upstream, a mock or
 * the default answer) carrying the limits' headers and what it holds;
 * answer = 1: the proxy answers it as described. */
typedef struct {
  int answer;
  px_kind kind;
  int status;
  px_body body;
  const char *code;          /* PX_BODY_ERROR (static text) */
  char text[512];            /* PX_BODY_ERROR: the message; PX_BODY_JSON */
  const px_response *canned; /* PX_BODY_CANNED (the configuration's) */
  int64_t canned_wait_s;     /* PX_BODY_CANNED: what @dynamic stands for */
  int64_t retry_after_s;     /* >= 0: Retry-After, remembered as told when
                                the answer leaves; -1: none */
  int tell_flags;            /* PX_TELL_* for that wait */
  char note[96];             /* the log line's details */
  /* The limits' headers, on an answer and on a request that goes on. */
  int has_lim;
  px_lim_state lim; /* RateLimit-* of --rate-limit */
  int has_tok;
  px_tok_state tok; /* x-ratelimit-*-tokens of the token limits */
  /* What the request holds until it ends. */
  char *conc_key;     /* owned: a concurrency slot (polite__px_release) */
  int charge_tokens;  /* count its answer's usage (polite__px_charge_tokens) */
  uint64_t client_id; /* the judge's logical client (retry chains) */
} px_decision;

/* Decides request a at now: the judge (early retry, during a throttle),
 * concurrency, rate limit, tokens, quota, failure, in that order, each
 * within its Dev Proxy plugin's urlsToWatch; the first that refuses
 * answers. The state moves (the judge notes the client, limiters count the
 * request, a slot is taken) but nothing else happens: out says what to do.
 * out->conc_key is the caller's to keep or polite__px_release. */
void polite__px_decide(const px_decider *d, const px_ask *a, const px_now *now,
                       px_decision *out);

/* The key a Retry-After (or a limiter) applies to under `scope`:
 * "METHOD URL", "host:HOST", "auth:HASH" or "client:ADDR", or "*";
 * malloc'ed, NULL when out of memory. Never contains a credential. */
char *polite__px_scope_key(uint64_t salt, const px_ask *a, px_scope scope);

/* Gives back a concurrency slot taken on conc_key and frees the key (NULL:
 * none): the request that held it is finished. */
void polite__px_release(px_state *st, char *conc_key);

/* Counts the tokens of an answer body (its "usage") in the token window at
 * now_us: the request was admitted under a token limit (charge_tokens of
 * its verdict). */
void polite__px_charge_tokens(const px_config *c, px_state *st, int64_t now_us,
                              const char *body, size_t len);

#endif
