/* Unit tests of the gateway's rules inside the scheduler
 * (lib/sched_account.c, lib/sched_submit.c, lib/sched_response.c) on a
 * fake clock with the real local budget: requests handed in as clients
 * send them (polite__sched_submit), a bounded queue per account, a wait
 * that cannot be afforded answered at once with when the account opens
 * again, a spent quota stopping one account, the retry safety rules, the
 * drain and a client that gives up. Each runs in microseconds
 * (sched_sim.h). */
#include "sched_sim.h"

#include "sched_internal.h"

/* Arrival times (us after T0) for up to 64 requests: all at once. */
static const int64_t at_once[64] = {0};

static int64_t last_start(const sim *x) {
  return x->n_starts ? x->starts[x->n_starts - 1].at_us : -1;
}

static unsigned starts_of(const sim *x, unsigned req) {
  unsigned n = 0;
  for (unsigned i = 0; i < x->n_starts; i++)
    n += x->starts[i].req == req;
  return n;
}

/* ---- a bounded queue per account --------------------------------------- */

/* queue-max 3 at 1/s: six clients at once; three wait (the first starts at
 * once, the second and third wait their turn), the fourth and later find
 * the queue full and end at once, never sent, told to come back when the
 * three ahead have started (3 s). A client arriving once the queue drained
 * is served. */
static void full_queue_ends_at_once(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 1, 1, 0, 7, ok200);
  x.o.queue_max = 3;
  static const int64_t arrive[7] = {0, 0, 0, 0, 0, 0, 10 * SEC};
  x.arrive_us = arrive;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_QUEUE_FULL), 3);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 4);
  for (unsigned i = 3; i < 6; i++) {
    char id[8];
    snprintf(id, sizeof id, "r%u", i);
    const sim_result *r = sim_find(&x, id);
    assert_int_equal(r->outcome, POLITE_OUT_QUEUE_FULL);
    assert_int_equal(r->at_us, T0);
    assert_int_equal(r->attempts, 0);
    assert_int_equal(r->retry_after_ms, 3000);
    assert_non_null(strstr(r->error, "queue-max 3"));
    assert_int_equal(starts_of(&x, i), 0);
  }
  assert_int_equal(sim_find(&x, "r6")->outcome, POLITE_OUT_OK);
  assert_int_equal(x.submit_rc[6], 0);
  sim_free(&x);
}

/* The bound is per account: with one account per host, a full queue for
 * one host does not refuse another host's clients; queue-max 0 means the
 * documented default (1024). */
static const char *two_hosts(const sim *x, unsigned req) {
  (void)x;
  return req % 2 ? "http://b.test/x" : "http://a.test/x";
}

static void queue_is_per_account(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 1, 1, 0, 8, ok200);
  x.o.scope_host = 1;
  x.o.queue_max = 2;
  x.url = two_hosts;
  x.arrive_us = at_once;
  assert_int_equal(sim_run(&x), 1);
  /* Per host: two wait, the third and fourth find the queue full. */
  assert_int_equal(sim_count(&x, POLITE_OUT_QUEUE_FULL), 4);
  assert_int_equal(sim_find(&x, "r4")->outcome, POLITE_OUT_QUEUE_FULL);
  assert_int_equal(sim_find(&x, "r5")->outcome, POLITE_OUT_QUEUE_FULL);
  assert_int_equal(sim_find(&x, "r1")->outcome, POLITE_OUT_OK);
  sim_free(&x);

  sim_init(&x, 1000, 1, 0, 1100, ok200);
  x.arrive_us = at_once;
  static int64_t zero[1100];
  x.arrive_us = zero;
  x.latency_us = 1 * MS;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_QUEUE_FULL), 1100 - 1024);
  sim_free(&x);
}

/* ---- pacing ------------------------------------------------------------- */

