/* The learned-rate controller: starts and responses in, the start rate out
 * (pure: no clock, no I/O). The rules are in docs/decisions.md. */
#include <polite/ratectl.h>

#include <math.h>
#include <string.h>

#include "ratectl_measure.h"
#include "ratectl_probe.h"

#define SS_DOUBLE_US 250000.0 /* slow start doubles every 250 ms */
#define SS_MAX_US 30000000.0  /* ... for at most 30 s (no overflow) */
/* No answer raises the rate by more than this: the rate is at most
 * SS_GAIN x the rate the latest clean answer was started at, so before the
 * first answer it stays at the first estimate, and a slow server slows the
 * ramp (doubling only as fast as clean answers come back). */
#define SS_GAIN 2.0
#define CUBIC_C                                                                \
  0.01 /* growth scale, in limits per s^3: at a                                \
          limit of 40/s AWS's 0.4/s^3 */
/* First cuts (AWS: 0.7 of what it sent; ours is of what got through,
 * measured). */
#define BETA 0.9
#define BETA_STEADY 0.95 /* once the limit was found twice */
/* ... and when the rate just set trips the limit again before MIN_SAMPLES
 * answers came back: the last estimate was well above the limit (a limit
 * halved mid-run). With BETA and BETA_STEADY such a cut took 0.855 x a
 * step: 40 -> 20/s cost two processes five cuts and 6.8 s. */
#define BETA_FAST 0.75
#define PLATEAU 0.95 /* hold 5% below what got through */
/* ... 3% below it when it was measured over a clean window (steady
 * sending, no pause, no ramp): an exact estimate needs less margin, and a
 * fixed window of 20/s held at 0.95 x cost the whole run 5% */
#define PLATEAU_CLEAN 0.97
/* ... 10% below when the limit was met in slow start: measured over a
 * short window that a limiter's burst inflates (burst 1 at 40/s: +7%) */
#define PLATEAU_SS 0.9
/* The probe above the plateau: lib/ratectl_probe.c. */
#define BAND 0.15                 /* "the same limit" within 15% */
#define HOLD_FIRST_US 12000000    /* plateau before probing, limit unsure */
#define HOLD_MAX_US 30000000      /* ... up to 30 s, or HOLD_PAUSES pauses */
#define HOLD_LONGEST_US 600000000 /* ... and never above 10 minutes */
/* ... and at least this many times the server's pause: a probe that finds
 * the limit costs one pause, so probing stays under 1/20 = 5% of the time
 * (at Retry-After: 1, 12 s made it 7%: in a 15 s run against nginx the
 * probe's 429 came at 16 s and cost a second of 18) */
#define HOLD_PAUSES 20
#define WINDOW_US 1000000 /* the measured rate's shortest window */
/* ... and the upper estimate's in slow start (the rate doubled) */
#define WINDOW_SS_US 350000
/* After a cut, answers of requests already in flight refine the estimate
 * of what got through while the server's pause lasts (a limiter answers a
 * 429 at once, its 200s a handler's time later). */
#define REFINE_US 500000
/* An estimate of what got through needs this many answers; with fewer (a
 * 429 right after a pause, seen by one of two participants) the share is
 * 0 or 1/2 by chance, and the cut falls back to BETA x the throttled
 * request's rate. With 2, two processes against nginx halved to 20/s held
 * 14/s for 25 s (0.7 x the limit; 1.44 x the floor on the fake clock). */
#define MIN_SAMPLES 3
/* A refine of slow start's cut raises the upper estimate only up to the
 * rate the starts came at when they came at less than this share of it
 * (see aim_measured). Tuned between two cases, not a margin: a gateway's
 * callers came at 0.74-0.78 x the raised estimate; the zoo's refines came
 * at 0.81-0.95 x (a few at 0.6), and those under 0.85 x are capped too. */
#define SENT_SHORT 0.85
/* The concurrency signature is read over this window of starts; the cap is
 * held this long before one more in flight is tried; and under a cap the
 * rate is at least this many times cap / latency. */
/* A cut this soon after the curve reached the last plateau is a relapse
 * (ratectl.c, estimates). */
#define RELAPSE_US 3000000
#define LO_FLOOR 0.5    /* the lower estimate is at least this x the upper */
#define RELAPSE_AT 0.95 /* see estimates */
#define OWN_CAP_MIN 0.9 /* see estimates */
#define CAP_WINDOW_US 2000000
#define CAP_HOLD_US 20000000
#define CAP_HEADROOM 1.25
/* The jitter margin under a stated rate (see header_cap). */
#define JITTER_FIRST 0.03
#define JITTER_MAX 0.15
#define JITTER_HALF_US 60000000.0
#define LATENCY_ALPHA 0.2
#define PUBLISH_STEP POLITE__RC_PUBLISH_STEP
#define PUBLISH_MIN_US 100000

static double dmin(double a, double b) {
  return a < b ? a : b;
}
static double dmax(double a, double b) {
  return a > b ? a : b;
}
static int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}
static int64_t imin(int64_t a, int64_t b) {
  return a < b ? a : b;
}

