/* polite scheduler: the state shared by its files (lib/scheduler.c: the
 * turn, reading and admission; lib/sched_response.c: decisions and
 * max-wait; lib/sched_rate.c: the rate controller's seam). Internal. */
#ifndef POLITE_SCHED_INTERNAL_H
#define POLITE_SCHED_INTERNAL_H

#include "sched_heap.h"
#include "scheduler.h"

#include <polite/ratectl.h>
#include <signal.h>

#define NO_TIME POLITE__NO_TIME
typedef polite__job job;

/* An account the server asked to wait longer than max_wait: its requests
 * end wait_too_long until `until`, and no pause is written to the budget.
 * With quota_per_account, an account whose quota is spent is refused the
 * same way, its requests ending quota_exhausted. One entry per account,
 * at most MAX_REFUSALS; expired ones are dropped when one is added. */
typedef struct refusal {
  struct refusal *next;
  char *key; /* NULL: the default account */
  int64_t until_us;
  int64_t wait_ms;
  polite_outcome out; /* WAIT_TOO_LONG or QUOTA_EXHAUSTED */
  int status;         /* the answer's status (429, 503, 403) */
} refusal;

/* The queue of one account for submitted requests (lib/sched_account.c):
 * how many of its requests are alive and how many in flight (the rest
 * wait), and what the scheduler last learned of its pause. Created with
 * its first submitted request, freed with its last one. */
typedef struct polite__acct {
  struct polite__acct *next; /* hash chain */
  char *key;                 /* NULL: the default account */
  unsigned jobs, inflight;
  int64_t pause_until_us;         /* latest known end of its pause (its own 429s
                                     and the budget's answers); 0: none */
  int pause_status;               /* that pause's status; 0: the budget's */
  struct polite__rate_acct *rate; /* its learned rate, once known */
  /* When the budget said its next start is due; NO_TIME: not yet (see
   * polite__sched_admission_time). */
  int64_t planned_us;
} polite__acct;

typedef struct {
  polite__acct **b; /* buckets */
  size_t nb, n;
  polite__acct *def; /* the default account (key NULL) */
} polite__acct_table;

/* The learned rate of one account (lib/sched_rate.c): its controller, the
 * engine's own limiter at its rate (used when the budget does not pace at
 * the shared rate), and what on_rate last reported for it. */
typedef struct polite__rate_acct {
  char *key;  /* the host; NULL: the default account (with scope_host, the
                 hosts beyond max_host_rates) */
  int begun;  /* initialised and its first estimate reported */
  int shared; /* the budget paces the account at the shared rate (else
                 pace) */
  int at_max;
  int stat;          /* index in host_stats; -1: none */
  unsigned inflight; /* the account's attempts in flight (the learned cap) */
  unsigned cap_set;  /* the cap last given the budget (set_slot_cap) */
  polite_shared_rate shared_rate; /* the budget's, at the last admission */
  double pace_rate;
  double reported_rate;
  polite_gcra pace;
  int64_t planned_us; /* its next start as the budget planned it, for
                         `polite run` with scope_host; NO_TIME: none */
  polite_ratectl rc;
} polite__rate_acct;

/* What the budget (or the learned rate) answered a blocked account in
 * this turn (lib/sched_ask_memo.c). */
typedef struct {
  char *key; /* NULL: the default account */
  unsigned cost;
  int got, rc; /* polite__sched_ask's answer */
  int64_t end; /* a timed wait's end; else the wait it gave */
  struct polite__rate_acct *rate;  /* the account's learned rate */
  const struct polite__acct *acct; /* its queue (submitted); NULL: read */
} polite__ask_memo;
#define POLITE__ASK_MEMO_N 8

struct polite__sched {
  polite_batch_options o;
  polite__sched_io io;
  uint64_t rng;
  uint64_t seq;
  polite__heap waiting; /* by due time, then seq */
  job *inflight;        /* doubly linked, unordered */
  refusal *refused;
  int input_done;
  int source_dry; /* the source said POLITE_EAGAIN in this turn: not asked
                     again before the next polite__sched_step */
  int run_deadline_hit;
  volatile sig_atomic_t cancel_flag;
  int cancelling;
  int64_t cancel_at_us;
  int64_t t0_us;
  int64_t run_deadline_us;
  int64_t last_now_us;
  int64_t last_tick_us;
  int64_t last_start_abs_us;
  int64_t pause_end_us; /* latest account pause seen (stats, progress) */
  int64_t last_heartbeat_us;
  int64_t planned_us; /* when the budget said the next start is due */
  int fatal;
  char errstr[512];
  /* A budget outage (see polite_batch_options.budget_outage_ms): nothing
   * is admitted before outage_retry_us; outage_since_us is NO_TIME when
   * the budget works. */
  int64_t outage_since_us;
  int64_t outage_retry_us;
  int64_t outage_backoff_us;
  int64_t outage_done_ms; /* the outages that ended */
  char outage_err[400];
  polite_batch_stats st;
  int64_t *intervals;
  polite_throttle_count throttled[POLITE_BATCH_MAX_THROTTLED];
  /* The learned rate (rate_mode AUTO): the default account's, and with
   * scope_host one per host (allocated at the host's first admission, at
   * most max_hosts; `rate` then serves the hosts beyond), with their stats
   * (host_stats, n_host_stats of cap_host_stats). */
  int rate_on;
  polite__rate_acct rate;
  polite__rate_acct **hosts;
  unsigned n_hosts, cap_hosts, max_hosts;
  polite_host_rate *host_stats;
  unsigned n_host_stats, cap_host_stats;
  /* Submitted requests' accounts (lib/sched_account.c). */
  polite__acct_table accts;
  unsigned n_refused;
  polite__ask_memo memo[POLITE__ASK_MEMO_N];
  unsigned n_memo;
};