/* Per host, at 100/s each (one account per host, the gateway's default):
 * every wake-up comes 300 us late. Each host's starts keep their own
 * schedule on the budget's plan, as one account's do: 100 starts span 99
 * intervals plus one lateness, where restarting from each late start
 * would add 300 us per start (3%, and 16% measured through nginx on a
 * loaded machine, bench/adaptive/gateway_ab.sh). No two starts of a host
 * are closer than half an interval. */
static void late_wakeups_keep_each_hosts_schedule(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 100, 1, 0, 200, ok200);
  x.o.scope_host = 1;
  x.url = two_hosts;
  static int64_t zero[200];
  x.arrive_us = zero;
  x.latency_us = 1 * MS;
  x.late_us = 300;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 200);
  for (unsigned h = 0; h < 2; h++) {
    int64_t first = -1, prev = -1, last = -1;
    for (unsigned i = 0; i < x.n_starts; i++) {
      if (x.starts[i].req % 2 != h)
        continue;
      int64_t t = x.starts[i].at_us;
      if (first < 0)
        first = t;
      if (prev >= 0)
        assert_true(t - prev >= 5 * MS);
      prev = last = t;
    }
    assert_true(last - first <= 99 * 10 * MS + x.late_us);
  }
  sim_free(&x);
}

/* Request 0's first attempt is answered 429 with Retry-After `ra`, every
 * other attempt 200. */
static sim_answer first_429(sim *x, unsigned req, unsigned attempt,
                            const char *ra) {
  if (req == 0 && attempt == 1)
    return (sim_answer){429, {ra, NULL}, "slow down", 0};
  return ok200(x, req, attempt);
}

static sim_answer first_429_ra1(sim *x, unsigned req, unsigned attempt) {
  return first_429(x, req, attempt, "Retry-After: 1");
}

/* At 40/s with --spread 250ms, request 0's 429 (Retry-After: 1) pauses the
 * account: over 50 seeds the first start after it comes 1000-1025 ms after
 * the answer (the spread capped at one start interval: the pacing already
 * spreads the resume), never earlier, and the ones after it one interval
 * apart. With the whole spread the account stayed idle up to 1250 ms. */
static void paced_pause_spreads_by_one_interval(void **state) {
  (void)state;
  int64_t longest = 0;
  for (uint64_t seed = 1; seed <= 50; seed++) {
    sim x;
    sim_init(&x, 40, 1, 0, 6, first_429_ra1);
    x.o.seed = seed;
    x.o.spread_ms = 250;
    x.arrive_us = at_once;
    assert_int_equal(sim_run(&x), 1);
    assert_int_equal(sim_count(&x, POLITE_OUT_OK), 6);
    int64_t answer = x.starts[0].at_us + x.latency_us, resume = INT64_MAX;
    for (unsigned i = 1; i < x.n_starts; i++)
      if (x.starts[i].at_us > answer && x.starts[i].at_us < resume)
        resume = x.starts[i].at_us;
    assert_true(resume - answer >= 1000 * MS);
    assert_true(resume - answer <= 1025 * MS);
    if (resume - answer > longest)
      longest = resume - answer;
    for (unsigned i = 1; i < x.n_starts; i++)
      assert_true(x.starts[i].at_us - x.starts[i - 1].at_us >= 25 * MS - 1);
    sim_free(&x);
  }
  assert_true(longest > 1000 * MS); /* a spread was drawn at all */
}

/* ---- a wait that cannot be afforded ------------------------------------- */

static sim_answer first_429_ra4(sim *x, unsigned req, unsigned attempt) {
  return first_429(x, req, attempt, "Retry-After: 4");
}

/* max-wait 5 s, 2/s: request 0's 429 pauses the account for 4 s. Clients
 * that arrive 100 ms in wait for the pause and their place in the queue
 * (3.91 s + 0.5 s per request ahead): those that would wait more than 5 s
 * are answered at once, with the time their turn would come, never less
 * than the pause the server asked for; nothing is sent before the pause
 * ends. */