void polite_ratectl_init(polite_ratectl *c, const polite_ratectl_config *cfg,
                         int64_t now_us) {
  if (c == NULL)
    return;
  memset(c, 0, sizeof *c);
  if (cfg != NULL)
    c->cfg = *cfg;
  if (!(c->cfg.initial_per_s > 0))
    c->cfg.initial_per_s = POLITE_RATECTL_INITIAL_PER_S;
  if (!(c->cfg.min_per_s > 0))
    c->cfg.min_per_s = POLITE_RATECTL_MIN_PER_S;
  if (!(c->cfg.max_per_s > 0))
    c->cfg.max_per_s = 0;
  c->phase = POLITE_RC_SLOW_START;
  c->ss_base = c->cfg.initial_per_s;
  c->clean_rate = c->cfg.initial_per_s / SS_GAIN;
  c->ss_start_us = now_us;
  c->pause_start_us = c->pause_end_us = now_us;
  c->last_cut_us = now_us;
  c->epoch_us = now_us;
  c->first_rate = polite_ratectl_rate(c, now_us);
  c->lowest = c->highest = c->first_rate;
}

/* The rate the server's headers state, less the jitter margin. A limiter
 * with no tolerance (polite proxy --burst 1, nginx burst=1) refuses a
 * start that reaches it a few ms early, and a loaded client's starts do:
 * at the planned 9.8 of 10/s, two starts sent 102 ms apart arrive 97 ms
 * apart after a connect or a scheduler stall. Each 429 under a fresh plan
 * is such a start (the server said its rate, and the rate was below it),
 * so each one widens the margin, from 3% doubling up to 15%; the margin
 * halves every minute, so a burst of load costs a few minutes at most. */
static double header_cap(const polite_ratectl *c, int64_t now_us) {
  double m = c->jitter;
  if (m > 0 && now_us > c->jitter_us)
    m *= exp2(-(double)(now_us - c->jitter_us) / JITTER_HALF_US);
  return c->header_rate * (1 - m);
}

/* The rate before the caps. */
static double raw_rate(const polite_ratectl *c, int64_t now_us) {
  double r;
  int fresh = c->header_rate > 0 && now_us < c->header_until_us;
  if (c->phase == POLITE_RC_SLOW_START) {
    double dt = dmin(dmax((double)(now_us - c->ss_start_us), 0), SS_MAX_US);
    r = c->ss_base * exp2(dt / SS_DOUBLE_US);
    r = dmin(r, SS_GAIN * c->clean_rate);
  } else if (c->phase == POLITE_RC_HEADERS && !fresh) {
    /* The headers stopped coming: probe up from their last rate. */
    double y = (double)(now_us - c->header_until_us) / 1e6;
    r = c->header_rate * (1 + CUBIC_C * y * y * y);
  } else if (c->phase == POLITE_RC_HEADERS) {
    r = header_cap(c, now_us);
  } else {
    /* Before the server's wait is over the curve stands still. */
    int64_t t = imax(now_us, c->pause_end_us);
    r = polite__rc_probe_curve(c, (double)(t - c->epoch_us) / 1e6, t);
  }
  if (fresh)
    r = dmin(r, header_cap(c, now_us));
  return r;
}

double polite_ratectl_rate(const polite_ratectl *c, int64_t now_us) {
  if (c == NULL)
    return 0;
  double r = dmax(raw_rate(c, now_us), c->cfg.min_per_s);
  /* Under a learned cap the cap paces: the rate stays above what the cap
   * lets through, so that it never binds first. */
  if (c->cap > 0 && c->latency_us > 0)
    r = dmax(r, CAP_HEADROOM * (double)c->cap * 1e6 / c->latency_us);
  if (c->cfg.concurrency > 0 && c->latency_us > 0)
    r = dmin(r, (double)c->cfg.concurrency * 1e6 / c->latency_us);
  if (c->cfg.max_per_s > 0)
    r = dmin(r, c->cfg.max_per_s);
  return r;
}

int64_t polite_ratectl_hold_until(const polite_ratectl *c) {
  return c ? c->hold_until_us : 0;
}

void polite_ratectl_on_start(polite_ratectl *c, int64_t now_us) {
  if (c == NULL)
    return;
  c->starts++;
  double r = polite_ratectl_rate(c, now_us);
  c->highest = dmax(c->highest, r);
  c->st_us[c->st_head] = now_us;
  c->st_acct[c->st_head] = c->acct_starts;
  /* With a shared budget the account is paced at the shared rate, which
   * another participant may have raised above this one's. */
  c->st_rate[c->st_head] = dmax(r, c->shared_seen);
  c->st_busy[c->st_head] =
      (unsigned short)(c->inflight < 65535 ? c->inflight : 65535);
  c->inflight++;
  c->st_head = (c->st_head + 1) % POLITE__RATECTL_RING;
  if (c->st_n < POLITE__RATECTL_RING)
    c->st_n++;
  polite__rc_quota_on_start(c, now_us);
}

