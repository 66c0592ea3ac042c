/* Unit tests of what the learned rate makes of a window's answers
 * (lib/rateplan.c polite_rate_plan_after, lib/ratectl.c "The server's
 * window"), pure, on a fake clock: requests in flight count against what
 * remains, the window's end is placed from the answers (a delta from the
 * request's start, a time from the answer's), answers of an earlier window
 * are ignored, and a passed end holds nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <polite/ratectl.h>

#define SEC INT64_C(1000000)
#define MS INT64_C(1000)
#define NOW_MS INT64_C(1700000000000) /* the fake wall clock, whole second */
#define MONO (5 * SEC)

/* Parses header lines "Name: value" (NULL-terminated) answered at `at`
 * (monotonic; the wall clock moves with it). */
static void headers_of(polite_headers *h, const char *const *lines,
                       int64_t at) {
  polite_headers_init(h, NOW_MS + (at - MONO) / 1000);
  for (; *lines != NULL; lines++)
    polite_headers_feed_line(h, *lines, strlen(*lines));
}

/* Requests in flight are not counted in what an answer says remains yet:
 * 5 remaining with 3 started after the answered request leaves 2 to spread
 * over the reset; 5 started after leaves none, which waits for the reset.
 * Token pairs are not requests and stay as they are. */
static void in_flight_count_against_remaining(void **state) {
  (void)state;
  const char *five[] = {"RateLimit: \"p\";r=5;t=10", NULL};
  polite_headers h;
  headers_of(&h, five, MONO);
  polite_rate_plan p0, p3, p5;
  assert_int_equal(polite_rate_plan_after(&h, MONO, 0, &p0), 1);
  assert_int_equal(polite_rate_plan_after(&h, MONO, 3, &p3), 1);
  assert_int_equal(polite_rate_plan_after(&h, MONO, 5, &p5), 1);
  assert_int_equal(p0.reason, POLITE_PLAN_SPREAD);
  assert_int_equal(p0.remaining, 5);
  assert_int_equal(p3.reason, POLITE_PLAN_SPREAD);
  assert_int_equal(p3.remaining, 2);
  assert_int_equal(p3.reset_us, 10 * SEC);
  assert_int_equal(p3.interval_us, (int64_t)(10e6 / 2 * 1.01) + 1 + 1000);
  assert_int_equal(p5.reason, POLITE_PLAN_WAIT_RESET);
  assert_int_equal(p5.remaining, 0);
  assert_true(p5.wait_us >= 10 * SEC);
  /* polite_rate_plan_headers is started_after 0. */
  polite_rate_plan q;
  polite_rate_plan_headers(&h, MONO, &q);
  assert_int_equal(q.interval_us, p0.interval_us);
  /* Tokens: an OpenAI token pair with r > 0 plans nothing either way. */
  const char *tok[] = {"x-ratelimit-remaining-tokens: 100",
                       "x-ratelimit-reset-tokens: 1s", NULL};
  headers_of(&h, tok, MONO);
  assert_int_equal(polite_rate_plan_after(&h, MONO, 200, &q), 0);
}

/* A reset sent as a delta is marked so, an epoch second as a time. */
static void absolute_resets_are_marked(void **state) {
  (void)state;
  polite_headers h;
  polite_rate_plan p;
  const char *delta[] = {"X-RateLimit-Remaining: 4", "X-RateLimit-Reset: 30",
                         NULL};
  headers_of(&h, delta, MONO);
  polite_rate_plan_headers(&h, MONO, &p);
  assert_int_equal(p.reason, POLITE_PLAN_SPREAD);
  assert_int_equal(p.reset_absolute, 0);
  assert_int_equal(p.reset_us, 30 * SEC);
  const char *epoch[] = {"X-RateLimit-Remaining: 4",
                         "X-RateLimit-Reset: 1700000030", NULL};
  headers_of(&h, epoch, MONO);
  polite_rate_plan_headers(&h, MONO, &p);
  assert_int_equal(p.reset_absolute, 1);
  assert_int_equal(p.reset_us, 30 * SEC);
  const char *fields[] = {"RateLimit-Remaining: 4",
                          "RateLimit-Reset: 1700000030", NULL};
  headers_of(&h, fields, MONO);
  polite_rate_plan_headers(&h, MONO, &p);
  assert_int_equal(p.reset_absolute, 1);
}

/* One answer to the controller: the request started at `started`, the
 * answer came at `at`. Returns the rate right after it. */
static double answer(polite_ratectl *c, const char *const *lines,
                     int64_t started, int64_t at) {
  polite_headers h;
  headers_of(&h, lines, at);
  polite_rate_plan p;
  int has = polite_rate_plan_after(
      &h, at, polite_ratectl_started_after(c, started), &p);
  polite_ratectl_response r = {at, started, 200, -1, has ? &p : NULL};
  polite_ratectl_on_response(c, &r);
  return polite_ratectl_rate(c, at);
}

/* An IETF answer of the 20-per-2 s policy saying r remain, reset t s. */
static double answer_ietf(polite_ratectl *c, int r, int t, int64_t started,
                          int64_t at) {
  char rl[64];
  snprintf(rl, sizeof rl, "RateLimit: \"p\";r=%d;t=%d", r, t);
  const char *lines[] = {rl, "RateLimit-Policy: \"p\";q=20;w=2", NULL};
  return answer(c, lines, started, at);
}

