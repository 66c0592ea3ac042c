/* polite scheduler: a budget that cannot be used (Redis gone, a damaged
 * file, a lock held too long) is an outage the engine waits out, with a
 * backoff, for up to budget_outage_ms; then it stops. Pure, like the rest
 * of the scheduler: every time is passed in. */
#include "sched_internal.h"

#include <stdio.h>
#include <string.h>

/* The budget answered an error at t (rc): an outage begins or goes on.
 * Nothing is admitted before the next try (a backoff from 100 ms doubling
 * to 2 s, with jitter so a fleet does not come back at one instant); after
 * budget_outage_ms the run stops (s->fatal): the caller's job waits for
 * the next try, or is ended by the stop. */
void polite__sched_outage_fail(polite__sched *s, int rc, int64_t t,
                               int64_t *wake, int64_t *due_out) {
  const char *e = polite_budget_errstr(s->o.budget);
  int began = s->outage_since_us == NO_TIME;
  if (began) {
    s->outage_since_us = t;
    s->outage_backoff_us = 0;
    s->st.budget_outages++;
  }
  snprintf(s->outage_err, sizeof s->outage_err, "%s",
           e[0] ? e : polite_strerror(rc));
  if (began && s->o.on_tick) {
    /* Told at once: an outage may be over before the next tick. */
    s->st.budget_error = s->outage_err;
    s->o.on_tick(s->o.ud, &s->st);
  }
  int64_t limit = s->o.budget_outage_ms;
  int64_t lasted = t - s->outage_since_us;
  if (limit <= 0 || lasted >= limit * 1000) {
    if (limit <= 0)
      snprintf(
          s->errstr, sizeof s->errstr,
          "the budget failed: %.320s; stopping (no budget outage is waited "
          "out)",
          s->outage_err);
    else
      snprintf(
          s->errstr, sizeof s->errstr,
          "the budget could not be used for %.1f s (the limit is %.1f "
          "s): %.320s; stopping: requests in flight finish, the others were "
          "not sent",
          (double)lasted / 1e6, (double)limit / 1e3, s->outage_err);
    s->fatal = rc;
    return;
  }
  int64_t b = s->outage_backoff_us ? s->outage_backoff_us * 2 : 100000;
  if (b > 2000000)
    b = 2000000;
  s->outage_backoff_us = b;
  /* Uniform in [b/2, b]: spread, never sooner than half the step; and one
   * last try when the limit is reached, so the run stops on time. */
  int64_t next =
      t + b / 2 + polite_rand_uniform(polite_rand_next(&s->rng), b / 2);
  if (next > s->outage_since_us + limit * 1000)
    next = s->outage_since_us + limit * 1000;
  s->outage_retry_us = next;
  *due_out = next;
  if (next < *wake)
    *wake = next;
}

/* The budget answered again at t: the outage is over. */
void polite__sched_outage_over(polite__sched *s, int64_t t) {
  s->outage_done_ms += (t - s->outage_since_us) / 1000;
  s->outage_since_us = NO_TIME;
  s->outage_err[0] = '\0';
}

int polite__sched_outage_wait(polite__sched *s, int64_t t, int64_t *wake) {
  if (s->outage_since_us == NO_TIME || t >= s->outage_retry_us)
    return 0;
  if (s->outage_retry_us < *wake)
    *wake = s->outage_retry_us;
  return 1;
}
