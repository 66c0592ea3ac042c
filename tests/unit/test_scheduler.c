/* Unit tests of the pure scheduler (lib/scheduler.c) on a fake clock with
 * the real local budget: account-wide pauses, request and run deadlines,
 * cancel and grace, the quota stop, retries spending the budget, costs,
 * --first, the lease heartbeat, max-wait, redirects and exact pacing. Each
 * runs minutes of fake time in milliseconds (sched_sim.h). */
#include "sched_sim.h"

#include "sched_heap.h"

/* ---- account-wide pause ----------------------------------------------------
 */

static sim_answer first_429(sim *x, unsigned req, unsigned attempt) {
  (void)x;
  if (req == 0 && attempt == 1)
    return (sim_answer){429, {"Retry-After: 2", NULL}, "slow down", 0};
  return ok200(x, req, attempt);
}

/* One 429 with Retry-After: 2 pauses every request of the account, also
 * those that were not answered 429, for 2 s from the answer. */
static void pause_holds_the_whole_account(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 1, 4, first_429);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_results, 4);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 4);
  assert_int_equal(x.n_starts, 5);
  int64_t answer = T0 + 10 * MS;
  for (unsigned i = 1; i < x.n_starts; i++)
    assert_true(x.starts[i].at_us >= answer + 2 * SEC);
  assert_int_equal(sim_find(&x, "r0")->attempts, 2);
  const polite_batch_stats *st = polite__sched_stats(x.s);
  assert_true(st->paused_ms >= 2000);
  assert_int_equal(st->n429, 1);
  sim_free(&x);
}

/* ---- deadlines
 * --------------------------------------------------------------- */

static sim_answer always_503(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){503, {NULL}, "busy", 0};
}

static sim_answer wait_5s(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){503, {"Retry-After: 5", NULL}, "busy", 0};
}

static sim_answer no_answer(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){0, {NULL}, NULL, 0};
}

/* A network error is retried up to max_attempts; a TLS failure that every
 * attempt would repeat (the certificate does not verify) ends the request
 * at its first attempt, tls_error, with the transport's message, also when
 * the deadline passed during the attempt. */
static void tls_failure_is_not_retried(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 2, no_answer);
  x.o.max_attempts = 5;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_NETWORK_ERROR);
  assert_int_equal(sim_find(&x, "r0")->attempts, 5);
  sim_free(&x);

  sim_init(&x, 0, 1, 0, 2, no_answer);
  x.o.max_attempts = 5;
  x.failure = POLITE_FAILURE_TLS;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 2);
  for (unsigned i = 0; i < 2; i++) {
    const sim_result *r = &x.results[i];
    assert_int_equal(r->outcome, POLITE_OUT_TLS_ERROR);
    assert_int_equal(r->attempts, 1);
    assert_non_null(strstr(r->error, "fake transport error"));
  }
  const polite_batch_stats *st = polite__sched_stats(x.s);
  assert_int_equal(st->by_outcome[POLITE_OUT_TLS_ERROR], 2);
  assert_int_equal(st->retries, 0);
  sim_free(&x);

  sim_init(&x, 0, 1, 0, 1, no_answer);
  x.failure = POLITE_FAILURE_TLS;
  x.o.deadline_ms = 5; /* the answer comes at the deadline, not after */
  x.latency_us = 5 * MS;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_TLS_ERROR);
  sim_free(&x);
}

static sim_answer slow_ok(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){200, {NULL}, "late", 10 * SEC};
}

/* Backoff retries stop at the request's deadline; a server wait that does
 * not fit ends the request at once; a slow transfer is cut at the
 * deadline and ends `deadline`. */
static void request_deadline(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 1, always_503);
  x.o.deadline_ms = 1500;
  x.o.max_attempts = 50;
  assert_int_equal(sim_run(&x), 1);
  const sim_result *r = sim_find(&x, "r0");
  assert_int_equal(r->outcome, POLITE_OUT_DEADLINE);
  assert_true(r->attempts >= 2);
  assert_true(r->at_us <= T0 + 1500 * MS + 10 * MS);
  for (unsigned i = 0; i < x.n_starts; i++)
    assert_true(x.starts[i].at_us < T0 + 1500 * MS);
  sim_free(&x);

  sim_init(&x, 0, 1, 0, 1, wait_5s);
  x.o.deadline_ms = 2000;
  assert_int_equal(sim_run(&x), 1);
  r = sim_find(&x, "r0");
  assert_int_equal(r->outcome, POLITE_OUT_DEADLINE);
  assert_int_equal(r->attempts, 1);
  assert_int_equal(r->at_us, T0 + 10 * MS); /* at once, not after 2 s */
  sim_free(&x);

  sim_init(&x, 0, 1, 0, 1, slow_ok);
  x.o.deadline_ms = 100;
  assert_int_equal(sim_run(&x), 1);
  r = sim_find(&x, "r0");
  assert_int_equal(r->outcome, POLITE_OUT_DEADLINE);
  assert_int_equal(r->at_us, T0 + 100 * MS);
  sim_free(&x);
}