/* A fresh controller whose first request, started at MONO, opened a
 * window: "19 remain, reset 2 s", answered 100 ms later. */
static void open_window(polite_ratectl *c) {
  polite_ratectl_init(c, NULL, MONO);
  polite_ratectl_on_start(c, MONO);
  answer_ietf(c, 19, 2, MONO, MONO + 100 * MS);
}

/* The window's end is the earliest start + reset of its answers: a
 * second answer whose rounded-up reset says later does not move it, so
 * what remains is spread over the time really left. */
static void end_is_the_sharpest_bound(void **state) {
  (void)state;
  polite_ratectl c;
  open_window(&c);
  assert_int_equal(c.win_end_us, MONO + 2 * SEC);
  assert_int_equal(c.win_start_us, MONO);
  /* 1.2 s in, 10 remain and the reset says 1 (rounded up from 0.8): the
   * end stays, and 10 over 0.7 s would be above the average: capped at
   * q/w with the margin. */
  polite_ratectl_on_start(&c, MONO + 1200 * MS);
  double r = answer_ietf(&c, 10, 1, MONO + 1200 * MS, MONO + 1300 * MS);
  assert_int_equal(c.win_end_us, MONO + 2 * SEC);
  assert_true(r > 9.7 && r < 10.0);
  /* 3 remain over the 0.7 s left: about 4.2/s, not 3/s as over t = 1. */
  polite_ratectl_on_start(&c, MONO + 1250 * MS);
  r = answer_ietf(&c, 3, 1, MONO + 1250 * MS, MONO + 1300 * MS);
  assert_true(r > 3.9 && r < 4.3);
}

/* A reset sent as a time ends the window at the answer's time + reset
 * (the client made the delta when the answer came), not the start's: a
 * latency later, never earlier than the server's end. */
static void time_reset_counts_from_the_answer(void **state) {
  (void)state;
  polite_ratectl c;
  polite_ratectl_init(&c, NULL, MONO);
  polite_ratectl_on_start(&c, MONO);
  const char *epoch[] = {"X-RateLimit-Remaining: 9",
                         "X-RateLimit-Reset: 1700000002", NULL};
  /* answered 300 ms after the start: the epoch is 1.7 s away by then */
  answer(&c, epoch, MONO, MONO + 300 * MS);
  assert_int_equal(c.win_end_us, MONO + 2 * SEC);
  const char *delta[] = {"X-RateLimit-Remaining: 9", "X-RateLimit-Reset: 2",
                         NULL};
  polite_ratectl_init(&c, NULL, MONO);
  polite_ratectl_on_start(&c, MONO);
  answer(&c, delta, MONO, MONO + 300 * MS);
  assert_int_equal(c.win_end_us, MONO + 2 * SEC);
}

/* After a new window opened (what remains jumped up), a late answer of a
 * request started in the earlier window neither cuts the rate nor holds:
 * what it says remains was that window's. */
static void earlier_window_answers_are_ignored(void **state) {
  (void)state;
  polite_ratectl c;
  open_window(&c);
  polite_ratectl_on_start(&c, MONO + 1000 * MS);
  answer_ietf(&c, 9, 1, MONO + 1000 * MS, MONO + 1100 * MS);
  assert_int_equal(c.win_start_us, MONO);
  polite_ratectl_on_start(&c, MONO + 1950 * MS); /* last of window 1 */
  polite_ratectl_on_start(&c, MONO + 2050 * MS); /* first of window 2 */
  double before = answer_ietf(&c, 19, 2, MONO + 2050 * MS, MONO + 2150 * MS);
  assert_int_equal(c.win_start_us, MONO + 2050 * MS);
  double after = answer_ietf(&c, 0, 1, MONO + 1950 * MS, MONO + 2160 * MS);
  assert_true(fabs(after - before) < 1e-9);
  assert_true(polite_ratectl_hold_until(&c) <= MONO + 2160 * MS);
}

/* r = 0 from the window that just ended (its sharp end has passed: the
 * reset "1" is a rounding of a few ms) holds nothing; r = 0 with the end
 * ahead holds until that end, not the rounded-up reset. */
static void reset_hold_is_sharp(void **state) {
  (void)state;
  polite_ratectl c;
  open_window(&c);
  polite_ratectl_on_start(&c, MONO + 1500 * MS);
  answer_ietf(&c, 0, 1, MONO + 1500 * MS, MONO + 1600 * MS);
  int64_t hold = polite_ratectl_hold_until(&c);
  assert_true(hold >= MONO + 2 * SEC);
  assert_true(hold <= MONO + 2 * SEC + 10 * MS); /* not 2.6 s */
  open_window(&c);
  polite_ratectl_on_start(&c, MONO + 1990 * MS);
  answer_ietf(&c, 0, 1, MONO + 1990 * MS, MONO + 2090 * MS);
  assert_true(polite_ratectl_hold_until(&c) <= MONO + 2090 * MS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(in_flight_count_against_remaining),
      cmocka_unit_test(absolute_resets_are_marked),
      cmocka_unit_test(end_is_the_sharpest_bound),
      cmocka_unit_test(time_reset_counts_from_the_answer),
      cmocka_unit_test(earlier_window_answers_are_ignored),
      cmocka_unit_test(reset_hold_is_sharp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
