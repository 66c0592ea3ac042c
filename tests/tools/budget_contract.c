/* budget_contract: the budget contract, written once and run against any
 * backend URI (local, file:PATH, redis://HOST:PORT/NAME) by
 * tests/integration/test_budget_contract.sh. Two participants join the
 * same account (two opens of a shared URI; one object for "local", which
 * lives in one process) and check, on the real clock:
 *   - admission, the concurrency limit and release;
 *   - a learned in-flight cap given by one holds the other, and each
 *     counts the account's slots in use;
 *   - a pause set by one blocks the other, and never outlives the writer's
 *     max-wait; a reader with a shorter max-wait is told at once;
 *   - the learned rate: a cut published by one is what the other reads at
 *     its next admission and is paced at; a stale raise is refused; a
 *     throttle seen by one participant's controller slows the other's;
 *   - inspect and clear;
 *   - on Redis, one round trip per admission with the learned rate on.
 * Prints "ok - ..." or "FAIL - ..." per check; exit 0 when all pass, 1 when
 * one failed, 2 on a usage error or a budget that cannot be opened. */
#define _GNU_SOURCE
#include <polite/budget.h>
#include <polite/clock.h>
#include <polite/ratectl.h>

#include "../../lib/budget_backends.h" /* tools do not get lib/ */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

static void check(int cond, const char *what, const char *detail) {
  printf("%s - %s%s%s\n", cond ? "ok" : "FAIL", what, detail ? ": " : "",
         detail ? detail : "");
  if (!cond)
    failures++;
}

/* Acquires one start, waiting as the budget says; returns the time spent
 * (us), or -1 on an error. */
static int64_t start_one(polite_budget *b, const char *key) {
  int64_t t0 = polite_mono_us();
  for (int i = 0; i < 100000; i++) {
    int64_t w = 0, now = polite_mono_us();
    int st = polite_budget_acquire(b, key, now, 1, 0, &w);
    if (st == POLITE_BUDGET_ADMITTED)
      return polite_mono_us() - t0;
    if (st < 0)
      return -1;
    usleep((useconds_t)(w > 0 && w < 200000 ? w : 1000));
  }
  return -1;
}

static int is_local(const char *uri) {
  return strcmp(uri, "local") == 0;
}

static void test_slots(polite_budget *a, polite_budget *b) {
  int64_t w, now = polite_mono_us();
  int s1 = polite_budget_acquire(a, "slots", now, 0, 2, &w);
  int s2 = polite_budget_acquire(b, "slots", now, 0, 1, &w);
  check(s1 == POLITE_BUDGET_ADMITTED && s2 == POLITE_BUDGET_WAIT_SLOT,
        "two slots of two are held by one participant: the other waits", NULL);
  polite_budget_state st;
  int rc = polite_budget_inspect(b, "slots", polite_mono_us(), &st);
  char d[160];
  snprintf(d, sizeof d, "%u slots, %u holders", st.slots_in_use, st.n_holders);
  check(rc == 0 && st.slots_in_use == 2, "inspect counts the slots in use", d);
  polite_budget_release(a, "slots", 2);
  s2 = polite_budget_acquire(b, "slots", polite_mono_us(), 0, 1, &w);
  check(s2 == POLITE_BUDGET_ADMITTED, "a release frees the slots", NULL);
  polite_budget_release(b, "slots", 1);
}