void polite_ratectl_account_busy(polite_ratectl *c, unsigned busy) {
  if (c == NULL || c->st_n == 0)
    return;
  unsigned k = (c->st_head + POLITE__RATECTL_RING - 1) % POLITE__RATECTL_RING;
  c->st_busy[k] = (unsigned short)(busy < 65535 ? busy : 65535);
  c->busy_account = 1;
  if (busy + 1 > c->inflight)
    c->qw_crowd = 1; /* others' requests in flight: not alone */
}

unsigned polite_ratectl_started_after(const polite_ratectl *c, int64_t at_us) {
  if (c == NULL)
    return 0;
  unsigned n = 0;
  for (unsigned i = 0; i < c->st_n; i++) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->st_us[k] <= at_us)
      break;
    n++;
  }
  return n;
}

/* Starts probing from cut_to towards the plateau once `resume_us` is
 * reached: at resume the curve gives cut_to. */
static void aim(polite_ratectl *c, double limit, double plateau, double cut_to,
                int64_t resume_us) {
  c->limit = limit;
  c->plateau = limit * plateau;
  double below = c->plateau - cut_to;
  double y0 = below > 0 ? -cbrt(below / (CUBIC_C * limit)) : 0;
  c->epoch_us = resume_us - (int64_t)(y0 * 1e6);
  c->phase = POLITE_RC_PROBE;
}

void polite__rc_count_cut(polite_ratectl *c, polite_ratectl_cause why,
                          int64_t now_us) {
  c->cuts[why]++;
  c->last_cause = why;
  if (why != POLITE_CUT_HEADERS) /* headers never hide a throttle */
    c->last_cut_us = now_us;
  c->lowest = dmin(c->lowest, polite_ratectl_rate(c, now_us));
}

/* The two estimates of a cut (see aim_measured): *lo, what got through
 * over at least the limiter's own window, pauses included (a lower bound
 * once the limiter was saturated); *hi, over the last second since the
 * previous pause ended (an upper bound: a limiter's burst or a banked
 * pause inflates it). Returns 1 when the long window was clean: no pause
 * in it and not slow start's ramp, so that *lo is the limit itself. */
#define QUOTA 2 /* estimates' *fitted: a window's quota, not a bucket's fit */

