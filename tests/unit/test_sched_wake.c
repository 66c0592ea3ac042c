/* The scheduler never asks to be woken at or before now (a busy loop in
 * the engine's event loop), on a fake clock (sched_sim.h asserts it at
 * every step): also when an admission asked for a moment before now (the
 * schedule's catch-up slack) is told to wait for a pause that ends between
 * that moment and now. */
#include "sched_sim.h"

/* The first attempt is answered 429 with Retry-After: 1 s, the next 200. */
static sim_answer first_429(sim *x, unsigned req, unsigned attempt) {
  if (attempt == 1)
    return (sim_answer){429, {"Retry-After: 1", NULL}, "slow down", 0};
  return ok200(x, req, attempt);
}

/* One request at 10/s: its 429 pauses the account for 1 s, and its retry
 * is due when the pause ends. Nothing was admitted since its first start,
 * so the retry's admission is asked 1 ms before now (the schedule's
 * catch-up slack), when the account was still paused for 1 ms: that wait
 * ends at now. The scheduler returned it as the wake (a wake equal to now:
 * the engine's loop spun) and must instead start the retry at once. */
static void a_pause_ending_now_starts_now(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 10, 1, 1, 1, first_429);
  x.o.max_attempts = 3;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 1);
  assert_int_equal(x.n_starts, 2);
  assert_int_equal(x.starts[1].at_us, T0 + 10 * MS + SEC);
  sim_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_pause_ending_now_starts_now),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
