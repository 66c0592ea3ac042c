/* Unit tests of the proxy's limiters on a fake clock (proxy/px_limit.c): each
 * mode's arithmetic, Retry-After never 0 while refused, and the planner
 * contract: a client that follows (r, t) is never refused and keeps up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px_limit.c"

#define S INT64_C(1000000)

static px_lim_cfg cfg(px_lim_mode m, int64_t limit, int64_t window_s,
                      unsigned burst, int64_t cost) {
  px_lim_cfg c = {m, limit, window_s * S, burst, cost};
  return c;
}

/* Dev Proxy's defaults: 120 units per 60 s, cost 2: 60 requests, then 429
 * until the window that began with the first request ends. */
static void fixed_window_as_dev_proxy(void **state) {
  (void)state;
  px_lim_cfg c = cfg(PX_LIM_FIXED, 120, 60, 1, 2);
  px_lim *l = polite__px_lim_new(&c);
  assert_non_null(l);
  px_lim_state o;
  int64_t t0 = 5 * S;
  for (int i = 0; i < 60; i++) {
    polite__px_lim_admit(l, t0 + i * 1000, 1, &o);
    assert_true(o.admitted);
    assert_int_equal(o.units_left, 120 - 2 * (i + 1));
  }
  polite__px_lim_admit(l, t0 + 10 * S, 1, &o);
  assert_false(o.admitted);
  assert_int_equal(o.wait_us, 50 * S);
  assert_int_equal(o.units_left, 0);
  assert_int_equal(o.remaining, 0);
  assert_int_equal(o.reset_s, 50);
  /* 1 us before the end: still refused, and told 1 s, never 0. */
  polite__px_lim_admit(l, t0 + 60 * S - 1, 1, &o);
  assert_false(o.admitted);
  assert_int_equal(o.wait_us, 1);
  assert_int_equal(o.reset_s, 1);
  /* At the end, a new window. */
  polite__px_lim_admit(l, t0 + 60 * S, 1, &o);
  assert_true(o.admitted);
  assert_int_equal(o.units_left, 118);
  assert_int_equal(o.reset_us, 60 * S);
  /* A peek records nothing. */
  polite__px_lim_admit(l, t0 + 61 * S, 0, &o);
  assert_int_equal(o.units_left, 118);
  polite__px_lim_free(l);
}

static void sliding_log_arithmetic(void **state) {
  (void)state;
  px_lim_cfg c = cfg(PX_LIM_SLIDING, 3, 10, 1, 1);
  px_lim *l = polite__px_lim_new(&c);
  px_lim_state o;
  polite__px_lim_admit(l, 0 * S, 1, &o);
  assert_true(o.admitted);
  polite__px_lim_admit(l, 2 * S, 1, &o);
  polite__px_lim_admit(l, 4 * S, 1, &o);
  assert_true(o.admitted);
  polite__px_lim_admit(l, 5 * S, 1, &o);
  assert_false(o.admitted);
  assert_int_equal(o.wait_us, 5 * S); /* the first leaves at 10 s */
  assert_int_equal(o.reset_s, 5);
  polite__px_lim_admit(l, 10 * S, 1, &o);
  assert_true(o.admitted);
  polite__px_lim_admit(l, 11 * S, 1, &o);
  assert_false(o.admitted);
  assert_int_equal(o.wait_us, 1 * S); /* the one of 2 s leaves at 12 s */
  /* A fixed window would have allowed 3 more at 10 s; the log does not. */
  assert_null(polite__px_lim_new(&(px_lim_cfg){PX_LIM_SLIDING,
                                               PX_SLIDING_MAX + 1, S, 1, 1}));
  polite__px_lim_free(l);
}

static void gcra_spacing_and_headers(void **state) {
  (void)state;
  px_lim_cfg c = cfg(PX_LIM_GCRA, 10, 1, 1, 1);
  px_lim *l = polite__px_lim_new(&c);
  px_lim_state o;
  polite__px_lim_admit(l, 1 * S, 1, &o);
  assert_true(o.admitted);
  /* Not r=0;t=1 (today's): ten more over the next second, 100 ms apart. */
  assert_int_equal(o.remaining, 10);
  assert_int_equal(o.reset_s, 1);
  polite__px_lim_admit(l, 1 * S + 50000, 1, &o);
  assert_false(o.admitted);
  assert_int_equal(o.wait_us, 50000);
  assert_int_equal(o.remaining, 0);
  assert_int_equal(o.reset_s, 1); /* rounded up, never 0 */
  polite__px_lim_free(l);
}

/* Follows the contract: after each answer, the next request goes t/r later
 * (never faster than q/w), or t later when r = 0. `batch`: the client
 * starts the whole plan of one answer (r requests) before it looks at the
 * answers again, which checks every k of the plan, not only the first.
 * rtt_us: the answer arrives that long after the request was sent, half of
 * it before the proxy decides. Returns requests admitted in `secs`; fails
 * on any refusal. */
