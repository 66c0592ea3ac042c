/* The host lookahead on a fake clock (sched_sim.h) with the real local
 * budget: a host with a thousand requests waiting is asked once per turn,
 * not once per waiting request, and another host's request still gets
 * through at once (issue #22, the gateway with thousands waiting). */
#include "sched_sim.h"

#include <polite/budget.h>

/* The local budget's vtable with acquire counted. */
static polite_budget_vtable counted;
static const polite_budget_vtable *local_vt;
static unsigned acquires;

static int counted_acquire(polite_budget *b, const char *key, int64_t now_us,
                           unsigned units, unsigned slots, int64_t *wait_us) {
  acquires++;
  return local_vt->acquire(b, key, now_us, units, slots, wait_us);
}

#define N_A 1000

static const char *a_then_b(const sim *x, unsigned req) {
  (void)x;
  return req < N_A ? "http://a.test/x" : "http://b.test/x";
}

/* 1,000 requests for a.test and then one for b.test arrive at once, at
 * 100/s per host. b.test's starts within 0.2 s (the lookahead gets past
 * a.test's backlog, 64 a turn, as before); every request is answered; and the
 * budget is asked a few times per start, where each start used to re-ask 64 of
 * a.test's blocked requests (65 acquires per start). */
static void blocked_host_is_asked_once_per_turn(void **state) {
  (void)state;
  static int64_t arrive[N_A + 1]; /* all at T0 */
  sim x;
  sim_init(&x, 100, 1, 0, N_A + 1, ok200);
  x.o.scope_host = 1;
  x.o.queue_max = 2 * N_A;
  x.url = a_then_b;
  x.arrive_us = arrive;
  local_vt = x.budget->vt;
  counted = *local_vt;
  counted.acquire = counted_acquire;
  x.budget->vt = &counted;
  acquires = 0;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), N_A + 1);
  assert_int_equal(x.n_starts, N_A + 1);
  unsigned b_at = 0;
  for (unsigned i = 0; i < x.n_starts; i++)
    if (x.starts[i].req == N_A)
      b_at = i;
  printf("# b.test starts at %lld us\n",
         (long long)(x.starts[b_at].at_us - T0));
  /* Reached past 64 of a.test's requests a turn (the lookahead): 150 ms. */
  assert_true(x.starts[b_at].at_us <= T0 + 200 * MS);
  /* a.test's starts keep its rate: the last one about 10 s in. */
  assert_true(x.starts[x.n_starts - 1].at_us <= T0 + 10 * SEC + 100 * MS);
  printf("# %u acquires for %u starts\n", acquires, x.n_starts);
  assert_true(acquires <= 3 * x.n_starts);
  x.budget->vt = local_vt;
  sim_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(blocked_host_is_asked_once_per_turn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
