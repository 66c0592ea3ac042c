/* polite core: the pure part of libpolite (no I/O, no clock reads, no
 * sleeping).
 *
 * Every function here takes the current time and any random numbers as
 * arguments, so the whole retry logic can be tested on a fake clock.
 * Units: wall-clock times are Unix milliseconds (`now_ms`) or Unix seconds
 * where HTTP-dates are concerned; intervals are milliseconds, except GCRA,
 * which keeps microseconds so that 1.5 starts/s does not drift.
 */
#ifndef POLITE_CORE_H
#define POLITE_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) || defined(__CYGWIN__)
#define POLITE_EXTERN __declspec(dllexport)
#elif defined(__GNUC__)
#define POLITE_EXTERN __attribute__((visibility("default")))
#else
#define POLITE_EXTERN
#endif

/* ---- Errors ------------------------------------------------------------ */

/* Stable negative error codes; 0 is success. Never renumber. */
typedef enum {
  POLITE_OK = 0,
  POLITE_EINVAL = -1,    /* invalid argument or malformed input */
  POLITE_ENOMEM = -2,    /* out of memory */
  POLITE_ERANGE = -3,    /* value out of range */
  POLITE_EIO = -4,       /* I/O error (file, socket) */
  POLITE_EBUDGET = -5,   /* the shared budget cannot be used (fail closed) */
  POLITE_ECURL = -6,     /* libcurl failed */
  POLITE_ECANCELED = -7, /* operation cancelled */
  POLITE_EAGAIN = -8     /* nothing available now; ask again later (a
                            request source that may still produce) */
} polite_errno;

/* Short English text for an error code; never NULL. */
POLITE_EXTERN const char *polite_strerror(int err);

/* Run-time version string, e.g. "0.1.0". */
POLITE_EXTERN const char *polite_version(void);

/* ---- Randomness ---------------------------------------------------------- */

/* Deterministic generator (splitmix64). The caller owns the state and seeds it
 * (tests with a constant, programs from the real random source). */
POLITE_EXTERN uint64_t polite_rand_next(uint64_t *state);

/* Uniform integer in [0, n] (inclusive) from one 64-bit random value; n >= 0.
 */
POLITE_EXTERN int64_t polite_rand_uniform(uint64_t rnd, int64_t n);

/* ---- Retry-After (RFC 9110 §10.2.3) and HTTP-date (§5.6.7) ------------- */

/* A delay-seconds value larger than this saturates to it (as RFC 9111 §1.2.2
 * does for delta-seconds): 2^31 seconds, about 68 years. */
#define POLITE_RA_MAX_SECONDS INT64_C(2147483648)

typedef enum {
  POLITE_RA_NONE = 0,    /* empty or only whitespace */
  POLITE_RA_SECONDS = 1, /* delay-seconds */
  POLITE_RA_DATE = 2,    /* HTTP-date */
  POLITE_RA_INVALID = 3  /* present but not valid: ignore it, never guess */
} polite_ra_kind;

typedef struct {
  polite_ra_kind kind;
  int saturated;     /* SECONDS only: the number was clamped */
  int64_t seconds;   /* SECONDS: the delay */
  int64_t date_unix; /* DATE: Unix seconds */
} polite_retry_after;

/* Parses an HTTP-date in any of the three forms (IMF-fixdate, RFC 850 with a
 * two-digit year, asctime). `now_unix` (seconds) resolves RFC 850's two-digit
 * year: a year more than 50 years in the future means the most recent past
 * year with those digits. Surrounding whitespace is allowed; anything else
 * (bad day/month/hour/minute/second, Feb 29 in a non-leap year, a day name
 * not valid for the form, trailing garbage) is POLITE_EINVAL. A weekday that
 * does not match the date is accepted: the numbers win, as RFC 9110 lets a
 * recipient ignore the day name. Returns 0 and sets *out_unix. */
POLITE_EXTERN int polite_http_date_parse(const char *s, size_t len,
                                         int64_t now_unix, int64_t *out_unix);

/* Formats `unix_s` as IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") into buf
 * (at least 30 bytes). Returns the length, or POLITE_EINVAL. */
POLITE_EXTERN int polite_http_date_format(int64_t unix_s, char *buf,
                                          size_t size);

/* Parses one Retry-After field value. Never fails: the result's kind says
 * what was found. `now_unix` is only used for RFC 850 years. */
POLITE_EXTERN void polite_retry_after_parse(const char *s, size_t len,
                                            int64_t now_unix,
                                            polite_retry_after *out);

/* The wait a parsed Retry-After asks for, in ms, or -1 for NONE/INVALID.
 * A DATE is measured against `server_date_unix` (the response's Date header,
 * the server's own clock) when that is >= 0, else against `now_ms` (local
 * wall clock). A past date gives 0. Never negative, never wraps. */
