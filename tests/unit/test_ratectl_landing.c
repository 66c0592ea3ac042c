/* Unit tests of slow start's landing on a leaky bucket
 * (lib/ratectl_landing.c) on the controller alone and a fake clock: real
 * and simulated slow-start series against nginx limit_req 20 r/s burst=1
 * (the gateway's OpenAI Node SDK row), each up to its first 429 with
 * Retry-After 1. The end-to-end measure is the held-out row
 * ho-gw-sdk-short (tests/sim/heldout.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>

#include <polite/ratectl.h>

#define SEC INT64_C(1000000)
#define MS INT64_C(1000)

/* Replays slow start's starts (in 100 us) into a fresh controller, each
 * answered `answer_us` later, the last one 429 with Retry-After 1 and the
 * others 200, and returns the rate when the pause ends: the landing. */
static double landing(polite_ratectl *c, const int64_t *at, unsigned n,
                      int64_t answer_us) {
  polite_ratectl_init(c, NULL, 0);
  for (unsigned i = 0; i < n; i++) {
    int64_t t = at[i] * 100;
    int refused = i + 1 == n;
    polite_ratectl_on_start(c, t);
    polite_ratectl_response r = {t + answer_us, t, refused ? 429 : 200,
                                 refused ? SEC : -1, NULL};
    polite_ratectl_on_response(c, &r);
  }
  double landed = polite_ratectl_rate(c, at[n - 1] * 100 + answer_us + SEC);
  printf("# cuts %u, landed at %.2f/s\n", c->cuts[POLITE_CUT_THROTTLE], landed);
  return landed;
}

/* The simulated row (polite_sim --heldout --shape ho-gw-sdk-short --trace):
 * slow start trips at 857 ms at 43/s; what got through over its last
 * 350 ms, 27.3/s, is inflated by the bucket's depth, and 0.9 x it, 24.5/s,
 * tripped again 1.4 s after the pause (1.29 x the floor, 2 x 429). A
 * depth of 2 explains the series at 19.6-22.4/s: the landing is 19.6. */
static void slow_start_lands_below_the_bucket(void **state) {
  (void)state;
  polite_ratectl c;
  static const int64_t at[] = {0,    2500, 3936, 5024, 5649, 6274,
                               6748, 7221, 7580, 7939, 8298, 8570};
  double landed = landing(&c, at, sizeof at / sizeof at[0], MS);
  assert_int_equal(c.cuts[POLITE_CUT_THROTTLE], 1);
  assert_true(landed >= 0.9 * 20 && landed < 20);
}

/* Real runs of the row (bench/adaptive/gateway_ab.sh, the gateway's
 * attempt logs in ms, answers 2 ms later; test_ratectl_shapes has their
 * relapses): slow start tripped at 874-891 ms and landed at 26.3-27.3/s,
 * above the limit. A strict limiter (a depth of 1) at about the rate of the
 * last starts explains each series, as it does any accelerating ramp's
 * first refusal; the next depth, 2, is the bucket's. */
static void real_slow_start_lands_below_the_bucket(void **state) {
  (void)state;
  static const int64_t runs[][10] = {
      {0, 2540, 5070, 6360, 7010, 7450, 7880, 8240, 8570, 8910},
      {0, 2530, 5040, 6320, 6950, 7390, 7830, 8160, 8520, 8850},
      {0, 2500, 5000, 6250, 6870, 7320, 7760, 8090, 8420, 8740},
  };
  for (unsigned k = 0; k < 3; k++) {
    polite_ratectl c;
    double landed = landing(&c, runs[k], 10, 2 * MS);
    assert_int_equal(c.cuts[POLITE_CUT_THROTTLE], 1);
    assert_true(landed >= 0.85 * 20 && landed < 20);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(slow_start_lands_below_the_bucket),
      cmocka_unit_test(real_slow_start_lands_below_the_bucket),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
