/* The learned-rate controller's measurements over its rings (lib/ratectl.c
 * drives them, lib/ratectl_measure.c has them): the rate and the count in
 * flight a start was made at, the time the server paused the account, and
 * what got through of a window of starts. Internal to libpolite. */
#ifndef POLITE_RATECTL_MEASURE_H
#define POLITE_RATECTL_MEASURE_H

#include <polite/ratectl.h>

/* A rate is published when it grew this much (ratectl.c), and a plan
 * below the rate by as much is a cut (ratectl_window.c). */
#define POLITE__RC_PUBLISH_STEP 1.02

/* Counts a cut by its cause and its time (ratectl.c). */
void polite__rc_count_cut(polite_ratectl *c, polite_ratectl_cause why,
                          int64_t now_us);
/* Takes an answer's plan, started at started_us, at now_us: the server's
 * window as the answers place it, the rate it plans while fresh, a lower
 * one a cut the others follow, and the holds its waits ask for
 * (ratectl_window.c). Returns the cut made, if any. */
polite_ratectl_cause polite__rc_take_plan(polite_ratectl *c, int64_t now_us,
                                          int64_t started_us,
                                          const polite_rate_plan *p);

/* A window that names no wait (ratectl_window.c): a start at now_us (after
 * the ring has it), which opens the next window once the learned one is
 * over and holds the account once the window's quota was started; and the
 * end of a streak of refusals, the admitted request started at
 * started_us, which places a window's opening and learns the quota and
 * period from the one before. */
void polite__rc_quota_on_start(polite_ratectl *c, int64_t now_us);
void polite__rc_quota_reopened(polite_ratectl *c, int64_t started_us);
/* An admitted answer of the request started at started_us: returns 1
 * when it was the probe of a shorter period (the window was open: its
 * hold ends). */
int polite__rc_quota_admitted(polite_ratectl *c, int64_t started_us);
/* A refusal that names no wait, of the request started at started_us:
 * returns 1 when it was the probe of a shorter period (no reason to cut
 * the rate: the window was still closed). */
int polite__rc_quota_refused(polite_ratectl *c, int64_t started_us);
/* After a streak's hold at now_us (ratectl.c, hold_streak): holds on to
 * where the last streak's refusals ended, counted from this one's first. */
void polite__rc_quota_span_hold(polite_ratectl *c, int64_t now_us);
/* How many answered requests started in [from, to) got through; -1 when
 * the ring of answers does not reach back to `from`. */
int polite__rc_admitted_count(const polite_ratectl *c, int64_t from,
                              int64_t to);

/* The rate a request started at `at` was started at: the latest start at
 * or before it; the current rate when it is older than the ring. */
double polite__rc_rate_at_start(const polite_ratectl *c, int64_t at);
/* This participant's requests in flight when the request started at `at`
 * started (the latest start at or before it). */
unsigned polite__rc_busy_at_start(const polite_ratectl *c, int64_t at);
/* Time in the server's logged pauses within [a, b). */
int64_t polite__rc_paused_within(const polite_ratectl *c, int64_t a, int64_t b);
/* Logs the pause [from, until): extends the newest when they overlap (the
 * echoes of one crossing), else starts a new one. */
void polite__rc_log_pause(polite_ratectl *c, int64_t from, int64_t until);
/* The account's starts over [a, b) outside the pauses (the rate each start
 * was made at, over the time to the next one); alone, at most the starts
 * made. */
double polite__rc_sent_within(const polite_ratectl *c, int64_t a, int64_t b);
/* What got through of the requests started in [from, to], over that time
 * with its pauses (the lower estimate); -1 when fewer than `need` answers
 * tell. */
double polite__rc_admitted(const polite_ratectl *c, int64_t from, int64_t to,
                           unsigned need);
/* The share let through of the requests started in [from, to] times the
 * mean rate they were started at (the upper estimate); -1 when fewer than
 * `need` answers tell. */
double polite__rc_admitted_sending(const polite_ratectl *c, int64_t from,
                                   int64_t to, unsigned need);
/* The start of the n-th latest answered request started at or before
 * `at`; INT64_MIN when fewer than n were (at when n is 0). */
int64_t polite__rc_nth_answer_start(const polite_ratectl *c, int64_t at,
                                    unsigned n);
/* The concurrency signature of the answers of the requests started in
 * [from, to]: with `need` admitted and `refused` refused, every refused one
 * started with more in flight than every admitted one, the least count a
 * refused one started with; else 0. */
unsigned polite__rc_concurrency_signature(const polite_ratectl *c, int64_t from,
                                          int64_t to, unsigned refused,
                                          unsigned need);
/* The highest rate in [lo, hi] (in geometric steps) at which a leaky
 * bucket of a whole depth (else, when none, of any depth) explains the
 * answers of the requests started in [from, to]: each admitted start
 * within its depth, each refused one beyond it (ratectl_measure.c). -1
 * when none does, or the answers hold no refusal or fewer than 3
 * admissions. low NULL: any depth, no whole one. *low: with a whole
 * depth, the lowest rate below the fit that the same depth explains, else
 * -1. */
double polite__rc_bucket_fit(const polite_ratectl *c, int64_t from, int64_t to,
                             double lo, double hi, double *low);

/* The rate this participant started requests at over [from, to]: one
 * fewer than its starts there over the time from the first to the last;
 * -1 with fewer than `need` (ratectl_measure.c). */
double polite__rc_started_rate(const polite_ratectl *c, int64_t from,
                               int64_t to, unsigned need);

/* A window's quota at the first relapse after slow start's cut: own, what
 * got through over the relapse's window, and at, the rate that tripped;
 * the quota, or -1 when the two counts are not one window's. */
double polite__rc_window_quota(const polite_ratectl *c, double own, double at);

#endif
