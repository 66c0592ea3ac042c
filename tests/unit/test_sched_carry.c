/* polite_batch_options.ratectl on a fake clock: a run starts from the
 * controller an earlier run left (what polite_client keeps between calls),
 * not from the first estimate, and writes its learned state back. */
#include "sched_sim.h"

#include <polite/ratectl.h>

/* A fixed-window limiter: at most 10 starts in each whole second of the
 * fake clock, 429 with Retry-After: 1 above that. */
static int64_t window_start;
static unsigned window_n, window_429;
static sim_answer ten_per_second(sim *x, unsigned req, unsigned attempt) {
  (void)req, (void)attempt;
  int64_t w = (x->now - T0) / SEC;
  if (w != window_start) {
    window_start = w;
    window_n = 0;
  }
  if (++window_n > 10) {
    window_429++;
    return (sim_answer){429, {"Retry-After: 1", NULL}, "slow down", 0};
  }
  return ok200(x, 0, 0);
}

static double first_rate;
static void on_rate(void *ud, const polite_rate_change *c) {
  (void)ud;
  if (c->previous_per_s < 0)
    first_rate = c->rate_per_s;
}

/* One learned-rate run of n requests from controller rc (NULL: a fresh
 * one) on a budget of its own, starting at `at`; returns its 429s and the
 * fake time it took in *took_us. */
static unsigned run_from(polite_ratectl *rc, unsigned n, int64_t at,
                         int64_t *took_us) {
  sim x;
  sim_init(&x, 0, 1, 4, n, ten_per_second);
  x.o.rate_mode = POLITE_RATE_AUTO;
  x.o.ratectl = rc;
  x.o.on_rate = on_rate;
  x.o.max_attempts = 10;
  x.o.spread_ms = 100;
  x.now = at;
  window_start = -1;
  window_429 = 0;
  first_rate = 0;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), n);
  polite__now now = {x.now, WALL0 + (x.now - T0) / 1000};
  polite__sched_end(x.s, &now);
  *took_us = x.now - at;
  sim_free(&x);
  return window_429;
}

/* The first run learns the limit (cuts at 429s); a second run handed its
 * controller starts at that rate, on a fresh budget that knows nothing, and
 * is throttled less than the same run from a fresh controller (which starts
 * again at the first estimate and finds the limit again). Not faster: the
 * carried controller holds below the limit it found before probing. */
static void a_run_starts_where_the_last_one_ended(void **state) {
  (void)state;
  polite_ratectl rc;
  polite_ratectl_config cfg = {0, 0, 0, 4};
  polite_ratectl_init(&rc, &cfg, T0);
  int64_t took;
  unsigned first429 = run_from(&rc, 200, T0, &took);
  assert_true(first429 >= 1);
  assert_true(rc.cuts[POLITE_CUT_THROTTLE] >= 1); /* written back */
  assert_int_equal(rc.phase, POLITE_RC_PROBE);
  int64_t t1 = T0 + took + SEC;
  double learned = polite_ratectl_rate(&rc, t1);
  assert_true(learned > POLITE_RATECTL_INITIAL_PER_S);

  int64_t took_fresh, took_carried;
  unsigned fresh429 = run_from(NULL, 100, t1, &took_fresh);
  assert_true(first_rate == POLITE_RATECTL_INITIAL_PER_S);
  unsigned carried429 = run_from(&rc, 100, t1, &took_carried);
  print_message("first run %u 429s; then fresh %u 429s in %.1f s, carried "
                "(from %.1f/s) %u 429s in %.1f s\n",
                first429, fresh429, (double)took_fresh / 1e6, first_rate,
                carried429, (double)took_carried / 1e6);
  assert_true(first_rate > POLITE_RATECTL_INITIAL_PER_S * 1.5);
  assert_true(first_rate <= learned * 1.01);
  /* Deterministic on the fake clock: 2 against 6 when this was written. */
  assert_true(carried429 < fresh429);
}

/* Without rate_mode AUTO the controller is neither read nor written. */
static void a_fixed_run_leaves_the_controller_alone(void **state) {
  (void)state;
  polite_ratectl rc, before;
  polite_ratectl_init(&rc, NULL, T0);
  before = rc;
  sim x;
  sim_init(&x, 20, 1, 4, 20, ok200);
  x.o.ratectl = &rc;
  assert_int_equal(sim_run(&x), 1);
  assert_non_null(sim_find(&x, "r19"));
  polite__now now = {x.now, WALL0};
  polite__sched_end(x.s, &now);
  sim_free(&x);
  assert_memory_equal(&rc, &before, sizeof rc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_run_starts_where_the_last_one_ended),
      cmocka_unit_test(a_fixed_run_leaves_the_controller_alone),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
