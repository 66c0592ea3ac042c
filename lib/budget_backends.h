/* polite budget: internal constructors of the shared backends (file:PATH
 * for processes on one host, redis://HOST:PORT/NAME for hosts), called by
 * polite_budget_open and by their tests. Not installed. */
#ifndef POLITE_BUDGET_BACKENDS_H
#define POLITE_BUDGET_BACKENDS_H

#include <polite/budget.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default lease time-to-live of a concurrency slot held by a participant
 * that stops calling into the budget (killed, hung): 30 s. A URI parameter
 * `?lease=DURATION` changes it per participant. */
#define POLITE__BUDGET_LEASE_DEFAULT_MS 30000

/* The highest rate (per second) a shared budget stores or believes when
 * read back, learned rate and ceiling alike: beyond it a value was not
 * written by polite (a damaged file, a foreign Redis writer). The Redis
 * script (budget_redis_script.h) spells the same bound as 1e9. */
#define POLITE__BUDGET_RATE_MAX 1e9

/* When no slot is free, the shared backends answer POLITE_BUDGET_WAIT_SLOT
 * with *wait_us set to a poll hint (> 0) instead of -1: a release in another
 * process or on another host wakes nobody here, so the caller should come
 * back after at most that long. A caller that waits for its own releases
 * only still works, but may sleep until one of its own requests ends. */
#define POLITE__BUDGET_SLOT_POLL_US 10000

/* Allocates a backend object of `size` bytes whose first member is a
 * struct polite_budget: zeroed, with `vt` set and a copy of *cfg in which a
 * burst of 0 means 1. NULL when cfg is unusable (NULL, NaN rate) or memory is
 * short. The backend frees it with free(). */
void *polite__budget_alloc(size_t size, const polite_budget_vtable *vt,
                           const polite_budget_config *cfg);

/* Formats "budget 'URI': " + fmt into buf (may be NULL); the URI goes
 * through polite_redact_url and is cut to 80 bytes so messages stay
 * readable. */
void polite__budget_errf(char *buf, size_t len, const char *uri,
                         const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* One duration parameter of a budget URI ("lease", "timeout"): where it
 * goes (in ms, left alone when absent) and its bounds. */
typedef struct {
  const char *name;
  int64_t *ms;
  int64_t max_ms;    /* <= 0: no upper bound */
  const char *bound; /* said in the message when out of bounds, e.g. "at
                        most 7 days" (may be NULL) */
} polite__budget_param;

/* Parses the query of a budget URI, q pointing at its '?' (or NULL: none):
 * "name=DURATION" pairs joined by '&', each one of params. An unknown
 * parameter is named without its value (it may be a secret); a bad value
 * is quoted (cut to 40 bytes). Messages start with the (already redacted)
 * uri. Returns 0 or POLITE_EINVAL with errbuf set. */
int polite__budget_uri_params(const char *q, const polite__budget_param *params,
                              size_t n, const char *uri, char *errbuf,
                              size_t errlen);

/* The rate an account admits at: the shared learned rate when one is
 * stored, capped by the configured rate when that is > 0; else the
 * configured rate (0: unlimited). */
double polite__budget_rate(const polite_budget_config *cfg,
                           const polite_shared_rate *sr);

/* The concurrency an account admits at: the configured limit, lowered by
 * the account's learned in-flight cap (polite_budget_set_slot_cap) when that
 * is set and smaller; 0 (unlimited) stays unlimited. */
unsigned polite__budget_slot_limit(unsigned concurrency, unsigned slot_cap);

/* Whether `slots` more cannot start beside `in_use` under `limit` (from
 * polite__budget_slot_limit): 0 when limit or slots is 0, else 1 when they
 * do not fit. One rule for every backend, so that they wait alike. */
int polite__budget_slots_short(unsigned limit, uint64_t in_use, unsigned slots);

/* Gives g the interval of rate_per_s (> 0) and burst, keeping its TAT, so a
 * learned rate takes over from the next admission without a burst. Returns
 * 0 or POLITE_EINVAL. */
int polite__gcra_rerate(polite_gcra *g, double rate_per_s, unsigned burst);

/* Opens (creating when missing) the budget file named by
 * uri = "file:PATH[?lease=DURATION]". Processes that open the same PATH
 * share one start rate, one concurrency limit and one pause per account.
 * The first process to create the file sets rate, burst and concurrency; a
 * later joiner asking for different values is refused (POLITE_EINVAL, the
 * message names the file and both settings). POLITE_EBUDGET when the file
 * cannot be opened, mapped or is not a polite budget file (never
 * overwritten). Times given to the vtable must be CLOCK_MONOTONIC
 * microseconds (polite_mono_us), which all processes on a host share.
 * On error *out is NULL and errbuf (may be NULL) holds the reason. */
int polite__budget_file_new(const char *uri, const polite_budget_config *cfg,
                            polite_budget **out, char *errbuf, size_t errlen);

/* polite__budget_file_new with an env (polite_budget_open_env; NULL: the
 * real clocks and random source) and flags: POLITE__BUDGET_INSPECT opens an
 * existing file only and adopts its settings (polite budget show|clear). */
#define POLITE__BUDGET_INSPECT 1u
int polite__budget_file_open(const char *uri, const polite_budget_config *cfg,
                             const polite_env *env, unsigned flags,
                             polite_budget **out, char *errbuf, size_t errlen);

/* Test hook: takes the file's cross-process lock and returns without
 * releasing it (a child process calls this, then dies by SIGKILL, to show
 * that the lock is recovered). Returns 0 or a negative polite_errno. */
int polite__budget_file_hold_lock(polite_budget *b);

/* Connects to the budget named by uri =
 * "redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME[?lease=DUR&timeout=DUR]"
 * (PORT 6379 by default; timeout, 1 s by default, bounds connects and each
 * command; a Cluster MOVED reply is followed to the slot's owner).
 * NAME is [A-Za-z0-9._:-]+ and becomes the Redis Cluster hash tag {NAME}
 * of every key. The rate, burst and concurrency are this participant's
 * (each admission passes them to the script; use the same everywhere).
 * Returns POLITE_EINVAL for a malformed URI, POLITE_EBUDGET when the server
 * cannot be reached at open time (message names the URI without its
 * password). After open, a lost server makes acquire fail closed with
 * POLITE_EBUDGET and the client reconnects with backoff. env
 * (polite_budget_open_env; NULL: the real clocks and random source) gives
 * the random part of the lease id, and the monotonic clock of the calls
 * that get no now_us (release, set_slot_cap, close), which their reconnect
 * backoff is decided on. */
int polite__budget_redis_open(const char *uri, const polite_budget_config *cfg,
                              const polite_env *env, polite_budget **out,
                              char *errbuf, size_t errlen);

/* Round trips to the server made by this redis budget so far (connects,
 * script loads and admissions); for the benchmark. */
uint64_t polite__budget_redis_round_trips(const polite_budget *b);

#ifdef __cplusplus
}
#endif

#endif