static int estimates(const polite_ratectl *c, int64_t now_us, double *lo,
                     double *hi, int *fitted, double *whole_lo) {
  *fitted = 0;
  *whole_lo = -1;
  /* At least a second, or the server's pause when it is longer (a
   * limiter's Retry-After is about its window). */
  int64_t w = imax(WINDOW_US, c->pause_end_us - c->last_cut_us);
  int64_t from = c->cut_from_us - w;
  double own = polite__rc_admitted(c, from, now_us, MIN_SAMPLES);
  *lo = own;
  if (c->relapse && c->chain_from_us > 0) {
    /* The previous cut landed above the limit: all the time since the
     * first cut of the series, its pauses included, as well. A token
     * bucket refills in a pause, so over its own window it seems to admit
     * more than it does (32 of 20/s a second after a 1 s pause); a
     * sliding window forgets in a pause, so over the whole series it
     * seems to admit less (28 of 40/s): the lower of the two lands below
     * the limit, and the window's own is the most the climb aims at. */
    int64_t chain = c->chain_from_us - WINDOW_US;
    double all = polite__rc_admitted(c, imin(chain, from), now_us, MIN_SAMPLES);
    if (all > 0 && (own <= 0 || all < own))
      *lo = all;
    /* The rate that tripped overshoots the limit by what the limiter's
     * burst let through on the way up: 10% below it. */
    double at = RELAPSE_AT * polite__rc_rate_at_start(c, c->cut_from_us);
    *hi = c->upper > 0 ? dmin(at, c->upper) : at;
    double hi_tripped = *hi;
    /* Over a window with a pause in it, a sliding window admits its quota
     * and no more: what got through over it bounds the limit (a window
     * mostly paused says little). Without a pause it is a lower bound, and
     * on a leaky bucket, which banks nothing, it is one with a pause too:
     * it lowers the upper estimate by 10% at most (unbounded, a relapse
     * on a limit shared with another caller held 0.85 x it for 37 s). */
    if (own > LO_FLOOR * *hi &&
        polite__rc_paused_within(c, from, c->cut_from_us) > 0)
      *hi = dmax(dmin(*hi, own), OWN_CAP_MIN * *hi);
    /* The series so far, slow start's 429 and the relapse after the
     * pause, bounds a leaky bucket's rate (ratectl_measure.c): a landing
     * that tripped soon after the pause is far above the limit, and 0.95 x
     * its rate is still above it (nginx 20/s burst 1, instant answers:
     * slow start tripped at 40/s, landed at 24.5, and the climb after the
     * relapse tripped again at 20.8). Only after a pause the server named
     * (the bucket drained in it; a window without Retry-After is no
     * bucket) and alone (a shared budget's other starts fill it unseen). */
    /* A whole depth (polite__rc_bucket_fit) at the first relapse after
     * slow start's cut, the short run's landing; not at its refines, nor
     * at a later relapse, where the rings hold more of the series: there
     * it moved the held-out rows either way by 0.02-0.06 x, no gain. */
    double *whole = c->ss_landed > 0 ? whole_lo : NULL;
    double fit = c->others || c->longest_pause_us <= 0
                     ? -1
                     : polite__rc_bucket_fit(c, imin(chain, from), now_us,
                                             LO_FLOOR * *hi, *hi, whole);
    /* ... and when the cap above left no rate that explains, between it
     * and the rate that tripped (a real series fitted only at 20.2 of
     * nginx's 20/s, above the cap's 18.8, and fell back to half the upper
     * estimate: 8.9/s), the cap is the estimate, taken as a fit. */
    if (fit <= 0 && *hi < hi_tripped && !c->others && c->longest_pause_us > 0 &&
        polite__rc_bucket_fit(c, imin(chain, from), now_us, *hi, hi_tripped,
                              whole) > 0)
      fit = *hi;
    if (fit > 0) {
      *hi = fit;
      *fitted = 1;
    } else {
      *whole_lo = -1;
    }
    /* A window's quota (polite__rc_window_quota). */
    double quota = polite__rc_window_quota(c, own, at);
    if (quota > 0) {
      *hi = quota;
      *fitted = QUOTA;
      *whole_lo = -1;
    }
  } else {
    int64_t short_w = c->cut_in_ss ? WINDOW_SS_US : WINDOW_US;
    int64_t since = imax(c->cut_from_us - short_w, c->pause_start_us);
    *hi = polite__rc_admitted_sending(c, since, now_us, MIN_SAMPLES);
    /* In slow start a participant of a shared budget that the others
     * outran may have too few answers in the short window: it widens back
     * to the latest MIN_SAMPLES of them (the rates they were started at
     * are slow start's latest), never to the long window's average, which
     * is the ramp from the first estimate (two processes against nginx's
     * 20/s landed at 6.9/s and held it 20 s: 2.9-4.0 x the floor). */
    if (*hi <= 0 && c->cut_in_ss) {
      int64_t a = polite__rc_nth_answer_start(c, c->cut_from_us, MIN_SAMPLES);
      if (a >= c->pause_start_us && a < since)
        *hi = polite__rc_admitted_sending(c, a, now_us, MIN_SAMPLES);
    }
  }
  /* A relapse's window reaches back over the previous cut's landing, a
   * lower rate than the one that tripped: a lower bound, not the limit. */
  return !c->cut_in_ss && !c->relapse &&
         polite__rc_paused_within(c, from, c->cut_from_us) == 0;
}

/* Aims below what got through of the requests started around the last
 * cut's throttled one. A clean estimate (steady sending over the whole
 * window) is the limit: resume 10% below it and hold 5% below. Otherwise
 * the limit lies between the two estimates: resume just below the lower
 * one and climb (CUBIC's concave curve) to 10% below the upper one, so
 * that the cut lands below the limit at once and a relapse on the way up
 * happens at a rate near the limit, where the next estimate is sharp. Two
 * cuts in a row that find about the same limit make the controller
 * steady: a shallower cut and a longer plateau. */
