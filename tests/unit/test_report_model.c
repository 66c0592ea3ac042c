/* Unit tests of polite report's model: buckets that merge without losing
 * counts or in-flight time, pauses as a union, start-order sweeps over a
 * completion-order log, and the line parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../src/report_model.c"
#include "../../src/report_parse.c"

static rp_attempt att(int64_t s, int64_t e, unsigned n, int status) {
  rp_attempt a = {s, e, n, status, RP_ACT_DONE, "ok", -1, -1, 0, NULL, NULL};
  return a;
}

static double total_in_flight_ms(const rp_model *m) {
  double active = 0, sum = 0;
  for (int i = 0; i < m->nb; i++)
    sum += rp_bucket_in_flight(m, i, &active) * (double)m->width;
  return sum;
}

/* Attempts spread over ten hours force many coarsenings; the counts and
 * the in-flight integral (the sum of latencies) survive them exactly. */
static void test_coarsen_keeps_totals(void **st) {
  (void)st;
  rp_model *m = rp_model_new();
  assert_non_null(m);
  rp_model_source(m, "t");
  double lat = 0;
  for (int i = 0; i < 36000; i++) {
    int64_t s = 1000000 + (int64_t)i * 1000, e = s + 37 + i % 5000;
    rp_attempt a = att(s, e, 1 + (i % 3 == 0), 200);
    rp_model_attempt(m, &a);
    lat += (double)(e - s);
  }
  rp_model_source_end(m);
  assert_true(m->nb <= RP_BUCKETS);
  assert_true(m->width > RP_BASE_WIDTH_MS);
  uint64_t first = 0, retry = 0;
  for (int i = 0; i < m->nb; i++) {
    first += m->b[i].first;
    retry += m->b[i].retry;
  }
  assert_int_equal(first + retry, 36000);
  assert_int_equal(retry, 12000);
  assert_true(fabs(total_in_flight_ms(m) - lat) < 1e-6 * lat);
  rp_model_coarsen_to(m, m->width * 4);
  assert_true(fabs(total_in_flight_ms(m) - lat) < 1e-6 * lat);
  rp_model_free(m);
}

/* A second log that starts earlier grows the timeline to the left. */
static void test_cover_backwards(void **st) {
  (void)st;
  rp_model *m = rp_model_new();
  rp_model_source(m, "late");
  rp_attempt a = att(5000000, 5000100, 1, 200);
  rp_model_attempt(m, &a);
  rp_model_source(m, "early");
  rp_attempt b = att(1000000, 1000300, 1, 200);
  rp_model_attempt(m, &b);
  rp_model_source_end(m);
  assert_true(m->origin <= 1000000);
  assert_true(m->origin + (int64_t)m->nb * m->width > 5000100);
  assert_true(fabs(total_in_flight_ms(m) - 400) < 1e-9);
  assert_int_equal(m->b[bucket_of(m, 1000000)].first, 1);
  assert_int_equal(m->b[bucket_of(m, 5000000)].first, 1);
  rp_model_free(m);
}

/* Overlapping pauses count once; the retry's wait (with spread) is the
 * pause, a stop's pause is the server's minimum. */
static void test_pauses_union(void **st) {
  (void)st;
  rp_model *m = rp_model_new();
  rp_model_source(m, "t");
  rp_attempt a = att(0, 1000, 1, 429);
  a.action = RP_ACT_RETRY;
  a.reason = "server";
  a.wait_ms = 2100;
  a.server_wait_ms = 2000;
  a.account_pause = 1;
  rp_model_attempt(m, &a); /* [1000, 3100) */
  a.start_ms = 1500;
  a.end_ms = 2000;
  a.action = RP_ACT_STOP;
  a.reason = "retries_exhausted";
  rp_model_attempt(m, &a); /* [2000, 4000) */
  a.start_ms = 9000;
  a.end_ms = 9000;
  a.action = RP_ACT_RETRY;
  a.wait_ms = 500;
  a.server_wait_ms = 500;
  rp_model_attempt(m, &a); /* [9000, 9500) */
  rp_model_source_end(m);
  rp_derived d;
  rp_model_derive(m, &d);
  assert_int_equal(m->npause, 2);
  assert_int_equal(d.paused_ms, 3000 + 500);
  assert_int_equal(m->n429, 3);
  assert_int_equal(m->retry_wait_ms, 2600);
  assert_int_equal(m->pairs[0].count, 3);
  assert_string_equal(m->pairs[0].component, "unknown");
  rp_model_free(m);
}

/* A model of one source "t" fed the n attempts of v in that order (the
 * log's, completion order). */
static rp_model *model_of(const rp_attempt *v, size_t n) {
  rp_model *m = rp_model_new();
  assert_non_null(m);
  rp_model_source(m, "t");
  for (size_t i = 0; i < n; i++)
    rp_model_attempt(m, &v[i]);
  rp_model_source_end(m);
  return m;
}

/* The attempts in flight leave by their end, the earliest first, not in
 * the order they started: [10,20) has ended when [30,40) starts, [0,100)
 * has not, so two are in flight at most (three if the first to start were
 * the first to leave). */
static void test_sweep_leaves_by_end(void **st) {
  (void)st;
  const rp_attempt v[] = {att(10, 20, 1, 200), att(30, 40, 1, 200),
                          att(0, 100, 1, 200)};
  rp_model *m = model_of(v, 3);
  assert_int_equal(m->src[0].peak_in_flight, 2);
  rp_model_free(m);
}

/* In completion order [20,30) ends first, [0,100) last: the sweep still
 * sees three in flight at 20 ms. A gap that holds a pause is left out. */
