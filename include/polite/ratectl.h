/* polite ratectl: the learned start rate. Two pure parts (no clock, no I/O,
 * no allocation; `now` is an argument, in monotonic microseconds):
 *
 *  - the header planner, polite_rate_plan_headers: one response's parsed
 *    rate-limit headers -> a planned rate (or none) and a first start;
 *  - the controller, polite_ratectl: events (starts, responses) -> the
 *    current rate, learned from headers when the server sends them and from
 *    429/503 answers otherwise.
 *
 * How the engine drives it (one controller per budget account):
 *
 *   polite_ratectl c;
 *   polite_ratectl_init(&c, &cfg, now_us);
 *   for each start:     polite_ratectl_on_start(&c, now_us);
 *   for each response:  polite_headers h (fed as usual);
 *                       polite_rate_plan p;
 *                       int has = polite_rate_plan_headers(&h, now_us, &p);
 *                       polite_ratectl_response r = {now_us, started_us,
 *                           status, server_wait_us, has ? &p : NULL};
 *                       polite_ratectl_on_response(&c, &r);
 *   the rate to pace at:   polite_ratectl_rate(&c, now_us)  (starts/s)
 *   no start before:       polite_ratectl_hold_until(&c)    (0: none)
 *
 * The rate depends on time (it grows between events), so read it when it is
 * needed, not once per event. server_wait_us is the wait polite_decide
 * found (its server_wait_ms * 1000), or -1; the engine still pauses the
 * budget for it as today: the controller only records it so that the time
 * paused is not mistaken for a slow server.
 *
 * How the budget shares it (every participant follows what one learns):
 *
 *   after every admission:  polite_budget_shared_rate(b, key, &s);
 *                           polite_ratectl_on_shared(&c, now_us, &s);
 *   after every event:      if (polite_ratectl_take_publish(&c, now_us, &s,
 *                                                          &is_cut)) {
 *                             polite_budget_publish_rate(b, key, now_us, &s,
 *                                                        is_cut);
 *                             polite_ratectl_published(&c, now_us, &s);
 *                           }
 *
 * A budget paces admissions at the shared rate once one was published (capped
 * by its configured rate when that is > 0), so with a shared rate the engine
 * does not pace by polite_ratectl_rate itself. For the learned rate the
 * engine opens the budget with rate_per_s = --max-rate (0 when none): every
 * participant of a file budget must open it with the same settings. The
 * first take_publish after init publishes the first estimate, so the budget
 * is paced from the first admission. A hold_until in the future (the
 * headers said wait) is for every participant: the engine passes it to
 * polite_budget_pause_until. A cut always lowers the
 * shared rate and starts a new generation; a raise is applied only by a
 * participant that has seen the current generation, so a stale raise never
 * undoes another participant's cut. The rules and constants are in
 * docs/decisions.md ("The learned rate").
 */
#ifndef POLITE_RATECTL_H
#define POLITE_RATECTL_H

#include <polite/budget.h>
#include <polite/core.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The header planner ---------------------------------------------- */

/* The planner's margin: every interval it derives from a remaining and a
 * reset is stretched by 1% and 1 ms, so that rounding on either side (a
 * reset in whole seconds, a clock read a little early) never makes a
 * client early. At 10/s that is one start every 102 ms (9.8/s). */
#define POLITE_PLAN_MARGIN_PCT 1
#define POLITE_PLAN_MARGIN_US 1000

typedef enum {
  POLITE_PLAN_NONE = 0,       /* the headers say nothing about the rate */
  POLITE_PLAN_SPREAD = 1,     /* r remaining spread evenly over t seconds */
  POLITE_PLAN_AVERAGE = 2,    /* the policy's average q/w is the lower bound */
  POLITE_PLAN_WAIT_RESET = 3, /* r = 0: wait t, then the rate */
  POLITE_PLAN_WAIT_SERVER = 4 /* Retry-After / retry-after-ms: wait it */
} polite_plan_reason;