static void aim_measured(polite_ratectl *c, int64_t now_us, int refine) {
  double lo, hi, whole_lo;
  int fitted;
  int clean = estimates(c, now_us, &lo, &hi, &fitted, &whole_lo);
  double raw_lo = lo;
  int fast = 0;
  if (refine && lo <= 0 && !c->cut_in_headers)
    return; /* no better estimate yet: the cut's own stands */
  /* Slow start's paced rate is what the callers were allowed, not what
   * they started: alone, a refine raises the upper estimate no higher
   * than the cut's own or the rate the starts came at, when they came
   * well below it (a gateway's callers started 38/s under a paced 49-69/s
   * against nginx's 40/s, and the refines took the landing from 36 to
   * 44/s, above the limit: the second 429 followed the pause). */
  if (refine && c->cut_in_ss && !c->others && c->upper > 0 && hi > c->upper) {
    int64_t since = imax(c->cut_from_us - WINDOW_SS_US, c->pause_start_us);
    double sent =
        polite__rc_started_rate(c, since, c->cut_from_us, MIN_SAMPLES);
    if (sent > 0 && sent < SENT_SHORT * hi)
      hi = dmin(hi, dmax(c->upper, sent));
  }
  if (c->cut_in_headers) { /* the server's own statement of its limit */
    lo = hi = c->header_rate;
    clean = 1;
    /* ... which no bucket fitted to the series overrides: kept, the fit
     * landed 0.9 x the stated rate, not 0.95 x (bench "headers, 2
     * processes": 1.03 -> 1.08-1.10 x), and flagged the next cut as the
     * second fitted one. */
    fitted = 0;
  } else if (lo <= 0) {
    /* Too few answers since the pause tell: the rate just set tripped the
     * limit at once, so the last estimate was well above it. */
    fast = clean = 1;
    lo = hi = BETA_FAST * polite__rc_rate_at_start(c, c->cut_from_us);
  }

  /* A window that is mostly pause says little (3/s after a halving to
   * 20/s): never land below half the upper estimate, a halving at most, as
   * TCP's multiplicative decrease. */
  if (!clean && hi > 0)
    lo = dmax(lo, LO_FLOOR * hi);
  /* The first relapse after slow start's cut lands no lower than that cut
   * did: what raised the rate since (a refine from the answers in flight,
   * which a burst or a caller sending less than the rate allowed
   * inflates) was wrong, not the landing, which held (when the rate did
   * not rise since, the landing itself tripped: the usual relapse). Taken back
   * to half the upper estimate instead, a gateway against nginx's 40/s fell
   * from 44 to 18/s and held 24/s (1.87 x the floor, bench/gateway); a 429 of
   * arrival jitter at 0.92 x the limit did the same (--net loaded). */
  if (!refine)
    c->lo_floor = c->relapse && c->ss_landed > 0 && fitted != QUOTA &&
                          polite__rc_rate_at_start(c, c->cut_from_us) >
                              PUBLISH_STEP * c->ss_landed
                      ? c->ss_landed
                      : 0;
  /* ... and so do the refines of that relapse, by the answers in flight
   * at it: they see the same window (with a 100 ms handler, a gateway's
   * relapse against nginx's 40/s landed at 35/s, its refine took it to
   * half the upper estimate and the budget paced it at 25/s for 20 s:
   * 1.77 x the floor). */
  lo = dmax(lo, c->lo_floor);
  lo = dmax(lo, c->cfg.min_per_s);
  if (clean || !(hi > lo))
    hi = lo;
  /* A relapse shows the last estimate wrong: no confirmation. */
  unsigned steady = !fast && !c->relapse && c->prev_limit > 0 &&
                            fabs(hi - c->prev_limit) <= BAND * c->prev_limit
                        ? c->steady_base + 1
                        : 0;
  c->steady = steady;
  double beta = steady || c->cut_in_headers ? BETA_STEADY : BETA;
  double cut_to = clean ? beta * lo : PLATEAU * lo;
  double plateau = (clean && !fast ? PLATEAU_CLEAN
                    : c->cut_in_ss ? PLATEAU_SS
                                   : PLATEAU) *
                   hi;
  if (c->cut_in_ss)
    cut_to = plateau; /* slow start's upper estimate errs little on a
                         leaky bucket, and a relapse corrects the rest */
  /* The bucket's fit is an upper bound that errs high (a deeper bucket at
   * a lower rate explains the same answers: 22-25 of nginx's 20/s after
   * one relapse): the landing and the plateau hold slow start's 10% below
   * it; 5% once a fitted landing tripped too, whose series bounds the
   * bucket from both sides of its rate (19.5 of 20/s). */
  if (fitted) {
    cut_to = plateau = (c->prev_fitted ? PLATEAU : PLATEAU_SS) * hi;
    c->cut_fitted = 1;
  }
  /* With a whole depth the fit is bounded from below too: the lowest rate
   * that depth explains (the gateway's nginx 20/s, for real: 19.4-21.2/s,
   * landed at 19.4 instead of 0.9 x 21.2 = 19.1). */
  if (fitted == 1 && whole_lo > 0 && !c->cut_in_headers)
    cut_to = plateau = whole_lo;
  /* A window's quota is counted, not fitted: held as a clean estimate is
   * (at 0.9 x it the sliding log held 35 of 40/s for 25 s; 0.95 x gained
   * half as much). */
  if (fitted == QUOTA)
    cut_to = plateau = PLATEAU_CLEAN * hi;
  cut_to = dmax(c->cfg.min_per_s, dmin(cut_to, plateau));
  c->upper = hi;
  if (!refine)
    c->ss_landed = c->cut_in_ss ? cut_to : 0;
  if (c->cut_in_ss) { /* for the quota of the first relapse (estimates) */
    c->ss_lo = raw_lo;
    c->ss_at = polite__rc_rate_at_start(c, c->cut_from_us);
  }
  /* Each confirmation of the limit doubles the hold: a probe that finds
   * it again costs a server pause, so the hold is at least HOLD_PAUSES of
   * them, however long they are. */
  int64_t pause = c->pause_end_us - c->last_cut_us;
  int64_t hold = HOLD_FIRST_US << (steady < 2 ? steady : 2);
  int64_t cap = imax(HOLD_MAX_US, HOLD_PAUSES * pause);
  if (!fast) /* a fast cut's estimate is a guess: probe sooner */
    hold = imax(hold, HOLD_PAUSES * pause);
  c->hold_us = hold < cap ? hold : cap;
  if (c->hold_us > HOLD_LONGEST_US)
    c->hold_us = HOLD_LONGEST_US;
  aim(c, hi, plateau / hi, cut_to, imax(now_us, c->pause_end_us));
}

