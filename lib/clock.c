/* The real clock and random source, kept out of the pure core. */
#define _GNU_SOURCE
#include <polite/clock.h>

#include "clock_wait.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

int64_t polite_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t polite_mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int polite_random_bytes(void *buf, size_t n) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t r = getrandom(p, n, 0);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    p += r;
    n -= (size_t)r;
  }
  if (n == 0)
    return POLITE_OK;
  /* getrandom is missing (old kernel, seccomp): try the device. */
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return POLITE_EIO;
  while (n > 0) {
    ssize_t r = read(fd, p, n);
    if (r <= 0) {
      if (r < 0 && errno == EINTR)
        continue;
      close(fd);
      return POLITE_EIO;
    }
    p += r;
    n -= (size_t)r;
  }
  close(fd);
  return POLITE_OK;
}

uint64_t polite_random_seed(void) {
  uint64_t s = 0;
  if (polite_random_bytes(&s, sizeof s) != POLITE_OK || s == 0) {
    /* Last resort: not secret, only different per process and time. */
    s = (uint64_t)polite_mono_us() ^ ((uint64_t)getpid() << 32) ^
        (uint64_t)polite_wall_ms();
  }
  return s;
}

static int64_t real_mono(void *ud) {
  (void)ud;
  return polite_mono_us();
}

static int64_t real_wall(void *ud) {
  (void)ud;
  return polite_wall_ms();
}

static int real_bytes(void *ud, void *buf, size_t n) {
  (void)ud;
  return polite_random_bytes(buf, n);
}

const polite_env *polite_env_real(void) {
  static const polite_env real = {real_mono, real_wall, real_bytes, NULL};
  return &real;
}

int64_t polite_env_mono_us(const polite_env *env) {
  return env && env->mono_us ? env->mono_us(env->ud) : polite_mono_us();
}

int64_t polite_env_wall_ms(const polite_env *env) {
  return env && env->wall_ms ? env->wall_ms(env->ud) : polite_wall_ms();
}

int polite_env_random_bytes(const polite_env *env, void *buf, size_t n) {
  return env && env->random_bytes ? env->random_bytes(env->ud, buf, n)
                                  : polite_random_bytes(buf, n);
}

int polite_idempotency_key(const polite_env *env,
                           char out[POLITE_IDEMPOTENCY_KEY_SIZE]) {
  unsigned char r[16];
  out[0] = '\0';
  if (polite_env_random_bytes(env, r, sizeof r) != 0)
    return POLITE_EIO;
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40); /* version 4 */
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80); /* RFC 4122 variant */
  snprintf(
      out, POLITE_IDEMPOTENCY_KEY_SIZE,
      "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
      r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
      r[12], r[13], r[14], r[15]);
  return POLITE_OK;
}

void polite__participant_id(char *buf, size_t len, const polite_env *env,
                            int hex_digits) {
  uint64_t rnd = 0;
  if (polite_env_random_bytes(env, &rnd, sizeof rnd) != 0)
    rnd = (uint64_t)polite_env_mono_us(env) ^ (uint64_t)getpid();
  if (hex_digits < 1 || hex_digits > 16)
    hex_digits = 16;
  if (hex_digits < 16)
    rnd &= (UINT64_C(1) << (4 * hex_digits)) - 1;
  char hn[64] = "";
  gethostname(hn, sizeof hn - 1);
  snprintf(buf, len, "%.60s:%d:%0*llx", hn[0] ? hn : "host", (int)getpid(),
           hex_digits, (unsigned long long)rnd);
}

void polite__cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t us) {
  int64_t t = polite_mono_us() + (us > 0 ? us : 0);
  struct timespec ts = {(time_t)(t / 1000000), (long)(t % 1000000) * 1000};
  pthread_cond_timedwait(cv, mu, &ts);
}