typedef struct {
  polite_plan_reason reason;
  /* Starts per second after the wait, margin applied; 0 when no rate was
   * stated (a wait alone). */
  double rate_per_s;
  int64_t interval_us; /* 1e6 / rate_per_s, rounded up; 0 without a rate */
  /* No start before now_us + wait_us: the first of r starts comes t/r after
   * the answer (SPREAD, AVERAGE: one interval), r = 0 waits t (WAIT_RESET),
   * a server wait is waited (WAIT_SERVER; it wins over t). */
  int64_t wait_us;
  int64_t not_before_us; /* now_us + wait_us */
  /* The pair behind remaining and reset_us: the one that decided SPREAD or
   * WAIT_RESET, and for AVERAGE the most restrictive pair beside the
   * policy (POLITE_RL_IETF when no pair took part). */
  polite_rl_source source;
  const char *why; /* static English sentence */
  /* The pair behind a SPREAD, AVERAGE or WAIT_RESET plan, for a caller
   * that knows more about the window than one answer (polite_ratectl
   * does): what remains (after started_after; 0 for WAIT_RESET) and its
   * reset, in us; -1 when no such pair took part. average_per_s: the policy's
   * q/w with the margin, 0 when none was stated. */
  int64_t remaining;
  int64_t reset_us;
  int reset_absolute; /* the reset was a time, not a delta (core.h) */
  double average_per_s;
} polite_rate_plan;

/* Plans from one response's headers at now_us (monotonic microseconds; the
 * headers' own now_ms already resolved epochs). From every source's
 * (remaining r, reset t) pair: r > 0 allows r starts over t, one every t/r;
 * r = 0 means wait t; the most restrictive pair wins, and the rate never
 * exceeds the most restrictive policy average q/w. A pair with r > 0 and no
 * reset is bounded by its window when the source states one (Kong), else it
 * does not plan. Token pairs only contribute their r = 0 wait. Returns 1 and
 * fills *out when something was planned, else 0 with out->reason NONE. */
POLITE_EXTERN int polite_rate_plan_headers(const polite_headers *h,
                                           int64_t now_us,
                                           polite_rate_plan *out);

/* The same, for an answer whose request was followed by started_after
 * more starts of this client before the answer came (requests in flight).
 * A limiter counts a request when it arrives, so the remaining it states
 * does not count those yet: every request pair's remaining is lowered by
 * started_after (to 0 at most, which waits for the reset). Without it, 8
 * requests in flight at the end of a window make the client send 8 too
 * many. polite_rate_plan_headers is this with started_after 0. */
POLITE_EXTERN int polite_rate_plan_after(const polite_headers *h,
                                         int64_t now_us, unsigned started_after,
                                         polite_rate_plan *out);

/* Short token for a plan reason ("none", "spread", "average", "reset",
 * "server"). */
POLITE_EXTERN const char *polite_plan_reason_name(polite_plan_reason r);

/* ---- The controller ---------------------------------------------------- */

/* Defaults (docs/decisions.md explains each). */
#define POLITE_RATECTL_INITIAL_PER_S 4.0 /* first estimate, before answers */
#define POLITE_RATECTL_MIN_PER_S 0.5     /* floor (AWS's minimum fill rate) */

typedef struct {
  double initial_per_s; /* first estimate; <= 0: POLITE_RATECTL_INITIAL */
  double max_per_s;     /* never above (--max-rate); <= 0: no cap */
  double min_per_s;     /* never below; <= 0: POLITE_RATECTL_MIN */
  unsigned concurrency; /* slots; caps the rate at concurrency / latency */
} polite_ratectl_config;

typedef struct {
  int64_t now_us;         /* when the response arrived */
  int64_t started_us;     /* when its request started */
  int status;             /* HTTP status; 0: no response (network error) */
  int64_t server_wait_us; /* the server's wait, -1 when none */
  const polite_rate_plan *plan; /* its headers' plan, or NULL */
} polite_ratectl_response;

typedef enum {
  POLITE_RC_SLOW_START = 0, /* no limit met yet: doubling every 250 ms
                               while answers are clean */
  POLITE_RC_PROBE = 1,      /* after a cut: back to the limit, then probing */
  POLITE_RC_HEADERS = 2     /* the server's headers set the rate */
} polite_ratectl_phase;

typedef enum {
  POLITE_CUT_NONE = 0,
  POLITE_CUT_THROTTLE = 1, /* a 429 or 503 */
  POLITE_CUT_HEADERS = 2,  /* the headers planned less than the rate */
  POLITE_CUT_SHARED = 3    /* another participant cut (through the budget) */
} polite_ratectl_cause;

