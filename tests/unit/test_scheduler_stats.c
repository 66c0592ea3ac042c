/* Unit tests of the scheduler's run statistics on a fake clock
 * (sched_sim.h): the in-flight integral behind in_flight_mean must equal
 * the sum of the attempts' latencies (every attempt is in flight exactly
 * from its start to its answer), paced or not, with pauses. */
#include "sched_sim.h"

#include <math.h>

static sim_answer lat_100ms(sim *x, unsigned req, unsigned attempt) {
  sim_answer a = ok200(x, req, attempt);
  a.latency_us = 100 * MS;
  return a;
}

static sim_answer some_429(sim *x, unsigned req, unsigned attempt) {
  if (req % 10 == 3 && attempt == 1)
    return (sim_answer){429, {"Retry-After: 1", NULL}, "slow down", 5 * MS};
  return lat_100ms(x, req, attempt);
}

static void check_integral(sim *x, unsigned n) {
  assert_int_equal(sim_run(x), 1);
  assert_int_equal(x->n_results, n);
  assert_int_equal(sim_count(x, POLITE_OUT_OK), n);
  assert_non_null(sim_find(x, "r0"));
  const polite_batch_stats *st = polite__sched_stats(x->s);
  double lat_s = (double)st->latency_sum_us / 1e6;
  printf("# integral %.3f s, latency sum %.3f s, run %.3f s\n",
         st->in_flight_integral_s, lat_s, (double)st->run_us / 1e6);
  assert_true(lat_s > 0);
  assert_true(fabs(st->in_flight_integral_s - lat_s) <= 0.01 * lat_s);
  assert_int_equal(st->in_flight, 0);
}

/* Paced at 40/s with 8 slots and 100 ms answers: about 4 in flight. */
static void integral_paced(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 40, 1, 8, 200, lat_100ms);
  check_integral(&x, 200);
  sim_free(&x);
}

/* Unpaced, the slots full: 8 in flight. */
static void integral_unpaced(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 8, 200, lat_100ms);
  check_integral(&x, 200);
  sim_free(&x);
}

/* Quick 429s and the account's pauses between. */
static void integral_with_pauses(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 40, 1, 8, 200, some_429);
  check_integral(&x, 200);
  sim_free(&x);
}

/* The learned rate, as `polite run` without --rate. */
static void integral_learned(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 8, 200, some_429);
  x.o.rate_mode = POLITE_RATE_AUTO;
  check_integral(&x, 200);
  sim_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(integral_paced),
      cmocka_unit_test(integral_unpaced),
      cmocka_unit_test(integral_with_pauses),
      cmocka_unit_test(integral_learned),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
