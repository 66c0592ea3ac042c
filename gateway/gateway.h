/* polite gateway: the front door of the gateway's engine (gateway/), the
 * client-side half of `polite gateway` (docs/gateway.md). This is its pure
 * policy: which requests are retried, the account of a request, the honest
 * answer to a client whose wait cannot be afforded, the client's own
 * retries, and the metrics. No sockets, no clock reads: times are passed
 * in. The network half (the HTTP/1.1 server, CONNECT and TLS, the upstream
 * pool) drives polite/engine.h and calls these. */
#ifndef POLITE_GATEWAY_H
#define POLITE_GATEWAY_H

#include <polite/batch.h>
#include <polite/engine.h>

#include <stddef.h>
#include <stdint.h>

/* Internal, not part of libpolite: names are polite__gw_* for functions and
 * gw_* for types. */

/* ---- Which requests are retried (gw_retry.c) ---------------------------- */

/* What kind of request a method is, for retrying. */
typedef enum {
  GW_READ = 0, /* GET, HEAD, OPTIONS, PUT, DELETE, TRACE: the same effect
                  however often sent (RFC 9110 9.2.2) */
  GW_WRITE = 1 /* POST, PATCH and any other method */
} gw_method_kind;

/* What the answer was, for retrying. */
typedef enum {
  GW_ANS_429 = 0,
  GW_ANS_503 = 1,
  GW_ANS_5XX = 2,     /* 500, 502, 504, and 408, 425 */
  GW_ANS_NETWORK = 3, /* no answer: refused, reset, timed out */
  GW_ANS_OTHER = 4    /* anything else: never retried */
} gw_answer_kind;

/* One row of the safety table (docs/gateway.md "Safety rules"). */
typedef struct {
  int method;       /* gw_method_kind, or -1: either */
  int keyed;        /* -1: either; 0: no idempotency key; 1: one */
  int retry_writes; /* -1: either; 0 / 1: --retry-writes off / on */
  gw_answer_kind answer;
  int retried; /* 1: the gateway sends it again (within --max-attempts,
                  never before the server's time) */
  const char *why;
} gw_retry_row;

gw_method_kind polite__gw_method_kind(const char *method);
gw_answer_kind polite__gw_answer_kind(int status);
/* The first row of the table that matches; never NULL. */
const gw_retry_row *polite__gw_retry_rule(const char *method, int keyed,
                                          int retry_writes, int status);
/* The rows, for the docs and their test. */
const gw_retry_row *polite__gw_retry_rows(size_t *n);
/* 1 when some answer could make the gateway send the request again: its
 * body must then be kept (up to --retry-body-max) for the retry. */
int polite__gw_may_retry(const char *method, int keyed, int retry_writes);

/* The idempotency key a client sent, from the headers the gateway knows
 * (Idempotency-Key, PayPal-Request-Id): the value (trimmed, pointing into
 * fields) and its length, or NULL when none. */
const char *polite__gw_idempotency_key(const polite_header_field *fields,
                                       size_t n, size_t *len);

/* ---- The account of a request (gw_account.c) ---------------------------- */

/* Longest account key (an authority: host and port). */
#define GW_ACCOUNT_MAX 262

/* The canonical authority of a request to scheme ("http" or "https") at
 * authority[0..len) (a Host header or an absolute URL's authority): the
 * host lower-cased, the default port (80, 443) dropped, userinfo refused.
 * This is the account with --budget-scope host, and what the gateway puts
 * in the URL it hands to the engine, so that one host is one account
 * however clients spell it. Returns 0 with out (outlen >= GW_ACCOUNT_MAX)
 * filled, or POLITE_EINVAL with a message in err naming the problem. */
int polite__gw_authority(const char *scheme, const char *authority, size_t len,
                         char *out, size_t outlen, char *err, size_t errlen);

/* ---- The honest answer (gw_answer.c) ----------------------------------- */

#define GW_REPLY_MAX_HEADERS 8

/* The gateway's own answer to a client whose request ended without the
 * server's answer (polite_result.relayed 0). */
typedef struct {
  int status;
  const char *reason; /* "Too Many Requests", ... (static) */
  size_t nheaders;
  struct {
    const char *name; /* static */
    char value[96];
  } headers[GW_REPLY_MAX_HEADERS];
  char *body; /* JSON, malloc'ed (polite__gw_reply_free) */
  size_t body_len;
} gw_reply;