static void test_sweep_peak_and_gaps(void **st) {
  (void)st;
  rp_attempt v[] = {att(20, 30, 1, 200), att(10, 50, 1, 200),
                    att(0, 100, 1, 429), att(1100, 1110, 2, 200)};
  rp_attempt *c = &v[2];
  c->action = RP_ACT_RETRY;
  c->reason = "server";
  c->wait_ms = 1000;
  c->server_wait_ms = 1000;
  c->account_pause = 1; /* [100, 1100) */
  rp_model *m = model_of(v, 4);
  assert_int_equal(m->src[0].peak_in_flight, 3);
  assert_int_equal(m->gaps, 2); /* 0->10, 10->20; 20->1100 held the pause */
  assert_int_equal(m->paused_gaps, 1);
  rp_derived d;
  rp_model_derive(m, &d);
  assert_true(fabs(d.measured_rate - 100.0) < 1e-9);
  rp_model_free(m);
}

static int feed(rp_model *m, const char *line, long n) {
  return rp_model_feed_line(m, line, strlen(line), n);
}

/* Attempts and events are read; unknown events and fields pass; bad lines
 * are counted and quoted with their line number. */
static void test_parse_lines(void **st) {
  (void)st;
  rp_model *m = rp_model_new();
  rp_model_source(m, "log.jsonl");
  assert_int_equal(feed(m,
                        "{\"event\":\"run\",\"rate_per_s\":2.5,"
                        "\"concurrency\":4,\"max_attempts\":3,\"new\":1}",
                        1),
                   0);
  assert_int_equal(feed(m,
                        "{\"id\":\"a\",\"attempt\":1,\"start_ms\":1000,"
                        "\"end_ms\":1200,\"status\":429,\"action\":\"retry\","
                        "\"reason\":\"server\",\"wait_ms\":1100,"
                        "\"server_wait_ms\":1000,\"account_pause\":true,"
                        "\"diagnosis\":{\"component\":\"origin:openai\","
                        "\"limit\":\"tokens\"},\"extra\":[1]}",
                        2),
                   0);
  assert_int_equal(feed(m,
                        "{\"event\":\"rate\",\"wall_ms\":1300,"
                        "\"rate_per_s\":1.5,\"reason\":\"throttle\"}",
                        3),
                   0);
  assert_int_equal(feed(m, "{\"event\":\"someday\",\"x\":1}", 4), 0);
  assert_int_equal(feed(m, "   ", 5), 0);
  assert_int_equal(feed(m, "{\"id\":\"b\",\"attempt\":1}", 6), -1);
  assert_int_equal(feed(m, "[1,2]", 7), -1);
  assert_int_equal(feed(m, "{\"event\":\"rate\",\"wall_ms\":\"x\"}", 8), -1);
  assert_int_equal(feed(m, "{\"id\":", 9), -1);
  assert_int_equal(feed(m,
                        "{\"event\":\"result\",\"outcome\":\"ok\","
                        "\"attempts\":2,\"cost\":3}",
                        10),
                   0);
  rp_model_source_end(m);
  assert_int_equal(m->attempts, 1);
  assert_int_equal(m->n429, 1);
  assert_string_equal(m->marked[0], "origin:openai");
  assert_string_equal(m->pairs[0].limit, "tokens");
  assert_int_equal(m->rate_events, 1);
  assert_true(m->rate_last == 1.5);
  assert_int_equal(m->unknown_events, 1);
  assert_int_equal(m->bad_lines, 4);
  assert_string_equal(m->bad_quoted[0],
                      "log.jsonl:6: attempt: field 'start_ms': expected an "
                      "integer (Unix ms)");
  assert_non_null(strstr(m->bad_quoted[3], "log.jsonl:9: not JSON"));
  assert_int_equal(m->results, 1);
  assert_int_equal(m->units, 6);
  assert_true(m->src[0].run.rate_per_s == 2.5);
  assert_int_equal(m->src[0].run.concurrency, 4);
  rp_model_free(m);
}

/* Senders beyond RP_MARKED share the last marker; pairs beyond RP_PAIRS
 * are counted as other. */
static void test_senders_bounded(void **st) {
  (void)st;
  rp_model *m = rp_model_new();
  rp_model_source(m, "t");
  char name[32];
  for (int i = 0; i < 40; i++) {
    rp_attempt a = att(i, i + 1, 1, 503);
    snprintf(name, sizeof name, "cdn:v%d", i);
    a.component = name;
    a.limit = "rate";
    rp_model_attempt(m, &a);
  }
  rp_model_source_end(m);
  assert_int_equal(m->nmarked, RP_MARKED);
  uint64_t other = 0;
  for (int i = 0; i < m->nb; i++)
    other += m->b[i].thr[RP_MARKED];
  assert_int_equal(other, 40 - RP_MARKED);
  assert_int_equal(m->npairs, RP_PAIRS);
  assert_string_equal(m->pairs[RP_PAIRS - 1].component, "other");
  assert_int_equal(m->pairs[RP_PAIRS - 1].count, 40 - (RP_PAIRS - 1));
  assert_int_equal(m->n503, 40);
  rp_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_coarsen_keeps_totals),
      cmocka_unit_test(test_cover_backwards),
      cmocka_unit_test(test_pauses_union),
      cmocka_unit_test(test_sweep_peak_and_gaps),
      cmocka_unit_test(test_sweep_leaves_by_end),
      cmocka_unit_test(test_parse_lines),
      cmocka_unit_test(test_senders_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
