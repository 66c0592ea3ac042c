/* polite gateway: the front door of the gateway's engine (gateway/), the
 * client-side half of `polite gateway` (docs/gateway.md). This is its pure
 * policy: which requests are retried, the account of a request, the honest
 * answer to a client whose wait cannot be afforded, the client's own
 * retries, and the metrics. No sockets, no clock reads: times are passed
 * in. The network half (the HTTP/1.1 server, CONNECT and TLS, the upstream
 * pool) drives polite/engine.h and calls these. */
#ifndef POLITE_GATEWAY_H
#define POLITE_GATEWAY_H

#include "cli.h" /* common/: cli_list */

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

/* ---- Where a request goes (gw_route.c) ------------------------------- */

/* Paths under this prefix are the gateway's own (GET /__polite/metrics),
 * never sent upstream. */
#define GW_OWN_PREFIX "/__polite/"

/* The --upstream base URL, split once at start. */
typedef struct {
  int https;
  char host[256]; /* for connecting: an IPv6 literal without brackets */
  int port;
  char authority[GW_ACCOUNT_MAX]; /* canonical (the account, Host) */
  char prefix[1024];              /* its path without trailing slashes */
} gw_base;

/* Splits base URL url (http:// or https://, a path, no query). Returns 0,
 * or -1 with a message naming the problem in err. */
int polite__gw_base_parse(const char *url, gw_base *b, char *err,
                          size_t errlen);

typedef enum {
  GW_DEST_BAD = 0, /* malformed: answered 400 with why */
  GW_DEST_NONE,    /* origin-form without --upstream: 400 */
  GW_DEST_OWN,     /* the gateway's own endpoint (path) */
  GW_DEST_CONNECT, /* CONNECT host:port */
  GW_DEST_FORWARD, /* to host:port (absolute-form, or inside an intercepted
                      CONNECT), path is origin-form or "?query" */
  GW_DEST_BASE     /* to the base URL: its prefix, then path */
} gw_dest_kind;

typedef struct {
  gw_dest_kind kind;
  int https;
  char host[256]; /* for connecting: an IPv6 literal without brackets */
  int port;
  char authority[GW_ACCOUNT_MAX]; /* canonical: the account and Host */
  const char *path;               /* points into the target; NULL: none */
  char why[224];                  /* BAD, NONE: why, in one sentence */
} gw_dest;

/* Where a request with this method and target goes: origin_host (may be
 * NULL or "") is the host of the intercepted CONNECT it came in (over TLS,
 * or in plain HTTP when origin_plain), base the
 * --upstream (NULL: none), self the gateway's own ADDR:PORT (an
 * absolute-form request to it is its own). Returns 0 with *d filled, or -1
 * with d->kind BAD or NONE and d->why. */
int polite__gw_dest(const char *method, const char *target,
                    const char *origin_host, int origin_port, int origin_plain,
                    const gw_base *base, const char *self, gw_dest *d);

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
/* The counters the summary reports (gw_totals, below; passed is left 0). */
typedef struct gw_totals gw_totals;
void polite__gw_metrics_totals(const gw_metrics *m, gw_totals *t);
/* The Prometheus text (exposition format 0.0.4) of m, the accounts
 * polite_engine_accounts gave (n of them) and the engine's stats (may be
 * NULL); malloc'ed, NULL when out of memory. */
char *polite__gw_metrics_text(gw_metrics *m,
                              const polite_engine_account *accounts, size_t n,
                              const polite_batch_stats *st);

/* ---- The gateway itself (gw_server.c, gw_front.c, gw_attempt.c) -------- */

/* What the gateway counted over its life, for the summary: the clients'
 * requests and their own retries, and the attempts sent upstream by layer
 * (the client's request, the gateway's retries of it). */
struct gw_totals {
  uint64_t requests, client_retries, client_early;
  uint64_t attempts_client, attempts_gateway;
  uint64_t passed; /* unwatched requests forwarded untouched */
};

/* Everything `polite gateway` is told (src/cmd_gateway.c fills it from
 * its option table; docs/gateway.md lists each option and its default).
 * Strings and lists are borrowed for the run. */
typedef struct {
  const char *listen;     /* ADDR:PORT */
  const char *ready_file; /* NULL: none */
  const char *upstream;   /* the base URL, or NULL */
  cli_list watch, allow_host, connect_to;
  const char *upstream_cacert; /* NULL: the system store */
  int upstream_insecure;
  /* The engine's options: the caller sets the budget and the rules; the
   * gateway sets next, the result and attempt callbacks, and env. */
  polite_batch_options bo;
  size_t retry_body_max;    /* request bodies kept for a retry */
  size_t max_body;          /* largest request body (413 above) */
  size_t max_head;          /* largest request head (431 above) */
  unsigned max_headers;     /* header fields per request (431 above) */
  unsigned max_connections; /* client connections at once */
  int64_t header_timeout_ms, idle_timeout_ms;
  int64_t drain_timeout_ms; /* SIGTERM: finish or answer within it */
  /* The command's hooks (each may be NULL): every attempt (the log), every
   * change of the learned rate, and the end (the summary). */
  void (*on_attempt)(void *ud, const polite_attempt *a);
  void (*on_rate)(void *ud, const polite_rate_change *c);
  void (*on_end)(void *ud, const polite_batch_stats *st, const gw_totals *t,
                 int64_t wall_ms);
  /* May be NULL: called once after the attempts and rate changes of one
   * pass of the loop, once the answers they belong to went out (the log
   * writes its lines then: one write for many, none before an answer). */
  void (*on_flush)(void *ud);
  void *ud;
} gw_config;

/* Runs the gateway until SIGTERM or SIGINT, then drains (stops accepting,
 * finishes or answers what is queued within drain_timeout_ms) and calls
 * on_end. Returns 0, or 1 after a message on stderr (it could not start,
 * or the budget failed). */
int polite__gw_run(const gw_config *c);

/* 1 when --listen ADDR:PORT is on loopback (127.x, [::1], localhost): a
 * gateway listening elsewhere needs --allow-host. */
int polite__gw_listen_loopback(const char *listen);

/* Checks a --connect-to rule. 0, or -1 with a message in err. */
int polite__gw_connect_to_check(const char *spec, char *err, size_t errlen);

/* What the gateway knows of an attempt's request (a polite_request it
 * handed to the engine), for the attempt log: how long it waited in the
 * queue before its first attempt (-1: not started yet), and the client's
 * own retries (-1: no header said and no earlier answer was seen). */
typedef struct {
  int64_t queued_ms;
  int client_retries;
} gw_attempt_info;
/* Fills *out for r (a request of the running gateway). Returns 0, or -1
 * when r is not one of the gateway's. */
int polite__gw_attempt_info(const polite_request *r, gw_attempt_info *out);

#endif
