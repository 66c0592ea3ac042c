/* polite batch: the engine that runs many requests over one libcurl multi
 * handle under one shared budget (the engine of `polite run`). Requests and
 * the input format are in request.h, redaction in redact.h; both are
 * included here so that code written against the older all-in-one header
 * still builds. */
#ifndef POLITE_BATCH_H
#define POLITE_BATCH_H

#include <polite/budget.h>
#include <polite/clock.h>
#include <polite/core.h>
#include <polite/diagnose.h>
#include <polite/ratectl.h>
#include <polite/redact.h>
#include <polite/request.h>
#include <polite/transport.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The engine -------------------------------------------------------- */

/* Final outcomes, in the order stats count them. */
typedef enum {
  POLITE_OUT_OK = 0,
  POLITE_OUT_HTTP_ERROR,
  POLITE_OUT_RETRIES_EXHAUSTED,
  POLITE_OUT_DEADLINE,
  POLITE_OUT_QUOTA_EXHAUSTED,
  POLITE_OUT_NOT_RETRIED_UNSAFE,
  POLITE_OUT_NETWORK_ERROR,
  POLITE_OUT_INVALID_INPUT,
  POLITE_OUT_CANCELLED,
  POLITE_OUT_WAIT_TOO_LONG, /* the server's wait (or the budget's pause)
                               exceeds max_wait_ms: not waited for */
  POLITE_OUT_QUEUE_FULL,    /* a submitted request (polite/engine.h) found
                               its account's queue full: never sent */
  POLITE_OUT_TLS_ERROR,     /* a TLS failure a retry cannot fix (the
                               certificate did not verify, ...): one
                               attempt (polite_failure) */
  POLITE_OUT_COUNT /* grows when an outcome is added (last, so the others
                      keep their numbers): by_outcome below grows with it */
} polite_outcome;

POLITE_EXTERN const char *polite_outcome_name(polite_outcome o);

/* One finished logical request, valid only during the on_result call. */
typedef struct {
  const polite_request *req; /* id, url (not redacted), line, ... */
  const char *method;        /* as sent */
  polite_outcome outcome;
  int status;         /* final HTTP status, 0 for none */
  unsigned attempts;  /* network attempts made */
  int64_t elapsed_ms; /* from the first attempt (0 if none) */
  const char *body;   /* last response body (NULL for none) */
  size_t body_len;
  int body_truncated;          /* longer than max_body */
  const char *error;           /* English message or NULL */
  const char *idempotency_key; /* as sent, or NULL */
  const char *location;        /* a 3xx answer's Location, redacted with
                                  polite_redact_url (redirects are not
                                  followed), or NULL */
  /* When the request ended because its account cannot be served in time
   * (wait_too_long, deadline, queue_full, a quota_exhausted account, a
   * refused or paused account): how long until the account opens again,
   * in ms, never earlier than the server said (a gateway answers it as
   * Retry-After); -1 when not known or not applicable. */
  int64_t retry_after_ms;
  int pause_status; /* the status (429 or 503) of the answer that paused,
                       refused or stopped the account, when the outcome
                       comes from it; 0 otherwise */
  int relayed;      /* 1: the server's answer to the last attempt was
                       relayed to the caller as it arrived (polite/engine.h
                       RELAY); status is that answer's. 0 otherwise */
} polite_result;

/* One network attempt, valid only during the on_attempt call. */
typedef struct {
  const polite_request *req;
  const char *method;
  unsigned attempt; /* 1-based */
  int64_t start_wall_ms, end_wall_ms;
  int status;                    /* 0: no response */
  const char *retry_after;       /* raw header value, or NULL */
  const char *request_id;        /* server's request id header value, or NULL */
  const char *request_id_header; /* its name */
  const char *error;             /* transport error, or NULL */
  polite_decision decision;      /* what happens next and why */
  /* Who sent the answer and what kind of limit it is (see diagnose.h),
   * finished with the body; NULL unless the status is 429 or 503. */
  const polite_diagnosis *diagnosis;
} polite_attempt;

/* A network attempt about to be sent, valid only during the
 * on_attempt_start call. */
typedef struct {
  const polite_request *req;
  const char *method;          /* as sent */
  unsigned attempt;            /* 1-based */
  int64_t start_wall_ms;       /* the same start_wall_ms on_attempt reports */
  const char *idempotency_key; /* as sent, or NULL */
} polite_attempt_start;