#define POLITE__RATECTL_RING 256
#define POLITE__RATECTL_PAUSES 4

/* The controller's state: the caller allocates it (no allocation here);
 * the fields are read-only for callers (stats included). */
typedef struct {
  polite_ratectl_config cfg;
  polite_ratectl_phase phase;
  /* slow start: rate = ss_base * 2^((now - ss_start) / 250 ms), at most
   * 2 x clean_rate */
  double ss_base;
  int64_t ss_start_us;
  /* probing: rate = plateau + C * f(now - epoch), see ratectl.c */
  double limit;   /* what got through at the last cut */
  double plateau; /* limit less the margin */
  int64_t epoch_us;
  int64_t hold_us; /* how long the plateau is held before probing */
  unsigned steady; /* cuts in a row that found about the same limit */
  /* the probe's fast climb (ratectl_probe.c): from probe_fast_rate at
   * probe_fast_us, once what got through passed the limit (0: none) */
  int64_t probe_fast_us;
  double probe_fast_rate;
  int probe_blind; /* the last throttle named no wait: its window unknown */
  /* the highest rate that got through over a recall window of the probe
   * phase with no pause in it (ratectl_probe.c), and when it was read */
  double probe_ceiling;
  int64_t probe_ceiling_us;
  /* the budget's ceiling (polite_shared_rate's, bounded), and the one
   * taken when the current curve was aimed (a participant with others on
   * the budget recalls only that one: ratectl_probe.c) */
  double shared_ceiling;
  double recall_shared;
  /* headers */
  double header_rate;
  int64_t header_until_us;
  /* the jitter margin under the headers' rate (a share, widened by each
   * 429 under a fresh plan, halving every minute from jitter_us) */
  double jitter;
  int64_t jitter_us;
  /* the server's window as its answers place it (ratectl.c, "The
   * server's window"): its end (0: none), the start of its first answered
   * request, and the last remaining seen */
  int64_t win_end_us;
  int64_t win_start_us;
  int64_t win_remaining;
  /* pauses and cuts */
  int64_t hold_until_us;  /* no start before (a wait from headers) */
  int64_t pause_start_us; /* sending resumed before the last cut */
  int64_t pause_end_us;
  int64_t last_cut_us;   /* requests started before it do not cut again */
  int64_t cut_from_us;   /* the throttled request's start at the last cut */
  double prev_limit;     /* the limit before the last cut (0: none) */
  double upper;          /* the last cut's upper estimate of the limit */
  double ss_lo;          /* slow start's cut's lower estimate, for the
                            first relapse after it (0: none) */
  double ss_at;          /* ... and the rate of its throttled request */
  double ss_landed;      /* where the last cut landed when it ended slow
                            start (0: it did not) */
  double lo_floor;       /* the lower estimate the relapse floor gave the
                            last cut (its refines keep it), or 0 */
  int64_t prev_cut_us;   /* the cut before the last one (0: none) */
  int64_t chain_from_us; /* the throttled start of the first cut of the
                            last series of relapses */
  /* the server's last pauses, [start, end) each, newest at pause_head - 1:
   * time in them was not sending time (the estimate's duty) */
  int64_t pause_log[POLITE__RATECTL_PAUSES][2];
  int64_t longest_pause_us; /* the longest wait a server named */
  /* the learned in-flight cap: a concurrency limit (0: none), since when,
   * and whether a refusal below a cap showed a rate limit (then a cap
   * needs the whole signature) */
  int64_t cap_since_us;
  unsigned cap;
  unsigned cap_refused;
  int busy_account; /* the starts' counts in flight are the account's
                       (polite_ratectl_account_busy), not this one's */
  /* refusals without a server wait since the last admitted answer, and
   * when the last hold for them began, and the start of the first of
   * them (ratectl.c, hold_streak) */
  int64_t streak_from_us;
  int64_t streak_onset_us;
  /* a window that names no wait, as its refusals show it
   * (ratectl_window.c, "A window without a wait"): where the current one
   * opened (0: none seen), its period and quota (0: not learned), and
   * whether the current streak outlasted a hold */
  int64_t qw_open_us;
  int64_t qw_period_us;
  unsigned qw_quota;
  int qw_persist;
  /* ... the period's lower bound (0: none), the window before the
   * current one, the last refused start, and whether the current window's
   * first start is a probe of a shorter period */
  int64_t qw_lo_us;
  int64_t qw_prev_open_us;
  int64_t qw_last_refused_us;
  int qw_probe;
  int qw_crowd; /* the account had more in flight than this participant */
  /* the account's admissions, every participant's, as the budget counted
   * them at this participant's newest start (0: the budget keeps no count;
   * polite_ratectl_account_starts), and at each start of the ring */
  uint64_t acct_starts;
  int64_t qw_next_us;    /* the budget's next window start (0: none) */
  int64_t qw_retract_us; /* the opening reopen_prev abandoned (0: none) */
  uint64_t st_acct[POLITE__RATECTL_RING];
  /* the counts of the current window and the one before it, kept apart
   * from the rings (a quota of 300 outgrows their 256): `starts` before
   * each one's first start, and the admitted answers of the current one's
   * starts and of the one before (ratectl_window.c, set_open) */
  uint64_t qw_open_n, qw_prev_open_n;
  unsigned qw_ok, qw_prev_ok;
  /* how long the last streak that outlasted a hold kept refusing, from its
   * first refused start to its last (ratectl_window.c, span_hold) */
  int64_t qw_span_us;
  unsigned streak;
  unsigned inflight;    /* started and not answered yet */
  unsigned steady_base; /* steady before the last cut */
  unsigned pause_head;
  int relapse;        /* the last cut came on the climb to the plateau or
                         soon after: the one before landed above the limit */
  int others;         /* another participant published to the budget */
  int cut_in_ss;      /* the last cut ended slow start */
  int cut_in_headers; /* ... came while fresh headers planned the rate */
  int cut_fitted;     /* ... set its upper estimate by the leaky bucket
                         that explains the series (ratectl_measure.c) */
  int prev_fitted;    /* ... and so did the cut before it */
  /* measurement: start times of the last answers, which got through, and
   * the rate each was started at */
  int64_t ok_us[POLITE__RATECTL_RING];
  unsigned char ok_flag[POLITE__RATECTL_RING];
  double ok_rate[POLITE__RATECTL_RING];
  unsigned ok_head, ok_n;
  /* the rate at the last starts, to know what an answer was started at */
  int64_t st_us[POLITE__RATECTL_RING];
  double st_rate[POLITE__RATECTL_RING];
  /* this participant's requests in flight before each start, and before
   * each answered one's start (the concurrency signature, ratectl.c) */
  unsigned short st_busy[POLITE__RATECTL_RING];
  unsigned short ok_busy[POLITE__RATECTL_RING];
  unsigned st_head, st_n;
  double clean_rate;  /* the rate the last clean answer was started at */
  double shared_seen; /* the budget's rate at the last admission */
  double latency_us;  /* EWMA of successful answers' latency; 0: none */
  /* sharing */
  uint64_t generation;
  double published;
  int64_t published_us;
  int pending_cut;
  /* stats, for the summary */
  double first_rate, lowest, highest;
  unsigned cuts[4]; /* by polite_ratectl_cause */
  polite_ratectl_cause last_cause;
  uint64_t starts, oks, throttles;
} polite_ratectl;