/* The run deadline ends what has not started, and every request read gets
 * a result. At 2/s, starts at 0 and 0.5 s fit in a 1 s run. */
static void run_deadline(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 2, 1, 0, 10, ok200);
  x.o.run_deadline_ms = 1000;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_results, 10);
  assert_int_equal(x.n_starts, 2);
  assert_int_equal(x.starts[1].at_us, T0 + 500 * MS);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 2);
  assert_int_equal(sim_count(&x, POLITE_OUT_DEADLINE), 8);
  sim_free(&x);
}

/* ---- cancel and grace
 * ------------------------------------------------------------ */

static sim_answer takes_5s(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){200, {NULL}, "ok", 5 * SEC};
}

static sim_answer takes_1s(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){200, {NULL}, "ok", 1 * SEC};
}

/* Cancel ends the waiting requests at once and gives the in-flight ones
 * the grace (2 s): those still running then are aborted; those that end
 * within it keep their answers. */
static void cancel_and_grace(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 2, 5, takes_5s);
  x.cancel_at = T0 + 100 * MS;
  assert_int_equal(sim_run(&x), 1);
  /* Two in flight, one read and waiting for a slot; the rest never read
   * (a request gets a result once it is read). */
  assert_int_equal(x.n_starts, 2);
  assert_int_equal(x.read, 3);
  assert_int_equal(x.n_results, 3);
  assert_int_equal(sim_count(&x, POLITE_OUT_CANCELLED), 3);
  assert_int_equal(x.aborts, 2);
  for (unsigned i = 0; i < x.n_results; i++) {
    int inflight = x.results[i].attempts == 1;
    assert_int_equal(x.results[i].at_us,
                     inflight ? T0 + 2100 * MS : T0 + 100 * MS);
  }
  assert_true(polite__sched_stats(x.s)->cancelled);
  sim_free(&x);

  sim_init(&x, 0, 1, 2, 5, takes_1s);
  x.cancel_at = T0 + 100 * MS;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 2);
  assert_int_equal(sim_count(&x, POLITE_OUT_CANCELLED), 1);
  assert_int_equal(x.n_results, x.read);
  assert_int_equal(x.aborts, 0);
  sim_free(&x);
}

/* ---- quota stop
 * ------------------------------------------------------------------ */

static sim_answer quota_spent(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){
      429, {NULL}, "{\"error\":{\"code\":\"insufficient_quota\"}}", 0};
}

/* A spent quota stops the run: nothing else starts, the waiting requests
 * end `cancelled`. */
static void quota_stop(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 1, 3, quota_spent);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 1);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_QUOTA_EXHAUSTED);
  assert_int_equal(x.read, 2); /* the second waited for the slot */
  assert_int_equal(sim_count(&x, POLITE_OUT_CANCELLED), 1);
  assert_true(polite__sched_stats(x.s)->quota_stop);
  sim_free(&x);
}

/* ---- the budget: retries and costs
 * --------------------------------------------- */

static sim_answer fails_twice(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req;
  if (attempt < 3)
    return (sim_answer){500, {NULL}, "oops", 0};
  return (sim_answer){200, {NULL}, "ok", 0};
}

/* Retries pay the start rate like first attempts: a 1 ms backoff still
 * waits for the 10/s spacing. */
static void retries_spend_the_budget(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 10, 1, 0, 1, fails_twice);
  x.o.backoff.base_ms = 1;
  x.o.backoff.cap_ms = 1;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 3);
  assert_int_equal(x.starts[1].at_us, T0 + 100 * MS);
  assert_int_equal(x.starts[2].at_us, T0 + 200 * MS);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_OK);
  const polite_batch_stats *st = polite__sched_stats(x.s);
  assert_int_equal(st->units, 3);
  assert_int_equal(st->retries, 2);
  sim_free(&x);
}