static int64_t follow(px_lim_mode m, int64_t limit, int64_t window_s,
                      unsigned burst, int64_t cost, int batch, int64_t rtt_us,
                      int64_t secs) {
  px_lim_cfg c = cfg(m, limit, window_s, burst, cost);
  px_lim *l = polite__px_lim_new(&c);
  assert_non_null(l);
  int64_t now = 3 * S, end = now + secs * S, admitted = 0;
  while (now < end) {
    px_lim_state o;
    polite__px_lim_admit(l, now + rtt_us / 2, 1, &o);
    if (!o.admitted)
      fail_msg("mode %d refused a request that followed the plan at %lld us",
               m, (long long)now);
    admitted++;
    int64_t answer = now + rtt_us;
    if (o.remaining == 0) {
      now = answer + o.reset_s * S;
      continue;
    }
    /* t/r, never faster than w/q. */
    int64_t gap = o.reset_s * S / o.remaining;
    int64_t floor_gap = o.window_s * S / o.quota;
    if (gap < floor_gap)
      gap = floor_gap;
    int64_t n = batch ? o.remaining : 1;
    for (int64_t k = 1; k < n && answer + k * gap < end; k++) {
      polite__px_lim_admit(l, answer + k * gap + rtt_us / 2, 1, &o);
      if (!o.admitted)
        fail_msg("mode %d refused planned request %lld", m, (long long)k);
      admitted++;
    }
    now = answer + n * gap;
  }
  polite__px_lim_free(l);
  print_message("mode %d %lld/%llds burst %u cost %lld batch %d: %lld in %llds\n",
                m, (long long)limit, (long long)window_s, burst,
                (long long)cost, batch, (long long)admitted, (long long)secs);
  return admitted;
}

static void contract_client_is_never_refused_and_keeps_up(void **state) {
  (void)state;
  /* 10/s burst 1, 60 s: within a few percent of 600. */
  for (int batch = 0; batch <= 1; batch++) {
    int64_t n = follow(PX_LIM_GCRA, 10, 1, 1, 1, batch, 300, 60);
    assert_in_range(n, 580, 601);
    n = follow(PX_LIM_GCRA, 120, 60, 5, 1, batch, 2000, 120);
    assert_in_range(n, 228, 246);
    n = follow(PX_LIM_SLIDING, 10, 1, 1, 1, batch, 300, 60);
    assert_in_range(n, 560, 601);
    n = follow(PX_LIM_SLIDING, 100, 60, 1, 1, batch, 1000, 180);
    assert_in_range(n, 280, 301);
    n = follow(PX_LIM_FIXED, 10, 1, 1, 1, batch, 300, 60);
    assert_in_range(n, 500, 601);
    n = follow(PX_LIM_FIXED, 120, 60, 1, 2, batch, 1000, 180);
    assert_in_range(n, 150, 181);
  }
}

static void quota_periods(void **state) {
  (void)state;
  int64_t day = INT64_C(86400000);
  int64_t wall = 20000 * day + 5 * 3600000; /* 05:00 UTC */
  px_quota_cfg c = {2, PX_QUOTA_DAY, 6, 0};
  px_quota q = {0, 0};
  int64_t reset;
  assert_true(polite__px_quota_admit(&c, &q, wall, 0, &reset));
  assert_int_equal(reset, 20000 * day + 6 * 3600000);
  assert_true(polite__px_quota_admit(&c, &q, wall + 1, 0, NULL));
  assert_false(polite__px_quota_admit(&c, &q, wall + 2, 0, NULL));
  /* 06:00 UTC: renewed, next reset the day after. */
  assert_true(polite__px_quota_admit(&c, &q, 20000 * day + 6 * 3600000, 0,
                                     &reset));
  assert_int_equal(reset, 20001 * day + 6 * 3600000);
  px_quota_cfg w = {1, PX_QUOTA_WINDOW, 0, 1000};
  px_quota qw = {0, 0};
  assert_true(polite__px_quota_admit(&w, &qw, wall, 500, &reset));
  assert_false(polite__px_quota_admit(&w, &qw, wall, 1499, NULL));
  assert_true(polite__px_quota_admit(&w, &qw, wall, 1500, NULL));
  px_quota_cfg t = {0, PX_QUOTA_TOTAL, 0, 0};
  px_quota qt = {0, 0};
  assert_false(polite__px_quota_admit(&t, &qt, wall, 0, &reset));
  assert_int_equal(reset, -1);
}

static void bad_configs_are_refused(void **state) {
  (void)state;
  assert_null(polite__px_lim_new(&(px_lim_cfg){PX_LIM_FIXED, 10, S, 1, 11}));
  assert_null(polite__px_lim_new(&(px_lim_cfg){PX_LIM_FIXED, 0, S, 1, 1}));
  assert_null(polite__px_lim_new(&(px_lim_cfg){PX_LIM_GCRA, 10, S / 2, 1, 1}));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fixed_window_as_dev_proxy),
      cmocka_unit_test(sliding_log_arithmetic),
      cmocka_unit_test(gcra_spacing_and_headers),
      cmocka_unit_test(contract_client_is_never_refused_and_keeps_up),
      cmocka_unit_test(quota_periods),
      cmocka_unit_test(bad_configs_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
