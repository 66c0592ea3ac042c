/* polite budget: one shared allowance (start rate + concurrency) behind one
 * interface, with backends chosen by URI ("local", "file:PATH",
 * "redis://HOST:PORT/NAME") behind the same vtable. */
#ifndef POLITE_BUDGET_H
#define POLITE_BUDGET_H

#include <polite/clock.h>
#include <polite/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The shared rate (what a budget stores) --------------------------- */

/* The learned rate of an account as every participant sees it. It lives
 * here, with the budget that stores it, so that the budget needs nothing
 * from the controller (polite/ratectl.h) that computes it. */

typedef struct {
  double rate_per_s;   /* the account's learned rate; 0: none learned */
  double limit_per_s;  /* the rate that got through at the last cut */
  uint64_t generation; /* counts cuts in the account */
  /* the highest rate that got through over 5 s of a probe with no pause
   * in it, any participant's (the account's memory when a limit moved
   * down: whoever sends next recalls it); 0: none */
  double ceiling_per_s;
} polite_shared_rate;

/* The budget's publish rule, one function for every backend: a cut
 * (is_cut) lowers *stored to min(stored, in) (or sets it when none was
 * learned), takes in's limit and bumps the generation; a raise is applied
 * only when in->generation equals the stored one and in's rate is higher
 * (or when nothing is stored). The ceiling is the higher of the two
 * whatever the generation (a value that is not a positive number of at
 * most 10^9/s is ignored).
 * Returns 1 when *stored changed, else 0. */
POLITE_EXTERN int polite_shared_rate_merge(polite_shared_rate *stored,
                                           const polite_shared_rate *in,
                                           int is_cut);

/* A window's quota as one participant learned it from its refusals
 * (ratectl_window.c), held on the account's count of admissions
 * (polite_budget_admissions): the window opened at open_us (monotonic)
 * after open_n admissions, and admits quota of them each period_us. */
typedef struct {
  int64_t open_us;
  uint64_t open_n;
  int64_t period_us;
  int64_t next_us;    /* the next window's first start may come from then */
  int64_t retract_us; /* an opening found false (its start was refused:
                         the window before was still open); 0: none */
  unsigned quota;     /* 0: none learned */
} polite_shared_window;

/* The window's merge rule: a later opening wins, unless the later one is
 * what in retracts (then in's is stored); at the same opening the newer
 * quota, the shorter period and the earlier next start; a window with no
 * quota stores nothing. *in
 * becomes what is stored. Returns 1 when the stored one changed. */
POLITE_EXTERN int polite_shared_window_merge(polite_shared_window *stored,
                                             polite_shared_window *in);

/* What one account allows. A budget holds any number of accounts, named by
 * a key (NULL or "" is the default account); `--budget-scope host` uses the
 * host name as the key, so each host gets its own account with these
 * settings. */
typedef struct {
  double rate_per_s;    /* planned starts per second; <= 0 means unlimited.
                           With a learned rate (polite_budget_publish_rate)
                           this is its ceiling (--max-rate) */
  unsigned burst;       /* starts allowed back to back; >= 1 (default 1) */
  unsigned concurrency; /* slots in flight; 0 means unlimited */
} polite_budget_config;

/* The longest pause a participant writes unless it says otherwise
 * (polite_budget_set_max_wait): 15 minutes. */
#define POLITE_BUDGET_MAX_WAIT_DEFAULT_MS INT64_C(900000)

/* What polite_budget_inspect reports about one account. */
#define POLITE_BUDGET_MAX_HOLDERS 32
typedef struct {
  char id[96]; /* pid (file) or host:pid:random (redis) */
  unsigned slots;
  int64_t lease_left_us; /* until the lease expires */
} polite_budget_holder;