static void paused_account_answers_at_once(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 2, 1, 0, 11, first_429_ra4);
  x.o.max_wait_ms = 5000;
  static int64_t arrive[11];
  for (unsigned i = 1; i < 11; i++)
    arrive[i] = 100 * MS;
  x.arrive_us = arrive;
  assert_int_equal(sim_run(&x), 1);
  int64_t pause_end = T0 + 10 * MS + 4 * SEC;
  for (unsigned i = 1; i < x.n_starts; i++)
    assert_true(x.starts[i].at_us >= pause_end);
  unsigned ended = 0;
  for (unsigned i = 1; i < 11; i++) {
    char id[8];
    snprintf(id, sizeof id, "r%u", i);
    const sim_result *r = sim_find(&x, id);
    if (r->outcome == POLITE_OUT_OK)
      continue;
    ended++;
    assert_int_equal(r->outcome, POLITE_OUT_WAIT_TOO_LONG);
    assert_int_equal(r->at_us, T0 + 100 * MS);
    assert_int_equal(r->attempts, 0);
    assert_true(r->retry_after_ms * MS >= pause_end - (T0 + 100 * MS));
    assert_true(r->retry_after_ms > 5000);
    assert_int_equal(r->pause_status, 429);
    assert_non_null(strstr(r->error, "max-wait"));
  }
  /* r0's retry comes after the pause too; 3.91 + 0.5 k <= 5: k <= 2 of
   * the queue ahead, so r0's retry and the first two clients fit. */
  assert_int_equal(ended, 8);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_OK);
  sim_free(&x);
}

/* The deadline runs from the client's arrival: at 1/s with a 2.5 s
 * deadline, the fourth and fifth of five clients arriving together could
 * not start before it and end `deadline` at once, told when their turn
 * would come. */
static void deadline_counts_the_queue(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 1, 1, 0, 5, ok200);
  x.o.deadline_ms = 2500;
  x.arrive_us = at_once;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 3);
  assert_int_equal(sim_count(&x, POLITE_OUT_DEADLINE), 2);
  assert_int_equal(sim_find(&x, "r3")->retry_after_ms, 3000);
  /* r3 left the queue: r4's turn would come at the same time. */
  assert_int_equal(sim_find(&x, "r4")->retry_after_ms, 3000);
  assert_int_equal(sim_find(&x, "r4")->at_us, T0);
  assert_true(last_start(&x) <= T0 + 2 * SEC);
  sim_free(&x);

  /* A turn that comes exactly at the deadline leaves no time to send. */
  sim_init(&x, 1, 1, 0, 3, ok200);
  x.o.deadline_ms = 2000;
  x.arrive_us = at_once;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_find(&x, "r2")->outcome, POLITE_OUT_DEADLINE);
  assert_int_equal(sim_find(&x, "r2")->at_us, T0);
  sim_free(&x);

  /* A request read from a source (a batch) keeps its deadline from its
   * first attempt: the same five all run. */
  sim_init(&x, 1, 1, 0, 5, ok200);
  x.o.deadline_ms = 2500;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 5);
  sim_free(&x);
}

static sim_answer first_429_ra2(sim *x, unsigned req, unsigned attempt) {
  if (req == 0 && attempt == 1)
    return (sim_answer){429, {"Retry-After: 2", NULL}, "slow down", 0};
  return ok200(x, req, attempt);
}

/* Twenty clients at once at 10/s with a 3 s deadline all fit the queue
 * (the last starts at 1.9 s). Then the first answer is a 429 asking for
 * 2 s: the queue now starts at 2.01 s, and the clients whose turn would
 * come past their deadline are answered at the 429, not when their turn
 * comes up. */
static void pause_sweeps_the_queue(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 10, 1, 0, 20, first_429_ra2);
  x.o.deadline_ms = 3000;
  x.arrive_us = at_once;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 10);
  assert_int_equal(sim_count(&x, POLITE_OUT_DEADLINE), 10);
  for (unsigned i = 0; i < x.n_results; i++)
    if (x.results[i].outcome == POLITE_OUT_DEADLINE) {
      assert_int_equal(x.results[i].at_us, T0 + 10 * MS);
      assert_true(x.results[i].retry_after_ms >= 2000);
    }
  assert_int_equal(x.n_starts, 11); /* r0, then r1..r10 */
  sim_free(&x);
}

