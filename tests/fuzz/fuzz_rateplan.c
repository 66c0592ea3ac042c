/* libFuzzer target: header lines -> the header planner and the controller.
 * Checks the planner's bounds (also with requests in flight), and that no
 * answer, alone or replayed as a window's answers, drives the controller's
 * rate outside [min, max] or to NaN, or holds it past a plan's not-before. */
#include <polite/ratectl.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  polite_headers h;
  polite_headers_init(&h, 1700000000000);
  size_t start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i == size || s[i] == '\n') {
      polite_headers_feed_line(&h, s + start, i - start);
      start = i + 1;
    }
  }
  const int64_t now = 5000000;
  polite_rate_plan p;
  int has = polite_rate_plan_headers(&h, now, &p);
  if (has != (p.reason != POLITE_PLAN_NONE) || p.wait_us < 0 ||
      p.interval_us < 0 || p.not_before_us != now + p.wait_us ||
      !(p.rate_per_s >= 0) || p.rate_per_s > 1e6 ||
      (p.rate_per_s > 0) != (p.interval_us > 0) || p.why == NULL)
    abort();
  /* With requests in flight (the first byte's worth): the same bounds, no
   * more remaining in the same pair (another pair may decide once the
   * first is spent), and for the same reason a wait no shorter. */
  unsigned k = size > 0 ? data[0] : 0;
  polite_rate_plan q;
  int hq = polite_rate_plan_after(&h, now, k, &q);
  if (hq != (q.reason != POLITE_PLAN_NONE) || q.wait_us < 0 ||
      q.not_before_us != now + q.wait_us || !(q.rate_per_s >= 0) ||
      q.rate_per_s > 1e6 || q.remaining < -1 ||
      (p.source == q.source && p.remaining >= 0 && q.remaining > p.remaining) ||
      (has && hq && q.reason == p.reason && q.wait_us < p.wait_us))
    abort();
  /* The plan with requests in flight replayed as a window's answers
   * (started, answered 100 ms later, 50 ms apart) through a controller
   * that places the window's end: the rate stays in bounds, and a hold is
   * never later than the latest plan's own not-before (the window's end
   * only sharpens it). */
  polite_ratectl_config wcfg = {0, 0, 0, 8};
  polite_ratectl w;
  polite_ratectl_init(&w, &wcfg, 0);
  int64_t latest = 0;
  for (int i = 0; i < 8; i++) {
    int64_t st = now + i * 50000, at = st + 100000;
    polite_ratectl_on_start(&w, st);
    polite_rate_plan a;
    int ha = polite_rate_plan_after(&h, at,
                                    polite_ratectl_started_after(&w, st), &a);
    if (ha && a.not_before_us > latest)
      latest = a.not_before_us;
    polite_ratectl_response wr = {at, st, 200, -1, ha ? &a : NULL};
    polite_ratectl_on_response(&w, &wr);
    double rate = polite_ratectl_rate(&w, at);
    if (!(rate >= POLITE_RATECTL_MIN_PER_S - 1e-9) || isnan(rate) ||
        polite_ratectl_hold_until(&w) > latest)
      abort();
  }
  /* The same plan, then a throttle, through a controller with a cap. */
  polite_ratectl_config cfg = {0, 50, 0, 8};
  polite_ratectl c;
  polite_ratectl_init(&c, &cfg, 0);
  polite_ratectl_response r = {now, now - 100000, 200, -1, has ? &p : NULL};
  polite_ratectl_on_response(&c, &r);
  r.status = 429;
  r.server_wait_us = p.wait_us;
  r.now_us += 1000;
  polite_ratectl_on_response(&c, &r);
  for (int64_t t = now; t < now + 120000000; t += 7000000) {
    double rate = polite_ratectl_rate(&c, t);
    if (!(rate >= POLITE_RATECTL_MIN_PER_S - 1e-9) || rate > 50 + 1e-9 ||
        isnan(rate))
      abort();
  }
  return 0;
}