static void test_pause(polite_budget *a, polite_budget *b) {
  int64_t now = polite_mono_us(), w = 0;
  /* The writer waits at most 1 s: a one-hour pause is cut to 1 s. */
  polite_budget_set_max_wait(a, 1000);
  polite_budget_pause_until(a, "pause", now, now + INT64_C(3600000000));
  int st = polite_budget_acquire(b, "pause", polite_mono_us(), 1, 0, &w);
  char d[160];
  snprintf(d, sizeof d, "status %d, %lld ms left", st, (long long)w / 1000);
  check(st == POLITE_BUDGET_WAIT_PAUSE && w > 500000 && w <= 1000000,
        "a 1 h pause from a writer with max-wait 1 s lasts 1 s for all", d);
  /* A reader that would wait only 0.2 s is told at once, by name. */
  char msg[400];
  polite_budget_set_max_wait(b, 200);
  int too = polite_budget_pause_too_long(b, w, msg, sizeof msg);
  check(too == 1 && strstr(msg, b->uri) != NULL &&
            strstr(msg, "paused for") != NULL,
        "a pause longer than the reader's max-wait is reported", msg);
  polite_budget_set_max_wait(b, 0);
  check(polite_budget_pause_too_long(b, w, NULL, 0) == 0,
        "the default max-wait (15 min) allows it", NULL);
  /* clear removes it for everyone. */
  int rc = polite_budget_clear(b, "pause", polite_mono_us());
  st = polite_budget_acquire(a, "pause", polite_mono_us(), 1, 0, &w);
  check(rc == 0 && st == POLITE_BUDGET_ADMITTED,
        "clear removes the pause: the next start is admitted at once", NULL);
}

static void test_learned_rate(polite_budget *a, polite_budget *b) {
  const char *k = "rate";
  polite_shared_rate s = {0, 0, 0, 0};
  int64_t w;
  /* Nothing learned: unlimited (the budgets are opened with rate 0). */
  polite_budget_acquire(b, k, polite_mono_us(), 1, 0, &w);
  polite_budget_shared_rate(b, k, &s);
  check(s.rate_per_s == 0, "nothing learned at first", NULL);
  /* A raise from nothing, then a cut by the other participant. */
  polite_shared_rate up = {50, 0, 0, 0};
  int rc1 = polite_budget_publish_rate(a, k, polite_mono_us(), &up, 0);
  polite_shared_rate cut = {10, 12, up.generation, 0};
  int rc2 = polite_budget_publish_rate(b, k, polite_mono_us(), &cut, 1);
  check(rc1 == 1 && rc2 == 1 && cut.rate_per_s == 10 &&
            cut.generation == up.generation + 1,
        "a raise, then a cut that starts a generation", NULL);
  /* A's raise from before the cut is stale. */
  polite_shared_rate stale = {80, 0, up.generation, 0};
  int rc3 = polite_budget_publish_rate(a, k, polite_mono_us(), &stale, 0);
  check(rc3 == 0 && stale.rate_per_s == 10,
        "a raise from before the cut is refused (the store says 10/s)", NULL);
  /* A reads the cut at its next admission (Redis: in its answer). */
  polite_budget_acquire(a, k, polite_mono_us(), 1, 0, &w);
  polite_budget_shared_rate(a, k, &s);
  char d[160];
  snprintf(d, sizeof d, "%.2f/s, limit %.2f, generation %llu", s.rate_per_s,
           s.limit_per_s, (unsigned long long)s.generation);
  check(s.rate_per_s == 10 && s.limit_per_s == 12 &&
            s.generation == cut.generation,
        "the other participant reads the cut at its next admission", d);
  /* Another key (another host with --budget-scope host) has its own. */
  polite_shared_rate other = {0, 0, 0, 0};
  polite_budget_acquire(a, "rate-other", polite_mono_us(), 1, 0, &w);
  polite_budget_shared_rate(a, "rate-other", &other);
  check(other.rate_per_s == 0 && other.generation == 0,
        "another key's learned rate is its own (none learned)", NULL);
  /* And is paced at it: 6 more starts at 10/s take >= 0.5 s. */
  int64_t t0 = polite_mono_us(), sum = 0;
  for (int i = 0; i < 6; i++) {
    int64_t one = start_one(i % 2 ? a : b, k);
    sum = one < 0 ? -1 : sum;
  }
  int64_t took = polite_mono_us() - t0;
  snprintf(d, sizeof d, "6 starts in %lld ms", (long long)took / 1000);
  check(sum == 0 && took >= 480000 && took < 1500000,
        "both are paced at the learned 10/s", d);
  polite_budget_state st;
  polite_budget_inspect(b, k, polite_mono_us(), &st);
  check(st.rate.rate_per_s == 10, "inspect shows the learned rate", NULL);
  polite_budget_clear(a, k, polite_mono_us());
  polite_budget_acquire(b, k, polite_mono_us(), 1, 0, &w);
  polite_budget_shared_rate(b, k, &s);
  check(s.rate_per_s == 0, "clear removes the learned rate", NULL);
}

