/* polite client: one blocking call per logical request, with the same
 * retry decisions and shared budget as `polite run` (it runs a one-request
 * batch on the calling thread). Thread-safe: any number of threads may call
 * polite_client_request on one client; they share its budget and its
 * learned start rate. */
#ifndef POLITE_CLIENT_H
#define POLITE_CLIENT_H

#include <polite/batch.h>
#include <polite/budget.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The start rate (rate_per_s, rate_mode, max_rate_per_s), as `polite run`
 * --rate / --max-rate:
 *  - rate_per_s > 0 (with rate_mode AUTO or FIXED): that fixed rate, as
 *    before rate_mode existed;
 *  - rate_mode AUTO (the default) and rate_per_s <= 0: learned while the
 *    client runs (polite/ratectl.h), from rate-limit headers when the
 *    server sends them, else from 429/503 answers; capped by
 *    max_rate_per_s (> 0) and, with a caller's budget, by that budget's
 *    configured rate. The client keeps the controller between calls, and
 *    the rate lives in the budget, so a 429 seen by one call slows every
 *    call that follows or runs at the same time (and, through a file: or
 *    redis:// budget, every other participant);
 *  - rate_mode FIXED and rate_per_s <= 0: the budget's configured rate (a
 *    local budget's is rate_per_s: unpaced);
 *  - rate_mode NONE: not paced by the client (a caller's budget's own rate
 *    still holds); rate_per_s must be <= 0.
 * A client created with polite_client_options zeroed by hand (rate_mode 0,
 * FIXED) behaves as before rate_mode existed. */
typedef struct {
  polite_budget *budget;      /* shared budget, not owned; NULL: the client
                                 creates a local one from rate/concurrency */
  double rate_per_s;          /* used when budget is NULL; <= 0 unlimited
                                 (see the rules above) */
  unsigned burst;             /* default 1 */
  unsigned concurrency;       /* default 4 */
  unsigned max_attempts;      /* default 5 */
  int64_t deadline_ms;        /* per request; < 0 none (default) */
  int64_t connect_timeout_ms; /* default 10 s */
  int64_t timeout_ms;         /* per attempt; default 30 s */
  int insecure;
  int retry_unsafe;
  int idempotency_auto;       /* random key for POST/PATCH without one */
  polite_rate_mode rate_mode; /* default POLITE_RATE_AUTO (rules above) */
  double max_rate_per_s;      /* cap of the learned rate; <= 0: none
                                 (default) */
  int64_t budget_outage_ms;   /* a budget that cannot be used (Redis gone, a
                                 damaged file) is waited out this long per
                                 call, nothing sent meanwhile (bounded by
                                 deadline_ms); then the call returns
                                 POLITE_EBUDGET. Default 60 s; 0: fail at
                                 the first error */
  const polite_env *env;      /* the clocks and the random source every
                                 call reads (polite/clock.h), not owned;
                                 NULL: the real ones (default) */
} polite_client_options;

/* The defaults above. */
POLITE_EXTERN void polite_client_options_init(polite_client_options *o);

typedef struct {
  int status;             /* final HTTP status, 0 for none */
  polite_outcome outcome; /* polite_outcome_name() gives the word */
  unsigned attempts;
  int64_t elapsed_ms;
  char *body; /* malloc'ed, NUL-terminated; may be NULL */
  size_t body_len;
  char *error; /* malloc'ed message or NULL */
} polite_response;

typedef struct polite_client polite_client;

/* Returns NULL when out of memory or when the options are invalid
 * (max_attempts 0, an unknown rate_mode, rate_mode NONE with a rate_per_s
 * > 0, a NaN rate). */
POLITE_EXTERN polite_client *polite_client_new(const polite_client_options *o);

/* Runs one logical request (copied; the caller keeps req) with retries
 * under the client's budget, blocking until it ends. Fills *resp (free it
 * with polite_response_free). Returns 0 when a result was produced (look
 * at resp->outcome), or a negative polite_errno when the engine could not
 * run (resp->error says why): POLITE_EBUDGET when the budget could not be
 * used for budget_outage_ms (resp->outcome is then `cancelled` and nothing
 * was sent, unless an attempt already in flight finished: then its answer
 * is in resp). */
POLITE_EXTERN int polite_client_request(polite_client *c,
                                        const polite_request *req,
                                        polite_response *resp);

/* The start rate the client plans now, in starts per second: with a
 * learned rate the budget's shared rate (what paces every call; before the
 * first call, the controller's first estimate), capped by the budget's
 * configured rate; else the budget's configured rate; 0 when unpaced.
 * Thread-safe. */
POLITE_EXTERN double polite_client_rate_per_s(polite_client *c);

POLITE_EXTERN void polite_response_free(polite_response *resp);
POLITE_EXTERN void polite_client_free(polite_client *c);

#ifdef __cplusplus
}
#endif

#endif