/* A request of cost 5 spends five rate units: at 10/s starts are 500 ms
 * apart. */
static void costs(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 10, 1, 0, 3, ok200);
  x.cost = 5;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 3);
  assert_int_equal(x.starts[1].at_us - x.starts[0].at_us, 500 * MS);
  assert_int_equal(x.starts[2].at_us - x.starts[1].at_us, 500 * MS);
  assert_int_equal(polite__sched_stats(x.s)->units, 15);
  sim_free(&x);
}

/* ---- --first
 * ------------------------------------------------------------------------ */

static void first_n_requests(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 5, ok200);
  x.o.max_requests = 2;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.read, 2);
  assert_int_equal(x.n_results, 2);
  assert_true(polite__sched_stats(x.s)->input_done);
  sim_free(&x);
}

/* ---- heartbeat: a counting layer over the real local budget
 * ------------------------ */

typedef struct {
  polite_budget base;
  polite_budget *real;
  unsigned renewals;
} counting_budget;

static int cb_acquire(polite_budget *b, const char *key, int64_t now,
                      unsigned units, unsigned slots, int64_t *w) {
  counting_budget *c = (counting_budget *)b;
  if (units == 0 && slots == 0)
    c->renewals++;
  return polite_budget_acquire(c->real, key, now, units, slots, w);
}
static void cb_release(polite_budget *b, const char *key, unsigned slots) {
  polite_budget_release(((counting_budget *)b)->real, key, slots);
}
static int cb_pause(polite_budget *b, const char *key, int64_t now,
                    int64_t until) {
  return polite_budget_pause_until(((counting_budget *)b)->real, key, now,
                                   until);
}
static int64_t cb_paused(polite_budget *b, const char *key, int64_t now) {
  return polite_budget_paused_for(((counting_budget *)b)->real, key, now);
}
static void cb_close(polite_budget *b) {
  (void)b;
}
static int cb_publish(polite_budget *b, const char *key, int64_t now,
                      polite_shared_rate *r, int is_cut) {
  return polite_budget_publish_rate(((counting_budget *)b)->real, key, now, r,
                                    is_cut);
}
static int cb_shared(polite_budget *b, const char *key,
                     polite_shared_rate *out) {
  return polite_budget_shared_rate(((counting_budget *)b)->real, key, out);
}
static int cb_inspect(polite_budget *b, const char *key, int64_t now,
                      polite_budget_state *out) {
  return polite_budget_inspect(((counting_budget *)b)->real, key, now, out);
}
static int cb_clear(polite_budget *b, const char *key, int64_t now) {
  return ((counting_budget *)b)
      ->real->vt->clear(((counting_budget *)b)->real, key, now);
}
static const polite_budget_vtable counting_vt = {
    "counting", cb_acquire, cb_release, cb_pause,   cb_paused,
    cb_close,   cb_publish, cb_shared,  cb_inspect, cb_clear,
    NULL,       NULL,       NULL,       NULL}; /* no slot cap, no account
                                               count, admissions, window */

static sim_answer takes_3500ms(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){200, {NULL}, "ok", 3500 * MS};
}

/* While a transfer runs, its account's leases are renewed once per
 * heartbeat_ms (at 1, 2 and 3 s of a 3.5 s request); off, never. */
static void lease_heartbeat(void **state) {
  (void)state;
  for (int on = 0; on <= 1; on++) {
    sim x;
    sim_init(&x, 0, 1, 1, 1, takes_3500ms);
    counting_budget cb;
    memset(&cb, 0, sizeof cb);
    cb.base.vt = &counting_vt;
    cb.base.cfg = x.budget->cfg;
    cb.real = x.budget;
    x.o.budget = &cb.base;
    x.o.heartbeat_ms = on ? 1000 : 0;
    assert_int_equal(sim_run(&x), 1);
    assert_int_equal(sim_count(&x, POLITE_OUT_OK), 1);
    assert_int_equal(cb.renewals, on ? 3 : 0);
    sim_free(&x);
  }
}

/* ---- max-wait
 * ------------------------------------------------------------------------- */

static sim_answer wait_forever(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){429, {"Retry-After: 99999999999", NULL}, "no", 0};
}

/* A 429 asking for 3000 years ends the request `wait_too_long` at once,
 * ends the account's waiting requests too, and writes no pause to the
 * budget (a shared budget would block other processes). */