/* Two controllers, one per participant, coupled only through the budget:
 * a 429 seen by A's slows B. */
static void test_throttle_spreads(polite_budget *a, polite_budget *b) {
  const char *k = "ctl";
  polite_ratectl ca, cb;
  int64_t now = polite_mono_us();
  polite_ratectl_init(&ca, NULL, now);
  polite_ratectl_init(&cb, NULL, now);
  polite_shared_rate s;
  int is_cut;
  /* Both ramp for a second (simulated time: the controllers are pure). */
  int64_t t = now + 1500000;
  for (int i = 0; i < 2; i++) {
    polite_ratectl *c = i ? &cb : &ca;
    polite_budget *bb = i ? b : a;
    if (polite_ratectl_take_publish(c, t, &s, &is_cut)) {
      polite_budget_publish_rate(bb, k, t, &s, is_cut);
      polite_ratectl_published(c, t, &s);
    }
  }
  double before = polite_ratectl_rate(&cb, t);
  polite_ratectl_response r = {t, t - 100000, 429, 1000000, NULL};
  polite_ratectl_on_response(&ca, &r);
  if (polite_ratectl_take_publish(&ca, t, &s, &is_cut)) {
    polite_budget_publish_rate(a, k, t, &s, is_cut);
    polite_ratectl_published(&ca, t, &s);
  }
  int64_t w;
  polite_budget_acquire(b, k, polite_mono_us(), 1, 0, &w);
  polite_budget_shared_rate(b, k, &s);
  polite_ratectl_on_shared(&cb, t, &s);
  double after = polite_ratectl_rate(&cb, t);
  char d[160];
  snprintf(d, sizeof d, "B: %.1f/s before, %.1f/s after A's 429", before,
           after);
  check(is_cut == 1 && after < before && cb.cuts[POLITE_CUT_SHARED] == 1,
        "a throttle seen by one participant slows the other", d);
}

/* A learned in-flight cap one participant gives the account holds every
 * participant's admissions to it (the account's slots, everyone's), and
 * each one's count of the account's slots in use is the account's. */
static void test_slot_cap(polite_budget *a, polite_budget *b) {
  int64_t w, now = polite_mono_us();
  /* Given after an admission, as the scheduler does (it learns the cap
   * from answers). */
  int s1 = polite_budget_acquire(a, "cap", now, 0, 1, &w);
  polite_budget_set_slot_cap(a, "cap", 1);
  int s2 = polite_budget_acquire(b, "cap", now, 0, 1, &w);
  char d[160];
  snprintf(d, sizeof d, "statuses %d, %d; %u in use", s1, s2,
           polite_budget_in_use(a, "cap"));
  check(s1 == POLITE_BUDGET_ADMITTED && s2 == POLITE_BUDGET_WAIT_SLOT &&
            polite_budget_in_use(a, "cap") == 1,
        "a cap of 1 given by one participant holds the other (2 configured)",
        d);
  polite_budget_set_slot_cap(a, "cap", 0);
  s2 = polite_budget_acquire(b, "cap", polite_mono_us(), 0, 1, &w);
  snprintf(d, sizeof d, "status %d; %u in use", s2,
           polite_budget_in_use(b, "cap"));
  check(s2 == POLITE_BUDGET_ADMITTED && polite_budget_in_use(b, "cap") == 2,
        "the cap removed, the other is admitted and counts both slots", d);
  polite_budget_release(a, "cap", 1);
  polite_budget_set_slot_cap(b, "cap", 1);
  int rc = polite_budget_clear(a, "cap", polite_mono_us());
  s1 = polite_budget_acquire(a, "cap", polite_mono_us(), 0, 1, &w);
  check(rc == 0 && s1 == POLITE_BUDGET_ADMITTED,
        "clear removes the cap: both slots can be used again", NULL);
  polite_budget_release(a, "cap", 1);
  polite_budget_release(b, "cap", 1);
}

