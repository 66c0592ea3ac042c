/* The learned rate against a fixed-window limiter that states its limit
 * in headers, on a fake clock (sched_sim.h): the model of
 * express-rate-limit's memory store (one window per client, opened by its
 * first request, counted when a request arrives), with the reset in whole
 * seconds rounded up, as it sends it. The client is not told the limit.
 * Targets of issue #10 for a server with headers: at most 0.5% of requests
 * answered 429 and a wall within 1.1 x N / (q/w). The end-to-end test
 * against the real express-rate-limit is
 * tests/integration/test_run_express_rate_limit.sh. */
#include "sched_sim.h"

#include <math.h>

#define LATENCY (100 * MS)

typedef enum { IETF8, LEGACY_EPOCH } header_form;

static struct {
  header_form form;
  unsigned q;        /* requests per window */
  int64_t w;         /* the window */
  int64_t win_start; /* 0: no window yet */
  unsigned hits, n429, early;
  int64_t retry_until; /* the latest Retry-After a 429 named */
  char hdr[SIM_MAX][2][128];
} fw;

static int64_t ceil_s(int64_t us) {
  return (us + SEC - 1) / SEC;
}

/* The server: called when a request arrives (its start). */
static sim_answer fixed_window(sim *x, unsigned req, unsigned attempt) {
  (void)req, (void)attempt;
  int64_t now = x->now;
  if (now < fw.retry_until)
    fw.early++;
  if (fw.win_start == 0 || now >= fw.win_start + fw.w) {
    fw.win_start = now;
    fw.hits = 0;
  }
  fw.hits++;
  unsigned k = x->n_starts % SIM_MAX;
  int64_t left = fw.win_start + fw.w - now;
  int over = fw.hits > fw.q;
  unsigned remaining = over ? 0 : fw.q - fw.hits;
  if (fw.form == IETF8) {
    snprintf(fw.hdr[k][0], sizeof fw.hdr[k][0],
             "RateLimit: \"p\"; r=%u; t=%lld", remaining,
             (long long)ceil_s(left));
    snprintf(fw.hdr[k][1], sizeof fw.hdr[k][1],
             "RateLimit-Policy: \"p\"; q=%u; w=%lld", fw.q,
             (long long)(fw.w / SEC));
  } else {
    /* X-RateLimit-Reset: the window's end as an epoch second, rounded up */
    int64_t end_wall_ms = WALL0 + (fw.win_start + fw.w - T0) / 1000;
    snprintf(fw.hdr[k][0], sizeof fw.hdr[k][0], "X-RateLimit-Remaining: %u",
             remaining);
    snprintf(fw.hdr[k][1], sizeof fw.hdr[k][1], "X-RateLimit-Reset: %lld",
             (long long)((end_wall_ms + 999) / 1000));
  }
  sim_answer a = {200, {fw.hdr[k][0], fw.hdr[k][1], NULL}, "ok", LATENCY};
  if (over) {
    fw.n429++;
    if (now + ceil_s(left) * SEC > fw.retry_until)
      fw.retry_until = now + ceil_s(left) * SEC;
    a.status = 429;
    a.latency_us = 1 * MS; /* the limiter answers before the handler */
    a.headers[2] = "Retry-After: 1";
  }
  return a;
}

/* Runs n requests at concurrency 8 with the learned rate; returns the wall
 * over the floor n / (q / w). */
static double run_window(header_form form, unsigned q, int64_t w, unsigned n) {
  memset(&fw, 0, sizeof fw);
  fw.form = form;
  fw.q = q;
  fw.w = w;
  sim x;
  sim_init(&x, 0, 1, 8, n, fixed_window);
  x.o.rate_mode = POLITE_RATE_AUTO;
  x.o.max_attempts = 5;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), n);
  double wall = (double)(x.now - T0) / 1e6;
  double floor_s = n / ((double)q * SEC / (double)w);
  print_message("%s, %u per %lld s: %u requests, wall %.2f s = %.3f x "
                "floor, %u 429s, %u early, final rate %.2f/s\n",
                form == IETF8 ? "RateLimit draft-8" : "X-RateLimit epoch", q,
                (long long)(w / SEC), n, wall, wall / floor_s, fw.n429,
                fw.early, polite__sched_stats(x.s)->rate_final_per_s);
  assert_int_equal(fw.early, 0);
  sim_free(&x);
  return wall / floor_s;
}

/* IETF draft-8 headers, the reset in whole seconds: the window's end is
 * placed from the answers (the first of a window gives it exactly), the
 * requests in flight are counted against what remains, and the client
 * keeps within 1.1 x the floor with no 429. Spreading over the rounded-up
 * reset alone gave 1.68 x. */
static void fixed_window_ietf_within_the_target(void **state) {
  (void)state;
  double x = run_window(IETF8, 20, 2 * SEC, 400);
  assert_true(fw.n429 <= 400 / 200); /* 0.5% */
  assert_true(x <= 1.1);
}

/* X-RateLimit-Reset as an epoch second: the end comes from the answer's
 * time, not the request's start (the client made it a delta when the
 * answer came, a latency after the limiter counted the request), so no
 * request is early; the rounding of the epoch itself cannot be sharpened
 * (every answer of a window states the same second), so the bound is
 * looser. */
static void fixed_window_epoch_reset_is_never_early(void **state) {
  (void)state;
  double x = run_window(LEGACY_EPOCH, 20, 2 * SEC, 400);
  assert_true(fw.n429 <= 400 / 200);
  assert_true(x <= 1.4);
}

/* A limit just above the first estimate (5/s against 4/s): the first
 * answer's plan is below the slow start's own rate but above what the
 * budget paces at. Published as a cut, the budget's merge kept the lower
 * first estimate and every later answer held the run at 4/s for 30 s
 * (1.25 x); it is a raise of the account. */
static void plan_above_the_first_estimate_raises(void **state) {
  (void)state;
  double x = run_window(IETF8, 50, 10 * SEC, 200);
  assert_true(fw.n429 <= 1);
  assert_true(x <= 1.1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fixed_window_ietf_within_the_target),
      cmocka_unit_test(fixed_window_epoch_reset_is_never_early),
      cmocka_unit_test(plan_above_the_first_estimate_raises),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