/* A cut at a throttle of a request started at started_us. */
static void cut(polite_ratectl *c, int64_t now_us, int64_t started_us,
                int64_t resumed_us, polite_ratectl_cause why) {
  c->prev_limit = c->phase == POLITE_RC_PROBE ? c->limit : 0;
  c->cut_in_ss = c->phase == POLITE_RC_SLOW_START;
  /* A 429 while fresh headers plan the rate is a start that reached the
   * server a little early (transport jitter against a limiter with no
   * tolerance), not a wrong plan: hold 5% below the planned rate. Also
   * after an earlier cut (the probe phase, where fresh headers still cap
   * the rate): taken for a relapse, the second such 429 cut two processes
   * against polite proxy 10/s to 5.7/s (1.5 x the floor). */
  c->cut_in_headers = c->header_rate > 0 && now_us < c->header_until_us;
  if (c->cut_in_headers) {
    double m = 1 - header_cap(c, now_us) / c->header_rate; /* decayed */
    c->jitter = dmin(JITTER_MAX, m > 0 ? 2 * m : JITTER_FIRST);
    if (c->jitter < JITTER_FIRST)
      c->jitter = JITTER_FIRST;
    c->jitter_us = now_us;
  }
  c->steady_base = c->steady;
  c->prev_fitted = c->cut_fitted;
  c->cut_fitted = 0;
  /* A cut on the climb to the previous one's plateau, or soon after
   * reaching it: that one landed (or aimed) above the limit. */
  c->relapse = c->phase == POLITE_RC_PROBE &&
               c->last_cause != POLITE_CUT_SHARED &&
               now_us < c->epoch_us + RELAPSE_US;
  c->prev_cut_us = c->last_cut_us;
  if (!c->relapse)
    c->chain_from_us = started_us;
  c->cut_from_us = started_us;
  if (!c->relapse || c->ss_landed <= 0)
    c->ss_lo = 0; /* a quota only at the first relapse after slow start */
  c->pause_start_us = resumed_us;
  c->last_cut_us = now_us; /* the pause since, for the hold */
  aim_measured(c, now_us, 0);
  c->pending_cut = 1;
  polite__rc_count_cut(c, why, now_us);
}

/* Remembers one answer (its start time and whether it got through) for
 * let_through, and its latency for the concurrency cap. */
static void record(polite_ratectl *c, const polite_ratectl_response *r,
                   int throttled) {
  c->ok_us[c->ok_head] = r->started_us;
  c->ok_flag[c->ok_head] = (unsigned char)!throttled;
  c->ok_head = (c->ok_head + 1) % POLITE__RATECTL_RING;
  if (c->ok_n < POLITE__RATECTL_RING)
    c->ok_n++;
  double at = polite__rc_rate_at_start(c, r->started_us);
  unsigned last = c->ok_head == 0 ? POLITE__RATECTL_RING - 1 : c->ok_head - 1;
  c->ok_rate[last] = at;
  c->ok_busy[last] = (unsigned short)polite__rc_busy_at_start(c, r->started_us);
  if (throttled || r->now_us < r->started_us)
    return;
  c->oks++;
  c->clean_rate = dmax(c->clean_rate, at);
  double lat = (double)(r->now_us - r->started_us);
  c->latency_us = c->latency_us > 0
                      ? c->latency_us + LATENCY_ALPHA * (lat - c->latency_us)
                      : lat;
}

/* ---- A concurrency limit
 *
 * A limiter of requests in flight (nginx limit_conn, a server's worker
 * pool) refuses by how many are in flight, not by how many started
 * lately: every request started while this participant had cap or more in
 * flight is refused, every one started with fewer gets through. A rate
 * limiter leaves no such line: at the same count in flight some get
 * through and some do not, as the rate varies. Cutting the rate at a
 * concurrency limit only makes the run slower (4 in flight at 100 ms: 1.3
 * x the floor, issue #23); holding the cap keeps it at the limit. */

/* Learns or follows the cap at an answer started with `busy` in flight.
 * A refusal without a server wait that started with more in flight than
 * any admitted one is taken as a concurrency limit at once (a limiter of
 * requests in flight rarely names a wait; one that does is taken for a
 * rate limiter first): the test costs one refusal, no pause, and a
 * refusal below the cap later drops it. An admitted request started at
 * the cap (the probe above it got through) raises it; a refusal at the
 * probe restarts its hold. Returns 1 when the answer is a refusal at the
 * cap (no reason to cut the rate). */