/* scheduler.c */
int polite__sched_same_key(const char *a, const char *c);
/* A job for request r (taken over on success): NULL when out of memory (r
 * is then still the caller's). */
job *polite__sched_job_new(polite__sched *s, polite_request *r);
/* Sets up a new job j at now: an invalid request (and, after the run
 * deadline, every request) is answered at once; then its account key and
 * its idempotency key. Returns j, or NULL when it was ended. */
job *polite__sched_job_begin(polite__sched *s, job *j, int64_t now);
/* Puts j in the waiting set at due; out of memory is fatal for the run
 * (returns -1, and the caller ends j). */
int polite__sched_wait_push(polite__sched *s, job *j, int64_t due);
void polite__sched_inflight_remove(polite__sched *s, job *j);
/* Time left before j's or the run's deadline at now, or NO_TIME. */
int64_t polite__sched_time_left(const polite__sched *s, const job *j,
                                int64_t now);
/* Emits the final result of j and frees it. r is the last response (its
 * body goes in the result) or NULL; location is already redacted. */
void polite__sched_finish(polite__sched *s, job *j, polite_outcome out,
                          int status, const char *error, int64_t now,
                          const polite__response *r, const char *location);

/* Integrates the in-flight count up to now and refreshes the stats that
 * depend on time. */
void polite__sched_update_stats(polite__sched *s, int64_t now);

/* sched_account.c: the queues of submitted requests. */
/* The time j's admission at now is asked for: the budget's plan for its
 * account's next start when now is at most a little past it (a late
 * wake-up keeps the schedule), else now. */
int64_t polite__sched_admission_time(polite__sched *s, const job *j,
                                     int64_t now);
/* Keeps `at` as when the budget plans j's account's next start. */
void polite__sched_plan_next(polite__sched *s, const job *j, int64_t at);
/* The account of key (NULL: the default), created when missing: NULL when
 * out of memory. Each job attached to it counts in jobs. */
polite__acct *polite__sched_acct_get(polite__sched *s, const char *key);
/* The account of key when one exists, else NULL. */
polite__acct *polite__sched_acct_find(const polite__sched *s, const char *key);
/* j (attached to an account) is gone: the account is freed with its last
 * job. */
void polite__sched_acct_put(polite__sched *s, job *j);
/* Frees every account (polite__sched_free). */
void polite__sched_acct_free(polite__sched *s);
/* The checks of a submitted j at now before it waits (see
 * polite__sched_submit): returns 1 when j was ended, 0 when it may wait. */
int polite__sched_gate(polite__sched *s, job *j, int64_t now);
/* The account of key is paused until `until` (its own answer with
 * `status`, or 0 for a pause the budget reported): notes it, and when that
 * is news returns the account pinned for polite__sched_acct_sweep (else
 * NULL). The sweep comes once the answer's own request waits again. */
polite__acct *polite__sched_acct_paused(polite__sched *s, const char *key,
                                        int64_t until, int status);
/* Ends at once the submitted requests of a (pinned by acct_paused; NULL is
 * ignored) waiting in the waiting set that can no longer afford their
 * wait, and unpins it. */
void polite__sched_acct_sweep(polite__sched *s, polite__acct *a, int64_t now);
/* Ends at once the submitted requests of every account that cannot start
 * before their deadline or the run's (polite__sched_end_by). */
void polite__sched_sweep_all(polite__sched *s, int64_t now);
/* The start rate a's requests are paced at (learned or the budget's); 0
 * when none. */
double polite__sched_acct_rate(const polite__sched *s, const polite__acct *a);
/* sched_outage.c: the budget answered an error at t (rc): an outage begins
 * or goes on, and the next try is set (lowering *wake and setting *due_out
 * to it); past budget_outage_ms, s->fatal is set instead. */
void polite__sched_outage_fail(polite__sched *s, int rc, int64_t t,
                               int64_t *wake, int64_t *due_out);
