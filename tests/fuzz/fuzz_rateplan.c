/* libFuzzer target: header lines -> the header planner and the controller.
 * Checks the planner's bounds and that no answer drives the controller's
 * rate outside [min, max] or to NaN. */
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