POLITE_EXTERN int64_t polite_retry_after_delay_ms(const polite_retry_after *ra,
                                                  int64_t now_ms,
                                                  int64_t server_date_unix);

/* ---- Rate-limit headers ---------------------------------------------------
 *
 * Fed one header at a time, like hiredis' reader: no allocation, no
 * ownership of the strings, order independent. Values that are absent or
 * invalid stay -1. */

typedef enum {
  POLITE_WAIT_NONE = 0,
  POLITE_WAIT_SECONDS = 1, /* Retry-After: delay-seconds */
  POLITE_WAIT_DATE = 2,    /* Retry-After: HTTP-date */
  POLITE_WAIT_MS = 3,      /* retry-after-ms / x-ms-retry-after-ms */
  POLITE_WAIT_RESET = 4,   /* a rate-limit reset with nothing remaining */
  POLITE_WAIT_INVALID = 5  /* a Retry-After was present but invalid */
} polite_wait_source;

/* Where a (remaining, reset) pair came from. Each source keeps its own
 * pair, so that one policy's remaining is never paired with another's reset;
 * the planner (polite_rate_plan_headers in ratectl.h) weighs them all. */
typedef enum {
  POLITE_RL_IETF = 0,    /* RateLimit list: the member allowing least */
  POLITE_RL_IETF_SPENT,  /* RateLimit list: r = 0 with the longest t */
  POLITE_RL_DICT,        /* draft-07 RateLimit: remaining=, reset= */
  POLITE_RL_FIELDS,      /* RateLimit-Remaining / RateLimit-Reset */
  POLITE_RL_X,           /* X-RateLimit-Remaining / -Reset / -Reset-After */
  POLITE_RL_OPENAI,      /* x-ratelimit-remaining-requests / -reset-requests */
  POLITE_RL_ANTHROPIC,   /* anthropic-ratelimit-requests-remaining / -reset */
  POLITE_RL_TOKENS,      /* any token family (only its r = 0 means a wait) */
  POLITE_RL_KONG_SECOND, /* X-RateLimit-Remaining-Second (Kong): the reset */
  POLITE_RL_KONG_MINUTE, /* is not sent, so the window bounds it */
  POLITE_RL_KONG_HOUR,
  POLITE_RL_KONG_DAY,
  POLITE_RL_KONG_MONTH,
  POLITE_RL_KONG_YEAR,
  POLITE_RL_SOURCES
} polite_rl_source;

/* One source's remaining and time to reset (ms); -1 when not stated. */
typedef struct {
  int64_t remaining;
  int64_t reset_ms;
} polite_rl_pair;

typedef struct {
  int64_t now_ms; /* wall clock given to polite_headers_init */

  polite_retry_after retry_after; /* kind NONE when absent */
  int64_t retry_after_ms;         /* retry-after-ms / x-ms-retry-after-ms */
  int64_t date_unix;              /* Date header, Unix seconds */

  /* Request limits, from RateLimit/RateLimit-Policy, RateLimit-*,
   * X-RateLimit-*, x-ratelimit-*-requests. When several headers speak, the
   * most restrictive value wins (least remaining, longest reset), so the
   * result does not depend on header order. */
  int64_t limit;
  int64_t remaining;
  int64_t reset_ms; /* time until reset, ms (epoch resets converted) */
  int64_t window_s; /* policy window ("w=60"), seconds */

  /* Token limits (OpenAI's x-ratelimit-*-tokens). */
  int64_t tokens_limit;
  int64_t tokens_remaining;
  int64_t tokens_reset_ms;

  /* Request id to quote to support (x-request-id, request-id, cf-ray, ...):
   * offset/length are not kept because the strings are not owned; the
   * caller copies it when polite_headers_feed returns 1. */
  int saw_request_id;

  /* The planner's inputs. pairs[] is indexed by polite_rl_source. The
   * average is the most restrictive quota per window any policy states
   * (RateLimit-Policy q/w with qu absent or "requests", RateLimit-Limit's
   * w, Kong's X-RateLimit-Limit-Minute and friends); -1 when none. */
  polite_rl_pair pairs[POLITE_RL_SOURCES];
  int64_t avg_quota;
  int64_t avg_window_s;
  /* Bit (1u << source) set when that source's reset was an absolute time
   * (an epoch, a date) made a delta against now_ms, rather than a delta the
   * server computed when the request arrived. */
  unsigned reset_absolute;
} polite_headers;

POLITE_EXTERN void polite_headers_init(polite_headers *h, int64_t now_ms);

