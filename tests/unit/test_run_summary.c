/* Unit tests of what `polite run` shows (src/run_summary.c, run_output.c):
 * the progress line and its ETA on fixed stats, the summary's refusal to
 * print meaningless rates, and the reversible --bodies-dir names. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <unistd.h>

#include "run_output.h"
#include "run_summary.h"

static polite_batch_stats stats(uint64_t done, double run_s) {
  polite_batch_stats s;
  memset(&s, 0, sizeof s);
  s.results = done;
  s.read = done;
  s.by_outcome[POLITE_OUT_OK] = done;
  s.run_us = (int64_t)(run_s * 1e6);
  s.first_start_us = -1;
  return s;
}

static void bar_and_percentage_with_a_total(void **state) {
  (void)state;
  run_progress p = {1, 0, 0, 60, 1.5};
  polite_batch_stats s = stats(15, 10);
  s.in_flight = 2;
  s.n429 = 3;
  char line[320];
  run_progress_format(line, sizeof line, &p, &s);
  assert_non_null(strstr(line, "[#####...............]  25% 15/60 done"));
  assert_non_null(strstr(line, "| 1.5/s (plan 1.50/s)"));
  assert_non_null(strstr(line, "in flight 2 | 429s 3"));
  assert_non_null(strstr(line, "ETA 30s")); /* 45 left at 1.5/s */
  assert_null(strstr(line, "throttled"));
}

static void plain_counts_without_a_total(void **state) {
  (void)state;
  run_progress p = {1, 0, 0, -1, 0};
  polite_batch_stats s = stats(7, 2);
  s.read = 9;
  char line[320];
  run_progress_format(line, sizeof line, &p, &s);
  assert_string_equal(line, "7 done, 9 read | 3.5/s | in flight 0 | 429s 0");
}

/* Issue 16: a 1.1 s pause at 1/60 done showed "ETA 1m18s"; the ETA must
 * come from the plan and only count the pause down. */
static void eta_never_climbs_during_a_pause(void **state) {
  (void)state;
  run_progress p = {1, 0, 0, 60, 1.5};
  double prev = 1e18;
  for (int step = 0; step <= 11; step++) {
    polite_batch_stats s = stats(1, 0.05 + 0.1 * step);
    s.paused_ms = 1100; /* added whole when the pause began */
    s.paused_left_ms = 1100 - 100 * step;
    s.n429 = 1;
    double eta = run_progress_eta(&p, &s);
    assert_true(eta <= prev + 1e-9);
    assert_true(eta < 45); /* 59 left at 1.5/s = 39.3 s, plus the pause */
    prev = eta;
    char line[320];
    run_progress_format(line, sizeof line, &p, &s);
    if (s.paused_left_ms > 0)
      assert_non_null(strstr(line, "throttled by server: resuming in"));
  }
}

static void eta_without_a_plan_uses_open_time(void **state) {
  (void)state;
  run_progress p = {1, 0, 0, 100, 0};
  /* 10 done in 5 s of which 3 s were paused: 5/s while open. */
  polite_batch_stats s = stats(10, 5);
  s.paused_ms = 3000;
  assert_true(run_progress_rate(&s) > 4.99 && run_progress_rate(&s) < 5.01);
  double eta = run_progress_eta(&p, &s);
  assert_true(eta > 17.9 && eta < 18.1);
}

static char *summary(const polite_batch_stats *s, const run_plan *p) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  assert_non_null(f);
  run_summary_text(f, s, p);
  fclose(f);
  return buf;
}

/* Issue 16: with no rate and most time paused the summary said "start
 * rate: 28123.56/s measured" from three starts 35 us apart. */
static void summary_says_not_measured(void **state) {
  (void)state;
  polite_batch_stats s = stats(2, 2.2);
  s.attempts = 3;
  s.first_attempts = 2;
  s.retries = 1;
  s.n429 = 1;
  s.paused_ms = 2100;
  s.unpaused_gaps = 1;
  s.unpaused_gap_sum_us = 35;
  s.latency_sum_us = 1500;
  run_plan p = {0, 4, 0, 2200, NULL};
  char *t = summary(&s, &p);
  assert_non_null(strstr(t, "start rate: not measured"));
  assert_non_null(strstr(t, "Little's law: not measured"));
  assert_null(strstr(t, "28"));
  free(t);
  /* With enough open time between starts the figure is there. */
  s.unpaused_gaps = 2;
  s.unpaused_gap_sum_us = 1333334;
  t = summary(&s, &p);
  assert_non_null(strstr(t, "start rate: 1.50/s measured"));
  free(t);
}

/* With --budget-scope host the summary, --summary-json and the attempt
 * log say which host each learned rate belongs to; with one account the
 * log names none. */