static int follow_cap(polite_ratectl *c, int64_t now, unsigned busy,
                      int throttled, int server_wait) {
  if (c->others && !c->busy_account) {
    /* This participant's requests in flight are not the account's: with
     * others on the budget its count says nothing about the limit (one
     * that held a cap of 4 left the other none: 3.6 x the floor). The
     * budget's count is the account's: with it the cap is learned. */
    c->cap = 0;
    return 0;
  }
  if (!throttled) {
    if (c->cap > 0 && busy >= c->cap) {
      c->cap = busy + 1;
      c->cap_since_us = now;
    }
    return 0;
  }
  if (c->cap > 0 && busy < c->cap) {
    /* Refused below the cap: a rate, not a concurrency limit; from now on
     * a cap needs the whole signature. */
    c->cap = 0;
    c->cap_refused = 1;
    return 0;
  }

  /* A refusal that names a wait pauses the account, so the count in
   * flight at the next ones says little: such a limiter is learned as a
   * rate (a rate limit halved mid-run showed the signature by chance and
   * held a cap instead of cutting for 60 s). */
  unsigned k = server_wait
                   ? 0
                   : polite__rc_concurrency_signature(
                         c, now - CAP_WINDOW_US, now,
                         c->cap > 0 || c->cap_refused ? 2 : 1, MIN_SAMPLES);
  if (k > 0 && (c->cap == 0 || k < c->cap)) {
    c->cap = k;
    c->cap_since_us = now;
  }
  if (c->cap > 0 && busy >= c->cap) {
    c->cap_since_us = now; /* refused at the cap or at its probe */
    return 1;
  }
  return 0;
}

void polite_ratectl_on_pause(polite_ratectl *c, int64_t now_us,
                             int64_t until_us) {
  if (c == NULL || until_us <= now_us)
    return;
  polite__rc_log_pause(c, now_us, until_us);
  if (until_us - now_us > c->longest_pause_us) {
    c->longest_pause_us = until_us - now_us;
    /* A follower holding for less than HOLD_PAUSES of them would probe
     * first and cost the account a pause (two processes at Retry-After 10:
     * a 429 every 35 s, 1.41 x the floor). */
    int64_t hold = HOLD_PAUSES * c->longest_pause_us;
    if (c->phase == POLITE_RC_PROBE && c->hold_us < hold)
      c->hold_us = hold < HOLD_LONGEST_US ? hold : HOLD_LONGEST_US;
  }
}

unsigned polite_ratectl_cap(const polite_ratectl *c, int64_t now_us) {
  if (c == NULL || c->cap == 0)
    return 0;
  /* With others on the budget the probe's refusal may come to any of them
   * (one that holds no cap would cut its rate for it): the cap is held, not
   * probed. */
  return c->cap + (!c->others && now_us - c->cap_since_us >= CAP_HOLD_US);
}

polite_ratectl_cause
polite_ratectl_on_response(polite_ratectl *c,
                           const polite_ratectl_response *r) {
  if (c == NULL || r == NULL)
    return POLITE_CUT_NONE;
  int64_t now = r->now_us;
  int throttled = r->status == 429 || r->status == 503;
  if (c->inflight > 0)
    c->inflight--;
  int at_cap = 0;
  if (r->status > 0) {
    record(c, r, throttled);
    at_cap = follow_cap(c, now, polite__rc_busy_at_start(c, r->started_us),
                        throttled, r->server_wait_us >= 0);
  }
  polite_ratectl_cause made = POLITE_CUT_NONE;
  if (r->plan != NULL && !throttled)
    made = polite__rc_take_plan(c, now, r->started_us, r->plan);
  /* A refusal that names no wait, with an earlier one since the last
   * admitted answer: the same spent window, not a new limit (see
   * polite__rc_hold_streak). */
  int same_streak = throttled && r->server_wait_us < 0 && c->streak > 0 &&
                    !c->others && !c->qw_crowd;
  if (throttled && r->server_wait_us < 0 && !at_cap &&
      polite__rc_quota_refused(c, r->started_us))
    same_streak = 1;
  if (throttled && r->server_wait_us < 0) {
    polite__rc_hold_streak(c, now, r->started_us);
    polite__rc_quota_span_hold(c, now);
  } else if (r->status > 0 && !throttled) {
    polite__rc_quota_admitted(c, r->started_us);
    if (c->streak > 0 && r->started_us > c->streak_onset_us) {
      /* Admitted after the streak's first refusal: it ended (the answers
       * of older requests come after it), and a window may have opened. */
      c->streak = 0;
      polite__rc_quota_reopened(c, r->started_us);
    }
  }
  if (throttled) {
    c->throttles++;
    c->probe_blind = r->server_wait_us < 0;
    int64_t resumed = c->pause_end_us;
    if (r->server_wait_us >= 0 && now + r->server_wait_us > c->pause_end_us)
      c->pause_end_us = now + r->server_wait_us;
    if (r->server_wait_us > 0)
      polite__rc_log_pause(c, now, now + r->server_wait_us);
    if (r->server_wait_us > c->longest_pause_us)
      c->longest_pause_us = r->server_wait_us;
    if (r->started_us >= c->last_cut_us && !at_cap && !same_streak) {
      cut(c, now, r->started_us, resumed, POLITE_CUT_THROTTLE);
      made = POLITE_CUT_THROTTLE;
    }
  }
  if (made == POLITE_CUT_NONE && c->phase == POLITE_RC_PROBE &&
      c->last_cause == POLITE_CUT_THROTTLE && r->status > 0 &&
      r->started_us < c->last_cut_us &&
      now <= imax(c->pause_end_us, c->last_cut_us + REFINE_US)) {
    /* An answer of a request in flight at the cut: what got through is
     * better known now. A lower estimate is published as a cut. */
    double before = polite_ratectl_rate(c, now);
    aim_measured(c, now, 1);
    if (polite_ratectl_rate(c, now) < before / PUBLISH_STEP)
      c->pending_cut = 1;
  }
  if (r->status > 0 && !throttled)
    polite__rc_probe_on_answer(c, now);
  c->highest = dmax(c->highest, polite_ratectl_rate(c, now));
  return made;
}

