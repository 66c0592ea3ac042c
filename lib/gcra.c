/* Generic cell rate algorithm (GCRA): spaces starts at a planned rate with a
 * bounded burst, on one theoretical arrival time (pure: `now` is given). */
#include <polite/core.h>

#include <math.h>

/* Clamps a 128-bit intermediate into int64 (saturating, never wrapping). */
static int64_t sat64(__int128 v) {
  if (v > INT64_MAX)
    return INT64_MAX;
  if (v < INT64_MIN)
    return INT64_MIN;
  return (int64_t)v;
}

/* Nanoseconds to microseconds, rounded up (a wait or a TAT shown in us is
 * never earlier than the exact value). */
static int64_t ns_to_us_up(__int128 ns) {
  __int128 q = ns / 1000;
  if (ns % 1000 > 0)
    q++;
  return sat64(q);
}

static void sync_us(polite_gcra *g) {
  g->interval_us = ns_to_us_up(g->interval_ns);
  g->tolerance_us = ns_to_us_up(g->tolerance_ns);
  g->tat_us = ns_to_us_up(g->tat_ns);
}

/* T = 1e9 / rate ns, rounded to the nearest nanosecond: at 1.5/s the error
 * is a third of a nanosecond per start, so 600 starts drift by 0.2 us.
 * rate must be finite, > 0 and at most 1e9 per second (T >= 1 ns), and T and
 * tau = (burst - 1) * T must fit in int64 nanoseconds (rates down to about
 * one per 290 years); otherwise POLITE_EINVAL and *g is untouched. */
int polite_gcra_init(polite_gcra *g, double rate_per_s, unsigned burst) {
  if (g == NULL || burst < 1 || !isfinite(rate_per_s) || !(rate_per_s > 0) ||
      rate_per_s > 1e9)
    return POLITE_EINVAL;
  double t = 1e9 / rate_per_s;
  if (!(t < 9.0e18))
    return POLITE_EINVAL;
  int64_t interval = llround(t);
  if (interval < 1)
    interval = 1;
  __int128 tau = (__int128)(burst - 1) * interval;
  if (tau > INT64_MAX)
    return POLITE_EINVAL;
  g->interval_ns = interval;
  g->tolerance_ns = (int64_t)tau;
  g->tat_ns = 0;
  sync_us(g);
  return POLITE_OK;
}

/* Admission of `cost` cells at now_us (cost 0 is a no-op that returns 0).
 *
 * A request of cost n conforms when the last of its n cells would fit in
 * the burst: allow_at = TAT + (n - 1) * T - tau. When n is larger than the
 * burst that point would never come, so such a request is admitted once the
 * limiter is fully drained (allow_at = TAT) and then pays its debt: TAT
 * advances by n * T, which delays what follows.
 *
 * `now` has only microsecond resolution while T has nanoseconds, so a
 * caller who comes back exactly when told arrives up to 999 ns "late".
 * Restarting the schedule from `now` in that case would add up to 1 us per
 * start (0.6 ms over 600 starts), so lateness below one microsecond keeps
 * the exact schedule. Real lateness (>= 1 us) restarts it from now: GCRA
 * never lets a slow caller catch up with a burst beyond tau.
 *
 * Returns 0 and records the start, or the wait in microseconds (>= 1,
 * rounded up, so coming back after exactly that long is admitted). */
int64_t polite_gcra_admit(polite_gcra *g, int64_t now_us, unsigned cost) {
  if (g == NULL || cost == 0)
    return 0;
  __int128 now = (__int128)now_us * 1000;
  __int128 tat = g->tat_ns;
  __int128 t = g->interval_ns, tau = g->tolerance_ns;
  __int128 increment = (__int128)cost * t;
  __int128 excess = increment - t - tau; /* > 0: cost above the burst */
  __int128 allow_at = tat + (excess < 0 ? excess : 0);
  if (allow_at > now)
    return ns_to_us_up(allow_at - now);
  __int128 start = tat > now - 1000 ? tat : now;
  g->tat_ns = sat64(start + increment);
  sync_us(g);
  return 0;
}

/* Account-wide pause. Nothing may start before until_us, and afterwards the
 * planned spacing resumes without a catch-up burst: TAT is set to
 * until + tau, so the first start is admitted at `until` and each next one
 * T later, exactly as if the limiter had been busy all along (the burst
 * allowance then refills only through idle time). A pause never shortens
 * an earlier, longer one. */
void polite_gcra_pause_until(polite_gcra *g, int64_t until_us) {
  if (g == NULL)
    return;
  __int128 target = (__int128)until_us * 1000 + g->tolerance_ns;
  if (target > g->tat_ns) {
    g->tat_ns = sat64(target);
    sync_us(g);
  }
}
