/* Unit tests of the learned rate per host account (--budget-scope host) on
 * a fake clock (sched_sim.h): each host learns its own rate, a throttling
 * host's cuts do not slow another host, the rates are shared through the
 * budget under each host's key, and the hosts beyond max_host_rates share
 * one rate paced by the engine itself. */
#include "sched_sim.h"

/* Every slow_every-th request goes to slow.test, the others to fast.test
 * (11: 40 of N_REQ to slow.test, 400 to fast.test). */
#define N_REQ 440
static unsigned slow_every = 11;

static int is_slow(unsigned req) {
  return req % slow_every == 0;
}

static const char *two_hosts(const sim *x, unsigned req) {
  (void)x;
  return is_slow(req) ? "http://slow.test/x" : "http://Fast.test:80/x";
}

/* slow.test: a limiter of 5 starts/s with no burst tolerance (a GCRA on
 * the arrival times), answering 429 with Retry-After: 1 at once, as nginx
 * limit_req does; fast.test never throttles. Both answer 200 after 10 ms. */
static int64_t slow_tat;
static unsigned slow_429, fast_429;
static sim_answer two_servers(sim *x, unsigned req, unsigned attempt) {
  if (!is_slow(req))
    return ok200(x, req, attempt);
  if (slow_tat > x->now) {
    slow_429++;
    return (sim_answer){429, {"Retry-After: 1", NULL}, "slow down", MS};
  }
  slow_tat = x->now + 200 * MS;
  return ok200(x, req, attempt);
}

/* What on_rate said, per host. */
typedef struct {
  unsigned n, throttle, start, budget, probe_after_cut;
  double last, highest;
  int64_t first_cut_wall;
  char start_detail[128];
} host_log;
static host_log slow_log, fast_log, other_log, ab_log;
static unsigned rates_without_host;

static host_log *log_of(const char *host) {
  if (host == NULL)
    return NULL;
  if (strcmp(host, "slow.test") == 0)
    return &slow_log;
  if (strcmp(host, "fast.test:80") == 0)
    return &fast_log;
  if (strcmp(host, "a.test") == 0 || strcmp(host, "b.test") == 0)
    return &ab_log;
  return strcmp(host, "*") == 0 ? &other_log : NULL;
}

static void on_rate(void *ud, const polite_rate_change *c) {
  (void)ud;
  host_log *l = log_of(c->host);
  if (c->host == NULL) {
    rates_without_host++;
    return;
  }
  assert_non_null(l); /* every change names a host the run used */
  l->n++;
  l->throttle += strcmp(c->reason, "throttle") == 0;
  l->budget += strcmp(c->reason, "budget") == 0;
  if (strcmp(c->reason, "start") == 0) {
    l->start++;
    snprintf(l->start_detail, sizeof l->start_detail, "%s", c->detail);
  }
  if (strcmp(c->reason, "probe") == 0 && slow_log.throttle > 0)
    l->probe_after_cut++;
  if (strcmp(c->reason, "throttle") == 0 && l->first_cut_wall == 0)
    l->first_cut_wall = c->wall_ms;
  l->last = c->rate_per_s;
  if (c->rate_per_s > l->highest)
    l->highest = c->rate_per_s;
}

static void reset_logs(void) {
  memset(&slow_log, 0, sizeof slow_log);
  memset(&fast_log, 0, sizeof fast_log);
  memset(&other_log, 0, sizeof other_log);
  memset(&ab_log, 0, sizeof ab_log);
  rates_without_host = 0;
  slow_every = 11;
  slow_tat = 0;
  slow_429 = fast_429 = 0;
}

static void init_two_hosts(sim *x) {
  sim_init(x, 0, 1, 8, N_REQ, two_servers);
  x->url = two_hosts;
  x->o.scope_host = 1;
  x->o.rate_mode = POLITE_RATE_AUTO;
  x->o.on_rate = on_rate;
  x->o.max_attempts = 10;
  x->o.max_pending = N_REQ + 64; /* everything read: no head-of-line wait */
}

/* The last start of a request to fast.test (or slow.test), since T0. */
static int64_t last_start(const sim *x, int slow) {
  int64_t last = 0;
  for (unsigned i = 0; i < x->n_starts; i++)
    if (is_slow(x->starts[i].req) == slow && x->starts[i].at_us - T0 > last)
      last = x->starts[i].at_us - T0;
  return last;
}

static const polite_host_rate *host_rate(const polite_batch_stats *st,
                                         const char *host) {
  for (size_t i = 0; i < st->n_host_rates; i++)
    if (strcmp(st->host_rates[i].host, host) == 0)
      return &st->host_rates[i];
  return NULL;
}