static void server_wait_beyond_max_wait(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 1, 3, wait_forever);
  assert_int_equal(x.o.max_wait_ms, 900000); /* the documented default */
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 1);
  assert_int_equal(x.n_results, 3);
  assert_int_equal(sim_count(&x, POLITE_OUT_WAIT_TOO_LONG), 3);
  for (unsigned i = 0; i < 3; i++)
    assert_int_equal(x.results[i].at_us, T0 + 10 * MS);
  assert_int_equal(polite_budget_paused_for(x.budget, NULL, x.now), 0);
  assert_non_null(strstr(sim_find(&x, "r1")->error, "max-wait"));
  sim_free(&x);
}

/* A pause already in the budget (another participant's) that outlasts
 * max-wait ends the requests without a start; with no limit they wait. */
static void budget_pause_beyond_max_wait(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 2, ok200);
  polite_budget_set_max_wait(x.budget, -1); /* a writer with no limit */
  polite_budget_pause_until(x.budget, NULL, T0, T0 + 3600 * SEC);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 0);
  assert_int_equal(sim_count(&x, POLITE_OUT_WAIT_TOO_LONG), 2);
  assert_non_null(strstr(x.results[0].error, "paused"));
  sim_free(&x);

  sim_init(&x, 0, 1, 0, 2, ok200);
  x.o.max_wait_ms = 0;
  polite_budget_set_max_wait(x.budget, -1); /* a writer with no limit */
  polite_budget_pause_until(x.budget, NULL, T0, T0 + 3600 * SEC);
  assert_int_equal(sim_run_until(&x, T0 + 60 * SEC), 0);
  assert_int_equal(x.n_starts, 0);
  assert_int_equal(x.n_results, 0);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.starts[0].at_us, T0 + 3600 * SEC);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 2);
  sim_free(&x);
}

/* ---- redirects
 * ------------------------------------------------------------------------ */

static sim_answer redirect(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){
      302,
      {"Location: https://u:pw@next.test/p?token=SEKRIT&a=1", NULL},
      "",
      0};
}

/* A 3xx is not followed; the result carries its Location, redacted. */
static void redirect_location_in_result(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 1, redirect);
  assert_int_equal(sim_run(&x), 1);
  const sim_result *r = sim_find(&x, "r0");
  assert_int_equal(r->outcome, POLITE_OUT_OK);
  assert_int_equal(r->status, 302);
  assert_non_null(strstr(r->location, "next.test/p"));
  assert_null(strstr(r->location, "SEKRIT"));
  assert_null(strstr(r->location, "pw@"));
  assert_int_equal(x.n_starts, 1);
  sim_free(&x);
}

/* ---- pacing
 * ---------------------------------------------------------------------------
 */

/* Every wake-up comes 50 us late. The schedule stays on the theoretical
 * arrival time: 2000 starts at 1000/s span exactly 1999 intervals (plus the
 * one lateness), where restarting from each late start would add 50 us per
 * start (5%). A lateness above half an interval loses only what is beyond
 * that half (no catch-up burst): 600 us late at 1000/s gives one start
 * every 1100 us, not 1600 us as when a late start restarted the schedule, and
 * no two starts are ever closer than half an interval. */
static void late_wakeups_keep_the_schedule(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 1000, 1, 0, 2000, ok200);
  x.latency_us = 100;
  x.late_us = 50;
  x.o.max_pending = 64;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 2000);
  assert_int_equal(x.starts[1999].at_us - x.starts[0].at_us, 1999 * MS + 50);
  for (unsigned i = 1; i < x.n_starts; i++)
    assert_true(x.starts[i].at_us - x.starts[i - 1].at_us >= 500);
  sim_free(&x);

  sim_init(&x, 1000, 1, 0, 100, ok200);
  x.latency_us = 100;
  x.late_us = 600;
  assert_int_equal(sim_run(&x), 1);
  /* The first start is on time, so the first gap carries the whole 600 us
   * (1600 us); every later one is 1100 us. */
  assert_int_equal(x.starts[99].at_us - x.starts[0].at_us, 1600 + 98 * 1100);
  for (unsigned i = 1; i < x.n_starts; i++)
    assert_true(x.starts[i].at_us - x.starts[i - 1].at_us >= 500);
  sim_free(&x);
}

/* Every admission that is due starts in the same turn: a burst of 5 at
 * the first step, the sixth one interval later. */