static void learned_rate_per_host(void **state) {
  (void)state;
  polite_batch_stats s = stats(4, 2);
  s.rate_learned = 1;
  s.rate_first_per_s = s.rate_lowest_per_s = 4;
  s.rate_final_per_s = s.rate_highest_per_s = 60;
  s.rate_cuts_throttle = 1;
  polite_host_rate h[12] = {{"slow.test", 4, 4.5, 4, 8, 1, 0, 0},
                            {"fast.test:80", 4, 60, 4, 60, 0, 0, 0}};
  for (int i = 2; i < 12; i++)
    h[i] = (polite_host_rate){"*", 4, 4, 4, 4, 0, 0, 0};
  s.host_rates = h;
  s.n_host_rates = 2;
  run_plan p = {0, 4, 0, 2000, NULL};
  char *t = summary(&s, &p);
  assert_non_null(strstr(t, "  learned rate: 4.00/s first, 60.00/s final"));
  assert_non_null(strstr(t, "    slow.test: 4.00/s first, 4.50/s final "
                            "(lowest 4.00/s, highest 8.00/s); cuts: 1 by "
                            "429/503, 0 by headers, 0 through the budget\n"));
  assert_non_null(strstr(t, "    fast.test:80: 4.00/s first, 60.00/s final"));
  assert_null(strstr(t, "more hosts"));
  free(t);
  run_progress pr = {1, 0, 0, -1, 0};
  char line[320];
  run_progress_format(line, sizeof line, &pr, &s);
  assert_non_null(strstr(line, " (learned 4.50-60.0/s, 2 hosts)"));
  s.n_host_rates = 12; /* the text lists 10 */
  t = summary(&s, &p);
  assert_non_null(strstr(t, "    other hosts (*): 4.00/s first"));
  assert_non_null(strstr(t, "    ... 2 more hosts in --summary-json\n"));
  free(t);

  char path[] = "/tmp/polite_test_summary_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(run_summary_json(path, &s, &p), 0);
  json_error_t e;
  json_t *o = json_load_file(path, 0, &e);
  unlink(path);
  assert_non_null(o);
  json_t *lr = json_object_get(o, "rate_learned");
  assert_true(json_real_value(json_object_get(lr, "first_per_s")) == 4);
  json_t *hosts = json_object_get(lr, "hosts");
  assert_int_equal(json_array_size(hosts), 12);
  json_t *h0 = json_array_get(hosts, 0);
  assert_string_equal(json_string_value(json_object_get(h0, "host")),
                      "slow.test");
  assert_true(json_real_value(json_object_get(h0, "final_per_s")) == 4.5);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(h0, "cuts"), "throttle")),
                   1);
  json_decref(o);

  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  assert_non_null(f);
  run_log l = {.f = f, .path = "memory"};
  polite_rate_change c = {1, 4.5, 8, "throttle", "cut", "slow.test"};
  run_log_rate(&l, &c);
  c.host = NULL;
  run_log_rate(&l, &c);
  assert_int_equal(run_log_close(&l), 0); /* closes f, frees the line */
  char *second = strchr(buf, '\n');
  assert_non_null(second);
  *second++ = '\0';
  assert_non_null(strstr(buf, "\"detail\":\"cut\",\"host\":\"slow.test\"}"));
  assert_non_null(strstr(second, "\"detail\":\"cut\"}"));
  assert_null(strstr(second, "host"));
  free(buf);
}

static void body_names_are_unique_and_reversible(void **state) {
  (void)state;
  /* Issue 15: these two shared a file. */
  char *a = run_body_name("order!&/@/'?!");
  char *b = run_body_name("order),:@&{<:");
  assert_non_null(a);
  assert_non_null(b);
  assert_string_not_equal(a, b);
  assert_string_equal(a, "order%21%26%2F%40%2F%27%3F%21");
  assert_null(strchr(a, '/'));
  char *c = run_body_name("a%21");
  assert_string_equal(c, "a%2521"); /* '%' itself is encoded */
  char *d = run_body_name("..");
  assert_string_equal(d, "%2E."); /* never "." or ".." */
  char *e = run_body_name("plain-id_1.json");
  assert_string_equal(e, "plain-id_1.json");
  char longid[400];
  memset(longid, '/', sizeof longid - 1);
  longid[sizeof longid - 1] = '\0';
  assert_null(run_body_name(longid)); /* the body stays in the line */
  free(a);
  free(b);
  free(c);
  free(d);
  free(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bar_and_percentage_with_a_total),
      cmocka_unit_test(plain_counts_without_a_total),
      cmocka_unit_test(eta_never_climbs_during_a_pause),
      cmocka_unit_test(eta_without_a_plan_uses_open_time),
      cmocka_unit_test(summary_says_not_measured),
      cmocka_unit_test(body_names_are_unique_and_reversible),
      cmocka_unit_test(learned_rate_per_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
