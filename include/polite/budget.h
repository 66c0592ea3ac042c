/* polite budget: one shared allowance (start rate + concurrency) behind one
 * interface, with backends chosen by URI ("local", "file:PATH",
 * "redis://HOST:PORT/NAME") behind the same vtable. */
#ifndef POLITE_BUDGET_H
#define POLITE_BUDGET_H

#include <polite/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one account allows. A budget holds any number of accounts, named by
 * a key (NULL or "" is the default account); `--budget-scope host` uses the
 * host name as the key, so each host gets its own account with these
 * settings. */
typedef struct {
  double rate_per_s;    /* planned starts per second; <= 0 means unlimited */
  unsigned burst;       /* starts allowed back to back; >= 1 (default 1) */
  unsigned concurrency; /* slots in flight; 0 means unlimited */
} polite_budget_config;

/* Result of polite_budget_acquire. */
typedef enum {
  POLITE_BUDGET_ADMITTED = 0,   /* the units are charged, the slots yours */
  POLITE_BUDGET_WAIT_RATE = 1,  /* the start rate says wait *wait_us */
  POLITE_BUDGET_WAIT_PAUSE = 2, /* the account is paused for *wait_us */
  POLITE_BUDGET_WAIT_SLOT = 3   /* no free slot: retry after a release.
                                   *wait_us is -1 only from the local
                                   backend (a release in this process wakes
                                   the caller); the shared backends (file,
                                   redis) give a poll hint in *wait_us, as
                                   a release in another process wakes
                                   nobody here */
} polite_budget_status;

typedef struct polite_budget polite_budget;

/* The backend vtable. Every function receives `now_us` from the caller
 * (monotonic microseconds in this process) so that tests run on a fake
 * clock; a backend shared between processes or hosts converts the times it
 * is given into durations (until_us - now_us) and applies them against its
 * own clock (the file's, Redis TIME). All functions must be thread-safe.
 * On failure a function returns a negative polite_errno and leaves a short
 * message in the budget's errstr; callers fail closed (no start). */
typedef struct {
  const char *scheme; /* "local", "file", "redis" */
  /* Asks at now_us for `units` units of the start rate and `slots`
   * concurrency slots, both or neither: admitted only when the rate admits
   * `units` (GCRA: the theoretical arrival time advances units x interval;
   * units above the burst are admitted once the account is idle, i.e. its
   * TAT is not in the future, and the debt then spaces the next starts)
   * AND `slots` slots are free. A request costing N rate units (tokens)
   * asks for (N, 1): the concurrency limit counts requests.
   *  - units 0: no rate charge (a slot only);
   *  - slots 0: never waits for a slot (a rate charge only);
   *  - units 0 and slots 0: takes nothing and renews the leases this
   *    participant holds in the account (shared backends; a heartbeat for
   *    long requests); answers ADMITTED, or WAIT_PAUSE while paused.
   * A pause blocks every acquire. Slots above the concurrency limit are
   * never free (WAIT_SLOT forever). Returns a polite_budget_status (>= 0)
   * and sets *wait_us for the WAIT_* answers, or a negative polite_errno. */
  int (*acquire)(polite_budget *b, const char *key, int64_t now_us,
                 unsigned units, unsigned slots, int64_t *wait_us);
  /* Gives back `slots` slots taken by acquire (never fails; a backend that
   * cannot reach its store lets the lease expire). Rate units are never
   * given back: the rate counts what was started. */
  void (*release)(polite_budget *b, const char *key, unsigned slots);
  /* Pauses the whole account: no start before until_us; afterwards the
   * planned spacing resumes without a catch-up burst. A later pause never
   * shortens an earlier one. Returns 0 or a negative polite_errno. */
  int (*pause_until)(polite_budget *b, const char *key, int64_t now_us,
                     int64_t until_us);
  /* Time left in the account's pause at now_us, 0 when not paused. */
  int64_t (*paused_for)(polite_budget *b, const char *key, int64_t now_us);
  void (*close)(polite_budget *b);
} polite_budget_vtable;

/* Every backend's object starts with this header. */
struct polite_budget {
  const polite_budget_vtable *vt;
  polite_budget_config cfg;
  char errstr[128]; /* last error; "" when none */
};

/* Opens a budget from a URI: "local" (in-process, thread-safe),
 * "file:PATH[?lease=D]" (processes on one host) or
 * "redis://HOST:PORT/NAME[?lease=D&timeout=D]" (hosts). Other schemes give
 * POLITE_EINVAL with a message naming the URI in errbuf.
 * Returns 0 and sets *out (the caller closes it with polite_budget_close). */
POLITE_EXTERN int polite_budget_open(const char *uri,
                                     const polite_budget_config *cfg,
                                     polite_budget **out, char *errbuf,
                                     size_t errlen);

/* In-process backend, also used directly by tests and polite_client. */
POLITE_EXTERN int polite_budget_local_new(const polite_budget_config *cfg,
                                          polite_budget **out);

/* Thin wrappers over the vtable (NULL-safe where noted). */
POLITE_EXTERN int polite_budget_acquire(polite_budget *b, const char *key,
                                        int64_t now_us, unsigned units,
                                        unsigned slots, int64_t *wait_us);
POLITE_EXTERN void polite_budget_release(polite_budget *b, const char *key,
                                         unsigned slots);
POLITE_EXTERN int polite_budget_pause_until(polite_budget *b, const char *key,
                                            int64_t now_us, int64_t until_us);
POLITE_EXTERN int64_t polite_budget_paused_for(polite_budget *b,
                                               const char *key, int64_t now_us);
/* Last error message; never NULL. */
POLITE_EXTERN const char *polite_budget_errstr(const polite_budget *b);
/* Closes the budget; NULL is ignored. */
POLITE_EXTERN void polite_budget_close(polite_budget *b);

#ifdef __cplusplus
}
#endif

#endif
