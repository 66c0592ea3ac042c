/* lib/ratectl_calls.c on a fake clock: two copies of one controller that
 * ran side by side (two polite_client calls) fold into one that keeps the
 * latest cut and every measurement (polite__ratectl_merge), and idle time
 * between calls is not probing (polite__ratectl_resume). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "ratectl_calls.h"

#define MS INT64_C(1000)
#define T0 (INT64_C(1000000) * MS)

/* One request started at `at` and answered `status` 20 ms later. */
static polite_ratectl_cause call(polite_ratectl *c, int64_t at, int status) {
  polite_ratectl_on_start(c, at);
  polite_ratectl_response r = {at + 20 * MS, at, status,
                               status == 429 ? 1000 * MS : -1, NULL};
  return polite_ratectl_on_response(c, &r);
}

/* A controller that has seen n clean calls, 100 ms apart, from T0 (no
 * concurrency cap, so that the probe's growth shows). */
static void base_of(polite_ratectl *c, unsigned n) {
  polite_ratectl_config cfg = {0, 0, 0, 0};
  polite_ratectl_init(c, &cfg, T0);
  for (unsigned i = 0; i < n; i++)
    call(c, T0 + i * 100 * MS, 200);
}

/* Two copies of one controller that saw n clean calls (two calls that took
 * their copy at the same time). */
static void two_copies(polite_ratectl *a, polite_ratectl *b, unsigned n) {
  base_of(a, n);
  *b = *a;
}

static void assert_sorted_ring(const polite_ratectl *c) {
  for (unsigned i = 1; i < c->st_n; i++) {
    unsigned a = (c->st_head + POLITE__RATECTL_RING - c->st_n + i - 1) %
                 POLITE__RATECTL_RING;
    unsigned b = (a + 1) % POLITE__RATECTL_RING;
    assert_true(c->st_us[a] < c->st_us[b]);
  }
}

/* The shared history counts once; each copy's own calls are all kept. */
static void measurements_are_the_union(void **state) {
  (void)state;
  polite_ratectl a, b;
  two_copies(&a, &b, 10);
  for (unsigned i = 0; i < 5; i++) {
    call(&a, T0 + (1000 + i * 100) * MS, 200);
    call(&b, T0 + (1050 + i * 100) * MS, 200);
  }
  polite_ratectl m = a;
  polite__ratectl_merge(&m, &b);
  assert_int_equal(m.st_n, 20);
  assert_int_equal(m.ok_n, 20);
  assert_sorted_ring(&m);
  /* The next start goes after the newest. */
  call(&m, T0 + 2000 * MS, 200);
  assert_int_equal(m.st_n, 21);
  assert_sorted_ring(&m);
}

/* A cut in one copy survives whichever way round they are merged. */
static void the_latest_cut_wins(void **state) {
  (void)state;
  polite_ratectl cut, clean;
  two_copies(&cut, &clean, 20);
  assert_int_equal(call(&cut, T0 + 2000 * MS, 429), POLITE_CUT_THROTTLE);
  call(&clean, T0 + 2010 * MS, 200);
  int64_t t = T0 + 2100 * MS;
  double cut_rate = polite_ratectl_rate(&cut, t);
  assert_true(cut_rate < polite_ratectl_rate(&clean, t));

  polite_ratectl m = cut;
  polite__ratectl_merge(&m, &clean); /* the clean copy ends last */
  assert_int_equal(m.cuts[POLITE_CUT_THROTTLE], 1);
  assert_true(polite_ratectl_rate(&m, t) <= cut_rate * 1.001);
  assert_int_equal(m.st_n, 22);

  m = clean;
  polite__ratectl_merge(&m, &cut); /* the cut copy ends last */
  assert_int_equal(m.cuts[POLITE_CUT_THROTTLE], 1);
  assert_true(polite_ratectl_rate(&m, t) <= cut_rate * 1.001);
  assert_int_equal(m.ok_n, 22);
}

