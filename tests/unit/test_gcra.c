/* Unit tests of the GCRA rate limiter (lib/gcra.c) on a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include <polite/core.h>

#define SEC INT64_C(1000000)

/* Asks at `t` until admitted, moving the fake clock by the wait each time
 * (a perfectly punctual caller). Returns the admission time. */
static int64_t start_at_or_after(polite_gcra *g, int64_t t, unsigned cost) {
  for (int guard = 0; guard < 1000; guard++) {
    int64_t w = polite_gcra_admit(g, t, cost);
    if (w == 0)
      return t;
    assert_true(w > 0);
    t += w;
  }
  fail_msg("never admitted");
  return -1;
}

static void init_rejects_bad_arguments(void **state) {
  (void)state;
  polite_gcra g = {0};
  assert_int_equal(polite_gcra_init(&g, 0, 1), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, -1, 1), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, NAN, 1), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, INFINITY, 1), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, 1, 0), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, 2e9, 1), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, 1e-12, 1), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, 1e-6, 4000000000u), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(NULL, 1, 1), POLITE_EINVAL);
  assert_int_equal(polite_gcra_init(&g, 1e9, 1), 0);
  assert_int_equal(polite_gcra_init(&g, 1.0 / 86400, 10), 0);
}

static void init_sets_intervals(void **state) {
  (void)state;
  polite_gcra g;
  assert_int_equal(polite_gcra_init(&g, 1.5, 3), 0);
  assert_int_equal(g.interval_ns, 666666667);
  assert_int_equal(g.tolerance_ns, 2 * 666666667);
  assert_int_equal(g.interval_us, 666667);
  assert_int_equal(g.tolerance_us, 1333334);
  assert_int_equal(g.tat_us, 0);
  assert_int_equal(polite_gcra_init(&g, 4, 1), 0);
  assert_int_equal(g.interval_us, 250000);
  assert_int_equal(g.tolerance_us, 0);
}

static void burst_one_spaces_evenly(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 1);
  int64_t t0 = 5 * SEC;
  assert_int_equal(polite_gcra_admit(&g, t0, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, t0, 1), SEC);
  assert_int_equal(polite_gcra_admit(&g, t0 + SEC - 1, 1), 1);
  assert_int_equal(polite_gcra_admit(&g, t0 + SEC, 1), 0);
  /* A refused ask records nothing: asking again gives the same answer. */
  assert_int_equal(polite_gcra_admit(&g, t0 + SEC, 1), SEC);
  assert_int_equal(polite_gcra_admit(&g, t0 + SEC, 1), SEC);
  assert_int_equal(g.tat_us, t0 + 2 * SEC);
}

static void burst_three_then_spaced(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 2, 3); /* T = 0.5 s */
  int64_t t = 100 * SEC;
  assert_int_equal(polite_gcra_admit(&g, t, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, t, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, t, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, t, 1), SEC / 2);
  int64_t prev = t;
  for (int i = 0; i < 10; i++) {
    int64_t at = start_at_or_after(&g, t, 1);
    assert_int_equal(at - prev, SEC / 2);
    prev = at;
    t = at;
  }
  /* Idle time refills the burst, but never beyond three. */
  t += 60 * SEC;
  for (int i = 0; i < 3; i++)
    assert_int_equal(polite_gcra_admit(&g, t, 1), 0);
  assert_true(polite_gcra_admit(&g, t, 1) > 0);
}

static void cost_advances_by_cost_intervals(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 3);
  /* Cost 2 then cost 1 fit the burst of 3; the next one waits one T. */
  assert_int_equal(polite_gcra_admit(&g, 0, 2), 0);
  assert_int_equal(polite_gcra_admit(&g, 0, 2), SEC); /* only one left */
  assert_int_equal(polite_gcra_admit(&g, 0, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, 0, 1), SEC);
  /* After 2 s two cells are free again: cost 2 fits, cost 3 would not. */
  assert_int_equal(polite_gcra_admit(&g, 2 * SEC, 3), SEC);
  assert_int_equal(polite_gcra_admit(&g, 2 * SEC, 2), 0);
  assert_int_equal(g.tat_us, 5 * SEC);
}

