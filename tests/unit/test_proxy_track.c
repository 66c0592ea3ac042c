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

#define T PX_TELL_THROTTLE

static px_verdict judge(px_state *s, const char *key, const char *conn,
                        const char *who, int64_t now, int penalty,
                        int64_t *remaining) {
  px_judgement j;
  polite__px_judge(s, key, conn, -1, who, now, penalty, &j);
  if (remaining)
    *remaining = j.remaining_ms;
  return j.verdict;
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

static void rec(px_state *s, const char *method, const char *url,
                uint64_t client, int status, px_kind kind) {
  px_record r = {method, url, "127.0.0.1", client, status, kind};
  polite__px_stats_record(s, &r);
}

static void keyed_objects_per_table(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  assert_null(polite__px_keyed(s, PX_TAB_LIMIT, "a"));
  int64_t *a = polite__px_keyed_put(s, PX_TAB_CONC, "a", calloc(1, 8), free);
  assert_non_null(a);
  assert_ptr_equal(polite__px_keyed(s, PX_TAB_CONC, "a"), a);
  assert_null(polite__px_keyed(s, PX_TAB_LIMIT, "a")); /* tables apart */
  assert_null(polite__px_keyed_put(s, PX_TAB__COUNT, "a", calloc(1, 8), free));
  polite__px_state_free(s);
}

static void early_by_milliseconds(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t t0 = 1000000, left = 0; /* fake monotonic ms */
  const char *k = "GET http://h/a";
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 - 1, 0, NULL), PX_JUDGE_OK);
  polite__px_tell(s, k, "ip:1", "ip", t0, 2000, T);
  /* 400 ms early is caught, with its exact remaining time. */
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 1600, 0, &left),
                   PX_JUDGE_EARLY);
  assert_int_equal(left, 400);
  /* 1 ms early is still early. */
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 1999, 0, &left),
                   PX_JUDGE_EARLY);
  assert_int_equal(left, 1);
  /* Exactly on time is compliant, and then settled. */
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 2000, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 2000, 0, NULL), PX_JUDGE_OK);
  /* Other keys are unaffected. */
  polite__px_tell(s, "b", "ip:1", "ip", t0, 1000, T);
  assert_int_equal(judge(s, "c", "ip:1", "ip", t0 + 1, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "b", "ip:1", "ip", t0 + 1, 0, &left),
                   PX_JUDGE_EARLY);
  assert_int_equal(left, 999);
  polite__px_state_free(s);
}

/* The case of issue 13: A is told 1 s; B, never told, asks 300 ms later
 * and is refused during the throttle (told 1 s from then: its own
 * deadline); A, back exactly on time, is not early, and B is judged on its
 * own deadline only. */
static void clients_sharing_a_key_are_not_blamed_for_each_other(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t left;
  /* Two threads of one process, each on its kept-alive connection. */
  assert_int_equal(judge(s, "k", "ip:B", "ip", -5, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "k", "ip:A", "ip", 0, 0, NULL), PX_JUDGE_OK);
  polite__px_tell(s, "k", "ip:A", "ip", 0, 1000, T);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 300, 0, &left),
                   PX_JUDGE_THROTTLED);
  assert_int_equal(left, 700);
  polite__px_tell(s, "k", "ip:B", "ip", 300, 1000, 0); /* rounded up */
  assert_int_equal(judge(s, "k", "ip:A", "ip", 1000, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 1100, 0, &left),
                   PX_JUDGE_EARLY);
  assert_int_equal(left, 200);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 1300, 0, NULL), PX_JUDGE_OK);
  /* A told 429 by a rate limiter (no throttle flag) binds only A. */
  polite__px_tell(s, "k", "ip:A", "ip", 2000, 1000, 0);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 2100, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "k", "ip:A", "ip", 2100, 0, NULL), PX_JUDGE_EARLY);
  polite__px_state_free(s);
}

static void an_early_request_never_moves_the_deadline(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t left;
  judge(s, "k", "c", "ip", 0, 0, NULL);
  polite__px_tell(s, "k", "c", "ip", 0, 2000, T);
  assert_int_equal(judge(s, "k", "c", "ip", 500, 0, &left), PX_JUDGE_EARLY);
  assert_int_equal(left, 1500);
  /* The early 429 says 2 s (1.5 rounded up), sent at 600: not a new
   * deadline, and not a longer throttle. */
  polite__px_tell(s, "k", "c", "ip", 600, 2000, T);
  assert_int_equal(judge(s, "k", "c", "ip", 2000, 0, NULL), PX_JUDGE_OK);
  polite__px_state_free(s);
}

