/* budget_worker: one participant of a shared budget for integration tests
 * and benchmarks. Joins URI, starts N "requests" as fast as the budget
 * admits them on the real clock, holds each slot H ms, and prints one line
 * per event:
 *   READY <pid> <mono_us>
 *   START <pid> <now_us> <wall_us> <after_us> <late_us>
 *   END <pid> <mono_us>             (slot released)
 * now_us is the time given to acquire, after_us the clock read once it
 * returned and END's the clock read before the release: [after, END] lies
 * inside the true holding time, so overlaps counted from them are never
 * more than the real ones. late_us is how much later than planned the
 * worker woke for this acquire (0 when it did not sleep before it): a
 * start can be later than the budget allowed by no more than that, which
 * lets the tests bound timing by what the machine delivered.
 *   RENEW <pid> <now_us>            (--hold-forever: the lease renewed)
 *   ERR <pid> <mono_us> <message>   (the budget failed: nothing started)
 *   DONE <pid> <mono_us> <admissions> <errors>
 * Usage: budget_worker URI [--rate R] [--burst B] [--concurrency C]
 *          [--count N] [--hold MS] [--hold-forever] [--cost K]
 *          [--slots S] [--pause-ms MS] [--bench]
 * Each "request" asks for K rate units (--cost, default 1) and S
 * concurrency slots (--slots, default 1) in one acquire, and gives the S
 * slots back at its end.
 * --hold-forever keeps its slots and renews its lease every 100 ms (an
 * acquire of 0 units and 0 slots) until killed. --pause-ms pauses the account
 * for MS before starting. --bench acquires and releases N times without
 * sleeping or printing per event (admissions/s on the last line). Exit 0, 1 on
 * a budget that cannot be opened, 2 on a usage error. */
#define _GNU_SOURCE
#include <polite/budget.h>
#include <polite/clock.h>

#include "../../lib/budget_backends.h" /* tools do not get lib/ */

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Opens through polite_budget_open when the lead has wired the scheme in,
 * else through the backend's constructor directly. */
static int open_budget(const char *uri, const polite_budget_config *c,
                       polite_budget **b, char *err, size_t len) {
  int rc = polite_budget_open(uri, c, b, err, len);
  if (rc == 0 || strstr(err, "not available") == NULL)
    return rc;
  if (strncmp(uri, "file:", 5) == 0)
    return polite__budget_file_new(uri, c, b, err, len);
  if (strncmp(uri, "redis://", 8) == 0)
    return polite__budget_redis_open(uri, c, NULL, b, err, len);
  return rc;
}

static void sleep_until(int64_t mono_us) {
  struct timespec ts = {(time_t)(mono_us / 1000000),
                        (long)(mono_us % 1000000) * 1000};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
    ;
}

static int64_t wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int usage(const char *why) {
  fprintf(stderr, "budget_worker: %s\n", why);
  return 2;
}

/* The options that take a number: the option's name, what it takes and
 * where the value goes (out points to a double, an unsigned or a long as
 * kind says). None takes a negative number. */
typedef enum { NUM_RATE, NUM_UNSIGNED, NUM_LONG } num_kind;
typedef struct {
  const char *name;
  num_kind kind;
  void *out;
} num_opt;

/* Parses V, the value given to option O, into O's field: the whole of V
 * must be the number (no sign, no blanks, no trailing text), a finite
 * decimal number for NUM_RATE, else a whole number that fits the field.
 * Returns 0, or 2 (a usage error) after naming the option and the value on
 * stderr; the field is then left as it was. */
