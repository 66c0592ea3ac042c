/* Unit tests of the proxy's Retry-After tracking, retry chains and report on a
 * fake clock (proxy/px_track.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "px_track.c"

static void early_by_milliseconds(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t t0 = 1000000; /* fake monotonic ms */
  polite__px_track_set(s, "GET http://h/a", t0, 2000);
  /* 400 ms early is caught, with its exact remaining time. */
  assert_int_equal(polite__px_track_check(s, "GET http://h/a", t0 + 1600, 0),
                   400);
  /* 1 ms early is still early. */
  assert_int_equal(polite__px_track_check(s, "GET http://h/a", t0 + 1999, 0),
                   1);
  /* Exactly on time is compliant, and the entry is then forgotten. */
  assert_int_equal(polite__px_track_check(s, "GET http://h/a", t0 + 2000, 0),
                   0);
  assert_int_equal(polite__px_track_check(s, "GET http://h/a", t0 + 2000, 0),
                   0);
  /* Other keys are unaffected. */
  polite__px_track_set(s, "GET http://h/b", t0, 1000);
  assert_int_equal(polite__px_track_check(s, "GET http://h/c", t0 + 1, 0), 0);
  assert_int_equal(polite__px_track_check(s, "GET http://h/b", t0 + 1, 0), 999);
  polite__px_state_free(s);
}

static void a_compliant_client_is_never_early(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  /* Many waits of whole seconds, each retried exactly when allowed. */
  int64_t now = 5;
  for (int i = 1; i <= 50; i++) {
    polite__px_track_set(s, "k", now, (int64_t)(i % 7 + 1) * 1000);
    now += (int64_t)(i % 7 + 1) * 1000;
    assert_int_equal(polite__px_track_check(s, "k", now, 0), 0);
    assert_int_equal(polite__px_track_check(s, "k", now, 1), 0);
  }
  polite__px_state_free(s);
}

static void later_deadline_never_shortened(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  polite__px_track_set(s, "k", 0, 5000);
  polite__px_track_set(s, "k", 100, 1000); /* ends at 1100 < 5000: ignored */
  assert_int_equal(polite__px_track_check(s, "k", 2000, 0), 3000);
  polite__px_track_set(s, "k", 2000, 4000); /* ends at 6000: extends */
  assert_int_equal(polite__px_track_check(s, "k", 2000, 0), 4000);
  polite__px_track_set(s, "z", 0, 0); /* no wait: nothing tracked */
  assert_int_equal(polite__px_track_check(s, "z", 0, 0), 0);
  polite__px_state_free(s);
}

static void penalty_restarts_the_wait(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  polite__px_track_set(s, "k", 0, 3000);
  /* Early at 1000: the whole 3000 ms start again (until 4000). */
  assert_int_equal(polite__px_track_check(s, "k", 1000, 1), 3000);
  /* At 3000 the original wait is over, but the restarted one is not. */
  assert_int_equal(polite__px_track_check(s, "k", 3000, 1), 3000);
  assert_int_equal(polite__px_track_check(s, "k", 6000, 1), 0);
  polite__px_state_free(s);
}

static void quota_counts_down(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  assert_true(polite__px_quota_take(s, -1)); /* no quota */
  assert_true(polite__px_quota_take(s, 2));
  assert_true(polite__px_quota_take(s, 2));
  assert_false(polite__px_quota_take(s, 2));
  assert_false(polite__px_quota_take(s, 0));
  polite__px_state_free(s);
}

static void gcra_per_key(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  polite_gcra *a = polite__px_gcra_get(s, "a", 10.0, 1);
  polite_gcra *b = polite__px_gcra_get(s, "b", 10.0, 1);
  assert_non_null(a);
  assert_ptr_not_equal(a, b);
  assert_ptr_equal(a, polite__px_gcra_get(s, "a", 10.0, 1));
  assert_int_equal(polite_gcra_admit(a, 1000000, 1), 0);
  assert_true(polite_gcra_admit(a, 1000000, 1) > 0);
  assert_int_equal(polite_gcra_admit(b, 1000000, 1), 0);
  polite__px_state_free(s);
}

