/* The real clock and random source, kept out of the pure core. */
#define _GNU_SOURCE
#include <polite/clock.h>

#include <errno.h>
#include <fcntl.h>
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
