/* The learned rate's probe after a landing (see ratectl_probe.h). Pure:
 * the time is an argument. The rules are in docs/decisions.md. */
#include "ratectl_probe.h"

#include <math.h>

#include "ratectl_measure.h"

#define CUBIC_C 0.01       /* as in ratectl.c: the approach to the plateau */
#define PROBE_LINEAR 0.02  /* probing: +2% of the plateau per second */
#define PROBE_CUBIC 0.0002 /* ... plus 0.02% x s^3 */
/* What got through passed the limit by this share: the limit moved (at
 * 5%, an estimate 9% low started the climb and it overshot). */
#define PROBE_PAST 0.1
/* ... measured over at least this, and two of the server's pauses (a
 * window limiter admits its quota per window, so over two of them what
 * got through is the quota, however the starts bunch within one). */
#define PROBE_EVIDENCE_US 2000000
#define PROBE_EVIDENCE_PAUSES 2
#define PROBE_EVIDENCE_MAX_US 30000000
#define PROBE_NEED 8 /* answers the evidence needs */
#define PROBE_DOUBLE_US 2e6
/* What got through over this long of the probe phase, no pause in it, is
 * remembered (read at most once a second); a plateau RECALL_GAP below it
 * is a limit that moved down, which may come back: held RECALL_HOLD_PAUSES
 * server pauses (at least RECALL_HOLD_MIN_US), not HOLD_PAUSES, then the
 * probe climbs back to the remembered rate fast (see recalls). */
#define RECALL_WINDOW_US 5000000
#define RECALL_EVERY_US 1000000
#define RECALL_GAP 1.25
#define RECALL_HOLD_PAUSES 10
#define RECALL_HOLD_MIN_US 8000000

static int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* The slow probe x seconds into it: slow at first because a limiter with
 * a burst tolerance answers a small excess late (at 2% over 40/s, after
 * about 1.6 s): a fast probe would be far above the limit before the
 * first 429 says so. */
static double slow(const polite_ratectl *c, double x) {
  return c->plateau * (1 + PROBE_LINEAR * x + PROBE_CUBIC * x * x * x);
}

/* The fast climb belongs to the current curve: a cut moves the epoch past
 * it. */
static int fast_now(const polite_ratectl *c) {
  return c->probe_fast_us > c->epoch_us && c->probe_fast_rate > 0;
}

/* A budget's ceiling above this many times its own rate and limit is not
 * a rate any participant measured (a damaged or foreign value): ignored. */
#define SHARED_CEILING_OVER 16.0
/* With others on the budget, the recall needs this many of the
 * participant's newest starts to be the account's only ones. */
#define RECALL_OWN_STARTS 8

void polite__rc_probe_on_shared(polite_ratectl *c,
                                const polite_shared_rate *s) {
  double v = s->ceiling_per_s;
  double base = s->limit_per_s > s->rate_per_s ? s->limit_per_s : s->rate_per_s;
  if (!(v > 0) || !isfinite(v) || !(base > 0) || v > SHARED_CEILING_OVER * base)
    return;
  if (v > c->shared_ceiling)
    c->shared_ceiling = v;
}

/* The budget counted only this participant's starts among its newest
 * RECALL_OWN_STARTS (0 when it keeps no count). */
static int alone_lately(const polite_ratectl *c) {
  if (c->st_n <= RECALL_OWN_STARTS)
    return 0;
  unsigned newest =
      (c->st_head + POLITE__RATECTL_RING - 1) % POLITE__RATECTL_RING;
  unsigned old = (c->st_head + POLITE__RATECTL_RING - 1 - RECALL_OWN_STARTS) %
                 POLITE__RATECTL_RING;
  return c->st_acct[old] > 0 &&
         c->st_acct[newest] - c->st_acct[old] == RECALL_OWN_STARTS;
}

/* The rate a recall climbs back to, 0 when there is none: the plateau
 * is far below a rate that got through earlier. Alone, the rate this
 * participant saw; with others on the budget (a follower that probes first
 * costs them all a pause, see on_pause in ratectl.c) only the budget's
 * ceiling as it stood when the curve was aimed (one this participant
 * learned during the curve's own probe jumped it far above the limit),
 * and only while the budget counts no starts but its own: the account's
 * memory, for whichever participant sends after the limit moved down.
 * Others are known by their publishes or, alone, by the account's
 * requests in flight beyond this participant's (a follower may never
 * publish).
 * Not after a throttle that named no wait: a limiter without one has no
 * known window (a concurrency limit's admitted rate over 5 s swings with
 * its latency: ho-conc-6 on a loaded machine 1.64 -> 1.65 x). */
static double recall_to(const polite_ratectl *c) {
  if (c->probe_blind)
    return 0;
  if (!c->others) /* alone as far as it knows */
    return !c->qw_crowd && c->probe_ceiling > RECALL_GAP * c->plateau
               ? c->probe_ceiling
               : 0;
  /* qw_crowd stays set once another's request was in flight at a start
   * (the one a participant took over from had answers to come): the
   * budget's count of the newest starts is the fresher evidence. */
  return c->recall_shared > RECALL_GAP * c->plateau && alone_lately(c)
             ? c->recall_shared
             : 0;
}

