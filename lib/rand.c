/* The deterministic random helpers: a splitmix64 step and a uniform draw.
 * They hold no state of their own; the seed and the state come from the
 * caller (the env), so that tests replay exactly. */
#include <polite/core.h>

/* splitmix64: tiny, fast, and good enough for jitter; the seed comes from
 * the caller so tests are deterministic. */
uint64_t polite_rand_next(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

int64_t polite_rand_uniform(uint64_t rnd, int64_t n) {
  if (n <= 0)
    return 0;
  /* Multiply-shift maps rnd onto [0, n] without modulo bias worth noting
   * for jitter (n is far below 2^64). */
  unsigned __int128 m = (unsigned __int128)rnd * ((uint64_t)n + 1);
  return (int64_t)(m >> 64);
}
