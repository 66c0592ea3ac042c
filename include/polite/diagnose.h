/* polite diagnose: who sent a 429/503 (origin API, CDN, gateway, proxy) and
 * what kind of limit it is (rate, concurrency, quota, tokens), from the
 * evidence vendors document. Pure: no I/O, no clock reads, no allocation.
 *
 * Use it incrementally, as `polite run` does for each throttled attempt:
 *
 *     polite_diagnosis d;
 *     polite_diagnosis_init(&d, 429, now_ms);
 *     for each response header:
 *         polite_diagnosis_feed_header(&d, name, nlen, value, vlen);
 *     polite_diagnosis_finish(&d, body, body_len);
 *     log(polite_diagnosis_component(&d), polite_limit_name(d.limit),
 *         d.retry_helps, d.wait_ms);
 *
 * or in one call on a raw response as `curl -si` prints it
 * (polite_diagnose_response). Everything the diagnosis keeps lives in the
 * struct itself (fixed-size buffers): nothing to free, and it may be copied
 * with memcpy or assignment. The strings passed in are never retained.
 * See docs/diagnose.md for the vendor table and the decisions.
 */
#ifndef POLITE_DIAGNOSE_H
#define POLITE_DIAGNOSE_H

#include <polite/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which layer produced the answer. */
typedef enum {
  POLITE_COMP_UNKNOWN = 0, /* no vendor evidence: never guessed */
  POLITE_COMP_ORIGIN = 1,  /* the API itself (openai, github, ...) */
  POLITE_COMP_CDN = 2,     /* cloudflare, cloudfront, fastly, akamai, ... */
  POLITE_COMP_GATEWAY = 3, /* aws-api-gateway, kong, apigee, azure-apim */
  POLITE_COMP_PROXY = 4    /* envoy, nginx, haproxy, traefik, varnish */
} polite_component_kind;

/* What was exceeded. */
typedef enum {
  POLITE_LIMIT_UNKNOWN = 0,
  POLITE_LIMIT_RATE = 1,        /* requests per time: slow down, retry helps */
  POLITE_LIMIT_CONCURRENCY = 2, /* requests in flight: fewer at once helps */
  POLITE_LIMIT_QUOTA = 3,       /* credit/quota for the period is spent:
                                   waiting in this run does not help */
  POLITE_LIMIT_TOKENS = 4       /* tokens per minute (LLM APIs): a rate on
                                   tokens, retry helps after the wait */
} polite_limit_kind;

#define POLITE_DIAG_MAX_IDS 8         /* request ids kept */
#define POLITE_DIAG_ID_NAME_SIZE 40   /* header name, NUL included */
#define POLITE_DIAG_ID_VALUE_SIZE 128 /* value, NUL included (truncated) */
#define POLITE_DIAG_MAX_EVIDENCE 16   /* evidence sentences kept */
#define POLITE_DIAG_EVIDENCE_SIZE 112 /* one sentence, NUL included */
#define POLITE_DIAG_MAX_THROUGH 4     /* layers the answer passed through */

/* One id to quote to support, e.g. {"cf-ray", "8a1b2c3d4e5f6789-AMS"}.
 * The name is lowercase. */
typedef struct {
  char name[POLITE_DIAG_ID_NAME_SIZE];
  char value[POLITE_DIAG_ID_VALUE_SIZE];
} polite_diag_id;

/* The diagnosis. Public fields are valid after polite_diagnosis_finish;
 * fields starting with an underscore are private working state. */
