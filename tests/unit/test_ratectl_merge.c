/* polite__ratectl_merge (lib/ratectl_merge.c) on a fake clock: two copies of
 * one controller that ran side by side (two polite_client calls) fold into
 * one that keeps the latest cut and every measurement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ratectl_merge.h"

#define MS INT64_C(1000)
#define T0 (INT64_C(1000000) * MS)

/* One request started at `at` and answered `status` 20 ms later. */
static polite_ratectl_cause call(polite_ratectl *c, int64_t at, int status) {
  polite_ratectl_on_start(c, at);
  polite_ratectl_response r = {at + 20 * MS, at, status,
                               status == 429 ? 1000 * MS : -1, NULL};
  return polite_ratectl_on_response(c, &r);
}

/* A controller that has seen n clean calls, 100 ms apart, from T0. */
static void base_of(polite_ratectl *c, unsigned n) {
  polite_ratectl_config cfg = {0, 0, 0, 4};
  polite_ratectl_init(c, &cfg, T0);
  for (unsigned i = 0; i < n; i++)
    call(c, T0 + i * 100 * MS, 200);
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
  polite_ratectl base, a, b;
  base_of(&base, 10);
  a = base;
  b = base;
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
  polite_ratectl base, cut, clean;
  base_of(&base, 20);
  cut = base;
  clean = base;
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
  base_of(&a, 100);
  polite_ratectl_config cfg = {0, 0, 0, 4};
  polite_ratectl_init(&b, &cfg, T0);
  for (unsigned i = 0; i < 100; i++)
    call(&b, T0 + (i * 100 + 50) * MS, 200);
  polite__ratectl_merge(&a, &b);
  assert_int_equal(a.st_n, POLITE__RATECTL_RING);
  assert_sorted_ring(&a);
  unsigned oldest = a.st_head % POLITE__RATECTL_RING; /* a full ring */
  /* 200 starts 50 ms apart: the 72 oldest are gone. */
  assert_int_equal(a.st_us[oldest], T0 + 72 * 50 * MS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(measurements_are_the_union),
      cmocka_unit_test(the_latest_cut_wins),
      cmocka_unit_test(the_newest_are_kept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
