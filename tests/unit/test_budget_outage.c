/* A budget that cannot be used for a while (Redis gone, a damaged file, a
 * lock held too long) is waited out, not fatal: the scheduler on a fake
 * clock over a budget that fails in a window of time. Nothing starts while
 * it fails, answers of requests already in flight are recorded as what they
 * were, the run goes on when the budget is back, and stops after
 * budget_outage_ms with the requests not started `cancelled`. */
#include "sched_sim.h"

#include "budget_backends.h"

/* The real local budget, failing every acquire while the sim's clock is in
 * [from, until). */
typedef struct {
  polite_budget base;
  polite_budget *real;
  const sim *x;
  int64_t from, until;
  unsigned failed; /* acquires refused */
} flaky_budget;

static int fb_acquire(polite_budget *b, const char *key, int64_t now,
                      unsigned units, unsigned slots, int64_t *w) {
  flaky_budget *f = (flaky_budget *)b;
  if (now >= f->from && now < f->until) {
    f->failed++;
    snprintf(b->errstr, sizeof b->errstr,
             "budget 'redis://test/x': lost the connection");
    return POLITE_EBUDGET;
  }
  return polite_budget_acquire(f->real, key, now, units, slots, w);
}
static void fb_release(polite_budget *b, const char *key, unsigned slots) {
  polite_budget_release(((flaky_budget *)b)->real, key, slots);
}
static int fb_pause(polite_budget *b, const char *key, int64_t now,
                    int64_t until) {
  return polite_budget_pause_until(((flaky_budget *)b)->real, key, now, until);
}
static int64_t fb_paused(polite_budget *b, const char *key, int64_t now) {
  return polite_budget_paused_for(((flaky_budget *)b)->real, key, now);
}
static void fb_close(polite_budget *b) {
  (void)b;
}
static int fb_publish(polite_budget *b, const char *key, int64_t now,
                      polite_shared_rate *r, int cut) {
  return polite_budget_publish_rate(((flaky_budget *)b)->real, key, now, r,
                                    cut);
}
static int fb_shared(polite_budget *b, const char *key,
                     polite_shared_rate *out) {
  return polite_budget_shared_rate(((flaky_budget *)b)->real, key, out);
}
static int fb_inspect(polite_budget *b, const char *key, int64_t now,
                      polite_budget_state *out) {
  return polite_budget_inspect(((flaky_budget *)b)->real, key, now, out);
}
static int fb_clear(polite_budget *b, const char *key, int64_t now) {
  return polite_budget_clear(((flaky_budget *)b)->real, key, now);
}
static const polite_budget_vtable flaky_vt = {
    "flaky",  fb_acquire, fb_release, fb_pause,   fb_paused,
    fb_close, fb_publish, fb_shared,  fb_inspect, fb_clear,
    NULL,     NULL,       NULL,       NULL}; /* no slot cap, no account count,
                                             no admissions, no window */

/* A sim of n requests at 10/s, concurrency 4, 300 ms answers, whose budget
 * fails in [from, until) after the run's start T0. */
static void flaky_init(sim *x, flaky_budget *f, unsigned n, int64_t from,
                       int64_t until) {
  sim_init(x, 10, 1, 4, n, ok200);
  x->latency_us = 300 * MS;
  memset(f, 0, sizeof *f);
  f->base.vt = &flaky_vt;
  f->base.cfg = x->budget->cfg;
  f->real = x->budget;
  f->x = x;
  f->from = T0 + from;
  f->until = T0 + until;
  x->o.budget = &f->base;
}

static unsigned starts_between(const sim *x, int64_t from, int64_t until) {
  unsigned n = 0;
  for (unsigned i = 0; i < x->n_starts; i++)
    n += x->starts[i].at_us >= T0 + from && x->starts[i].at_us < T0 + until;
  return n;
}

/* The budget is gone for 10 s in the middle of a 100-request run: nothing
 * starts while it is gone, nothing is cancelled, every request ends ok, and
 * the engine asked again with a backoff, not at every turn. */
