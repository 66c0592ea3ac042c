/* Unit tests of the learned rate's probe after a landing
 * (lib/ratectl_probe.c), pure, on a fake clock: once what got through
 * passed the limit by 10% over the evidence window the probe climbs fast
 * (a raised limit is found in seconds); callers that start less than the
 * rate, a limiter that named no wait, and a cut keep the slow probe. */
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
#define LAT (100 * MS)
#define RING 64

/* Requests in flight: started, answered LAT later. */
typedef struct {
  polite_ratectl c;
  int64_t start[RING];
  int head, n;
  int64_t t; /* the fake clock */
} world;

/* Answers every request in flight whose answer is due by `until`. */
static void answer_due(world *w, int64_t until, int status, int64_t wait) {
  while (w->n > 0 && w->start[w->head] + LAT <= until) {
    int64_t s = w->start[w->head];
    polite_ratectl_response r = {s + LAT, s, status, wait, NULL};
    polite_ratectl_on_response(&w->c, &r);
    w->head = (w->head + 1) % RING;
    w->n--;
  }
}

static void start_one(world *w) {
  polite_ratectl_on_start(&w->c, w->t);
  w->start[(w->head + w->n) % RING] = w->t;
  w->n++;
}

/* Starts requests until `until`: at the controller's rate, or at `cap`
 * per second when that is lower (callers that send less than allowed);
 * every answer is a 200 (the limit is far above). */
static void send_until(world *w, int64_t until, double cap) {
  while (w->t < until) {
    double r = polite_ratectl_rate(&w->c, w->t);
    if (cap > 0 && cap < r)
      r = cap;
    answer_due(w, w->t, 200, -1);
    start_one(w);
    w->t += (int64_t)(1e6 / r);
  }
  answer_due(w, w->t, 200, -1);
}

/* Slow start with clean answers until the ramp reaches 40/s, then one 429
 * naming `wait` (-1: none); returns with the clock at the pause's end and
 * the requests in flight answered. */
static void ramp_then_429(world *w, int64_t wait) {
  memset(w, 0, sizeof *w);
  polite_ratectl_config cfg = {0, 0, 0, 8};
  polite_ratectl_init(&w->c, &cfg, 0);
  while (polite_ratectl_rate(&w->c, w->t) < 40) {
    answer_due(w, w->t, 200, -1);
    start_one(w);
    w->t += 10 * MS;
  }
  answer_due(w, w->t + LAT, 200, -1);
  polite_ratectl_on_start(&w->c, w->t);
  polite_ratectl_response no = {w->t + MS, w->t, 429, wait, NULL};
  assert_int_equal(polite_ratectl_on_response(&w->c, &no), POLITE_CUT_THROTTLE);
  w->t += MS + (wait > 0 ? wait : 0);
}

/* The end of the hold: where the slow probe begins. */
static int64_t probe_start(const world *w) {
  return w->c.epoch_us + w->c.hold_us;
}

/* The limit doubled while the plateau was held: every answer is a 200.
 * 10 s into the probe the rate is above twice the plateau; the slow probe
 * alone (+2%/s plus 0.02% x s^3) would be at 1.4 x it, and took 15 s of a
 * run (halve-double, ho-drop-third) to find the raised limit. */
static void raised_limit_found_fast(void **state) {
  (void)state;
  static world w;
  ramp_then_429(&w, SEC);
  double plateau = w.c.plateau;
  int64_t p = probe_start(&w);
  send_until(&w, p + 10 * SEC, 0);
  double r = polite_ratectl_rate(&w.c, w.t);
  printf("# plateau %.1f/s, 10 s into the probe %.1f/s (fast from %.1f s)\n",
         plateau, r, (double)(w.c.probe_fast_us - p) / 1e6);
  assert_true(w.c.probe_fast_us > p);
  assert_true(r > 2 * plateau);
}

/* Callers that start less than the rate allows (a gateway's clients):
 * what got through stays at what they sent, below the limit, and says
 * nothing of a raised one; the probe stays slow. */
