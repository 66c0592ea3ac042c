/* Unit tests of the resume policy (lib/resume.c) over a real SQLite
 * journal: the wrapped callbacks are called as the engine calls them, over
 * two sessions, to check that finished ids are skipped, keys are made once
 * and reused, repeated ids end the input, and an attempt whose start cannot
 * be recorded is vetoed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <polite/journal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_env.h"
#include "journal_tmp.h"

/* The inner side: an input of lines, and what reached on_result. */
typedef struct {
  const char *const *lines;
  size_t n, pos;
  unsigned results;
  int veto;
} inner;

static int in_next(void *ud, polite_request **out) {
  inner *in = ud;
  while (in->pos < in->n) {
    size_t i = in->pos++;
    int rc = polite_request_parse_line(in->lines[i], strlen(in->lines[i]),
                                       (long)i + 1, NULL, out);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static void in_result(void *ud, const polite_result *r) {
  (void)r;
  ((inner *)ud)->results++;
}

static int in_start(void *ud, const polite_attempt_start *s) {
  (void)s;
  return ((inner *)ud)->veto;
}

static polite_journal *open_session(int mode) {
  polite_journal *j = NULL;
  char err[600];
  assert_int_equal(polite_journal_open(path, mode, &j, err, sizeof err), 0);
  polite_journal_session s = {mode == POLITE_JOURNAL_CREATE ? "run" : "resume",
                              "fp",
                              "in",
                              "out",
                              "",
                              0};
  assert_true(polite_journal_begin(j, &s) >= 1);
  return j;
}

static void attach(polite_journal *j, inner *in, polite_batch_options *bo,
                   polite_journal_run **run) {
  polite_batch_options_init(bo);
  bo->next = in_next;
  bo->on_result = in_result;
  bo->on_attempt_start = in_start;
  bo->idempotency_auto = 1;
  bo->ud = in;
  assert_int_equal(polite_journal_attach(j, bo, NULL, run), 0);
  assert_int_equal(bo->idempotency_auto, 0);
}

/* An input of lines and the run attached over it: what most cases start
 * with. */
typedef struct {
  inner in;
  polite_batch_options bo;
  polite_journal_run *run;
} attached;

static void attach_lines(polite_journal *j, const char *const *lines, size_t n,
                         attached *a) {
  memset(a, 0, sizeof *a);
  a->in.lines = lines;
  a->in.n = n;
  attach(j, &a->in, &a->bo, &a->run);
}

/* Pretends the engine ran r to the end with outcome ok. */
static void finish_ok(polite_batch_options *bo, polite_request *r) {
  polite_attempt_start s = {r, polite_request_method(r), 1, 1000,
                            r->idempotency_key};
  assert_int_equal(bo->on_attempt_start(bo->ud, &s), 0);
  polite_result res;
  memset(&res, 0, sizeof res);
  res.req = r;
  res.method = s.method;
  res.outcome = POLITE_OUT_OK;
  res.status = 200;
  res.attempts = 1;
  bo->on_result(bo->ud, &res);
}

static const char *const input[] = {
    "http://api.test/a",
    "{\"id\":\"w\",\"method\":\"POST\",\"url\":\"http://api.test/w\"}",
    "{\"id\":\"g\",\"url\":\"http://api.test/g\"}",
};

/* Session 1 finishes the first two requests and "crashes" after handing
 * over the third; session 2 skips the finished ones and hands over only the
 * third; the write's key, made in session 1, is the same in both. */
static void skips_finished_and_reuses_keys(void **state) {
  (void)state;
  char key[64] = "";
  {
    polite_journal *j = open_session(POLITE_JOURNAL_CREATE);
    attached a;
    attach_lines(j, input, 3, &a);
    polite_request *r[3];
    for (int i = 0; i < 3; i++)
      assert_int_equal(a.bo.next(a.bo.ud, &r[i]), 1);
    polite_request *extra = NULL;
    assert_int_equal(a.bo.next(a.bo.ud, &extra), 0);
    assert_int_equal(strncmp(r[0]->id, "line-1-", 7), 0); /* a stable id */
    assert_int_equal(strlen(r[0]->id), strlen("line-1-") + 8);
    assert_null(r[0]->idempotency_key); /* a GET gets no key */
    assert_non_null(r[1]->idempotency_key);
    snprintf(key, sizeof key, "%s", r[1]->idempotency_key);
    assert_int_equal(strlen(key), 36);
    finish_ok(&a.bo, r[0]);
    finish_ok(&a.bo, r[1]);
    assert_int_equal(a.in.results, 2);
    polite_journal_run_status st;
    polite_journal_run_status_get(a.run, &st);
    assert_int_equal(st.handed, 3);
    assert_false(st.failed);
    for (int i = 0; i < 3; i++)
      polite_request_free(r[i]);
    polite_journal_run_free(a.run);
    polite_journal_close(j);
  }
  {
    polite_journal *j = open_session(POLITE_JOURNAL_RESUME);
    char oc[32] = "";
    assert_int_equal(polite_journal_finished(j, "w", oc, sizeof oc), 1);
    assert_string_equal(oc, "ok");
    assert_int_equal(polite_journal_finished(j, "g", NULL, 0), 0);
    attached a;
    attach_lines(j, input, 3, &a);
    polite_request *r = NULL;
    assert_int_equal(a.bo.next(a.bo.ud, &r), 1);
    assert_string_equal(r->id, "g");
    polite_request_free(r);
    assert_int_equal(a.bo.next(a.bo.ud, &r), 0);
    polite_journal_run_status st;
    polite_journal_run_status_get(a.run, &st);
    assert_int_equal(st.skipped, 2);
    assert_int_equal(st.handed, 1);
    char *k = NULL;
    assert_int_equal(polite_journal_key(j, "w", &k), 1);
    assert_string_equal(k, key);
    free(k);
    polite_journal_run_free(a.run);
    polite_journal_close(j);
  }
  /* A write handed over but never finished gets its recorded key again. */
  {
    polite_journal *j = open_session(POLITE_JOURNAL_RESUME);
    polite_journal_requeue(j, "w", "ok");
    attached a;
    attach_lines(j, input + 1, 1, &a);
    polite_request *r = NULL;
    assert_int_equal(a.bo.next(a.bo.ud, &r), 1);
    assert_string_equal(r->idempotency_key, key);
    polite_request_free(r);
    polite_journal_run_free(a.run);
    polite_journal_close(j);
  }
}

/* The same id twice in one session ends the input at the second one, with
 * a message naming both lines. */
static void repeated_id_ends_the_input(void **state) {
  (void)state;
  static const char *const twice[] = {
      "{\"id\":\"same\",\"url\":\"http://api.test/1\"}",
      "{\"id\":\"same\",\"url\":\"http://api.test/2\"}",
      "{\"id\":\"later\",\"url\":\"http://api.test/3\"}"};
  polite_journal *j = open_session(POLITE_JOURNAL_CREATE);
  attached a;
  attach_lines(j, twice, 3, &a);
  polite_request *r = NULL;
  assert_int_equal(a.bo.next(a.bo.ud, &r), 1);
  polite_request_free(r);
  assert_int_equal(a.bo.next(a.bo.ud, &r), 0);
  assert_int_equal(a.bo.next(a.bo.ud, &r), 0); /* and stays ended */
  polite_journal_run_status st;
  polite_journal_run_status_get(a.run, &st);
  assert_true(st.input_failed);
  assert_false(st.failed);
  assert_non_null(strstr(st.error, "input line 2: id 'same' was already "
                                   "used on line 1"));
  polite_journal_run_free(a.run);
  polite_journal_close(j);
}

static int failing_check(void *ud, char *msg, size_t len) {
  int *calls = ud;
  if (++*calls < 2)
    return 0;
  snprintf(msg, len, "the disk went away");
  return -1;
}

/* A check that fails before an attempt vetoes it (nothing unrecorded is
 * sent), stops the run, and later results are not recorded. */
static void failed_check_vetoes_the_attempt(void **state) {
  (void)state;
  polite_journal *j = open_session(POLITE_JOURNAL_CREATE);
  inner in = {input, 3, 0, 0, 0};
  polite_batch_options bo;
  polite_batch_options_init(&bo);
  bo.next = in_next;
  bo.on_result = in_result;
  bo.ud = &in;
  int calls = 0;
  polite_journal_attach_options ao = {0, NULL, failing_check, NULL, &calls};
  polite_journal_run *run;
  assert_int_equal(polite_journal_attach(j, &bo, &ao, &run), 0);
  polite_request *r = NULL;
  assert_int_equal(bo.next(bo.ud, &r), 1); /* check 1 passes */
  polite_attempt_start s = {r, "GET", 1, 1000, NULL};
  assert_int_equal(bo.on_attempt_start(bo.ud, &s), 1); /* check 2 fails */
  polite_result res;
  memset(&res, 0, sizeof res);
  res.req = r;
  res.outcome = POLITE_OUT_CANCELLED;
  bo.on_result(bo.ud, &res);
  assert_int_equal(in.results, 0);
  polite_journal_run_status st;
  polite_journal_run_status_get(run, &st);
  assert_true(st.failed);
  assert_int_equal(st.suppressed, 1);
  assert_string_equal(st.error, "the disk went away");
  polite_journal_counts c;
  assert_int_equal(polite_journal_count(j, &c), 0);
  assert_int_equal(c.attempt_starts, 0);
  assert_int_equal(c.results, 0);
  polite_request_free(r);
  polite_journal_run_free(run);
  polite_journal_close(j);
}

/* The batch's env reaches the journal through polite_journal_attach: the
 * request record is stamped on its wall clock and the write's new key is
 * made from its random bytes, neither from the real sources. */
static void the_batch_env_reaches_the_journal(void **state) {
  (void)state;
  unsigned char fill = 0x11;
  polite_env env = {NULL, fake_env_wall, fake_env_bytes, &fill};
  polite_journal *j = open_session(POLITE_JOURNAL_CREATE);
  static const char *const w[] = {
      "{\"id\":\"w\",\"method\":\"POST\",\"url\":\"http://api.test/w\"}"};
  inner in = {w, 1, 0, 0, 0};
  polite_batch_options bo;
  polite_journal_run *run;
  polite_batch_options_init(&bo);
  bo.next = in_next;
  bo.on_result = in_result;
  bo.idempotency_auto = 1;
  bo.ud = &in;
  bo.env = &env;
  assert_int_equal(polite_journal_attach(j, &bo, NULL, &run), 0);
  polite_request *r = NULL;
  assert_int_equal(bo.next(bo.ud, &r), 1);
  assert_non_null(r->idempotency_key);
  assert_int_equal(strncmp(r->idempotency_key, "11111111-", 9), 0);
  polite_request_free(r);
  polite_journal_run_free(run);
  polite_journal_close(j);
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db,
                                      "SELECT COUNT(*) FROM request WHERE "
                                      "created_ms = 1234567890123",
                                      -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int64(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(skips_finished_and_reuses_keys, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(the_batch_env_reaches_the_journal, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(repeated_id_ends_the_input, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(failed_check_vetoes_the_attempt, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
