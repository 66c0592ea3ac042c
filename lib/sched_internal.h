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
 * end wait_too_long until `until`, and no pause is written to the budget. */
typedef struct refusal {
  struct refusal *next;
  char *key; /* NULL: the default account */
  int64_t until_us;
  int64_t wait_ms;
} refusal;

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
  int stat;                       /* index in host_stats; -1: none */
  polite_shared_rate shared_rate; /* the budget's, at the last admission */
  double pace_rate;
  double reported_rate;
  polite_gcra pace;
  polite_ratectl rc;
} polite__rate_acct;

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
};

/* scheduler.c */
int polite__sched_same_key(const char *a, const char *c);
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