static json_t *report(px_state *s) {
  char *text = polite__px_report_json(s, 0, 1000);
  assert_non_null(text);
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  free(text);
  assert_non_null(j);
  return j;
}

static void retry_chains_and_report(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  /* 3 x 3 nested retry loops: 9 attempts in a row, each answered 429. */
  for (int i = 0; i < 9; i++)
    polite__px_stats_record(s, "GET", "http://h/nested", 429, PX_KIND_FAILURE);
  polite__px_stats_record(s, "GET", "http://h/nested", 200, PX_KIND_PASSED);
  /* A fresh chain after a success starts at 1 again. */
  polite__px_stats_record(s, "GET", "http://h/nested", 200, PX_KIND_PASSED);
  /* Another URL: 503 then 200 is two attempts. */
  polite__px_stats_record(s, "POST", "http://h/b", 503, PX_KIND_PASSED);
  polite__px_stats_record(s, "POST", "http://h/b", 200, PX_KIND_PASSED);
  polite__px_stats_record(s, "GET", "http://h/b", 429, PX_KIND_EARLY);
  polite__px_early_record(s, 500, "GET http://h/b", "127.0.0.1", "GET",
                          "http://h/b", 400);
  json_t *j = report(s);
  assert_int_equal(json_integer_value(json_object_get(j, "requests")), 14);
  assert_int_equal(json_integer_value(json_object_get(j, "passed")), 4);
  assert_int_equal(json_integer_value(json_object_get(j, "injected")), 10);
  assert_int_equal(json_integer_value(json_object_get(j, "failures")), 9);
  assert_int_equal(json_integer_value(json_object_get(j, "early_retries")), 1);
  assert_int_equal(json_integer_value(json_object_get(j, "max_attempts")), 10);
  json_t *early = json_array_get(json_object_get(j, "early"), 0);
  assert_int_equal(json_integer_value(json_object_get(early, "early_ms")), 400);
  assert_string_equal(json_string_value(json_object_get(early, "client")),
                      "127.0.0.1");
  assert_string_equal(json_string_value(json_object_get(early, "time")),
                      "1970-01-01T00:00:00.500Z");
  json_t *urls = json_object_get(j, "urls");
  assert_int_equal(json_array_size(urls), 3);
  json_t *first = json_array_get(urls, 0); /* busiest first */
  assert_string_equal(json_string_value(json_object_get(first, "url")),
                      "http://h/nested");
  assert_int_equal(json_integer_value(json_object_get(first, "max_attempts")),
                   10);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(first, "statuses"), "429")),
                   9);
  for (size_t i = 0; i < 3; i++) {
    json_t *u = json_array_get(urls, i);
    if (strcmp(json_string_value(json_object_get(u, "method")), "POST") == 0)
      assert_int_equal(json_integer_value(json_object_get(u, "max_attempts")),
                       2);
  }
  json_decref(j);

  char *md = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&md, &len);
  polite__px_report_md(s, f, 0, 1000);
  fclose(f);
  assert_non_null(strstr(md, "| **early retries** | 1 |"));
  assert_non_null(strstr(md, "400 ms"));
  free(md);
  polite__px_state_free(s);
}

static void early_list_is_bounded(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  for (int i = 0; i < EARLY_KEEP + 5; i++)
    polite__px_early_record(s, i, "k", "c", "GET", "u", 1);
  json_t *j = report(s);
  assert_int_equal(json_integer_value(json_object_get(j, "early_retries")),
                   EARLY_KEEP + 5);
  assert_int_equal(json_array_size(json_object_get(j, "early")), EARLY_KEEP);
  assert_true(json_is_true(json_object_get(j, "early_truncated")));
  json_decref(j);
  polite__px_state_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(early_by_milliseconds),
      cmocka_unit_test(a_compliant_client_is_never_early),
      cmocka_unit_test(later_deadline_never_shortened),
      cmocka_unit_test(penalty_restarts_the_wait),
      cmocka_unit_test(quota_counts_down),
      cmocka_unit_test(gcra_per_key),
      cmocka_unit_test(retry_chains_and_report),
      cmocka_unit_test(early_list_is_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