static void callers_below_the_rate_keep_it_slow(void **state) {
  (void)state;
  static world w;
  ramp_then_429(&w, SEC);
  double plateau = w.c.plateau;
  int64_t p = probe_start(&w);
  send_until(&w, p + 10 * SEC, plateau);
  assert_true(w.c.probe_fast_us == 0);
  double r = polite_ratectl_rate(&w.c, w.t);
  assert_true(r < 1.5 * plateau);
}

/* A limiter that names no wait (a fixed window without headers) admits
 * its quota at any rate until it is spent, so what got through over a
 * short window says nothing of its limit: the probe stays slow (a fast
 * climb ran through a 5 s window's quota and cost 1.2 -> 1.4 x the floor
 * with two processes). */
static void no_named_wait_keeps_it_slow(void **state) {
  (void)state;
  static world w;
  ramp_then_429(&w, -1);
  int64_t p = probe_start(&w);
  send_until(&w, p + 10 * SEC, 0);
  assert_true(w.c.probe_fast_us == 0);
}

/* A cut ends the fast climb: the next curve approaches its own plateau
 * and holds it. */
static void a_cut_ends_the_climb(void **state) {
  (void)state;
  static world w;
  ramp_then_429(&w, SEC);
  send_until(&w, probe_start(&w) + 10 * SEC, 0);
  assert_true(w.c.probe_fast_us > 0);
  answer_due(&w, w.t + LAT, 200, -1);
  polite_ratectl_on_start(&w.c, w.t);
  polite_ratectl_response no = {w.t + MS, w.t, 429, SEC, NULL};
  assert_int_equal(polite_ratectl_on_response(&w.c, &no), POLITE_CUT_THROTTLE);
  int64_t top = w.c.epoch_us;
  double held = polite_ratectl_rate(&w.c, top);
  assert_true(fabs(polite_ratectl_rate(&w.c, top + 5 * SEC) - held) < 1e-9);
  /* ... and its probe starts slow. */
  assert_true(polite_ratectl_rate(&w.c, probe_start(&w) + 5 * SEC) <
              1.3 * held);
}

/* A limiter of `limit`/s with a tolerance of one request (nginx
 * limit_req burst=1), refusing with Retry-After 1 s; the world honours
 * the account's pause. Answers in the order they are due. */
typedef struct {
  polite_ratectl c;
  int64_t t, tat;
  int64_t start[RING], due[RING];
  int status[RING];
  int n;
  int crowd; /* the budget counts others' requests in flight too */
  /* the budget's count of the account's admissions (0: none kept), and
   * how much it grows at each of this participant's starts (1: its own
   * alone; 2: another's start between each two of its own) */
  uint64_t acct;
  unsigned acct_step;
} limited;

static void limited_answer(limited *w, int64_t until) {
  for (;;) {
    int k = -1;
    for (int i = 0; i < w->n; i++)
      if (w->due[i] <= until && (k < 0 || w->due[i] < w->due[k]))
        k = i;
    if (k < 0)
      return;
    polite_ratectl_response r = {w->due[k], w->start[k], w->status[k],
                                 w->status[k] == 429 ? SEC : -1, NULL};
    polite_ratectl_on_response(&w->c, &r);
    w->n--;
    w->start[k] = w->start[w->n];
    w->due[k] = w->due[w->n];
    w->status[k] = w->status[w->n];
  }
}

/* Sends at the controller's rate until `until` against `limit`/s. */
static void limited_until(limited *w, int64_t until, double limit) {
  int64_t period = (int64_t)(1e6 / limit);
  while (w->t < until) {
    limited_answer(w, w->t);
    if (w->t < w->c.pause_end_us) {
      w->t = w->c.pause_end_us;
      continue;
    }
    if (w->acct_step > 0)
      polite_ratectl_account_starts(&w->c, w->acct += w->acct_step);
    polite_ratectl_on_start(&w->c, w->t);
    if (w->crowd)
      polite_ratectl_account_busy(&w->c, (unsigned)w->n + 4);
    int ok = w->t >= w->tat - period;
    if (ok)
      w->tat = (w->tat > w->t ? w->tat : w->t) + period;
    w->start[w->n] = w->t;
    w->due[w->n] = w->t + (ok ? LAT : MS);
    w->status[w->n] = ok ? 200 : 429;
    w->n++;
    w->t += (int64_t)(1e6 / polite_ratectl_rate(&w->c, w->t));
  }
  limited_answer(w, w->t);
}