/* Builds the answer to r (not relayed) for the request to `account` (NULL:
 * the default account): the status the outcome calls for, Retry-After in
 * whole seconds rounded up from r->retry_after_ms, and a JSON body whose
 * fields docs/gateway.md lists; no secret reaches it. Returns 0, or
 * POLITE_ENOMEM. */
int polite__gw_reply(const polite_result *r, const char *account,
                     gw_reply *out);
void polite__gw_reply_free(gw_reply *out);
/* Retry-After's delay-seconds for a wait of ms: rounded up, at least 1 (a
 * 0 invites a retry at once). */
int64_t polite__gw_retry_after_s(int64_t ms);

/* ---- The client's own retries (gw_client.c) ---------------------------- */

/* How many times the client says it already tried this request, from the
 * retry-count headers SDKs send (X-Stainless-Retry-Count of the OpenAI and
 * Anthropic SDKs, amz-sdk-request of the AWS SDKs, x-envoy-attempt-count,
 * grpc-previous-rpc-attempts, x-retry-count): 0 for a first attempt, N for
 * its N-th retry, -1 when no such header says (or its value is not a
 * plain number). At most GW_CLIENT_RETRIES_MAX. */
#define GW_CLIENT_RETRIES_MAX 1000
int polite__gw_client_retries(const polite_header_field *fields, size_t n);

/* The 429s and 503s the gateway gave its clients, so that the same method
 * and URL coming back is seen as the client's own retry (and an early one
 * when it comes before the Retry-After it was told). Bounded: at most
 * `cap` entries, each forgotten `keep_us` after its Retry-After ended; the
 * oldest goes first when full. Only a 64-bit hash of the method and URL is
 * kept, never the URL. */
typedef struct gw_seen gw_seen;
gw_seen *polite__gw_seen_new(size_t cap, int64_t keep_us);
void polite__gw_seen_free(gw_seen *t);
/* The gateway answered (or relayed) `status` with Retry-After
 * retry_after_ms (-1: none) to method url at now. Only 429 and 503 are
 * kept. */
void polite__gw_seen_note(gw_seen *t, const char *method, const char *url,
                          int status, int64_t retry_after_ms, int64_t now);
/* 1 when method url at now retries an answer noted before (the entry is
 * used up), with *early_us the time it came before the Retry-After ended
 * (0 when not early); 0 otherwise. */
int polite__gw_seen_retry(gw_seen *t, const char *method, const char *url,
                          int64_t now, int64_t *early_us);
size_t polite__gw_seen_count(const gw_seen *t);

/* ---- Metrics (gw_metrics.c) ---------------------------------------------- */

/* Accounts given series of their own in the metrics; the others are
 * counted under account="other" (a hostile client can name any host). */
#define GW_METRICS_MAX_ACCOUNTS 64
#define GW_WAIT_BUCKETS 14

typedef struct gw_metrics gw_metrics;
gw_metrics *polite__gw_metrics_new(void);
void polite__gw_metrics_free(gw_metrics *m);
/* A client's request arrived; client_retry: the client's own retry (a
 * retry-count header above 0, or polite__gw_seen_retry); early: it came
 * before the Retry-After the gateway gave. */
void polite__gw_metrics_request(gw_metrics *m, int client_retry, int early);
/* One attempt the gateway sent upstream (attempt 1: the client's request,
 * 2 and up: the gateway's own retries). */
void polite__gw_metrics_attempt(gw_metrics *m, unsigned attempt);
/* A request waited wait_us between its arrival and its first start. */
void polite__gw_metrics_queue_wait(gw_metrics *m, int64_t wait_us);
/* The account was paused by the server for pause_ms. */
void polite__gw_metrics_pause(gw_metrics *m, const char *account,
                              int64_t pause_ms);
/* The client got `status` (relayed: the server's answer; else the
 * gateway's own) for a request that ended with `outcome`. */
void polite__gw_metrics_answer(gw_metrics *m, int status, int relayed,
                               polite_outcome outcome);
/* The Prometheus text (exposition format 0.0.4) of m, the accounts
 * polite_engine_accounts gave (n of them) and the engine's stats (may be
 * NULL); malloc'ed, NULL when out of memory. */
char *polite__gw_metrics_text(gw_metrics *m,
                              const polite_engine_account *accounts, size_t n,
                              const polite_batch_stats *st);

#endif