/* Of more than a ring's worth, the newest are kept. */
static void the_newest_are_kept(void **state) {
  (void)state;
  polite_ratectl a, b;
  const unsigned n = (POLITE__RATECTL_RING + 72) / 2;
  base_of(&a, n);
  polite_ratectl_config cfg = {0, 0, 0, 4};
  polite_ratectl_init(&b, &cfg, T0);
  for (unsigned i = 0; i < n; i++)
    call(&b, T0 + (i * 100 + 50) * MS, 200);
  polite__ratectl_merge(&a, &b);
  assert_int_equal(a.st_n, POLITE__RATECTL_RING);
  assert_sorted_ring(&a);
  unsigned oldest = a.st_head % POLITE__RATECTL_RING; /* a full ring */
  /* A ring and 72 starts, 50 ms apart: the 72 oldest are gone. */
  assert_int_equal(a.st_us[oldest], T0 + 72 * 50 * MS);
}

/* A minute without calls after a cut: the probe stands still (without
 * the rule the curve is at many times the limit by then), and taking the
 * idle time out twice takes it out once. */
static void idle_time_is_not_probing(void **state) {
  (void)state;
  polite_ratectl c;
  base_of(&c, 20);
  assert_int_equal(call(&c, T0 + 2000 * MS, 429), POLITE_CUT_THROTTLE);
  int64_t last = T0 + 4000 * MS;
  for (int64_t t = T0 + 3100 * MS; t <= last; t += 100 * MS)
    call(&c, t, 200);
  int64_t back = last + 60 * 1000 * MS;
  double before = polite_ratectl_rate(&c, last + POLITE__RATECTL_IDLE_US);
  double untouched = polite_ratectl_rate(&c, back);
  assert_true(untouched > 3 * before); /* what the rule prevents */
  int64_t accounted = 0;
  polite__ratectl_resume(&c, &accounted, back);
  assert_int_equal(accounted, back);
  assert_true(fabs(polite_ratectl_rate(&c, back) - before) < before * 1e-6);
  polite_ratectl again = c;
  polite__ratectl_resume(&again, &accounted, back);
  assert_memory_equal(&again, &c, sizeof c); /* nothing more to take out */
  /* A call right after counts as usual: no shift while starts keep coming. */
  call(&c, back, 200);
  int64_t soon = back + 500 * MS;
  double r = polite_ratectl_rate(&c, soon);
  polite__ratectl_resume(&c, &accounted, soon);
  assert_true(polite_ratectl_rate(&c, soon) == r);
}

/* After the server's headers stopped coming, the climb from their rate
 * does not run while the client sends nothing. */
static void idle_time_after_headers(void **state) {
  (void)state;
  polite_ratectl c;
  base_of(&c, 2);
  polite_rate_plan p;
  memset(&p, 0, sizeof p);
  p.reason = POLITE_PLAN_SPREAD;
  p.rate_per_s = 10;
  p.interval_us = 100 * MS;
  p.why = "test";
  int64_t at = T0 + 1000 * MS;
  polite_ratectl_on_start(&c, at);
  polite_ratectl_response r = {at + 20 * MS, at, 200, -1, &p};
  polite_ratectl_on_response(&c, &r);
  assert_int_equal(c.phase, POLITE_RC_HEADERS);
  int64_t back = at + 60 * 1000 * MS;
  assert_true(polite_ratectl_rate(&c, back) > 30);
  int64_t accounted = 0;
  polite__ratectl_resume(&c, &accounted, back);
  /* Headers are fresh 5 s, idle counts from 1 s after the start: none of
   * the 55 s of climb ran, the rate is the headers'. */
  assert_true(polite_ratectl_rate(&c, back) <= 10 * 1.001);
  assert_true(c.header_until_us <= back); /* still stale: no old plan rules */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(measurements_are_the_union),
      cmocka_unit_test(the_latest_cut_wins),
      cmocka_unit_test(the_newest_are_kept),
      cmocka_unit_test(idle_time_is_not_probing),
      cmocka_unit_test(idle_time_after_headers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