static void due_admissions_start_in_one_turn(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 100, 5, 0, 6, ok200);
  assert_int_equal(sim_run_until(&x, T0), 0);
  assert_int_equal(x.n_starts, 5);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.starts[5].at_us, T0 + 10 * MS);
  sim_free(&x);
}

/* A server-side GCRA on the arrival times (interval T, tolerance tau) in
 * *tat: ok200, or 429 with Retry-After: 1 counted in *n429. */
static sim_answer gcra_server(sim *x, int64_t T, int64_t tau, int64_t *tat,
                              unsigned *n429) {
  int64_t t = x->now;
  if (*tat - tau > t) {
    (*n429)++;
    return (sim_answer){429, {"Retry-After: 1", NULL}, "slow down", 0};
  }
  *tat = (*tat > t ? *tat : t) + T;
  return ok200(x, 0, 0);
}

/* A server-side limiter of exactly --rate 1000/s --burst 4 (tolerance 3
 * intervals) judges every start. */
static int64_t burst_tat;
static unsigned burst_429;
static sim_answer limited_1000_burst_4(sim *x, unsigned req, unsigned attempt) {
  (void)req, (void)attempt;
  return gcra_server(x, MS, 3 * MS, &burst_tat, &burst_429);
}

/* At --burst N the limiter's tolerance absorbs late wake-ups: every
 * wake-up 1.5 intervals late (a lateness --burst 1 loses at every start)
 * loses no start. The first N start at once, no N + 1 starts fall within
 * one interval, a server enforcing exactly the same limit never refuses
 * one (never earlier than the limiter allows), and 2000 starts end when
 * the plan says plus one lateness. */
static void late_wakeups_at_burst_n_lose_nothing(void **state) {
  (void)state;
  sim x;
  burst_tat = 0;
  burst_429 = 0;
  sim_init(&x, 1000, 4, 0, 2000, limited_1000_burst_4);
  x.latency_us = 100;
  x.late_us = 1500;
  x.o.max_pending = 64;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_starts, 2000);
  assert_int_equal(burst_429, 0);
  for (unsigned i = 0; i < 4; i++)
    assert_int_equal(x.starts[i].at_us, T0);
  for (unsigned i = 0; i + 4 < x.n_starts; i++)
    assert_true(x.starts[i + 4].at_us - x.starts[i].at_us >= MS);
  assert_true(x.starts[1999].at_us - T0 <= 1996 * MS + x.late_us);
  sim_free(&x);
}

/* ---- the learned rate ------------------------------------------------------
 */

/* A server-side limiter: 20 starts/s with a burst of 2 (a GCRA on the
 * arrival times), answering 429 with Retry-After: 1 above it. */
static int64_t limiter_tat;
static unsigned limiter_429;
static sim_answer limited_20(sim *x, unsigned req, unsigned attempt) {
  (void)req, (void)attempt;
  return gcra_server(x, 50 * MS, 50 * MS, &limiter_tat, &limiter_429);
}

typedef struct {
  unsigned n, throttle, probe, max_rate, start, budget;
  double last, highest;
} rate_log;
static rate_log rates;
static void on_rate(void *ud, const polite_rate_change *c) {
  (void)ud;
  if (rates.n == 0)
    assert_true(c->previous_per_s < 0); /* the first has no previous */
  else
    assert_true(c->previous_per_s >= 0);
  rates.n++;
  rates.throttle += strcmp(c->reason, "throttle") == 0;
  rates.probe += strcmp(c->reason, "probe") == 0;
  rates.max_rate += strcmp(c->reason, "max_rate") == 0;
  rates.start += strcmp(c->reason, "start") == 0;
  rates.budget += strcmp(c->reason, "budget") == 0;
  assert_true(c->rate_per_s > 0);
  assert_non_null(c->detail);
  rates.last = c->rate_per_s;
  if (c->rate_per_s > rates.highest)
    rates.highest = c->rate_per_s;
}

/* Without a rate, the start rate is learned: it ramps up from a first
 * estimate, is cut by the limiter's 429s, and settles near the limit with
 * few 429s; every request ends ok. */