/* Feeds one header (name without the colon, value with or without
 * surrounding whitespace). Names are case-insensitive. Returns 1 when the
 * header is a request-id header the caller may want to keep, else 0. */
POLITE_EXTERN int polite_headers_feed(polite_headers *h, const char *name,
                                      size_t name_len, const char *value,
                                      size_t value_len);

/* Feeds one raw header line "Name: value" (CR/LF stripped or not). Lines that
 * are not headers (status lines, blank lines) are ignored. Same return. */
POLITE_EXTERN int polite_headers_feed_line(polite_headers *h, const char *line,
                                           size_t len);

/* The wait the server asked for, in ms, or -1 when it asked for none.
 * Precedence: retry-after-ms family, then Retry-After (date measured against
 * the Date header when present), then a reset with remaining == 0.
 * *source (may be NULL) says which; INVALID when only an invalid
 * Retry-After was seen (then -1 is returned). */
POLITE_EXTERN int64_t polite_headers_wait_ms(const polite_headers *h,
                                             polite_wait_source *source);

/* Parses a Go-style duration as OpenAI sends it ("6m0s", "1s", "20ms",
 * "1h2m3.5s", "0.5s") into ms (rounded up). Returns 0 or POLITE_EINVAL. */
POLITE_EXTERN int polite_go_duration_ms(const char *s, size_t len,
                                        int64_t *out_ms);

/* 1 when a response body says the quota, credit or spend limit is used up
 * (insufficient_quota, quota-exceeded problem type, billing/spend limits,
 * daily quota...): waiting does not help. Looks at most at the first 64 KiB. */
POLITE_EXTERN int polite_body_quota_hint(const char *body, size_t len);

/* ---- Backoff ----------------------------------------------------------- */

typedef struct {
  int64_t base_ms; /* first window; default 1000 */
  int64_t cap_ms;  /* largest window; default 30000 */
} polite_backoff;

#define POLITE_BACKOFF_DEFAULT                                                 \
  { 1000, 30000 }

/* Window for retry number `retry` (0 for the first retry):
 * min(cap, base * 2^retry), computed without overflow. */
POLITE_EXTERN int64_t polite_backoff_window_ms(const polite_backoff *b,
                                               unsigned retry);

/* Full jitter: uniform in [0, window] from one random value. */
POLITE_EXTERN int64_t polite_backoff_delay_ms(const polite_backoff *b,
                                              unsigned retry, uint64_t rnd);

/* ---- The decision ------------------------------------------------------ */

typedef enum {
  POLITE_DONE = 0,  /* final answer: success or an error retrying cannot fix */
  POLITE_RETRY = 1, /* wait wait_ms, then try again */
  POLITE_STOP = 2   /* give up now, for `reason` */
} polite_action;

/* Why. Each maps to one `polite run` outcome (polite_reason_outcome). */
typedef enum {
  POLITE_R_OK = 0,             /* DONE: 1xx-3xx */
  POLITE_R_HTTP_ERROR,         /* DONE: a status retrying cannot fix */
  POLITE_R_RETRY_SERVER,       /* RETRY: the server said when */
  POLITE_R_RETRY_PROMPT,       /* RETRY: past date, one prompt retry */
  POLITE_R_RETRY_BACKOFF,      /* RETRY: no usable header, backoff */
  POLITE_R_RETRIES_EXHAUSTED,  /* STOP: max attempts reached */
  POLITE_R_DEADLINE,           /* STOP: the wait does not fit the deadline */
  POLITE_R_QUOTA_EXHAUSTED,    /* STOP: waiting cannot help */
  POLITE_R_NOT_RETRIED_UNSAFE, /* STOP: write without idempotency key */
  POLITE_R_NETWORK_ERROR,      /* STOP: no response and no retry left */
  POLITE_R_WAIT_TOO_LONG,      /* STOP: the server's wait exceeds max_wait_ms */
  POLITE_R_TLS_ERROR,          /* STOP: a TLS failure a retry cannot fix */
  POLITE_R_CANCELLED /* STOP: the attempt was cut in flight (the run was
                        interrupted); never from polite_decide */
} polite_reason;

/* What an attempt without a response (status 0) means for another one:
 * polite_transport_failure() gives it for a libcurl result, and
 * docs/decisions.md lists the results of each kind and why. */
typedef enum {
  POLITE_FAILURE_TRANSIENT = 0, /* may pass next time (a reset, a timeout, a
                                   refused connection): retried with
                                   backoff, network_error when none is left */
  POLITE_FAILURE_TLS            /* the server's certificate did not verify,
                                   or TLS cannot be set up with the files
                                   given: the same on every attempt, so
                                   STOP tls_error at once */
} polite_failure;