static sim_answer first_429_hour(sim *x, unsigned req, unsigned attempt) {
  if (req == 0)
    return (sim_answer){429, {"Retry-After: 3600", NULL}, "later", 0};
  return ok200(x, req, attempt);
}

/* A wait past max-wait refuses the account: the client that got it has
 * the 429 back at once; the clients that come during the hour are
 * answered at once, never sent, with the time left of the server's hour. */
static void refused_account_answers_clients_at_once(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 3, first_429_hour);
  static const int64_t arrive[3] = {0, 60 * SEC, 120 * SEC};
  x.arrive_us = arrive;
  x.o.max_wait_ms = 60000;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_WAIT_TOO_LONG), 3);
  const sim_result *r = sim_find(&x, "r2");
  assert_int_equal(r->at_us, T0 + 120 * SEC);
  assert_int_equal(r->retry_after_ms, 3600000 - 120000 + 10);
  assert_int_equal(r->pause_status, 429);
  assert_int_equal(sim_find(&x, "r0")->retry_after_ms, 3600000);
  sim_free(&x);
}

/* ---- a spent quota stops one account ------------------------------------ */

static sim_answer a_quota_spent(sim *x, unsigned req, unsigned attempt) {
  (void)attempt;
  if (strstr(two_hosts(x, req), "a.test") && x->now < T0 + 100 * SEC)
    return (sim_answer){
        429, {NULL}, "{\"error\":{\"code\":\"insufficient_quota\"}}", 0};
  return ok200(x, req, attempt);
}

/* With quota_per_account, a.test's spent quota stops a.test alone for the
 * documented 60 s (no reset stated): its next clients end quota_exhausted
 * at once, never sent; b.test goes on; the run does not stop. After the
 * stop a.test is tried again. */
static void quota_stops_one_account(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 6, a_quota_spent);
  x.o.scope_host = 1;
  x.o.quota_per_account = 1;
  x.url = two_hosts;
  static const int64_t arrive[6] = {0,        0,         10 * SEC,
                                    10 * SEC, 200 * SEC, 200 * SEC};
  x.arrive_us = arrive;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_QUOTA_EXHAUSTED);
  assert_int_equal(sim_find(&x, "r0")->retry_after_ms, 60000);
  const sim_result *r = sim_find(&x, "r2");
  assert_int_equal(r->outcome, POLITE_OUT_QUOTA_EXHAUSTED);
  assert_int_equal(r->attempts, 0);
  assert_int_equal(r->at_us, T0 + 10 * SEC);
  assert_int_equal(r->retry_after_ms, 50000 + 10);
  assert_int_equal(starts_of(&x, 2), 0);
  assert_int_equal(sim_find(&x, "r1")->outcome, POLITE_OUT_OK);
  assert_int_equal(sim_find(&x, "r3")->outcome, POLITE_OUT_OK);
  assert_int_equal(sim_find(&x, "r4")->outcome, POLITE_OUT_OK);
  assert_false(polite__sched_stats(x.s)->quota_stop);
  sim_free(&x);
}

static sim_answer quota_with_reset(sim *x, unsigned req, unsigned attempt) {
  (void)req, (void)attempt;
  if (x->now < T0 + 1 * SEC)
    return (sim_answer){429,
                        {"Retry-After: 30", NULL},
                        "{\"error\":{\"type\":\"insufficient_quota\"}}",
                        0};
  return ok200(x, req, attempt);
}

/* A quota answer that states its reset stops the account until then; the
 * batch's default (quota_per_account 0) stops the whole run as before. */