static void learned_rate_finds_the_limit(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 8, 600, limited_20);
  x.o.rate_mode = POLITE_RATE_AUTO;
  x.o.on_rate = on_rate;
  x.o.max_attempts = 10;
  x.o.spread_ms = 100;
  limiter_tat = 0;
  limiter_429 = 0;
  memset(&rates, 0, sizeof rates);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 600);
  const polite_batch_stats *st = polite__sched_stats(x.s);
  assert_true(st->rate_learned);
  assert_int_equal(rates.start, 1);
  assert_true(rates.throttle >= 1);
  assert_int_equal(st->rate_cuts_throttle, rates.throttle);
  assert_true(rates.probe >= 1);
  assert_true(limiter_429 <= 600 / 20); /* at most 5% */
  double wall_s = (double)(x.now - T0) / 1e6;
  print_message("learned: %u 429s, wall %.1f s (floor 30 s), rate first %.1f "
                "lowest %.1f highest %.1f final %.1f/s, %u cuts\n",
                limiter_429, wall_s, st->rate_first_per_s,
                st->rate_lowest_per_s, st->rate_highest_per_s,
                st->rate_final_per_s, rates.throttle);
  assert_true(wall_s < 1.5 * 600 / 20.0);
  assert_true(st->rate_lowest_per_s <= st->rate_first_per_s);
  assert_true(st->rate_final_per_s > 10 && st->rate_final_per_s < 30);
  sim_free(&x);
}

/* The learned rate lives in the budget: a second participant on the same
 * budget adopts what the first learned (a "budget" change) instead of
 * finding the limit again from 4/s, and is throttled less. */
static void learned_rate_is_shared_through_the_budget(void **state) {
  (void)state;
  sim a;
  sim_init(&a, 0, 1, 8, 300, limited_20);
  a.o.rate_mode = POLITE_RATE_AUTO;
  a.o.max_attempts = 10;
  a.o.spread_ms = 100;
  limiter_tat = 0;
  limiter_429 = 0;
  assert_int_equal(sim_run(&a), 1);
  unsigned first_429 = limiter_429;
  polite_shared_rate sr;
  assert_int_equal(polite_budget_shared_rate(a.budget, NULL, &sr), 0);
  assert_true(sr.rate_per_s > 10 && sr.rate_per_s < 30);
  assert_true(sr.generation >= 1);

  sim b;
  sim_init(&b, 0, 1, 8, 300, limited_20);
  polite_budget_close(b.budget);
  b.budget = a.budget; /* the same account: the second participant */
  b.o.budget = a.budget;
  b.o.rate_mode = POLITE_RATE_AUTO;
  b.o.on_rate = on_rate;
  b.o.max_attempts = 10;
  b.o.spread_ms = 100;
  b.now = a.now + SEC;
  limiter_tat = 0;
  limiter_429 = 0;
  memset(&rates, 0, sizeof rates);
  assert_int_equal(sim_run(&b), 1);
  assert_int_equal(sim_count(&b, POLITE_OUT_OK), 300);
  assert_true(rates.budget >= 1);
  print_message("shared: first participant %u 429s, second %u\n", first_429,
                limiter_429);
  assert_true(limiter_429 < first_429);
  b.budget = NULL; /* closed once, by a */
  sim_free(&b);
  sim_free(&a);
}

/* max_rate_per_s caps the learned rate: no two starts closer than its
 * interval, and on_rate says when the cap is reached. */
static void learned_rate_never_exceeds_max_rate(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 8, 100, ok200);
  x.o.rate_mode = POLITE_RATE_AUTO;
  x.o.max_rate_per_s = 5;
  x.o.on_rate = on_rate;
  memset(&rates, 0, sizeof rates);
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 100);
  assert_int_equal(rates.max_rate, 1);
  assert_true(rates.highest <= 5.0);
  for (unsigned i = 1; i < x.n_starts; i++)
    assert_true(x.starts[i].at_us - x.starts[i - 1].at_us >= 200 * MS - 1);
  assert_true(polite__sched_stats(x.s)->rate_highest_per_s <= 5.0);
  sim_free(&x);
}

static sim_answer ok_but_nothing_left(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){
      200, {"RateLimit: limit=5, remaining=0, reset=99999999", NULL}, "ok", 0};
}

/* A success whose headers say nothing is left until a reset years away
 * holds the learned rate; max-wait bounds that hold like any server wait:
 * the next requests end wait_too_long at once. */