static void a_compliant_client_is_never_early(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  /* Many waits of whole seconds, each retried exactly when allowed. */
  int64_t now = 5;
  for (int i = 1; i <= 50; i++) {
    polite__px_tell(s, "k", "c", "ip", now, (int64_t)(i % 7 + 1) * 1000, T);
    now += (int64_t)(i % 7 + 1) * 1000;
    assert_int_equal(judge(s, "k", "c", "ip", now, i & 1, NULL), PX_JUDGE_OK);
  }
  polite__px_state_free(s);
}

static void penalty_restarts_the_wait(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t left;
  polite__px_tell(s, "k", "c", "ip", 0, 3000, T);
  /* Early at 1000: the whole 3000 ms start again when the answer leaves
   * (1010), so until 4010. */
  assert_int_equal(judge(s, "k", "c", "ip", 1000, 1, &left), PX_JUDGE_EARLY);
  assert_int_equal(left, 3000);
  polite__px_tell(s, "k", "c", "ip", 1010, 3000, PX_TELL_RESTART);
  assert_int_equal(judge(s, "k", "c", "ip", 3000, 1, NULL), PX_JUDGE_EARLY);
  polite__px_tell(s, "k", "c", "ip", 3000, 3000, PX_TELL_RESTART);
  assert_int_equal(judge(s, "k", "c", "ip", 6000, 1, NULL), PX_JUDGE_OK);
  polite__px_state_free(s);
}

/* A client that comes back on a fresh connection (curl in a loop,
 * requests.get) is the same client when it is evidently alone on its
 * address and credentials: its connection closed, or idle since it was
 * told while no other connection from there was used. Once an older
 * connection is used after a newer one, several clients share the address
 * and a fresh connection is a new client. */
static void a_reconnecting_client_keeps_its_deadline(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  px_judgement j1, j2;
  polite__px_judge(s, "k", "ip:1", -1, "ip", 0, 0, &j1);
  polite__px_tell(s, "k", "ip:1", "ip", 1, 1000, T);
  polite__px_judge(s, "k", "ip:2", -1, "ip", 600, 0, &j2);
  assert_int_equal(j2.verdict, PX_JUDGE_EARLY);
  assert_int_equal(j2.remaining_ms, 401);
  assert_int_equal(j2.client, j1.client); /* one retry chain */
  /* Another address or credentials: never. */
  assert_int_equal(judge(s, "k", "ip:3", "other", 700, 0, NULL),
                   PX_JUDGE_THROTTLED);
  polite__px_state_free(s);

  s = polite__px_state_new();
  judge(s, "u", "ip:1", "ip", 0, 0, NULL);
  judge(s, "u", "ip:2", "ip", 1, 0, NULL);
  judge(s, "u", "ip:1", "ip", 2, 0, NULL); /* older one again: several */
  polite__px_tell(s, "k", "ip:1", "ip", 3, 1000, T);
  assert_int_equal(judge(s, "k", "ip:3", "ip", 600, 0, NULL),
                   PX_JUDGE_THROTTLED);
  polite__px_conn_closed(s, "ip:1");
  assert_int_equal(judge(s, "k", "ip:4", "ip", 700, 0, NULL),
                   PX_JUDGE_THROTTLED);
  polite__px_state_free(s);
}

/* Four threads starting together: A is told, B's first request on its new
 * connection looks like A coming back, and is flagged; when A's older
 * connection is used again the address has several clients, and the flag
 * is taken back (counted as a request during the throttle). */
