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

double polite__rc_probe_curve(const polite_ratectl *c, double y, int64_t t_us) {
  double hold = (double)c->hold_us / 1e6;
  if (y < 0)
    return c->plateau + CUBIC_C * c->limit * y * y * y;
  if (y < hold)
    return c->plateau;
  double r = slow(c, y - hold);
  if (fast_now(c) && t_us > c->probe_fast_us) {
    double f = c->probe_fast_rate *
               exp2((double)(t_us - c->probe_fast_us) / PROBE_DOUBLE_US);
    if (f > r)
      r = f;
  }
  return r;
}

void polite__rc_probe_on_answer(polite_ratectl *c, int64_t now_us) {
  if (c->phase != POLITE_RC_PROBE || fast_now(c) || !(c->limit > 0) ||
      c->probe_blind)
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