static void learned_rate_hold_beyond_max_wait(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 1, 3, ok_but_nothing_left);
  x.o.rate_mode = POLITE_RATE_AUTO;
  assert_int_equal(sim_run_until(&x, T0 + 3600 * SEC), 1);
  assert_int_equal(x.n_starts, 1);
  assert_int_equal(sim_find(&x, "r0")->outcome, POLITE_OUT_OK);
  assert_int_equal(sim_count(&x, POLITE_OUT_WAIT_TOO_LONG), 2);
  assert_non_null(strstr(sim_find(&x, "r1")->error, "max-wait"));
  sim_free(&x);
}

/* ---- the waiting set
 * --------------------------------------------------------------------- */

/* 100k entries come out in (due, seq) order. */
static void heap_orders_by_due_then_seq(void **state) {
  (void)state;
  polite__heap h = {0};
  uint64_t rng = 7;
  enum { N = 100000 };
  for (uint64_t i = 0; i < N; i++)
    assert_int_equal(polite__heap_push(&h,
                                       (int64_t)(polite_rand_next(&rng) % 1000),
                                       i, (void *)(uintptr_t)(i + 1)),
                     0);
  int64_t last_due = -1;
  uint64_t last_seq = 0;
  for (unsigned n = 0; n < N; n++) {
    const polite__heap_entry *e = polite__heap_top(&h);
    assert_non_null(e);
    assert_true(e->due > last_due || (e->due == last_due && e->seq > last_seq));
    last_due = e->due;
    last_seq = e->seq;
    assert_ptr_equal(polite__heap_pop(&h), (void *)(uintptr_t)(e->seq + 1));
  }
  assert_null(polite__heap_top(&h));
  assert_null(polite__heap_pop(&h));
  polite__heap_free(&h);
}

/* ---- a source that may be empty for now ----------------------------------
 */

/* Arrivals at 0, 1 s and 3.05 s; POLITE_EAGAIN in between; the end after
 * the last. The source is asked at most once per turn. */
static const int64_t arrivals[] = {0, 1 * SEC, 3 * SEC + 50 * MS};
static unsigned dry_asks;

static int arriving_next(void *ud, polite_request **out) {
  sim *x = ud;
  if (x->read >= 3)
    return 0;
  if (x->now < T0 + arrivals[x->read]) {
    dry_asks++;
    return POLITE_EAGAIN;
  }
  return sim_next(ud, out);
}

/* A source that says POLITE_EAGAIN does not end the run: the scheduler
 * asks again at its next turn (at most a tick later), starts what arrives
 * at once, and ends only when the source says 0 and nothing is left. */
static void source_may_be_empty_for_now(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 0, 3, ok200);
  x.o.next = arriving_next;
  dry_asks = 0;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(x.n_results, 3);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 3);
  assert_int_equal(x.n_starts, 3);
  for (unsigned i = 0; i < 3; i++) {
    assert_true(x.starts[i].at_us >= T0 + arrivals[i]);
    assert_true(x.starts[i].at_us <= T0 + arrivals[i] + 100 * MS);
  }
  /* Asked about once per 100 ms tick while dry, not in a busy loop. */
  assert_true(dry_asks >= 25 && dry_asks <= 40);
  assert_false(polite__sched_stats(x.s)->input_done == 0);
  sim_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pause_holds_the_whole_account),
      cmocka_unit_test(request_deadline),
      cmocka_unit_test(run_deadline),
      cmocka_unit_test(cancel_and_grace),
      cmocka_unit_test(quota_stop),
      cmocka_unit_test(retries_spend_the_budget),
      cmocka_unit_test(costs),
      cmocka_unit_test(first_n_requests),
      cmocka_unit_test(lease_heartbeat),
      cmocka_unit_test(server_wait_beyond_max_wait),
      cmocka_unit_test(budget_pause_beyond_max_wait),
      cmocka_unit_test(redirect_location_in_result),
      cmocka_unit_test(late_wakeups_keep_the_schedule),
      cmocka_unit_test(late_wakeups_at_burst_n_lose_nothing),
      cmocka_unit_test(due_admissions_start_in_one_turn),
      cmocka_unit_test(heap_orders_by_due_then_seq),
      cmocka_unit_test(learned_rate_finds_the_limit),
      cmocka_unit_test(learned_rate_never_exceeds_max_rate),
      cmocka_unit_test(learned_rate_hold_beyond_max_wait),
      cmocka_unit_test(learned_rate_is_shared_through_the_budget),
      cmocka_unit_test(source_may_be_empty_for_now),
      cmocka_unit_test(tls_failure_is_not_retried),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