/* Two hosts, one throttling at 5/s and one not: the slow host's 429s cut
 * its own rate only, while the fast host keeps ramping up (its 400 requests
 * start within 2.1 s). With one controller for both (before per-host
 * rates), slow.test's 429s cut and held fast.test's rate too: its last
 * request started at 45.0 s, after slow.test's (5 x 429 instead of 1). */
static void each_host_learns_its_own_rate(void **state) {
  (void)state;
  sim x;
  init_two_hosts(&x);
  reset_logs();
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), N_REQ);
  int64_t fast_end = last_start(&x, 0), slow_end = last_start(&x, 1);
  const polite_batch_stats *st = polite__sched_stats(x.s);
  print_message("per host: fast.test done at %.2f s, slow.test at %.2f s "
                "with %u 429s; rates: fast highest %.1f/s, slow final %.1f/s "
                "(%u cuts)\n",
                (double)fast_end / 1e6, (double)slow_end / 1e6, slow_429,
                fast_log.highest, slow_log.last, slow_log.throttle);
  /* At 4/s doubling every 250 ms, 400 starts take about 2 s; paced at
   * slow.test's rate they would take more than 10 s. */
  assert_true(fast_end < 3 * SEC);
  assert_true(slow_end > 6 * SEC); /* 40 requests at 5/s */
  assert_true(slow_429 <= 10);
  assert_int_equal(fast_429, 0);

  /* The reports say which host each change belongs to. */
  assert_int_equal(rates_without_host, 0);
  assert_int_equal(slow_log.start, 1);
  assert_int_equal(fast_log.start, 1);
  assert_true(slow_log.throttle >= 1);
  assert_int_equal(fast_log.throttle, 0);
  assert_true(fast_log.probe_after_cut >= 1); /* kept growing after it */
  assert_true(fast_log.highest > 10 * 5.0);
  assert_true(slow_log.last < 1.5 * 5.0);

  assert_int_equal(st->n_host_rates, 2);
  const polite_host_rate *slow = host_rate(st, "slow.test");
  const polite_host_rate *fast = host_rate(st, "fast.test:80");
  assert_non_null(slow);
  assert_non_null(fast);
  assert_true(slow->cuts_throttle >= 1);
  assert_int_equal(slow->cuts_throttle, slow_log.throttle);
  assert_int_equal(fast->cuts_throttle, 0);
  assert_true(slow->final_per_s < 1.5 * 5.0);
  assert_true(fast->highest_per_s == fast_log.highest);
  assert_int_equal(st->rate_cuts_throttle, slow->cuts_throttle);
  assert_true(st->rate_highest_per_s == fast->highest_per_s);

  /* Each host's rate lives in the budget under its key. */
  polite_shared_rate sr = {0, 0, 0, 0};
  assert_int_equal(polite_budget_shared_rate(x.budget, "slow.test", &sr), 0);
  assert_true(sr.rate_per_s > 0 && sr.rate_per_s < 1.5 * 5.0);
  assert_true(sr.generation >= 1);
  assert_int_equal(polite_budget_shared_rate(x.budget, "fast.test:80", &sr), 0);
  assert_true(sr.rate_per_s > 10 * 5.0);
  assert_int_equal(sr.generation, 0); /* never cut */
  sim_free(&x);
}

/* Half the requests go to slow.test: its backlog (220 requests at 5/s)
 * waits at its own pace without hiding fast.test's requests from the
 * scheduler. Before blocked requests were put back at the end of their
 * wait, the scheduler looked at the slow host's first 64 at every turn and
 * saw fast.test's only when they were admitted: its 220 requests then took
 * 38.9 s instead of 1.9 s. */
static void a_slow_backlog_does_not_hide_other_hosts(void **state) {
  (void)state;
  sim x;
  init_two_hosts(&x);
  reset_logs();
  slow_every = 2;
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), N_REQ);
  int64_t fast_end = last_start(&x, 0), slow_end = last_start(&x, 1);
  print_message("backlog: fast.test done at %.2f s, slow.test at %.2f s "
                "with %u 429s\n",
                (double)fast_end / 1e6, (double)slow_end / 1e6, slow_429);
  assert_true(fast_end < 3 * SEC);
  assert_true(slow_end > 40 * SEC); /* 220 requests at 5/s */
  assert_true(slow_429 <= 10);
  sim_free(&x);
}

/* A second participant of the same budget adopts what the first learned
 * for each host ("budget" changes under that host), instead of finding
 * slow.test's limit again from the first estimate. */
static void host_rates_are_shared_through_the_budget(void **state) {
  (void)state;
  sim a;
  init_two_hosts(&a);
  reset_logs();
  assert_int_equal(sim_run(&a), 1);
  unsigned first_429 = slow_429;

  sim b;
  init_two_hosts(&b);
  polite_budget_close(b.budget);
  b.budget = a.budget; /* the same accounts: the second participant */
  b.o.budget = a.budget;
  b.now = a.now + SEC;
  reset_logs();
  assert_int_equal(sim_run(&b), 1);
  assert_int_equal(sim_count(&b, POLITE_OUT_OK), N_REQ);
  print_message("shared per host: first participant %u 429s at slow.test, "
                "second %u\n",
                first_429, slow_429);
  assert_true(slow_log.budget >= 1);
  assert_true(slow_429 < first_429);
  b.budget = NULL; /* closed once, by a */
  sim_free(&b);
  sim_free(&a);
}