static int parse_num(const num_opt *o, const char *v) {
  char *end = NULL;
  errno = 0;
  if (o->kind == NUM_RATE) {
    double d = strtod(v, &end);
    if ((!isdigit((unsigned char)v[0]) && v[0] != '.') || *end != '\0' ||
        errno != 0 || !isfinite(d)) {
      fprintf(stderr, "budget_worker: %s: '%s' is not a number >= 0\n", o->name,
              v);
      return 2;
    }
    *(double *)o->out = d;
    return 0;
  }
  long long max = o->kind == NUM_UNSIGNED ? (long long)UINT_MAX : LONG_MAX;
  long long n = strtoll(v, &end, 10);
  if (!isdigit((unsigned char)v[0]) || *end != '\0' || errno != 0 || n > max) {
    fprintf(stderr,
            "budget_worker: %s: '%s' is not a whole number from 0 to %lld\n",
            o->name, v, max);
    return 2;
  }
  if (o->kind == NUM_UNSIGNED)
    *(unsigned *)o->out = (unsigned)n;
  else
    *(long *)o->out = (long)n;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage("usage: budget_worker URI [options]");
  const char *uri = argv[1];
  polite_budget_config cfg = {0, 1, 0};
  long count = 10, hold_ms = 0, pause_ms = 0;
  unsigned cost = 1, slots = 1;
  int forever = 0, bench = 0;
  const num_opt nums[] = {
      {"--rate", NUM_RATE, &cfg.rate_per_s},
      {"--burst", NUM_UNSIGNED, &cfg.burst},
      {"--concurrency", NUM_UNSIGNED, &cfg.concurrency},
      {"--count", NUM_LONG, &count},
      {"--hold", NUM_LONG, &hold_ms},
      {"--cost", NUM_UNSIGNED, &cost},
      {"--slots", NUM_UNSIGNED, &slots},
      {"--pause-ms", NUM_LONG, &pause_ms},
  };
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--hold-forever") == 0) {
      forever = 1;
      continue;
    }
    if (strcmp(a, "--bench") == 0) {
      bench = 1;
      continue;
    }
    if (v == NULL)
      return usage("missing value after an option");
    i++;
    const num_opt *o = NULL;
    for (size_t k = 0; k < sizeof nums / sizeof nums[0] && o == NULL; k++)
      if (strcmp(a, nums[k].name) == 0)
        o = &nums[k];
    if (o == NULL)
      return usage(a);
    if (parse_num(o, v) != 0)
      return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  polite_budget *b = NULL;
  char err[256] = "";
  if (open_budget(uri, &cfg, &b, err, sizeof err) != 0) {
    fprintf(stderr, "budget_worker: %s\n", err);
    return 1;
  }
  pid_t pid = getpid();
  printf("READY %d %lld\n", (int)pid, (long long)polite_mono_us());

  if (bench) {
    int64_t t0 = polite_mono_us();
    long ok = 0, waits = 0;
    for (long i = 0; i < count; i++) {
      int64_t w;
      int rc =
          polite_budget_acquire(b, NULL, polite_mono_us(), cost, slots, &w);
      if (rc == POLITE_BUDGET_ADMITTED) {
        ok++;
        polite_budget_release(b, NULL, slots);
      } else if (rc >= 0)
        waits++;
      else {
        fprintf(stderr, "budget_worker: %s\n", polite_budget_errstr(b));
        polite_budget_close(b);
        return 1;
      }
    }
    int64_t dt = polite_mono_us() - t0;
    /* Round trips counted by the redis backend (0 for the others). */
    printf("BENCH %d calls=%ld admitted=%ld waits=%ld us=%lld per_s=%.0f "
           "ns_per_call=%.0f round_trips=%llu\n",
           (int)pid, count, ok, waits, (long long)dt,
           dt > 0 ? count * 1e6 / (double)dt : 0.0,
           count ? dt * 1000.0 / (double)count : 0.0,
           (unsigned long long)polite__budget_redis_round_trips(b));
    polite_budget_close(b);
    return 0;
  }

  if (pause_ms > 0) {
    int64_t now = polite_mono_us();
    if (polite_budget_pause_until(b, NULL, now, now + pause_ms * 1000) != 0)
      printf("ERR %d %lld %s\n", (int)pid, (long long)now,
             polite_budget_errstr(b));
  }
  int64_t *ends = calloc((size_t)(count > 0 ? count : 1), sizeof *ends);
  if (ends == NULL)
    return 1;
  long started = 0, released = 0, errors = 0;
  int64_t planned = 0; /* the wake-up the last sleep aimed at, 0: none */
  while (started < count || (!forever && released < started)) {
    int64_t now = polite_mono_us();
    int64_t late = planned > 0 && now > planned ? now - planned : 0;
    planned = 0;
    /* Release what is due (slots are released in start order). */
    while (!forever && released < started && ends[released] <= now) {
      printf("END %d %lld\n", (int)pid, (long long)polite_mono_us());
      polite_budget_release(b, NULL, slots);
      released++;
    }
    int64_t next = now + 100000;
    if (!forever && released < started && ends[released] < next)
      next = ends[released];
    if (started < count) {
      int64_t w = 0;
      int rc = polite_budget_acquire(b, NULL, now, cost, slots, &w);
      if (rc == POLITE_BUDGET_ADMITTED) {
        int64_t after = polite_mono_us();
        printf("START %d %lld %lld %lld %lld\n", (int)pid, (long long)now,
               (long long)wall_us(), (long long)after, (long long)late);
        ends[started++] = now + hold_ms * 1000;
        continue;
      }
      if (rc < 0) {
        errors++;
        printf("ERR %d %lld %s\n", (int)pid, (long long)now,
               polite_budget_errstr(b));
        w = 20000;
      }
      if (w > 0 && now + w < next)
        next = now + w;
    }
    if (started >= count && released >= started)
      break;
    planned = next;
    sleep_until(next);
  }
  while (forever) {
    /* Keep the slots and the lease (0 units and 0 slots renews it). */
    int64_t w;
    int64_t now = polite_mono_us();
    if (polite_budget_acquire(b, NULL, now, 0, 0, &w) >= 0)
      printf("RENEW %d %lld\n", (int)pid, (long long)now);
    sleep_until(polite_mono_us() + 100000);
  }
  printf("DONE %d %lld %ld %ld\n", (int)pid, (long long)polite_mono_us(),
         started, errors);
  free(ends);
  polite_budget_close(b);
  return 0;
}