static void outage_is_waited_out(void **state) {
  (void)state;
  sim x;
  flaky_budget f;
  flaky_init(&x, &f, 100, 3 * SEC, 13 * SEC);
  int saw_outage = 0;
  int rc = 0;
  for (int64_t until = T0; rc == 0; until += 500 * MS) {
    rc = sim_run_until(&x, until);
    const polite_batch_stats *st = polite__sched_stats(x.s);
    if (st->budget_outage_ms > 0) {
      saw_outage = 1;
      assert_non_null(st->budget_error);
      assert_non_null(strstr(st->budget_error, "lost the connection"));
    }
  }
  assert_int_equal(rc, 1);
  assert_true(saw_outage);
  assert_int_equal(starts_between(&x, 3 * SEC, 13 * SEC), 0);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 100);
  assert_int_equal(sim_count(&x, POLITE_OUT_CANCELLED), 0);
  const polite_batch_stats *st = polite__sched_stats(x.s);
  assert_int_equal(st->budget_outages, 1);
  assert_true(st->budget_outage_total_ms >= 10000 &&
              st->budget_outage_total_ms <= 12100);
  assert_int_equal(st->budget_outage_ms, 0);
  assert_null(st->budget_error);
  /* 100 ms doubling to 2 s (with jitter): a dozen tries in 10 s, not one
   * per turn. */
  assert_true(f.failed >= 5 && f.failed <= 20);
  sim_free(&x);
}

/* Longer than budget_outage_ms: the run stops with the budget's error; the
 * requests in flight when the budget went finish ok (their answers are
 * recorded as what they were), the others end cancelled without being
 * sent. */
static void long_outage_stops_the_run(void **state) {
  (void)state;
  sim x;
  flaky_budget f;
  flaky_init(&x, &f, 100, 2 * SEC + 50 * MS, INT64_MAX - T0);
  x.o.budget_outage_ms = 5000;
  int rc = sim_run(&x);
  assert_int_equal(rc, POLITE_EBUDGET);
  const char *e = polite__sched_errstr(x.s);
  assert_non_null(strstr(e, "could not be used for 5."));
  assert_non_null(strstr(e, "lost the connection"));
  assert_int_equal(starts_between(&x, 2 * SEC + 50 * MS, 100 * SEC), 0);
  unsigned ok = sim_count(&x, POLITE_OUT_OK);
  assert_int_equal(ok, x.n_starts); /* every start got its answer */
  assert_int_equal(sim_count(&x, POLITE_OUT_CANCELLED), x.n_results - ok);
  assert_int_equal(x.aborts, 0);
  for (unsigned i = 0; i < x.n_results; i++)
    if (x.results[i].outcome == POLITE_OUT_CANCELLED)
      assert_int_equal(x.results[i].attempts, 0);
  sim_free(&x);
}

/* budget_outage_ms 0 keeps the old behaviour: the first failure stops. */
static void zero_outage_stops_at_once(void **state) {
  (void)state;
  sim x;
  flaky_budget f;
  flaky_init(&x, &f, 20, 1 * SEC, 2 * SEC);
  x.o.budget_outage_ms = 0;
  assert_int_equal(sim_run(&x), POLITE_EBUDGET);
  assert_int_equal(f.failed, 1);
  assert_non_null(strstr(polite__sched_errstr(x.s), "the budget failed"));
  sim_free(&x);
}

/* A request's deadline still holds while the budget is out. */
static void deadline_holds_during_outage(void **state) {
  (void)state;
  sim x;
  flaky_budget f;
  flaky_init(&x, &f, 3, 0, 10 * SEC);
  x.o.deadline_ms = 3000;
  x.o.run_deadline_ms = 4000;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 0);
  assert_int_equal(sim_count(&x, POLITE_OUT_DEADLINE), 3);
  sim_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(outage_is_waited_out),
      cmocka_unit_test(long_outage_stops_the_run),
      cmocka_unit_test(zero_outage_stops_at_once),
      cmocka_unit_test(deadline_holds_during_outage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