typedef struct {
  const char *method; /* "GET", "POST", ...; NULL means GET */
  int has_idempotency_key;
  int retry_unsafe; /* caller opts in to retrying writes without a key */
  int status;       /* HTTP status; 0 = no response (network error) */
  const polite_headers *headers; /* may be NULL */
  int body_quota;                /* polite_body_quota_hint() of the body */
  unsigned attempt;              /* network attempts made so far, >= 1 */
  unsigned max_attempts;         /* >= 1 */
  int64_t time_left_ms;  /* before the deadline; < 0 means no deadline */
  int prompt_retry_used; /* a past-date prompt retry was already granted */
  polite_backoff backoff;
  int64_t spread_ms;      /* max random spread added to a server wait */
  uint64_t rnd;           /* one random value for jitter and spread */
  int64_t max_wait_ms;    /* longest server wait worth waiting for; a
                             longer one is STOP wait_too_long (never
                             sending early); <= 0 means no limit */
  int retry_writes;       /* a write without a key is retried after a 429
                             only (an API that refuses before doing any
                             work), never after a 503 or a network error */
  polite_failure failure; /* status 0: what kind of failure it was */
} polite_decide_in;

typedef struct {
  polite_action action;
  polite_reason reason;
  int64_t wait_ms;        /* RETRY: how long to wait */
  int64_t server_wait_ms; /* the server's minimum, or -1 */
  polite_wait_source source;
  int account_pause; /* 1: the account is throttled; pause the whole
                        budget for server_wait_ms (+ spread) */
  const char *why;   /* static English sentence */
} polite_decision;

POLITE_EXTERN void polite_decide(const polite_decide_in *in,
                                 polite_decision *out);

/* "ok", "http_error", "retries_exhausted", "deadline", "quota_exhausted",
 * "not_retried_unsafe", "network_error", "wait_too_long", "tls_error",
 * "cancelled" for a final reason; NULL for RETRY reasons. */
POLITE_EXTERN const char *polite_reason_outcome(polite_reason r);
/* Short token for any reason ("server", "prompt", "backoff", ...). */
POLITE_EXTERN const char *polite_reason_name(polite_reason r);

/* 1 for methods that are retried without an idempotency key
 * (GET HEAD PUT DELETE OPTIONS TRACE), 0 for POST, PATCH and others. */
POLITE_EXTERN int polite_method_idempotent(const char *method);

/* ---- GCRA ------------------------------------------------------------ */

/* Generic cell rate algorithm on a theoretical arrival time (TAT), in
 * microseconds. Emission interval T = 1e6 / rate; burst tolerance
 * tau = (burst - 1) * T, so burst 1 spaces every start evenly.
 * The arithmetic is done in nanoseconds (the *_ns fields are the state that
 * counts) so that a rate like 1.5/s (T = 666666.67 us) does not drift; the
 * *_us fields are the same values rounded to microseconds, kept up to date
 * by the functions below for display and for callers that think in us. */
typedef struct {
  int64_t interval_us;
  int64_t tolerance_us;
  int64_t tat_us;       /* 0 until first use */
  int64_t interval_ns;  /* T in ns (exact state) */
  int64_t tolerance_ns; /* tau in ns (exact state) */
  int64_t tat_ns;       /* TAT in ns (exact state); 0 until first use */
} polite_gcra;

/* rate_per_s > 0, burst >= 1. Returns 0 or POLITE_EINVAL. */
POLITE_EXTERN int polite_gcra_init(polite_gcra *g, double rate_per_s,
                                   unsigned burst);

/* Asks to start `cost` units at now_us. Returns 0 and records the start when
 * allowed, else the number of microseconds to wait (nothing recorded). */
POLITE_EXTERN int64_t polite_gcra_admit(polite_gcra *g, int64_t now_us,
                                        unsigned cost);

/* Account-wide pause: nothing is admitted before until_us; afterwards the
 * planned spacing resumes (no catch-up burst). */
POLITE_EXTERN void polite_gcra_pause_until(polite_gcra *g, int64_t until_us);

/* ---- Units ------------------------------------------------------------ */

/* "N/UNIT" with UNIT s, sec, min, m, h, hour, day, d (also "N/2s" style
 * multiples are not accepted). Sets *per_s. Returns 0 or POLITE_EINVAL. */
POLITE_EXTERN int polite_rate_parse(const char *s, double *per_s);

/* "250ms", "2s", "1.5s", "3m", "1h", "1h30m", "500" (bare = seconds).
 * Sets *ms. Returns 0 or POLITE_EINVAL / POLITE_ERANGE. */
POLITE_EXTERN int polite_duration_parse(const char *s, int64_t *ms);

#ifdef __cplusplus
}
#endif

#endif