static void test_round_trips(polite_budget *a) {
  uint64_t r0 = polite__budget_redis_round_trips(a);
  int64_t w;
  for (int i = 0; i < 20; i++)
    polite_budget_acquire(a, "rt", polite_mono_us(), 0, 1, &w);
  polite_budget_release(a, "rt", 20);
  uint64_t r1 = polite__budget_redis_round_trips(a);
  char d[80];
  snprintf(d, sizeof d, "%llu round trips", (unsigned long long)(r1 - r0));
  check(r1 - r0 == 21, "20 admissions and a release: 21 round trips", d);
}

/* The rate's ceiling (the account's memory of a rate that got through):
 * kept at the higher of what is stored and what is published, by a cut or
 * a stale raise too, read by the other participant at its next admission,
 * and removed by clear. */
static void test_ceiling(polite_budget *a, polite_budget *b) {
  const char *k = "ceiling";
  int64_t w;
  polite_shared_rate up = {20, 25, 0, 40};
  polite_budget_publish_rate(a, k, polite_mono_us(), &up, 0);
  polite_shared_rate cut = {10, 12, up.generation, 0};
  polite_budget_publish_rate(b, k, polite_mono_us(), &cut, 1);
  check(cut.ceiling_per_s == 40,
        "a cut that brings no ceiling keeps the stored one", NULL);
  polite_shared_rate low = {11, 0, cut.generation, 30};
  polite_budget_publish_rate(a, k, polite_mono_us(), &low, 0);
  polite_shared_rate stale = {5, 0, up.generation, 60};
  int rc = polite_budget_publish_rate(a, k, polite_mono_us(), &stale, 0);
  check(low.ceiling_per_s == 40 && rc == 1 && stale.ceiling_per_s == 60 &&
            stale.rate_per_s == 11,
        "a lower ceiling is ignored; a higher one is kept even from a stale "
        "raise (the rate is not)",
        NULL);
  polite_shared_rate s = {0, 0, 0, 0};
  polite_budget_acquire(b, k, polite_mono_us(), 1, 0, &w);
  polite_budget_shared_rate(b, k, &s);
  char d[120];
  snprintf(d, sizeof d, "%.2f/s", s.ceiling_per_s);
  check(s.ceiling_per_s == 60,
        "the other participant reads the ceiling at its next admission", d);
  polite_budget_clear(b, k, polite_mono_us());
  polite_shared_rate none = {0, 0, 0, 0};
  polite_budget_acquire(a, k, polite_mono_us(), 1, 0, &w);
  polite_budget_shared_rate(a, k, &none);
  snprintf(d, sizeof d, "%.2f/s", none.ceiling_per_s);
  check(none.ceiling_per_s == 0, "clear removes the ceiling", d);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: budget_contract URI\n");
    return 2;
  }
  const char *uri = argv[1];
  polite_budget_config cfg = {0, 1, 2};
  polite_budget *a = NULL, *b = NULL;
  char err[256];
  if (polite_budget_open(uri, &cfg, &a, err, sizeof err) != 0) {
    fprintf(stderr, "budget_contract: %s\n", err);
    return 2;
  }
  b = a;
  if (!is_local(uri) && polite_budget_open(uri, &cfg, &b, err, sizeof err)) {
    fprintf(stderr, "budget_contract: %s\n", err);
    polite_budget_close(a);
    return 2;
  }
  test_slots(a, b);
  test_slot_cap(a, b);
  test_pause(a, b);
  test_learned_rate(a, b);
  test_ceiling(a, b);
  test_throttle_spreads(a, b);
  if (strncmp(uri, "redis://", 8) == 0)
    test_round_trips(a);
  if (b != a)
    polite_budget_close(b);
  polite_budget_close(a);
  return failures ? 1 : 0;
}