/* 429/503 answers counted by sender and limit kind (polite_batch_stats). */
typedef struct {
  char component[32]; /* "origin:openai", "unknown", ...; "other" collects
                         what did not fit in POLITE_BATCH_MAX_THROTTLED */
  polite_limit_kind limit;
  uint64_t count;
} polite_throttle_count;

#define POLITE_BATCH_MAX_THROTTLED 32

/* How the start rate is chosen (polite_batch_options.rate_mode). */
typedef enum {
  POLITE_RATE_FIXED = 0, /* the budget's configured rate is the plan */
  POLITE_RATE_AUTO = 1,  /* learned at run time: from rate-limit headers
                            when the server sends them, else from 429/503
                            (a pure controller, polite/ratectl.h), capped
                            by max_rate_per_s and by the budget's rate */
  POLITE_RATE_NONE = 2   /* no start rate of the engine's own (the
                            budget's configured rate, if any, still holds) */
} polite_rate_mode;

/* One change of the learned start rate, valid only during on_rate. */
typedef struct {
  int64_t wall_ms;
  double rate_per_s;
  double previous_per_s; /* < 0: none (the first rate) */
  /* "start" (the first estimate), "headers" (the server's rate-limit
   * headers), "throttle" (a 429/503 cut it), "probe" (probing upward),
   * "max_rate" (capped by max_rate_per_s), "budget" (another participant's
   * cut, through a shared budget) */
  const char *reason;
  const char *detail; /* one English sentence */
  /* With scope_host, the host account the change belongs to ("*": the
   * hosts beyond max_host_rates, which share one learned rate); NULL with
   * one account for the run. */
  const char *host;
} polite_rate_change;

/* The learned rate of one host account (scope_host with rate_mode AUTO):
 * the same figures as the run's rate_* stats, for that host alone. */
typedef struct {
  const char *host; /* "*": the hosts beyond max_host_rates */
  double first_per_s, final_per_s, lowest_per_s, highest_per_s;
  uint64_t cuts_throttle, cuts_headers, cuts_budget;
} polite_host_rate;

/* Learned rates kept per host by default (polite_batch_options
 * .max_host_rates), and the most that may be asked for: a controller is
 * about 10 KB, and a new request's host is looked up among them in turn. */
#define POLITE_BATCH_MAX_HOST_RATES 64u
#define POLITE_BATCH_MAX_HOST_RATES_LIMIT 4096u

/* Counters the engine keeps while it runs (read with polite_batch_stats). */
typedef struct {
  uint64_t read;    /* requests taken from the source */
  uint64_t results; /* results emitted */
  uint64_t by_outcome[POLITE_OUT_COUNT];
  uint64_t attempts; /* network attempts started */
  uint64_t units;    /* rate units they spent (the sum of their costs) */
  uint64_t first_attempts;
  uint64_t retries;
  uint64_t n429, n503;
  unsigned in_flight, waiting;
  unsigned peak_in_flight;
  int64_t retry_wait_ms;  /* sum of the waits chosen between attempts */
  int64_t paused_ms;      /* time the budget spent paused by the server */
  int64_t paused_left_ms; /* current pause left (0 when none) */
  int64_t run_us;         /* time since the run began */
  int64_t first_start_us; /* since the run began; -1 before any */
  int64_t last_start_us;
  double in_flight_integral_s; /* sum of in_flight * dt, in seconds */
  int64_t latency_sum_us;      /* sum of attempt durations */
  const int64_t *intervals_us; /* gaps between consecutive starts with no
                                  server pause in them (the first
                                  POLITE_BATCH_MAX_INTERVALS) */
  size_t n_intervals;
  uint64_t unpaused_gaps; /* all such gaps, and their sum */
  int64_t unpaused_gap_sum_us;
  uint64_t paused_gaps; /* gaps that contained a server pause */
  const polite_throttle_count *throttled; /* 429/503 by component and
                                             limit, in order of first
                                             appearance */
  size_t n_throttled;
  /* The learned start rate (rate_mode POLITE_RATE_AUTO; all 0 otherwise),
   * in starts per second: the first estimate, the rate now, the lowest and
   * highest it reached, and the cuts by cause. */
  int rate_learned;
  double rate_first_per_s, rate_final_per_s, rate_lowest_per_s,
      rate_highest_per_s;
  uint64_t rate_cuts_throttle, rate_cuts_headers, rate_cuts_budget;
  /* With scope_host: the same per host account, in order of first use (the
   * run-wide figures above then cover every host's changes). */
  const polite_host_rate *host_rates;
  size_t n_host_rates;
  /* The budget could not be used (a Redis server gone, a damaged file, a
   * lock held too long): nothing was admitted meanwhile. */
  int64_t budget_outage_ms;       /* how long the current outage has lasted
                                     (0: the budget works) */
  int64_t budget_outage_total_ms; /* all outages of the run, the current one
                                     included */
  uint64_t budget_outages;        /* outages begun */
  const char *budget_error;       /* the budget's message during an outage,
                                     else NULL */
  int quota_stop;                 /* a quota_exhausted stopped new starts */
  int cancelled;                  /* polite_batch_cancel was called */
  int input_done;                 /* the source is exhausted */
} polite_batch_stats;