typedef struct {
  int64_t pause_left_us;   /* 0 when not paused */
  polite_shared_rate rate; /* rate_per_s 0: nothing learned */
  unsigned slots_in_use;
  unsigned n_holders; /* entries filled (at most POLITE_BUDGET_MAX_HOLDERS) */
  polite_budget_holder holders[POLITE_BUDGET_MAX_HOLDERS];
  int config_stored;           /* 1 when the store keeps the settings (file:) */
  polite_budget_config config; /* the store's settings, or this opener's */
} polite_budget_state;

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
  /* The learned rate (see polite/ratectl.h). Merges *r into the account's
   * shared rate with polite_shared_rate_merge (is_cut: a cut; else a
   * raise) and returns the stored state in *r. From then on the account
   * admits at the shared rate, capped by cfg.rate_per_s when that is > 0.
   * Returns 1 when the store changed, 0 when not, or a negative errno. */
  int (*publish_rate)(polite_budget *b, const char *key, int64_t now_us,
                      polite_shared_rate *r, int is_cut);
  /* The account's shared rate as of this participant's last admission (no
   * round trip: a Redis admission returns it with its answer). */
  int (*shared_rate)(polite_budget *b, const char *key,
                     polite_shared_rate *out);
  /* Everything polite budget show prints. Returns 0 or a negative errno. */
  int (*inspect)(polite_budget *b, const char *key, int64_t now_us,
                 polite_budget_state *out);
  /* Removes the account's pause and learned rate (polite budget clear);
   * slots and their leases stay. Returns 0 or a negative errno. */
  int (*clear)(polite_budget *b, const char *key, int64_t now_us);
  /* A learned in-flight cap (see polite/ratectl.h, polite_ratectl_cap):
   * from now on this participant's acquires wait for a slot (WAIT_SLOT)
   * while the account has cap or more slots in use, everyone's counted,
   * as if the concurrency were min(cfg.concurrency, cap); 0 removes it.
   * local keeps it in the account; file: and redis:// in the store, so
   * every participant's acquire holds it (polite budget clear removes
   * it). NULL: not supported. */
  void (*set_slot_cap)(polite_budget *b, const char *key, unsigned cap);
  /* The account's slots in use, everyone's and this admission's included,
   * right after this participant's last admission with a slot (no round
   * trip: on redis:// the admission's reply carries it); 0 when unknown
   * or when slots are not counted (concurrency 0). NULL: not supported. */
  unsigned (*in_use)(polite_budget *b, const char *key);
  /* The account's admissions that charged rate units, everyone's and this
   * one's included, right after this participant's last such admission
   * (no round trip); 0 when unknown. NULL: not supported. */
  uint64_t (*admissions)(polite_budget *b, const char *key);
  /* Merges *w into the account's window (from then on an acquire that
   * charges units waits, WAIT_RATE, while the window's quota of the
   * account's admissions is spent and its next_us not reached)
   * (polite_shared_window_merge) and sets *w to the result. Returns 0 or a
   * negative errno. NULL: not supported (every participant keeps its own). */
  int (*window)(polite_budget *b, const char *key, polite_shared_window *w);
} polite_budget_vtable;

