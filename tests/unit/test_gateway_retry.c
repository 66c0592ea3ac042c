/* Unit tests of the gateway's safety table (gateway/gw_retry.c): each row,
 * the table against the scheduler's own decision (polite_decide) for every
 * method, key, --retry-writes and answer, whether a body must be kept, and
 * the idempotency-key headers clients send. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "gateway.h"

/* The table of docs/gateway.md, row by row. */
static void rows_as_documented(void **state) {
  (void)state;
  static const struct {
    const char *method;
    int keyed, retry_writes, status, retried;
  } cases[] = {
      {"GET", 0, 0, 429, 1},      {"HEAD", 0, 0, 503, 1},
      {"OPTIONS", 0, 0, 0, 1},    {"PUT", 0, 0, 502, 1},
      {"DELETE", 0, 0, 429, 1},   {"TRACE", 0, 0, 504, 1},
      {"get", 0, 0, 429, 1},      {"POST", 1, 0, 429, 1},
      {"POST", 1, 0, 503, 1},     {"PATCH", 1, 0, 0, 1},
      {"POST", 0, 0, 429, 0},     {"POST", 0, 0, 503, 0},
      {"PATCH", 0, 0, 0, 0},      {"POST", 0, 1, 429, 1},
      {"POST", 0, 1, 503, 0},     {"POST", 0, 1, 0, 0},
      {"POST", 0, 1, 500, 0},     {"GET", 0, 0, 404, 0},
      {"GET", 0, 0, 200, 0},      {"GET", 0, 0, 501, 0},
      {"PROPFIND", 0, 1, 429, 1}, {"PROPFIND", 0, 0, 429, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const gw_retry_row *r =
        polite__gw_retry_rule(cases[i].method, cases[i].keyed,
                              cases[i].retry_writes, cases[i].status);
    assert_non_null(r);
    assert_non_null(r->why);
    if (r->retried != cases[i].retried)
      fail_msg("%s keyed=%d writes=%d %d: retried %d", cases[i].method,
               cases[i].keyed, cases[i].retry_writes, cases[i].status,
               r->retried);
  }
}

/* The table says what the scheduler does: for every combination, a row
 * that retries is exactly a decision to RETRY (first of three attempts,
 * no deadline, the server asking for a second). */
static void table_agrees_with_the_decision(void **state) {
  (void)state;
  const char *methods[] = {"GET",   "HEAD", "OPTIONS", "PUT",      "DELETE",
                           "TRACE", "POST", "PATCH",   "PROPFIND", "CONNECT"};
  int statuses[] = {0,   200, 301, 400, 403, 404, 408, 425,
                    429, 500, 501, 502, 503, 504, 505, 599};
  unsigned checked = 0;
  for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
    for (int keyed = 0; keyed <= 1; keyed++)
      for (int writes = 0; writes <= 1; writes++)
        for (size_t k = 0; k < sizeof statuses / sizeof statuses[0]; k++) {
          polite_headers h;
          polite_headers_init(&h, 0);
          polite_headers_feed(&h, "Retry-After", 11, "1", 1);
          polite_decide_in in;
          memset(&in, 0, sizeof in);
          in.method = methods[m];
          in.has_idempotency_key = keyed;
          in.retry_writes = writes;
          in.status = statuses[k];
          in.headers = statuses[k] ? &h : NULL;
          in.attempt = 1;
          in.max_attempts = 3;
          in.time_left_ms = -1;
          in.backoff = (polite_backoff)POLITE_BACKOFF_DEFAULT;
          polite_decision d;
          polite_decide(&in, &d);
          const gw_retry_row *r =
              polite__gw_retry_rule(methods[m], keyed, writes, statuses[k]);
          if ((d.action == POLITE_RETRY) != r->retried)
            fail_msg("%s keyed=%d writes=%d %d: decide %d, table %d",
                     methods[m], keyed, writes, statuses[k], d.action,
                     r->retried);
          checked++;
        }
  assert_int_equal(checked, 10 * 2 * 2 * 16);
}

/* Every row is reachable: no row hides behind an earlier one. */
static void every_row_is_used(void **state) {
  (void)state;
  size_t n;
  const gw_retry_row *rows = polite__gw_retry_rows(&n);
  assert_true(n >= 10);
  const char *methods[] = {"GET", "POST"};
  int statuses[] = {0, 200, 429, 500, 503};
  int used[32] = {0};
  for (size_t m = 0; m < 2; m++)
    for (int keyed = 0; keyed <= 1; keyed++)
      for (int writes = 0; writes <= 1; writes++)
        for (size_t k = 0; k < 5; k++)
          used[polite__gw_retry_rule(methods[m], keyed, writes, statuses[k]) -
               rows] = 1;
  for (size_t i = 0; i < n; i++)
    if (!used[i])
      fail_msg("row %zu (%s) is never used", i, rows[i].why);
}

/* A body is kept for a retry only when some answer could bring one. */
static void bodies_kept_only_when_a_retry_may_come(void **state) {
  (void)state;
  assert_int_equal(polite__gw_may_retry("PUT", 0, 0), 1);
  assert_int_equal(polite__gw_may_retry("POST", 1, 0), 1);
  assert_int_equal(polite__gw_may_retry("POST", 0, 1), 1);
  assert_int_equal(polite__gw_may_retry("POST", 0, 0), 0);
  assert_int_equal(polite__gw_may_retry("PATCH", 0, 0), 0);
}

static polite_header_field field(const char *name, const char *value) {
  polite_header_field f = {name, strlen(name), value, strlen(value)};
  return f;
}

/* Idempotency-Key (any case) or PayPal-Request-Id; an empty one is none;
 * Idempotency-Key wins when both come. */
static void idempotency_key_headers(void **state) {
  (void)state;
  size_t len;
  polite_header_field a[] = {field("Content-Type", "application/json"),
                             field("idempotency-key", "  k-42 ")};
  const char *v = polite__gw_idempotency_key(a, 2, &len);
  assert_non_null(v);
  assert_int_equal(len, 4);
  assert_memory_equal(v, "k-42", 4);
  polite_header_field b[] = {field("PayPal-Request-Id", "pp-1"),
                             field("Idempotency-Key", "ik-1")};
  v = polite__gw_idempotency_key(b, 2, &len);
  assert_memory_equal(v, "ik-1", 4);
  polite_header_field c[] = {field("Idempotency-Key", "  "),
                             field("X-Idempotency", "x")};
  assert_null(polite__gw_idempotency_key(c, 2, &len));
  assert_int_equal(len, 0);
  assert_null(polite__gw_idempotency_key(NULL, 0, &len));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rows_as_documented),
      cmocka_unit_test(table_agrees_with_the_decision),
      cmocka_unit_test(every_row_is_used),
      cmocka_unit_test(bodies_kept_only_when_a_retry_may_come),
      cmocka_unit_test(idempotency_key_headers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
