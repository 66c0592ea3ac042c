/* Unit tests of capped exponential backoff with full jitter (lib/backoff.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <polite/core.h>

static void window_doubles_from_base(void **state) {
  (void)state;
  polite_backoff b = POLITE_BACKOFF_DEFAULT;
  assert_int_equal(polite_backoff_window_ms(&b, 0), 1000);
  assert_int_equal(polite_backoff_window_ms(&b, 1), 2000);
  assert_int_equal(polite_backoff_window_ms(&b, 2), 4000);
  assert_int_equal(polite_backoff_window_ms(&b, 3), 8000);
  assert_int_equal(polite_backoff_window_ms(&b, 4), 16000);
}

static void window_is_capped(void **state) {
  (void)state;
  polite_backoff b = POLITE_BACKOFF_DEFAULT;
  assert_int_equal(polite_backoff_window_ms(&b, 5), 30000); /* 32 s > cap */
  assert_int_equal(polite_backoff_window_ms(&b, 6), 30000);
  polite_backoff c = {100, 750};
  assert_int_equal(polite_backoff_window_ms(&c, 2), 400);
  assert_int_equal(polite_backoff_window_ms(&c, 3), 750);
}

static void huge_retry_numbers_do_not_overflow(void **state) {
  (void)state;
  polite_backoff b = POLITE_BACKOFF_DEFAULT;
  unsigned retries[] = {31, 32, 62, 63, 64, 65, 200, 1000, 4294967295u};
  for (size_t i = 0; i < sizeof retries / sizeof retries[0]; i++)
    assert_int_equal(polite_backoff_window_ms(&b, retries[i]), 30000);
  /* A cap near INT64_MAX: the doubling must stop before it wraps. */
  polite_backoff big = {3, INT64_MAX};
  int64_t prev = 0;
  for (unsigned r = 0; r < 200; r++) {
    int64_t w = polite_backoff_window_ms(&big, r);
    assert_true(w >= prev);
    assert_true(w > 0);
    prev = w;
  }
  assert_int_equal(polite_backoff_window_ms(&big, 200), INT64_MAX);
  assert_int_equal(polite_backoff_window_ms(&big, 61), (int64_t)3 << 61);
}

static void zero_fields_take_defaults(void **state) {
  (void)state;
  polite_backoff z = {0, 0};
  assert_int_equal(polite_backoff_window_ms(&z, 0), 1000);
  assert_int_equal(polite_backoff_window_ms(&z, 10), 30000);
  assert_int_equal(polite_backoff_window_ms(NULL, 1), 2000);
  polite_backoff neg = {-5, 5000};
  assert_int_equal(polite_backoff_window_ms(&neg, 3), 5000);
}

static void cap_below_base_gives_cap(void **state) {
  (void)state;
  polite_backoff b = {5000, 2000};
  assert_int_equal(polite_backoff_window_ms(&b, 0), 2000);
  assert_int_equal(polite_backoff_window_ms(&b, 9), 2000);
}

static void delay_within_bounds(void **state) {
  (void)state;
  polite_backoff b = POLITE_BACKOFF_DEFAULT;
  uint64_t s = 42;
  for (unsigned retry = 0; retry < 12; retry++) {
    int64_t win = polite_backoff_window_ms(&b, retry);
    for (int i = 0; i < 2000; i++) {
      int64_t d = polite_backoff_delay_ms(&b, retry, polite_rand_next(&s));
      assert_true(d >= 0);
      assert_true(d <= win);
    }
  }
}

static void both_ends_reachable(void **state) {
  (void)state;
  polite_backoff b = POLITE_BACKOFF_DEFAULT;
  assert_int_equal(polite_backoff_delay_ms(&b, 0, 0), 0);
  assert_int_equal(polite_backoff_delay_ms(&b, 0, UINT64_MAX), 1000);
  assert_int_equal(polite_backoff_delay_ms(&b, 30, UINT64_MAX), 30000);
  /* And with ordinary random values, on a small window. */
  polite_backoff tiny = {4, 4};
  uint64_t s = 7;
  int seen[5] = {0};
  for (int i = 0; i < 1000; i++)
    seen[polite_backoff_delay_ms(&tiny, 0, polite_rand_next(&s))]++;
  for (int v = 0; v <= 4; v++)
    assert_true(seen[v] > 100); /* each about 200 */
}

static void deterministic_with_seed(void **state) {
  (void)state;
  polite_backoff b = POLITE_BACKOFF_DEFAULT;
  uint64_t s1 = 12345, s2 = 12345, s3 = 54321;
  int same = 1, differ = 0;
  for (int i = 0; i < 100; i++) {
    int64_t a = polite_backoff_delay_ms(&b, 3, polite_rand_next(&s1));
    int64_t c = polite_backoff_delay_ms(&b, 3, polite_rand_next(&s2));
    int64_t d = polite_backoff_delay_ms(&b, 3, polite_rand_next(&s3));
    same &= (a == c);
    differ |= (a != d);
  }
  assert_true(same);
  assert_true(differ);
}

/* Full jitter is uniform: the mean of many draws is window/2 (within 2%
 * here: 100000 draws, standard error of the mean about 0.3%), and the
 * halves of the window are hit equally often. */
static void distribution_is_uniform(void **state) {
  (void)state;
  polite_backoff b = POLITE_BACKOFF_DEFAULT;
  uint64_t s = 2024;
  const int n = 100000;
  for (unsigned retry = 0; retry < 6; retry++) {
    int64_t win = polite_backoff_window_ms(&b, retry);
    double sum = 0;
    int low = 0;
    for (int i = 0; i < n; i++) {
      int64_t d = polite_backoff_delay_ms(&b, retry, polite_rand_next(&s));
      sum += (double)d;
      low += d < win / 2;
    }
    double mean = sum / n;
    assert_true(mean > 0.49 * win && mean < 0.51 * win);
    assert_true(low > n * 0.48 && low < n * 0.52);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(window_doubles_from_base),
      cmocka_unit_test(window_is_capped),
      cmocka_unit_test(huge_retry_numbers_do_not_overflow),
      cmocka_unit_test(zero_fields_take_defaults),
      cmocka_unit_test(cap_below_base_gives_cap),
      cmocka_unit_test(delay_within_bounds),
      cmocka_unit_test(both_ends_reachable),
      cmocka_unit_test(deterministic_with_seed),
      cmocka_unit_test(distribution_is_uniform),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