static const char *four_hosts(const sim *x, unsigned req) {
  static const char *const urls[] = {"http://a.test/", "http://b.test/",
                                     "http://c.test/", "http://d.test/"};
  (void)x;
  return urls[req % 4];
}

/* With max_host_rates 2, the first two hosts get a rate of their own and
 * the others share one ("*", with a note when it starts), which the
 * engine paces itself: there is no one key to share it under in the
 * budget. */
static void hosts_beyond_the_bound_share_one_rate(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 8, 200, ok200);
  x.url = four_hosts;
  x.o.scope_host = 1;
  x.o.rate_mode = POLITE_RATE_AUTO;
  x.o.on_rate = on_rate;
  x.o.max_host_rates = 2;
  reset_logs();
  assert_int_equal(sim_run(&x), 1);
  assert_int_equal(sim_count(&x, POLITE_OUT_OK), 200);
  const polite_batch_stats *st = polite__sched_stats(x.s);
  assert_int_equal(st->n_host_rates, 3);
  assert_string_equal(st->host_rates[0].host, "a.test");
  assert_string_equal(st->host_rates[1].host, "b.test");
  assert_string_equal(st->host_rates[2].host, "*");
  assert_int_equal(other_log.start, 1);
  assert_int_equal(ab_log.start, 2);
  assert_int_equal(sim_find(&x, "r3")->outcome, POLITE_OUT_OK);
  assert_non_null(strstr(other_log.start_detail, "more than 2 hosts"));
  polite_shared_rate sr = {0, 0, 0, 0};
  assert_int_equal(polite_budget_shared_rate(x.budget, "a.test", &sr), 0);
  assert_true(sr.rate_per_s > 0);
  sr.rate_per_s = 0;
  assert_int_equal(polite_budget_shared_rate(x.budget, "c.test", &sr), 0);
  assert_true(sr.rate_per_s == 0); /* nothing published for c.test */
  /* c.test and d.test start at one rate between them: d.test's first start
   * waits at least a ramped-up interval of the first estimate (4/s) after
   * c.test's, where a rate of its own would start it at once, as b.test's
   * was; and no two of their starts come at the same instant. */
  int64_t first[4] = {-1, -1, -1, -1}, last_cd = -1;
  for (unsigned i = 0; i < x.n_starts; i++) {
    unsigned h = x.starts[i].req % 4;
    if (first[h] < 0)
      first[h] = x.starts[i].at_us;
    if (h >= 2) {
      assert_true(x.starts[i].at_us > last_cd);
      last_cd = x.starts[i].at_us;
    }
  }
  assert_int_equal(first[1], T0);
  assert_int_equal(first[2], T0);
  assert_true(first[3] - first[2] >= 100 * MS);
  sim_free(&x);
}

/* The bound is checked: more than POLITE_BATCH_MAX_HOST_RATES_LIMIT is
 * refused with a message naming it. */
static void max_host_rates_is_bounded(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 8, 1, ok200);
  x.o.max_host_rates = POLITE_BATCH_MAX_HOST_RATES_LIMIT + 1;
  polite__sched_io io = {sim_start_io, sim_abort, &x};
  char err[200];
  assert_null(polite__sched_new(&x.o, &io, err, sizeof err));
  assert_non_null(strstr(err, "max_host_rates"));
  sim_free(&x);
}

/* With one account for the run, nothing changes: no host in the reports,
 * no per-host stats. */
static void one_account_reports_no_host(void **state) {
  (void)state;
  sim x;
  sim_init(&x, 0, 1, 8, 100, two_servers);
  x.url = two_hosts;
  x.o.rate_mode = POLITE_RATE_AUTO;
  x.o.on_rate = on_rate;
  x.o.max_attempts = 10;
  reset_logs();
  assert_int_equal(sim_run(&x), 1);
  assert_true(rates_without_host >= 1);
  assert_int_equal(slow_log.n + fast_log.n + other_log.n, 0);
  assert_int_equal(polite__sched_stats(x.s)->n_host_rates, 0);
  sim_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(each_host_learns_its_own_rate),
      cmocka_unit_test(a_slow_backlog_does_not_hide_other_hosts),
      cmocka_unit_test(host_rates_are_shared_through_the_budget),
      cmocka_unit_test(hosts_beyond_the_bound_share_one_rate),
      cmocka_unit_test(max_host_rates_is_bounded),
      cmocka_unit_test(one_account_reports_no_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