/* 40/s for 40 s, then 20/s (the limit moved down) until a 429 after
 * 60 s, then 40/s again from the end of its pause (`raised_at`: the
 * plateau after that cut has just begun its hold); `others`: another
 * participant is on the budget (1: it published; 2: only the budget's
 * count of the account's requests in flight shows it). Returns how long
 * after the raise the rate
 * passed 32/s, or -1 when it did not within 30 s. */
static int64_t recall_after(limited *w, int others, int64_t *raised_at) {
  memset(w, 0, sizeof *w);
  polite_ratectl_config cfg = {0, 0, 0, 8};
  polite_ratectl_init(&w->c, &cfg, 0);
  limited_until(w, 40 * SEC, 40);
  w->c.others = others == 1;
  w->crowd = others == 2;
  limited_until(w, 60 * SEC, 20);
  unsigned seen = w->c.throttles;
  while (w->c.throttles == seen && w->t < 200 * SEC)
    limited_until(w, w->t + 10 * MS, 20);
  assert_true(w->c.throttles > seen);
  limited_until(w, w->c.pause_end_us, 20);
  *raised_at = w->t;
  while (w->t < *raised_at + 30 * SEC) {
    limited_until(w, w->t + 100 * MS, 40);
    if (polite_ratectl_rate(&w->c, w->t) > 32)
      return w->t - *raised_at;
  }
  return -1;
}

/* The limit halved and came back (halve-double, ho-drop-third): the
 * plateau far below what got through for seconds before is held 10 of
 * the server's pauses, not 20, and the probe climbs back to that rate
 * fast. With the hold of 20 pauses and the slow probe the raised limit
 * was found 15-25 s late at half the rate (1.2-1.4 x the floor). */
static void a_limit_that_moved_down_is_recalled(void **state) {
  (void)state;
  static limited w;
  int64_t raised;
  int64_t found = recall_after(&w, 0, &raised);
  printf("# ceiling %.1f/s, plateau %.1f/s, back above 32/s %.1f s after "
         "the raise\n",
         w.c.probe_ceiling, w.c.plateau, (double)found / 1e6);
  assert_true(w.c.probe_ceiling > 30);
  assert_true(found >= 0 && found < 14 * SEC);
}

/* With others on the budget a follower probing first costs them all a
 * pause: the hold stays HOLD_PAUSES (20 s here) and the probe slow,
 * whether they published or only the budget counts their requests. */
static void others_keep_the_long_hold(void **state) {
  (void)state;
  static limited w;
  int64_t raised;
  for (int how = 1; how <= 2; how++) {
    int64_t found = recall_after(&w, how, &raised);
    printf("# with others (%s): back above 32/s %.1f s after the raise\n",
           how == 1 ? "published" : "in flight", (double)found / 1e6);
    assert_true(found < 0 || found > 18 * SEC);
  }
}

/* A limit that did not move: the plateau is about what got through
 * before, nothing is recalled, the plateau is held the whole 20 pauses. */
static void a_steady_limit_keeps_the_long_hold(void **state) {
  (void)state;
  static limited w;
  memset(&w, 0, sizeof w);
  polite_ratectl_config cfg = {0, 0, 0, 8};
  polite_ratectl_init(&w.c, &cfg, 0);
  limited_until(&w, 60 * SEC, 40);
  int64_t e = w.c.epoch_us;
  double held = polite_ratectl_rate(&w.c, e + 5 * SEC);
  assert_true(w.c.probe_ceiling > 30);
  assert_true(w.c.probe_ceiling <= 1.25 * w.c.plateau);
  assert_true(w.c.hold_us >= 20 * SEC);
  assert_true(fabs(polite_ratectl_rate(&w.c, e + 15 * SEC) - held) < 1e-9);
}

/* A relay (the simulation's participants of one budget send one after
 * another): A sends alone at 40/s for 40 s, then the limit halves and A's
 * cut is published; B takes over from the budget with `ceiling` as the
 * budget's memory (-1: A's own) and sends against 20/s until 15 s later
 * the limit is back at 40/s. `step`: how the budget's count grows at each
 * of B's starts. Returns how long after the raise B passed 32/s (-1: not
 * within 30 s). */