/* Starts at now_us from cfg (may be NULL: all defaults). */
POLITE_EXTERN void polite_ratectl_init(polite_ratectl *c,
                                       const polite_ratectl_config *cfg,
                                       int64_t now_us);

/* One request started at now_us. */
POLITE_EXTERN void polite_ratectl_on_start(polite_ratectl *c, int64_t now_us);

/* How many of the last POLITE__RATECTL_RING starts came after at_us (the
 * starts an answer to a request started at at_us does not know about):
 * polite_rate_plan_after's started_after. */
POLITE_EXTERN unsigned polite_ratectl_started_after(const polite_ratectl *c,
                                                    int64_t at_us);

/* One response (or network error). A 429 or 503 from a request started
 * after the last cut cuts the rate below what got through (the share let
 * through of the requests started just before it, times the rate they were
 * started at), then probing resumes once the server's wait is over;
 * answers of requests that were already in flight at the last cut do not
 * cut again but refine that estimate while the server's pause lasts. A
 * clean answer lets the ramp go up to twice the rate its request was
 * started at. A plan with a rate sets the rate (its waits become
 * hold_until). Returns the cut made, POLITE_CUT_NONE if any. */
POLITE_EXTERN polite_ratectl_cause
polite_ratectl_on_response(polite_ratectl *c, const polite_ratectl_response *r);