static void quota_stop_until_the_reset(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 3, quota_with_reset);
  x.o.quota_per_account = 1;
  static const int64_t arrive[3] = {0, 29 * SEC, 31 * SEC};
  x.arrive_us = arrive;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_find(&x, "r1")->outcome, POLITE_OUT_QUOTA_EXHAUSTED);
  assert_int_equal(sim_find(&x, "r1")->retry_after_ms, 1000 + 10);
  assert_int_equal(sim_find(&x, "r2")->outcome, POLITE_OUT_OK);
  sim_free(&x);

  sim_init(&x, 0, 1, 1, 3, quota_with_reset);
  assert_int_equal(sim_run(&x), 1);
  assert_true(polite__sched_stats(x.s)->quota_stop);
  assert_int_equal(x.n_starts, 1);
  sim_free(&x);
}

/* ---- which requests are retried ----------------------------------------- */

static const char *method_of_row;
static const char *key_of_row;

static void row_setup(sim *x, unsigned req, polite_request *r) {
  (void)x, (void)req;
  r->method = strdup(method_of_row);
  if (key_of_row)
    assert_int_equal(
        polite_request_add_header(r, "Idempotency-Key", key_of_row), 0);
}

static int row_status;
static sim_answer row_answer(sim *x, unsigned req, unsigned attempt) {
  if (attempt == 1)
    return (sim_answer){row_status, {"Retry-After: 1", NULL}, "no", 0};
  return ok200(x, req, attempt);
}

/* The safety rules as rows: method, key, --retry-writes, the answer, and
 * whether the request is sent again. A request not retried ends with the
 * server's answer (its status) after one attempt. */
static void retry_safety_rules(void **state) {
  (void)state;
  static const struct {
    const char *method, *key;
    int retry_writes, status;
    unsigned attempts;
    polite_outcome out;
  } rows[] = {
      {"GET", NULL, 0, 429, 2, POLITE_OUT_OK},
      {"HEAD", NULL, 0, 503, 2, POLITE_OUT_OK},
      {"OPTIONS", NULL, 0, 429, 2, POLITE_OUT_OK},
      {"PUT", NULL, 0, 503, 2, POLITE_OUT_OK},
      {"DELETE", NULL, 0, 429, 2, POLITE_OUT_OK},
      {"POST", "k-1", 0, 429, 2, POLITE_OUT_OK},
      {"PATCH", "k-2", 0, 503, 2, POLITE_OUT_OK},
      {"POST", NULL, 0, 429, 1, POLITE_OUT_NOT_RETRIED_UNSAFE},
      {"PATCH", NULL, 0, 503, 1, POLITE_OUT_NOT_RETRIED_UNSAFE},
      {"POST", NULL, 1, 429, 2, POLITE_OUT_OK},
      {"POST", NULL, 1, 503, 1, POLITE_OUT_NOT_RETRIED_UNSAFE},
      {"POST", NULL, 1, 0, 1, POLITE_OUT_NOT_RETRIED_UNSAFE},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    sim x;
    sim_init(&x, 0, 1, 0, 1, row_answer);
    method_of_row = rows[i].method;
    key_of_row = rows[i].key;
    row_status = rows[i].status;
    x.setup = row_setup;
    x.o.retry_writes = rows[i].retry_writes;
    x.o.max_attempts = 3;
    x.arrive_us = at_once;
    assert_int_equal(sim_run(&x), 1);
    const sim_result *r = sim_find(&x, "r0");
    print_message("row %zu: %s %s writes=%d %d\n", i, rows[i].method,
                  rows[i].key ? "keyed" : "-", rows[i].retry_writes,
                  rows[i].status);
    assert_int_equal(r->attempts, rows[i].attempts);
    assert_int_equal(r->outcome, rows[i].out);
    if (rows[i].attempts == 1)
      assert_int_equal(r->status, rows[i].status);
    else /* never sent before the server's second */
      assert_true(x.starts[1].at_us >= T0 + 10 * MS + 1 * SEC);
    sim_free(&x);
  }
}

static sim_answer always_503(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){503, {NULL}, "busy", 0};
}