static void cost_above_burst_waits_for_drain(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 1);
  /* Idle: a cost-5 request is admitted and then pays its debt. */
  assert_int_equal(polite_gcra_admit(&g, 0, 5), 0);
  assert_int_equal(polite_gcra_admit(&g, 0, 1), 5 * SEC);
  assert_int_equal(polite_gcra_admit(&g, 4 * SEC, 5), SEC);
  assert_int_equal(polite_gcra_admit(&g, 5 * SEC, 5), 0);
  assert_int_equal(polite_gcra_admit(&g, 9 * SEC, 1), SEC);
}

static void cost_zero_is_a_no_op(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 1);
  assert_int_equal(polite_gcra_admit(&g, 0, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, 0, 0), 0);
  assert_int_equal(g.tat_ns, 1000000000);
}

/* 1.5/s has T = 666666.67 us. Stored as whole microseconds the schedule
 * would drift by 0.67 us per start (0.4 ms over 600, 40 ms over 60000);
 * and a punctual caller who is rounded up to the next microsecond must not
 * push the schedule by that fraction each time either. */
static void no_drift_at_fractional_rates(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1.5, 1);
  int64_t t0 = 1700000000 * SEC, t = t0, prev = t0;
  for (int i = 0; i < 60000; i++) {
    t = start_at_or_after(&g, t, 1);
    if (i > 0) {
      int64_t gap = t - prev;
      assert_true(gap == 666666 || gap == 666667);
    }
    prev = t;
    if (i == 599) {
      double exact = 599 * 1e6 / 1.5;
      assert_true(fabs((double)(t - t0) - exact) <= 1.0); /* < 1 us */
    }
  }
  /* T is kept to the nearest nanosecond (a third of a ns off here), so
   * 60000 starts (11 hours) may be 20 us off: still far below 1 ms. */
  double exact = 59999 * 1e6 / 1.5;
  assert_true(fabs((double)(t - t0) - exact) <= 25.0);
  /* Other awkward rates: 7/s, 1/3 per s, 123.456/s. */
  double rates[] = {7, 1.0 / 3, 123.456};
  for (size_t r = 0; r < 3; r++) {
    polite_gcra_init(&g, rates[r], 2);
    t = 0;
    for (int i = 0; i < 601; i++)
      t = start_at_or_after(&g, t, 1);
    /* Two start at 0 (burst 2), the rest one T apart. */
    double want = 599 * 1e6 / rates[r];
    assert_true(fabs((double)t - want) <= 1.0);
  }
}

static void late_caller_restarts_schedule(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 1);
  assert_int_equal(polite_gcra_admit(&g, 0, 1), 0);
  /* 300 ms late: no catch-up, the next start is a full T later. */
  assert_int_equal(polite_gcra_admit(&g, SEC + 300000, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, 2 * SEC, 1), 300000);
}

static void pause_then_planned_spacing(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 1);
  assert_int_equal(polite_gcra_admit(&g, 0, 1), 0);
  polite_gcra_pause_until(&g, 10 * SEC + 500000); /* a 429 at 0.5 s */
  assert_int_equal(polite_gcra_admit(&g, 5 * SEC, 1), 5 * SEC + 500000);
  assert_int_equal(polite_gcra_admit(&g, 10 * SEC + 499999, 1), 1);
  int64_t t = 10 * SEC;
  int64_t prev = -1;
  for (int i = 0; i < 10; i++) {
    int64_t at = start_at_or_after(&g, t, 1);
    if (i == 0)
      assert_int_equal(at, 10 * SEC + 500000);
    else
      assert_int_equal(at - prev, SEC);
    prev = at;
    t = at;
  }
}