static void a_guess_is_taken_back(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  px_judgement j;
  polite__px_judge(s, "k", "ip:A", -1, "ip", 0, 0, &j);
  rec(s, "GET", "http://h/k", j.client, 429, PX_KIND_FAILURE);
  polite__px_tell(s, "k", "ip:A", "ip", 1, 1000, T);
  polite__px_judge(s, "k", "ip:B", -1, "ip", 2, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  assert_true(j.guessed);
  polite__px_early_record(s, 2, "k", "ip", "ip:B", "GET", "http://h/k", 999,
                          j.guessed);
  rec(s, "GET", "http://h/k", j.client, 429, PX_KIND_EARLY);
  json_t *r = report(s);
  assert_int_equal(json_integer_value(json_object_get(r, "early_retries")), 1);
  json_decref(r);
  polite__px_judge(s, "k", "ip:A", -1, "ip", 1001, 0, &j); /* A again */
  r = report(s);
  assert_int_equal(json_integer_value(json_object_get(r, "early_retries")), 0);
  assert_int_equal(json_integer_value(json_object_get(r, "during_throttle")),
                   1);
  assert_int_equal(json_array_size(json_object_get(r, "early")), 0);
  json_decref(r);
  polite__px_state_free(s);
}

static int dead_conn_1(void *ctx, const char *conn, int handle) {
  (void)ctx;
  assert_int_equal(handle, 7);
  return strcmp(conn, "ip:1") != 0;
}

/* The told connection was used after the tell (not idle), so a fresh one is
 * someone else, until the probe finds the told one closed. */
static void the_probe_finds_a_closed_connection(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  px_judgement j;
  polite__px_judge(s, "k", "ip:1", 7, "ip", 0, 0, &j);
  polite__px_tell(s, "k", "ip:1", "ip", 0, 1000, T);
  polite__px_judge(s, "k", "ip:1", 7, "ip", 50, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  polite__px_judge(s, "k", "ip:2", 7, "ip", 100, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_THROTTLED); /* ip:1 still open */
  polite__px_conn_probe(s, dead_conn_1, NULL);
  polite__px_judge(s, "k", "ip:3", 7, "ip", 200, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  polite__px_state_free(s);
}

/* Four clients taking turns on one URL, each 429 then 200: two attempts
 * each, not a chain of eight. */
static void max_attempts_counts_per_client(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  for (uint64_t c = 1; c <= 4; c++)
    rec(s, "GET", "http://h/x", c, 429, PX_KIND_THROTTLED);
  for (uint64_t c = 1; c <= 4; c++)
    rec(s, "GET", "http://h/x", c, 200, PX_KIND_PASSED);
  json_t *j = report(s);
  assert_int_equal(json_integer_value(json_object_get(j, "max_attempts")), 2);
  assert_int_equal(json_integer_value(json_object_get(j, "during_throttle")),
                   4);
  assert_int_equal(json_integer_value(json_object_get(j, "early_retries")), 0);
  json_t *c = json_array_get(json_object_get(j, "clients"), 0);
  assert_int_equal(json_integer_value(json_object_get(c, "during_throttle")),
                   4);
  assert_int_equal(json_integer_value(json_object_get(c, "requests")), 8);
  json_decref(j);
  polite__px_state_free(s);
}

static void retry_chains_and_report(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  /* 3 x 3 nested retry loops: 9 attempts in a row, each answered 429. */
  for (int i = 0; i < 9; i++)
    rec(s, "GET", "http://h/nested", 1, 429, PX_KIND_FAILURE);
  rec(s, "GET", "http://h/nested", 1, 200, PX_KIND_PASSED);
  /* A fresh chain after a success starts at 1 again. */
  rec(s, "GET", "http://h/nested", 1, 200, PX_KIND_PASSED);
  /* Another URL: 503 then 200 is two attempts. */
  rec(s, "POST", "http://h/b", 1, 503, PX_KIND_PASSED);
  rec(s, "POST", "http://h/b", 1, 200, PX_KIND_PASSED);
  rec(s, "GET", "http://h/b", 1, 429, PX_KIND_EARLY);
  polite__px_early_record(s, 500, "GET http://h/b", "127.0.0.1",
                          "127.0.0.1:4242", "GET",
                          "http://h/b", 400, 0);
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
    polite__px_early_record(s, i, "k", "c", "c:1", "GET", "u", 1, 0);
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
      cmocka_unit_test(clients_sharing_a_key_are_not_blamed_for_each_other),
      cmocka_unit_test(an_early_request_never_moves_the_deadline),
      cmocka_unit_test(a_reconnecting_client_keeps_its_deadline),
      cmocka_unit_test(max_attempts_counts_per_client),
      cmocka_unit_test(the_probe_finds_a_closed_connection),
      cmocka_unit_test(a_guess_is_taken_back),
      cmocka_unit_test(penalty_restarts_the_wait),
      cmocka_unit_test(keyed_objects_per_table),
      cmocka_unit_test(retry_chains_and_report),
      cmocka_unit_test(early_list_is_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