static void one_attempt(sim *x, unsigned req, polite_request *r) {
  (void)x;
  r->max_attempts = req == 1 ? 1 : 0;
}

/* Attempts are capped by max-attempts, and by the request's own cap (a
 * body streamed once and not kept is never sent again). */
static void attempts_are_capped(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 2, always_503);
  x.o.max_attempts = 4;
  x.o.backoff.base_ms = 1;
  x.setup = one_attempt;
  x.arrive_us = at_once;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(starts_of(&x, 0), 4);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_RETRIES_EXHAUSTED);
  assert_int_equal(starts_of(&x, 1), 1);
  assert_int_equal(sim_find(&x, "r1")->status, 503);
  sim_free(&x);
}

/* ---- drain and clients that give up ------------------------------------- */

/* Ten clients at 1/s, then a drain with 3.5 s left: the four that start by
 * then run, the six that could not end `deadline` at once, new clients are
 * refused (POLITE_ECANCELED), and the run ends. */
static void drain_answers_what_cannot_start(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 1, 1, 0, 10, ok200);
  x.arrive_us = at_once;
  assert_int_equal(sim_run_until(&x, T0), 0);
  polite__now now = {T0, WALL0};
  polite__sched_end_by(x.s, T0 + 3500 * MS, &now);
  polite__sched_close_input(x.s);
  assert_int_equal(sim_count(&x, POLITE_OUT_DEADLINE), 6);
  for (unsigned i = 0; i < x.n_results; i++)
    assert_int_equal(x.results[i].at_us, T0);
  polite_request *late = polite_request_new();
  assert_int_equal(polite__sched_submit(x.s, late, &now), POLITE_ECANCELED);
  polite_request_free(late);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 4);
  assert_true(last_start(&x) <= T0 + 3500 * MS);
  sim_free(&x);
}

/* A waiting client that gives up ends `cancelled` at once and leaves the
 * queue: with queue-max 1, the next client fits. */
static void withdrawn_client_leaves_the_queue(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 1, 1, 0, 3, ok200);
  x.o.queue_max = 1;
  static const int64_t arrive[3] = {0, 20 * MS, 100 * MS};
  x.arrive_us = arrive;
  assert_int_equal(sim_run_until(&x, T0 + 50 * MS), 0);
  /* r0 was answered, r1 waits its turn (1/s). */
  const polite_request *r1 = NULL;
  for (size_t i = 0; i < x.s->waiting.n; i++)
    r1 = ((const polite__job *)x.s->waiting.v[i].item)->req;
  assert_non_null(r1);
  polite__now now = {x.now, WALL0};
  assert_int_equal(polite__sched_withdraw(x.s, r1, "the client left", &now), 0);
  assert_int_equal(polite__sched_withdraw(x.s, r1, "twice", &now),
                   POLITE_EINVAL);
  assert_int_equal(sim_find(&x, "r1")->outcome, POLITE_OUT_CANCELLED);
  assert_string_equal(sim_find(&x, "r1")->error, "the client left");
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_find(&x, "r2")->outcome, POLITE_OUT_OK);
  assert_int_equal(sim_count(&x, POLITE_OUT_QUEUE_FULL), 0);
  sim_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(full_queue_ends_at_once),
      cmocka_unit_test(queue_is_per_account),
      cmocka_unit_test(late_wakeups_keep_each_hosts_schedule),
      cmocka_unit_test(paced_pause_spreads_by_one_interval),
      cmocka_unit_test(paused_account_answers_at_once),
      cmocka_unit_test(deadline_counts_the_queue),
      cmocka_unit_test(pause_sweeps_the_queue),
      cmocka_unit_test(refused_account_answers_clients_at_once),
      cmocka_unit_test(quota_stops_one_account),
      cmocka_unit_test(quota_stop_until_the_reset),
      cmocka_unit_test(retry_safety_rules),
      cmocka_unit_test(attempts_are_capped),
      cmocka_unit_test(drain_answers_what_cannot_start),
      cmocka_unit_test(withdrawn_client_leaves_the_queue),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