/* The budget answered again at t: the outage is over. */
void polite__sched_outage_over(polite__sched *s, int64_t t);
/* 1 when an outage goes on and its next try is after t (*wake lowered to
 * it): nothing is to be admitted now. */
int polite__sched_outage_wait(polite__sched *s, int64_t t, int64_t *wake);

/* sched_response.c */
/* Reports the attempt of j that ended with r and decision d at wall (the
 * user's on_attempt, when set). */
void polite__sched_report_attempt(polite__sched *s, const job *j,
                                  const polite__response *r,
                                  const polite_decision *d,
                                  const polite_diagnosis *diag, int64_t wall);
/* The refusal covering key's account at now, or NULL. */
const refusal *polite__sched_refused(const polite__sched *s, const char *key,
                                     int64_t now);
/* Ends j, whose account is refused by r. */
void polite__sched_end_refused(polite__sched *s, job *j, const refusal *r,
                               int64_t now);

/* What polite__sched_ask found. */
enum { POLITE__ASK_BUDGET, POLITE__ASK_LEARNED, POLITE__ASK_FULL };
/* Asks the learned rate (it charges nothing until committed), then the
 * budget, to start j at `at`. Returns POLITE__ASK_FULL when the learned
 * in-flight cap is reached (it holds like a budget slot: an answer wakes
 * the turn that admits the next one); POLITE__ASK_LEARNED when the learned
 * rate says wait *w (> 0), with *rc POLITE_BUDGET_WAIT_RATE; else
 * POLITE__ASK_BUDGET with the budget's code in *rc and its wait in *w. */
int polite__sched_ask(polite__sched *s, job *j, int64_t at, unsigned cost,
                      polite_gcra *next, const polite__now *now, int64_t *w,
                      int *rc);

/* sched_ask_memo.c: in one turn, a blocked account is asked once. */
/* The answer j's account got in this turn for `cost` as polite__sched_ask
 * would give it at `at` (a timed wait from `at`, one over by now is none; the
 * job's learned rate set as the ask sets it), or -1 when there is none (ask the
 * budget). */
int polite__sched_memo_get(polite__sched *s, job *j, int64_t at, int64_t now,
                           unsigned cost, int64_t *w, int *rc);
/* Keeps what polite__sched_ask answered j at `at`: a wait is kept for its
 * account; an admission forgets every answer (the budget changed). */
void polite__sched_memo_put(polite__sched *s, const job *j, int64_t at,
                            unsigned cost, int got, int rc, int64_t w);
/* Forgets every answer (the start of a turn). */
void polite__sched_memo_clear(polite__sched *s);

/* sched_rate.c: the seam for a rate controller. */
/* Starts the learned rate at now (rate_mode AUTO; else nothing). */
void polite__sched_rate_begin(polite__sched *s, const polite__now *now);
/* Frees the host accounts' learned rates (polite__sched_free). */
void polite__sched_rate_free(polite__sched *s);
/* The learned rate's admission of j (cost units) at `at`, by the learned
 * rate of j's account: 0 with the limiter's next state in *next (commit it
 * with polite__sched_rate_commit once the budget admitted too), or the
 * wait in microseconds. Always 0 when the rate is not learned. */
int64_t polite__sched_rate_check(polite__sched *s, job *j, int64_t at,
                                 unsigned cost, polite_gcra *next,
                                 const polite__now *now);
void polite__sched_rate_commit(polite__sched *s, const job *j,
                               const polite_gcra *next);
/* 1 when j's account has as many attempts in flight as the in-flight cap
 * its controller learned from a concurrency limit (polite_ratectl_cap):
 * j waits for an answer, like a budget slot. */
int polite__sched_rate_full(polite__sched *s, const job *j, int64_t now);
/* The budget said j's account is paused until `until` (another
 * participant's 429): tells its controller (polite_ratectl_on_pause). */
void polite__sched_rate_paused(polite__sched *s, const job *j, int64_t now,
                               int64_t until);
/* The start rate the engine plans for j's account (learned or the
 * budget's); 0 when none. */
double polite__sched_rate_now(const polite__sched *s, const job *j);
/* After each admission of j the budget answered: follows the shared rate
 * of its account (a cut by another participant) and publishes this one's
 * when it is due. */
void polite__sched_rate_admitted(polite__sched *s, const job *j,
                                 const polite__now *now);
/* Called once per attempt start, after admission, before the transport
 * sends anything. */
void polite__sched_observe_start(polite__sched *s, const job *j,
                                 const polite__now *now);
/* Called once per response with its status, the parsed headers, the
 * attempt's latency and the decision taken. */
void polite__sched_observe_response(polite__sched *s, const job *j,
                                    const polite__response *r,
                                    const polite_decision *d,
                                    int64_t latency_us, const polite__now *now);
/* At the end of a run: writes the controller back to o.ratectl when the
 * caller gave one (rate_mode AUTO). */
void polite__sched_rate_end(polite__sched *s);

#endif