static int64_t relay_after(limited *b, double ceiling, unsigned step) {
  static limited a;
  memset(&a, 0, sizeof a);
  polite_ratectl_config cfg = {0, 0, 0, 8};
  polite_ratectl_init(&a.c, &cfg, 0);
  limited_until(&a, 40 * SEC, 40);
  limited_until(&a, 60 * SEC, 20); /* A's cuts settle under 20/s */
  /* What the budget holds after A's publishes: its rate, its limit, the
   * generation of its cuts, and its memory riding along. */
  polite_shared_rate s = {polite_ratectl_rate(&a.c, a.t), a.c.limit, 1,
                          a.c.probe_ceiling};
  printf("# A hands over at %.1f/s (limit %.1f/s), ceiling %.1f/s\n",
         s.rate_per_s, s.limit_per_s, s.ceiling_per_s);
  assert_true(s.ceiling_per_s > 30 && s.rate_per_s < 21);
  if (ceiling >= 0)
    s.ceiling_per_s = ceiling;
  memset(b, 0, sizeof *b);
  polite_ratectl_init(&b->c, &cfg, a.t);
  b->t = a.t;
  b->acct = 5000;
  b->acct_step = step;
  b->tat = a.tat;
  polite_ratectl_on_shared(&b->c, b->t, &s);
  int64_t raised = b->t + 15 * SEC;
  limited_until(b, raised, 20);
  while (b->t < raised + 30 * SEC) {
    limited_until(b, b->t + 100 * MS, 40);
    if (polite_ratectl_rate(&b->c, b->t) > 32)
      return b->t - raised;
  }
  return -1;
}

/* The account's memory is the budget's: the participant that takes over
 * after the limit moved down recalls the rate its predecessor saw get
 * through while the budget counts only its own starts; with another's
 * starts between its own, or with no memory in the budget, it holds 30 s
 * and probes slowly (sim halve-double with 2-4 processes 1.24-1.36 x
 * the floor without it). */
static void the_budget_remembers_for_whoever_sends_next(void **state) {
  (void)state;
  static limited b;
  int64_t with = relay_after(&b, -1, 1);
  double to = b.c.recall_shared;
  int64_t none = relay_after(&b, 0, 1);
  int64_t shared = relay_after(&b, -1, 2);
  printf("# B back above 32/s %.1f s after the raise with the budget's "
         "ceiling (%.1f/s), %.1f s without it, %.1f s with others' starts\n",
         (double)with / 1e6, to, (double)none / 1e6, (double)shared / 1e6);
  assert_true(to > 30);
  assert_true(with >= 0 && with < 10 * SEC);
  assert_true(none < 0 || none > 15 * SEC);
  assert_true(shared < 0 || shared > 15 * SEC);
}

/* A damaged or foreign ceiling (not finite, negative, or far above the
 * budget's rate and limit) is not adopted. */
static void a_damaged_ceiling_is_ignored(void **state) {
  (void)state;
  const double bad[] = {NAN, INFINITY, -5, 1e12, 17 * 25.0};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    polite_ratectl c;
    polite_ratectl_init(&c, NULL, 0);
    polite_shared_rate s = {20, 25, 1, bad[i]};
    polite_ratectl_on_shared(&c, SEC, &s);
    assert_true(c.shared_ceiling == 0);
  }
  polite_ratectl c;
  polite_ratectl_init(&c, NULL, 0);
  polite_shared_rate s = {20, 25, 1, 16 * 25.0};
  polite_ratectl_on_shared(&c, SEC, &s);
  assert_true(c.shared_ceiling == 16 * 25.0); /* within the bound */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(raised_limit_found_fast),
      cmocka_unit_test(callers_below_the_rate_keep_it_slow),
      cmocka_unit_test(no_named_wait_keeps_it_slow),
      cmocka_unit_test(a_cut_ends_the_climb),
      cmocka_unit_test(a_limit_that_moved_down_is_recalled),
      cmocka_unit_test(others_keep_the_long_hold),
      cmocka_unit_test(a_steady_limit_keeps_the_long_hold),
      cmocka_unit_test(the_budget_remembers_for_whoever_sends_next),
      cmocka_unit_test(a_damaged_ceiling_is_ignored),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
