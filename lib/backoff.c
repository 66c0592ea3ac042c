/* Capped exponential backoff with full jitter (pure: the random value is an
 * argument). */
#include <polite/core.h>

/* A zero-initialised polite_backoff must not mean "retry at once": a caller
 * that forgot to set the fields would hammer the server. So a field <= 0
 * takes its default (base 1 s, cap 30 s). */
static void effective(const polite_backoff *b, int64_t *base, int64_t *cap) {
  *base = (b != NULL && b->base_ms > 0) ? b->base_ms : 1000;
  *cap = (b != NULL && b->cap_ms > 0) ? b->cap_ms : 30000;
}

/* Window for retry number `retry` (0 = first retry): min(cap, base * 2^retry).
 * The doubling is checked before it happens, so retry 200 (or UINT_MAX)
 * gives the cap instead of an overflowed shift. A cap below the base gives
 * the cap for every retry. b may be NULL (defaults). */
int64_t polite_backoff_window_ms(const polite_backoff *b, unsigned retry) {
  int64_t base, cap;
  effective(b, &base, &cap);
  if (base >= cap)
    return cap;
  /* base < cap <= INT64_MAX, so once base << retry would exceed cap we stop;
   * the loop runs at most 63 times. */
  int64_t w = base;
  for (unsigned i = 0; i < retry; i++) {
    if (w > cap / 2)
      return cap;
    w *= 2;
  }
  return w < cap ? w : cap;
}

/* Full jitter: the wait is uniform in [0, window], both ends included, so
 * many clients that failed together spread over the whole window. */
int64_t polite_backoff_delay_ms(const polite_backoff *b, unsigned retry,
                                uint64_t rnd) {
  return polite_rand_uniform(rnd, polite_backoff_window_ms(b, retry));
}