#define POLITE_BATCH_MAX_INTERVALS 65536

typedef struct {
  polite_budget *budget;   /* shared allowance; not owned; NULL = none */
  int scope_host;          /* one account per host instead of one */
  unsigned max_attempts;   /* network attempts per request, >= 1 */
  int64_t deadline_ms;     /* per request, from its first attempt; <0 none */
  int64_t run_deadline_ms; /* whole run; < 0 none */
  int64_t connect_timeout_ms;
  int64_t timeout_ms;   /* per attempt */
  int insecure;         /* do not verify TLS */
  int retry_unsafe;     /* retry POST/PATCH without a key */
  int idempotency_auto; /* random key for POST/PATCH without one */
  int64_t spread_ms;    /* max random spread after a server wait */
  polite_backoff backoff;
  size_t max_body;            /* bytes kept per response */
  unsigned max_pending;       /* requests held in memory (in flight +
                                 waiting); 0: 2 * concurrency + 64 */
  uint64_t max_requests;      /* stop reading after this many; 0 = all */
  int64_t cancel_grace_ms;    /* after cancel, in-flight transfers get this */
  int64_t heartbeat_ms;       /* while transfers are in flight, renew the
                                 budget leases of each account that has one at
                                 least this often (an acquire of 0 units and 0
                                 slots), so a request longer than the lease
                                 keeps its slot; 0 = off; default 1000 */
  uint64_t seed;              /* 0: from the system's random source */
  const char *user_agent;     /* NULL: "polite/VERSION" */
  int64_t max_wait_ms;        /* a server wait (Retry-After, a reset, a pause
                                 found in the budget) longer than this ends
                                 the request `wait_too_long` at once instead
                                 of waiting, and is not written to the budget
                                 as a pause; <= 0 = no limit; default 15 min.
                                 The run sets it as the budget's max-wait
                                 (polite_budget_set_max_wait) */
  int64_t budget_outage_ms;   /* when the budget cannot be used (it returns
                                 an error: Redis unreachable, a damaged
                                 file), nothing starts and the engine asks
                                 again with a backoff (100 ms doubling to
                                 2 s) for up to this long, then stops: the
                                 requests not started end `cancelled`, the
                                 ones in flight finish, and polite_batch_run
                                 returns the budget's error. 0: stop at the
                                 first failure; default 60 s */
  polite_rate_mode rate_mode; /* default POLITE_RATE_FIXED */
  double max_rate_per_s;      /* cap of the learned rate; <= 0: none */
  unsigned max_host_rates;    /* scope_host with rate_mode AUTO: at most this
                                 many hosts get a learned rate of their own;
                                 the hosts beyond share one (host "*"); 0:
                                 POLITE_BATCH_MAX_HOST_RATES, at most
                                 POLITE_BATCH_MAX_HOST_RATES_LIMIT */
  /* The clocks and the random source (NULL: the real ones). A fake env
   * makes the engine's decisions reproducible; the transfers themselves
   * still run in real time. */
  const polite_env *env;
  const polite_transport_options *transport; /* curl's CA, certificate,
                              proxy, -u, --compressed, HTTP version
                              settings (not owned); NULL: libcurl's */

  /* Pulls the next request: 1 and *out (ownership passes to the engine),
   * 0 at the end, POLITE_EAGAIN when nothing is available now but more may
   * come (a queue, a stream of clients): the run goes on and the source is
   * asked again at the engine's next turn, within 100 ms or at once after
   * polite_batch_wakeup; any other value < 0 is an error (the run ends as
   * at end of input). */
  int (*next)(void *ud, polite_request **out);
  void (*on_result)(void *ud, const polite_result *r);
  void (*on_attempt)(void *ud, const polite_attempt *a); /* may be NULL */
  /* Called for every attempt right before its transfer is handed to
   * libcurl, so nothing of it has been sent yet (may be NULL). Returning
   * non-zero vetoes the attempt: it is not sent, its slot is given back and
   * the request ends `cancelled` (a journal that cannot record the start
   * uses this). Each started attempt is later reported by on_attempt. */
  int (*on_attempt_start)(void *ud, const polite_attempt_start *s);
  /* Called for every change of the learned rate (rate_mode AUTO): the
   * first estimate, each cut, each probe step of 10% or more, reaching
   * max_rate_per_s (may be NULL). */
  void (*on_rate)(void *ud, const polite_rate_change *c);
  /* Called at least every 100 ms while running (may be NULL). */
  void (*on_tick)(void *ud, const polite_batch_stats *s);
  void *ud;
  /* In/out, rate_mode AUTO without scope_host only (else ignored): when
   * non-NULL, an initialised controller (polite_ratectl_init, its own
   * config and times on this engine's monotonic clock) the run starts from
   * instead of a fresh one, and into which it writes its learned state
   * back when polite_batch_run returns 0 (left as it was otherwise). Not
   * owned; it must not be touched while the run lasts. polite_client keeps
   * one so that what one call learns paces the next. NULL: a fresh
   * controller. */
  polite_ratectl *ratectl;

  /* The gateway's rules (polite/engine.h; docs/gateway.md). */
  int retry_writes;      /* a write without an idempotency key is retried after
                            a 429 (never a 503, never a network error); see
                            polite_decide_in.retry_writes. Default 0 */
  unsigned queue_max;    /* requests submitted through polite_engine_submit
                            that may wait per account (not counting those in
                            flight); one more ends queue_full at once. 0:
                            POLITE_ENGINE_QUEUE_MAX_DEFAULT. Requests read
                            from `next` are bounded by max_pending instead */
  int quota_per_account; /* a spent quota (quota_exhausted) stops only its
                            account (until the reset the answer states,
                            else quota_stop_ms; its requests end
                            quota_exhausted at once without being sent),
                            not the whole run. Default 0: the run stops */
  int64_t quota_stop_ms; /* with quota_per_account and no reset stated;
                            0: POLITE_ENGINE_QUOTA_STOP_DEFAULT_MS */
} polite_batch_options;