static void pause_with_burst_has_no_catch_up(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 5);
  polite_gcra_pause_until(&g, 10 * SEC);
  /* Many waiting callers all come back at 10 s: one is admitted, the others
   * are spaced one second apart, not let through as a burst of 5. */
  assert_true(polite_gcra_admit(&g, 10 * SEC - 1, 1) > 0);
  assert_int_equal(polite_gcra_admit(&g, 10 * SEC, 1), 0);
  assert_int_equal(polite_gcra_admit(&g, 10 * SEC, 1), SEC);
  assert_int_equal(start_at_or_after(&g, 10 * SEC, 1), 11 * SEC);
  assert_int_equal(start_at_or_after(&g, 11 * SEC, 1), 12 * SEC);
  /* Idle time afterwards refills the burst as usual. */
  int64_t t = 100 * SEC;
  for (int i = 0; i < 5; i++)
    assert_int_equal(polite_gcra_admit(&g, t, 1), 0);
  assert_true(polite_gcra_admit(&g, t, 1) > 0);
}

static void pause_never_shortens(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1, 1);
  polite_gcra_pause_until(&g, 30 * SEC);
  polite_gcra_pause_until(&g, 10 * SEC);
  assert_int_equal(polite_gcra_admit(&g, 20 * SEC, 1), 10 * SEC);
  assert_int_equal(polite_gcra_admit(&g, 30 * SEC, 1), 0);
}

/* In any closed window of length W, a GCRA with rate r and burst b admits
 * at most b + floor(W * r) starts, however the callers arrive. */
static void window_bound_holds(void **state) {
  (void)state;
  const double rate = 5;
  const unsigned burst = 4;
  polite_gcra g;
  polite_gcra_init(&g, rate, burst);
  uint64_t s = 99;
  enum { MAXN = 2000 };
  static int64_t adm[MAXN];
  int n = 0;
  int64_t t = 0;
  while (t < 120 * SEC && n < MAXN) {
    /* Bursty arrivals: sometimes many at once, sometimes a long gap. */
    uint64_t r = polite_rand_next(&s);
    t += (r % 8 == 0) ? polite_rand_uniform(r >> 8, 3 * SEC)
                      : polite_rand_uniform(r >> 8, 20000);
    if (polite_gcra_admit(&g, t, 1) == 0)
      adm[n++] = t;
  }
  assert_true(n > 300);
  const int64_t windows[] = {SEC / 10, SEC, 3700000, 10 * SEC, 60 * SEC};
  for (size_t k = 0; k < sizeof windows / sizeof windows[0]; k++) {
    int64_t w = windows[k];
    /* + 1 us: a caller up to 999 ns late keeps the exact schedule. */
    long limit = (long)burst + (long)floor((double)(w + 1) * rate / 1e6);
    for (int i = 0, j = 0; i < n; i++) {
      while (j < n && adm[j] <= adm[i] + w)
        j++;
      if (j - i > limit)
        fail_msg("window %lld us from %lld: %d starts > %ld", (long long)w,
                 (long long)adm[i], j - i, limit);
    }
  }
}

static void extreme_times_saturate(void **state) {
  (void)state;
  polite_gcra g;
  polite_gcra_init(&g, 1.0 / 86400, 1000);
  int64_t far = INT64_MAX / 1000 - 10;
  assert_int_equal(polite_gcra_admit(&g, far, 1000), 0);
  assert_true(g.tat_ns == INT64_MAX); /* saturated, not wrapped */
  assert_true(polite_gcra_admit(&g, far, 1) >= 0);
  polite_gcra_pause_until(&g, INT64_MAX);
  assert_true(polite_gcra_admit(&g, INT64_MAX, 4000000000u) >= 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(init_rejects_bad_arguments),
      cmocka_unit_test(init_sets_intervals),
      cmocka_unit_test(burst_one_spaces_evenly),
      cmocka_unit_test(burst_three_then_spaced),
      cmocka_unit_test(cost_advances_by_cost_intervals),
      cmocka_unit_test(cost_above_burst_waits_for_drain),
      cmocka_unit_test(cost_zero_is_a_no_op),
      cmocka_unit_test(no_drift_at_fractional_rates),
      cmocka_unit_test(late_caller_restarts_schedule),
      cmocka_unit_test(pause_then_planned_spacing),
      cmocka_unit_test(pause_with_burst_has_no_catch_up),
      cmocka_unit_test(pause_never_shortens),
      cmocka_unit_test(window_bound_holds),
      cmocka_unit_test(extreme_times_saturate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