/* Follows another participant's rate: holds at it (it becomes this
 * participant's plateau, held from now, or from the end of the server's
 * pause) and takes its limit when it is stated. The participant that
 * measured the limit leads: its re-aims and probes arrive as raises and
 * are followed the same way. Putting the follower on its own curve instead
 * (a plateau from an older, lower estimate) placed it far up its probe,
 * where the curve is steep: its raises outran the leader's plateau and
 * brought the next 429 within seconds (bench/adaptive, two processes:
 * three cuts in 8 s, 1.34 x N/limit). */
static void follow(polite_ratectl *c, int64_t now_us, double rate,
                   double limit) {
  if (c->phase == POLITE_RC_SLOW_START) {
    c->ss_base = rate;
    c->ss_start_us = now_us;
    return;
  }
  /* The leader probes; a follower only when no leader did for the longest
   * hold (it does not know the server's pause the leader holds for: with
   * 12 s a follower probed 3 s before the leader, 14 s into the bench). */
  c->hold_us = imax(HOLD_MAX_US, HOLD_PAUSES * c->longest_pause_us);
  if (c->hold_us > HOLD_LONGEST_US)
    c->hold_us = HOLD_LONGEST_US;
  limit = dmax(limit > 0 ? limit : c->limit, rate);
  aim(c, limit, rate / limit, rate, imax(now_us, c->pause_end_us));
}

void polite_ratectl_on_shared(polite_ratectl *c, int64_t now_us,
                              const polite_shared_rate *s) {
  if (c == NULL || s == NULL || !(s->rate_per_s > 0))
    return;
  c->shared_seen = s->rate_per_s;
  double cur = polite_ratectl_rate(c, now_us);
  if (s->generation != c->generation) {
    /* Another participant's cut: hold at its rate (it leads). */
    c->generation = s->generation;
    c->others = 1;
    c->phase = POLITE_RC_PROBE;
    follow(c, now_us, s->rate_per_s,
           s->limit_per_s > 0 ? s->limit_per_s : s->rate_per_s / BETA);
    c->published = s->rate_per_s;
    c->published_us = now_us;
    c->pending_cut = 0;
    if (s->rate_per_s < cur)
      polite__rc_count_cut(c, POLITE_CUT_SHARED, now_us);
  } else if (s->rate_per_s > cur * PUBLISH_STEP &&
             c->phase != POLITE_RC_HEADERS) {
    if (fabs(s->rate_per_s - c->published) > 1e-6 * s->rate_per_s)
      c->others = 1; /* not this participant's own publish */
    follow(c, now_us, s->rate_per_s, 0);
    c->published = s->rate_per_s;
  }
}

int polite_ratectl_take_publish(polite_ratectl *c, int64_t now_us,
                                polite_shared_rate *out, int *is_cut) {
  if (c == NULL || out == NULL)
    return 0;
  double r = polite_ratectl_rate(c, now_us);
  int cut_now = c->pending_cut;
  if (!cut_now &&
      !(c->published <= 0 || (r > c->published * PUBLISH_STEP &&
                              now_us - c->published_us >= PUBLISH_MIN_US)))
    return 0;
  out->rate_per_s = r;
  out->limit_per_s = c->limit;
  out->generation = c->generation;
  if (is_cut != NULL)
    *is_cut = cut_now;
  c->pending_cut = 0;
  c->published = r;
  c->published_us = now_us;
  return 1;
}

void polite_ratectl_published(polite_ratectl *c, int64_t now_us,
                              const polite_shared_rate *stored) {
  if (c == NULL || stored == NULL)
    return;
  double r = polite_ratectl_rate(c, now_us);
  if (stored->generation != c->generation &&
      stored->rate_per_s >= r / PUBLISH_STEP) {
    c->generation = stored->generation; /* our own cut */
    return;
  }
  polite_ratectl_on_shared(c, now_us, stored);
}

const char *polite_ratectl_cause_name(polite_ratectl_cause why) {
  static const char *const names[] = {"none", "throttle", "headers", "shared"};
  return (unsigned)why < 4 ? names[why] : "?";
}