typedef struct {
  int status;                 /* HTTP status given to init */
  polite_component_kind kind; /* who produced the answer */
  char vendor[24];            /* "cloudflare", "openai", ... or "" */
  char component[32];         /* "cdn:cloudflare", ... or "unknown" */
  polite_limit_kind limit;
  int retry_helps; /* 1: retrying (after wait_ms) can succeed */
  int64_t wait_ms; /* server-given wait, or -1 when unknown */
  polite_wait_source wait_source;

  /* Layers the answer passed through without producing it (an OpenAI 429
   * carries Cloudflare's cf-ray): e.g. "cdn:cloudflare". */
  size_t n_through;
  char through[POLITE_DIAG_MAX_THROUGH][32];

  size_t n_ids;
  polite_diag_id ids[POLITE_DIAG_MAX_IDS];

  /* Which headers and body markers led there, in English, e.g.
   * "header cf-mitigated: challenge". Secret headers never appear. */
  size_t n_evidence;
  char evidence[POLITE_DIAG_MAX_EVIDENCE][POLITE_DIAG_EVIDENCE_SIZE];

  /* The core's reading of Retry-After and the rate-limit headers. */
  polite_headers headers;

  /* Private working state (vendor evidence seen so far). */
  uint64_t _sig[2];
  int _should_retry; /* x-should-retry, stripe-should-retry: -1 absent, 0, 1 */
  int _finished;
} polite_diagnosis;

/* Starts a diagnosis of a response with HTTP `status`. `now_ms` is the wall
 * clock (Unix ms) used only to turn reset times and HTTP-dates into waits. */
POLITE_EXTERN void polite_diagnosis_init(polite_diagnosis *d, int status,
                                         int64_t now_ms);

/* Feeds one response header (name without the colon; the value with or
 * without surrounding whitespace). Names are case-insensitive; the strings
 * are not retained. Order does not matter. Also feeds the core
 * (polite_headers_feed) so Retry-After and rate-limit headers give wait_ms. */
POLITE_EXTERN void polite_diagnosis_feed_header(polite_diagnosis *d,
                                                const char *name, size_t nlen,
                                                const char *value, size_t vlen);

/* Feeds one raw header line "Name: value" (trailing CR/LF allowed). Returns
 * 0, or POLITE_EINVAL when the line has no colon or an empty name. */
POLITE_EXTERN int polite_diagnosis_feed_line(polite_diagnosis *d,
                                             const char *line, size_t len);

/* Looks at the body (may be NULL with len 0; at most the first 64 KiB are
 * read) and decides kind, vendor, component, limit, retry_helps, wait_ms.
 * Call once, after the last header. */
POLITE_EXTERN void polite_diagnosis_finish(polite_diagnosis *d,
                                           const char *body, size_t len);

/* "KIND:NAME" (e.g. "cdn:cloudflare", "origin:openai") or "unknown".
 * Points into *d; valid as long as *d is. */
POLITE_EXTERN const char *polite_diagnosis_component(const polite_diagnosis *d);

/* One English sentence of advice for this kind of answer (static string). */
POLITE_EXTERN const char *polite_diagnosis_advice(const polite_diagnosis *d);

/* "rate", "concurrency", "quota", "tokens", "unknown". */
POLITE_EXTERN const char *polite_limit_name(polite_limit_kind k);

/* "origin", "cdn", "gateway", "proxy", "unknown". */
POLITE_EXTERN const char *polite_component_kind_name(polite_component_kind k);

/* Where a raw response could not be parsed. */
typedef struct {
  int line; /* 1-based line of the input */
  char message[96];
} polite_diag_error;

/* Diagnoses a raw response as `curl -si` prints it: status line
 * ("HTTP/1.1 429 Too Many Requests", "HTTP/2 429"), header lines, a blank
 * line, the body; CRLF or LF. When several header blocks follow each other
 * (curl -L after redirects, "HTTP/1.1 100 Continue", a proxy's "200
 * Connection established"), the last response is the one diagnosed.
 * Leading blank lines are skipped; a missing blank line after the headers
 * means an empty body. Returns 0 with *d finished, or POLITE_EINVAL with
 * *err (may be NULL) naming the line. */
POLITE_EXTERN int polite_diagnose_response(polite_diagnosis *d, const char *raw,
                                           size_t len, int64_t now_ms,
                                           polite_diag_error *err);

#ifdef __cplusplus
}
#endif

#endif