/* Every backend's object starts with this header. */
struct polite_budget {
  const polite_budget_vtable *vt;
  polite_budget_config cfg;
  char errstr[384];    /* last error; "" when none */
  char uri[128];       /* the URI, secrets redacted (for messages) */
  int64_t max_wait_ms; /* see polite_budget_set_max_wait; 0: the default */
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

/* polite_budget_open with the clocks and the random source a backend reads
 * for what no call passes it (polite/clock.h): a participant's id (file:
 * its owner id; redis: the random part of its lease id host:pid:random), a
 * file's identity and creation time (file:), and the monotonic clock of
 * the calls given no now_us (release, set_slot_cap, close), on which redis
 * schedules its reconnect backoff when one of them finds the server gone.
 * Every other call's now_us still comes from the caller; real waits (a
 * file's lock, Redis's socket timeouts) stay on the real clock. env NULL is
 * polite_budget_open; env is borrowed and must outlive the budget. A
 * function rather than a member of
 * polite_budget_config, so that the positional initializers of that struct
 * written so far stay complete. */
POLITE_EXTERN int polite_budget_open_env(const char *uri,
                                         const polite_budget_config *cfg,
                                         const polite_env *env,
                                         polite_budget **out, char *errbuf,
                                         size_t errlen);

/* Opens an existing shared budget for inspection (polite budget show|clear):
 * never creates the store, and takes a file budget's settings from the file
 * instead of refusing different ones. "local" is refused (it lives inside
 * one process). Same return as polite_budget_open. */
POLITE_EXTERN int polite_budget_open_inspect(const char *uri,
                                             polite_budget **out, char *errbuf,
                                             size_t errlen);

/* The longest pause this participant writes (--max-wait): a pause_until
 * further away is cut to now + max_wait, so that no server answer can stop
 * a shared budget for longer than its writer was willing to wait. 0 means
 * POLITE_BUDGET_MAX_WAIT_DEFAULT_MS; < 0 means no limit. */
POLITE_EXTERN void polite_budget_set_max_wait(polite_budget *b,
                                              int64_t max_wait_ms);

/* In-process backend, also used directly by tests and polite_client. */
POLITE_EXTERN int polite_budget_local_new(const polite_budget_config *cfg,
                                          polite_budget **out);

/* Thin wrappers over the vtable (NULL-safe where noted). */
POLITE_EXTERN int polite_budget_acquire(polite_budget *b, const char *key,
                                        int64_t now_us, unsigned units,
                                        unsigned slots, int64_t *wait_us);
POLITE_EXTERN void polite_budget_release(polite_budget *b, const char *key,
                                         unsigned slots);
/* until_us is first cut to now_us + the participant's max-wait
 * (polite_budget_set_max_wait), so a pause never outlives what its writer
 * would wait. */
POLITE_EXTERN int polite_budget_pause_until(polite_budget *b, const char *key,
                                            int64_t now_us, int64_t until_us);
POLITE_EXTERN int64_t polite_budget_paused_for(polite_budget *b,
                                               const char *key, int64_t now_us);
/* The learned rate: thin wrappers over publish_rate / shared_rate (see the
 * vtable). NULL budget: publish returns 0, shared_rate gives rate 0. */
POLITE_EXTERN int polite_budget_publish_rate(polite_budget *b, const char *key,
                                             int64_t now_us,
                                             polite_shared_rate *r, int is_cut);
POLITE_EXTERN int polite_budget_shared_rate(polite_budget *b, const char *key,
                                            polite_shared_rate *out);
POLITE_EXTERN int polite_budget_inspect(polite_budget *b, const char *key,
                                        int64_t now_us,
                                        polite_budget_state *out);
POLITE_EXTERN int polite_budget_clear(polite_budget *b, const char *key,
                                      int64_t now_us);

/* 1 when a pause of wait_us (as acquire's WAIT_PAUSE gave it, or
 * polite_budget_paused_for) is longer than this participant's max-wait, with
 * a message naming the budget in msg (may be NULL): the engine stops at once
 * with it instead of waiting. 0 otherwise (or with no max-wait). */
POLITE_EXTERN int polite_budget_pause_too_long(const polite_budget *b,
                                               int64_t wait_us, char *msg,
                                               size_t len);

/* The in-flight cap and the account's count: thin wrappers over
 * set_slot_cap / in_use (NULL-safe; a backend without them keeps no cap and
 * counts 0). */
POLITE_EXTERN void polite_budget_set_slot_cap(polite_budget *b, const char *key,
                                              unsigned cap);
POLITE_EXTERN unsigned polite_budget_in_use(polite_budget *b, const char *key);
/* The account's count of admissions (the admissions member; NULL-safe, 0
 * when the backend keeps none). */
POLITE_EXTERN uint64_t polite_budget_admissions(polite_budget *b,
                                                const char *key);
/* The window member (NULL-safe): POLITE_EINVAL when the backend has
 * none, *w then left as it was. */
POLITE_EXTERN int polite_budget_window(polite_budget *b, const char *key,
                                       polite_shared_window *w);

/* Last error message; never NULL. */
POLITE_EXTERN const char *polite_budget_errstr(const polite_budget *b);
/* Closes the budget; NULL is ignored. */
POLITE_EXTERN void polite_budget_close(polite_budget *b);

#ifdef __cplusplus
}
#endif

#endif