/* The rate to start at, now: starts per second, > 0, within
 * [min, max], and never above concurrency / (mean latency) once a latency
 * was measured. */
POLITE_EXTERN double polite_ratectl_rate(const polite_ratectl *c,
                                         int64_t now_us);

/* The in-flight cap learned from a concurrency limit: a server that
 * refuses every request started while this participant had cap or more in
 * flight, and none started with fewer (docs/decisions.md). 0: none. The
 * engine holds it: no start while cap requests are in flight. */
/* The account's requests in flight, every participant's, before the
 * newest start (polite_ratectl_on_start), as the shared budget counted
 * them at its admission. From then on the concurrency signature and the
 * cap are read on the account's count, so that a cap is learned and held
 * with others on the budget too (the engine then holds it in the budget:
 * polite_budget_set_slot_cap). */
POLITE_EXTERN void polite_ratectl_account_busy(polite_ratectl *c,
                                               unsigned busy);

/* The account's admissions so far, every participant's, this one's next
 * start included, as the shared budget counts them (call it before
 * polite_ratectl_on_start; 0: no count). With it a window's quota is
 * learned and held on the account's count (ratectl_window.c), so that
 * participants of one budget apply one quota between them. */
POLITE_EXTERN void polite_ratectl_account_starts(polite_ratectl *c, uint64_t n);

/* The window's quota through the budget: _take_window fills *w with this
 * participant's (quota 0: none learned, or no account count to hold it
 * on); _on_window adopts the budget's (its later opening, its quota), so
 * that every participant holds the account to one quota. */
POLITE_EXTERN void polite_ratectl_take_window(const polite_ratectl *c,
                                              polite_shared_window *w);
POLITE_EXTERN void polite_ratectl_on_window(polite_ratectl *c,
                                            const polite_shared_window *w);

POLITE_EXTERN unsigned polite_ratectl_cap(const polite_ratectl *c,
                                          int64_t now_us);

/* The account is paused from now_us until until_us by a wait this
 * participant did not see answered (another participant's 429, through the
 * budget): its time is not sending time, and its length sets how long a
 * plateau is held before probing (HOLD_PAUSES of them). */
POLITE_EXTERN void polite_ratectl_on_pause(polite_ratectl *c, int64_t now_us,
                                           int64_t until_us);

/* No start before this time (a wait the headers asked for: r = 0 or a
 * Retry-After on a success); 0 when there is none. */
POLITE_EXTERN int64_t polite_ratectl_hold_until(const polite_ratectl *c);

/* What the budget said at the last admission. A newer generation is
 * another participant's cut: adopted at once (and counted as
 * POLITE_CUT_SHARED). The same generation with a higher rate is another
 * participant's re-aim or probe: followed. Either way this participant
 * holds at the rate it took (the one that measured the limit leads) and
 * probes on its own only after 30 s without a raise. */
POLITE_EXTERN void polite_ratectl_on_shared(polite_ratectl *c, int64_t now_us,
                                            const polite_shared_rate *s);

/* 1 when the rate should be published now, with *out and *is_cut filled:
 * a cut at once, a raise when the rate grew 2% above what was last
 * published and 100 ms have passed (so a Redis budget sees a few writes a
 * second at most, never one per admission). */
POLITE_EXTERN int polite_ratectl_take_publish(polite_ratectl *c, int64_t now_us,
                                              polite_shared_rate *out,
                                              int *is_cut);

/* The budget's state after a publish: takes its generation as this
 * participant's own (so its own cut is not adopted twice) and follows a
 * lower rate someone else stored meanwhile. */
POLITE_EXTERN void polite_ratectl_published(polite_ratectl *c, int64_t now_us,
                                            const polite_shared_rate *stored);

/* "throttle", "headers", "shared" for a cause; "none" for NONE. */
POLITE_EXTERN const char *polite_ratectl_cause_name(polite_ratectl_cause c);

#ifdef __cplusplus
}
#endif

#endif