/* The defaults of the gateway's rules in polite_batch_options: submitted
 * requests waiting per account, and how long a spent quota stops its
 * account when the answer states no reset. */
#define POLITE_ENGINE_QUEUE_MAX_DEFAULT 1024u
#define POLITE_ENGINE_QUOTA_STOP_DEFAULT_MS INT64_C(60000)

/* Fills o with the defaults: max_attempts 5, no deadlines, connect timeout
 * 10 s, timeout 30 s, spread 250 ms, backoff 1 s..30 s, max_body 16 MiB,
 * grace 2 s, heartbeat 1 s, max_wait 15 min, budget outage 60 s. */
POLITE_EXTERN void polite_batch_options_init(polite_batch_options *o);

typedef struct polite_batch polite_batch;

/* Creates an engine (not yet running). Returns NULL with a message in err. */
POLITE_EXTERN polite_batch *polite_batch_new(const polite_batch_options *o,
                                             char *err, size_t errlen);
/* Runs until every request read has a result (or cancel + grace). One
 * thread drives every transfer. Returns 0, or a negative polite_errno when
 * the engine itself failed (budget unusable, libcurl). */
POLITE_EXTERN int polite_batch_run(polite_batch *b);
/* Stops starting, cancels waits, and gives in-flight transfers the grace.
 * Async-signal-safe (only sets a flag). */
POLITE_EXTERN void polite_batch_cancel(polite_batch *b);
/* Wakes a running engine that sleeps (from another thread): the next turn
 * asks the source again at once, for one that said POLITE_EAGAIN. */
POLITE_EXTERN void polite_batch_wakeup(polite_batch *b);
POLITE_EXTERN const polite_batch_stats *
polite_batch_stats_get(const polite_batch *b);
/* Last engine error message ("" when none). */
POLITE_EXTERN const char *polite_batch_errstr(const polite_batch *b);
POLITE_EXTERN void polite_batch_free(polite_batch *b);

#ifdef __cplusplus
}
#endif

#endif
