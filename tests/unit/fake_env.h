/* A fixed env for the unit tests of what takes one (polite/clock.h): a wall
 * clock that always says FAKE_WALL_MS and a random source that fills with
 * one byte. Header-only; static inline, so a test that uses one of them
 * only is not warned about the other. */
#ifndef FAKE_ENV_H
#define FAKE_ENV_H

#include <polite/clock.h>

#include <stdint.h>
#include <string.h>

#define FAKE_WALL_MS INT64_C(1234567890123)

static inline int64_t fake_env_wall(void *ud) {
  (void)ud;
  return FAKE_WALL_MS;
}

/* Fills buf with the byte ud points to. */
static inline int fake_env_bytes(void *ud, void *buf, size_t n) {
  memset(buf, *(const unsigned char *)ud, n);
  return 0;
}

#endif
