/* bench/pacing/timer_floor: the pacing a bare wake-up loop gets on this
 * machine right now, as the floor for `polite run`'s numbers. It sleeps on
 * an absolute CLOCK_MONOTONIC timerfd in poll() once per planned start at
 * RATE/s for SECONDS, with the rule polite's scheduler applies at --burst 1
 * (a wake-up at most T / 2 late keeps the schedule, a later one loses what
 * it is late beyond T / 2),
 * and prints the lateness p50/p99/max and the measured / planned rate.
 *   timer_floor RATE [SECONDS]
 * Not a test: the lateness is the kernel's and the other processes'. */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <time.h>

static int64_t mono_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

static int by_value(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  double rate = argc > 1 ? atof(argv[1]) : 0;
  double secs = argc > 2 ? atof(argv[2]) : 2;
  if (!(rate > 0 && rate <= 1e6) || !(secs > 0 && secs <= 600)) {
    fprintf(stderr, "usage: timer_floor RATE(1..1e6) [SECONDS(..600)]\n");
    return 2;
  }
  int64_t T = (int64_t)(1e6 / rate);
  size_t n = (size_t)(rate * secs);
  if (n < 2)
    n = 2;
  int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  int64_t *late = malloc(n * sizeof *late);
  if (fd < 0 || T < 1 || late == NULL) {
    perror("timer_floor");
    return 1;
  }
  int64_t p = mono_us() + T, first = 0, last = 0;
  for (size_t i = 0; i < n; i++) {
    struct itimerspec its = {{0, 0}, {p / 1000000, (long)(p % 1000000) * 1000}};
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
    struct pollfd pfd = {fd, POLLIN, 0};
    poll(&pfd, 1, (int)(T / 1000) + 1);
    int64_t t = mono_us();
    if (t < p) { /* poll timed out first: wait for the timer */
      i--;
      continue;
    }
    late[i] = t - p;
    if (i == 0)
      first = t;
    last = t;
    /* the start: on schedule, or T / 2 before the late wake-up */
    p = late[i] > T / 2 ? t - T / 2 + T : p + T;
  }
  double measured = (double)(n - 1) * 1e6 / (double)(last - first);
  qsort(late, n, sizeof *late, by_value);
  printf("%g/s: lateness p50 %lld us, p99 %lld us, max %lld us; measured / "
         "planned %.4f\n",
         rate, (long long)late[n / 2], (long long)late[n * 99 / 100],
         (long long)late[n - 1], measured / rate);
  free(late);
  return 0;
}
