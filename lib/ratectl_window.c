/* The learned-rate controller's reading of the server's window and its
 * plans (see ratectl_measure.h): where a window ends as the answers place
 * it, and a plan taken as the rate. Pure, like the controller. */
#include "ratectl_measure.h"

#include <limits.h>

#include "rateplan.h"

#define HEADER_FRESH_US 5000000 /* a plan rules this long after its answer */

static int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* ---- The server's window, as the answers place it
 *
 * Servers state the reset in whole seconds, rounded up (express-rate-limit,
 * X-RateLimit-Reset as an epoch second): one answer's reset t is up to a
 * second late, and spreading over it wastes up to 1 / w of every window
 * (measured against express-rate-limit at 20 per 2 s: 1.36 x the floor).
 * The limiter computed t when the request arrived, just after it started,
 * so each answer says the window ends about started + t (now + t for a
 * reset sent as a time, which the client made a delta); the earliest of
 * those in one window is the sharpest (the first answer of a window
 * anchored at its first request gives it to the millisecond).
 *
 * Which answers are of one window: what remains only falls within a window
 * and jumps up at a new one, so an answer with more remaining than the last
 * one opens a new window (a refill of a token bucket or a sliding window
 * does too, which only forgets the sharper end). An answer whose request
 * started before the current window's first is of an earlier window: its
 * remaining and reset are ignored.
 *
 * Why this is safe: spreading what remains over a shorter time than the
 * truth can only send those r sooner, never more of them (what remains is
 * what the server accepts now), and the policy's average still caps the
 * rate. When the sharp end has passed but an answer of the same window
 * says some remain (the end was placed a few ms early: the request that
 * placed it arrived a little after it started), pacing at the policy's
 * average cannot exhaust a window anchored at the client's first request,
 * and its answers, less the requests in flight, stop it at r = 0. */

/* Places one answer's pair in the window: returns -1 for an answer of an
 * earlier window (ignore it), else the time left to the window's end
 * (<= 0: the sharp end has passed), or INT64_MAX when the answers say
 * nothing sharper than this answer's own reset. */
static int64_t window_left(polite_ratectl *c, int64_t now_us,
                           int64_t started_us, const polite_rate_plan *p) {
  if (p->remaining < 0 || p->reset_us <= 0)
    return INT64_MAX;
  if (c->win_end_us > 0 && started_us < c->win_start_us)
    return -1;
  int64_t end = (p->reset_absolute ? now_us : started_us) + p->reset_us;
  if (c->win_end_us == 0 || p->remaining > c->win_remaining) {
    c->win_start_us = started_us;
    c->win_end_us = end;
  } else if (end < c->win_end_us) {
    c->win_end_us = end;
  }
  c->win_remaining = p->remaining;
  int64_t left = c->win_end_us - now_us;
  return left < p->reset_us ? left : INT64_MAX;
}

/* The rate of a SPREAD plan: what remains over the time left to the
 * window's end, capped by the policy's average (see above). */
static double spread_rate(int64_t left, const polite_rate_plan *p) {
  if (left == INT64_MAX)
    return p->rate_per_s;
  if (left <= 0)
    return p->average_per_s > 0 ? p->average_per_s : p->rate_per_s;
  double r = 1e6 / (double)polite__plan_interval_us((double)left,
                                                    (double)p->remaining);
  if (p->average_per_s > 0 && r > p->average_per_s)
    r = p->average_per_s;
  return r > p->rate_per_s ? r : p->rate_per_s;
}

/* The hold of a WAIT_RESET plan: the window's sharp end with the
 * planner's margin when it is ahead; none when it has passed (the answer
 * was about the window that just ended: its "reset 1" may mean 3 ms, and
 * waiting it out would idle a whole second; if the window is in fact still
 * open a few ms longer, the server's 429 and Retry-After say so); the
 * plan's own when the answers place no end. */
static int64_t reset_hold(int64_t now_us, int64_t left,
                          const polite_rate_plan *p) {
  if (left == INT64_MAX)
    return p->not_before_us;
  if (left <= 0)
    return 0;
  int64_t sharp = now_us + polite__plan_interval_us((double)left, 1.0);
  return sharp < p->not_before_us ? sharp : p->not_before_us;
}

/* A plan with a rate rules while answers keep bringing one; a lower rate
 * than the current one is a cut the other participants must follow. */
polite_ratectl_cause polite__rc_take_plan(polite_ratectl *c, int64_t now_us,
                                          int64_t started_us,
                                          const polite_rate_plan *p) {
  polite_ratectl_cause made = POLITE_CUT_NONE;
  int64_t left = INT64_MAX;
  if (p->reason == POLITE_PLAN_SPREAD || p->reason == POLITE_PLAN_WAIT_RESET)
    left = window_left(c, now_us, started_us, p);
  if (left == -1)
    return made; /* an answer of an earlier window */
  double planned = p->reason == POLITE_PLAN_SPREAD && p->remaining > 0
                       ? spread_rate(left, p)
                       : p->rate_per_s;
  if (planned > 0) {
    /* A cut is of what the account is paced at: with a shared budget that
     * is the budget's rate, which may be below this participant's own,
     * not yet published one (its slow start above the first estimate). A
     * plan above the budget's rate is a raise; published as a cut, the
     * budget's merge would keep the lower rate and start a generation
     * every participant then holds at (4/s for 30 s against 5/s). */
    double cur = polite_ratectl_rate(c, now_us);
    if (c->shared_seen > 0 && c->shared_seen < cur)
      cur = c->shared_seen;
    c->header_rate = planned;
    c->header_until_us = now_us + HEADER_FRESH_US;
    if (c->phase != POLITE_RC_PROBE)
      c->phase = POLITE_RC_HEADERS;
    if (planned < cur / POLITE__RC_PUBLISH_STEP) {
      c->pending_cut = 1;
      c->limit = planned;
      polite__rc_count_cut(c, POLITE_CUT_HEADERS, now_us);
      made = POLITE_CUT_HEADERS;
      /* No hold: pacing at the lower rate from the last start already
       * spreads what remains (its r-th start comes t after the last one,
       * before the reset). A hold of one interval from the answer would
       * add the answer's latency to every gap (at 100 ms latency and
       * 10/s: one start every ~210 ms). */
    }
  }
  if (p->reason == POLITE_PLAN_WAIT_RESET) {
    /* Nothing remains: wait for the window's end, as sharp as the answers
     * place it (a reset of "1" may mean 18 ms). */
    c->hold_until_us = imax(c->hold_until_us, reset_hold(now_us, left, p));
  } else if (p->reason == POLITE_PLAN_WAIT_SERVER) {
    c->hold_until_us = imax(c->hold_until_us, p->not_before_us);
  }
  return made;
}