static int recalls(const polite_ratectl *c) {
  return recall_to(c) > 0;
}

/* How long the plateau is held before the probe. */
static int64_t hold_of(const polite_ratectl *c) {
  if (!recalls(c))
    return c->hold_us;
  int64_t h = RECALL_HOLD_PAUSES * c->longest_pause_us;
  if (h < RECALL_HOLD_MIN_US)
    h = RECALL_HOLD_MIN_US;
  return h < c->hold_us ? h : c->hold_us;
}

double polite__rc_probe_curve(const polite_ratectl *c, double y, int64_t t_us) {
  double hold = (double)hold_of(c) / 1e6;
  if (y < 0)
    return c->plateau + CUBIC_C * c->limit * y * y * y;
  if (y < hold)
    return c->plateau;
  double r = slow(c, y - hold);
  if (recalls(c)) {
    /* Back to what got through before, doubling every PROBE_DOUBLE_US. */
    double f = c->plateau * exp2((y - hold) * 1e6 / PROBE_DOUBLE_US);
    double to = recall_to(c);
    if (f > to)
      f = to;
    if (f > r)
      r = f;
  }
  if (fast_now(c) && t_us > c->probe_fast_us) {
    double f = c->probe_fast_rate *
               exp2((double)(t_us - c->probe_fast_us) / PROBE_DOUBLE_US);
    if (f > r)
      r = f;
  }
  return r;
}

/* Remembers what got through over RECALL_WINDOW_US of the probe phase
 * with no pause in it. */
static void remember(polite_ratectl *c, int64_t now_us) {
  if (now_us - c->probe_ceiling_us < RECALL_EVERY_US)
    return;
  int64_t from = now_us - RECALL_WINDOW_US;
  if (from < c->epoch_us || from < c->pause_end_us)
    return;
  c->probe_ceiling_us = now_us;
  double got = polite__rc_admitted(c, from, now_us, PROBE_NEED);
  if (got > c->probe_ceiling)
    c->probe_ceiling = got;
}

void polite__rc_probe_on_answer(polite_ratectl *c, int64_t now_us) {
  if (c->phase == POLITE_RC_PROBE)
    remember(c, now_us);
  /* A recall climbs fast to what got through before; above it the probe
   * is slow (a fast climb there overshot: halve-double 1.16 -> 1.19 x). */
  if (c->phase != POLITE_RC_PROBE || fast_now(c) || !(c->limit > 0) ||
      c->probe_blind || recalls(c))
    return;
  int64_t probing = c->epoch_us + c->hold_us; /* the slow probe began */
  if (now_us <= probing)
    return;
  double past = c->limit * (1 + PROBE_PAST);
  if (slow(c, (double)(now_us - probing) / 1e6) < past)
    return;
  int64_t w =
      imax(PROBE_EVIDENCE_US,
           PROBE_EVIDENCE_PAUSES * imax(c->longest_pause_us, c->qw_period_us));
  if (w > PROBE_EVIDENCE_MAX_US)
    w = PROBE_EVIDENCE_MAX_US;
  /* Only the probe's own starts: the window begins where it did. */
  if (now_us - w < probing)
    return;
  double got = polite__rc_admitted(c, now_us - w, now_us, PROBE_NEED);
  if (got < past)
    return;
  c->probe_fast_us = now_us;
  c->probe_fast_rate = slow(c, (double)(now_us - probing) / 1e6);
}

#define STREAK_HOLD_US 500000 /* see polite__rc_hold_streak */
#define STREAK_MAX_US 8000000

/* A refusal that names no wait, of a request started after the last such
 * hold began: the second in a row without an admitted answer between
 * holds every start for STREAK_HOLD_US, each further one twice as long
 * (at most STREAK_MAX_US). Without a server wait there is no account
 * pause, and a limiter that refuses whatever the rate (a spent fixed
 * window) refused every start until its window ended: 105 x 429 in 1200
 * against 100 per 5 s (issue #23). The answers of requests already in
 * flight at the hold are its echoes. */
void polite__rc_hold_streak(polite_ratectl *c, int64_t now,
                            int64_t started_us) {
  if (started_us < c->streak_from_us)
    return;
  if (c->streak == 0)
    c->streak_onset_us = started_us;
  if (++c->streak < 2)
    return;
  if (c->streak > 2)
    c->qw_persist = 1; /* refused again after a hold: a spent window */
  int64_t hold = STREAK_HOLD_US << (c->streak - 2 < 4 ? c->streak - 2 : 4);
  if (hold > STREAK_MAX_US)
    hold = STREAK_MAX_US;
  if (c->hold_until_us < now + hold)
    c->hold_until_us = now + hold;
  c->streak_from_us = now;
  polite__rc_log_pause(c, now,
                       now + hold); /* not sending time, for the estimate */
}
