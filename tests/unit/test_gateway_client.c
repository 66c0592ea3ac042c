/* Unit tests of the client's own retries (gateway/gw_client.c): the
 * retry-count headers SDKs send, one row each, and the bounded memory of
 * the 429s and 503s the gateway gave, on a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "gateway.h"

#define SEC INT64_C(1000000)

static void retry_count_headers(void **state) {
  (void)state;
  static const struct {
    const char *name, *value;
    int retries;
  } rows[] = {
      {"X-Stainless-Retry-Count", "0", 0},
      {"x-stainless-retry-count", "2", 2},
      {"X-Retry-Count", " 3 ", 3},
      {"grpc-previous-rpc-attempts", "1", 1},
      {"x-envoy-attempt-count", "1", 0},
      {"x-envoy-attempt-count", "4", 3},
      {"x-envoy-attempt-count", "0", -1},
      {"amz-sdk-request", "attempt=1; max=3", 0},
      {"amz-sdk-request", "attempt=3; max=3", 2},
      {"amz-sdk-request", "ttl=20260101T000000Z; attempt=2; max=5", 1},
      {"Amz-Sdk-Request", "max=3;Attempt=2", 1},
      {"amz-sdk-request", "max=3", -1},
      {"X-Stainless-Retry-Count", "two", -1},
      {"X-Stainless-Retry-Count", "-1", -1},
      {"X-Stainless-Retry-Count", "", -1},
      {"X-Stainless-Retry-Count", "1234567", -1},
      {"X-Stainless-Retry-Count", "999999", GW_CLIENT_RETRIES_MAX},
      {"X-Request-Id", "5", -1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    polite_header_field f = {rows[i].name, strlen(rows[i].name), rows[i].value,
                             strlen(rows[i].value)};
    int got = polite__gw_client_retries(&f, 1);
    if (got != rows[i].retries)
      fail_msg("%s: %s gave %d, not %d", rows[i].name, rows[i].value, got,
               rows[i].retries);
  }
  /* Several say it: the largest count wins. */
  polite_header_field two[] = {
      {"x-envoy-attempt-count", 21, "2", 1},
      {"X-Stainless-Retry-Count", 23, "3", 1},
  };
  assert_int_equal(polite__gw_client_retries(two, 2), 3);
  assert_int_equal(polite__gw_client_retries(NULL, 0), -1);
}

/* A 429 the gateway gave with Retry-After 10: the same method and URL at
 * 4 s is the client's retry, 6 s early; once counted it is used up; a
 * different method, URL or a 200 is not one; after the keep time it is
 * forgotten. */
static void answers_remembered(void **state) {
  (void)state;
  gw_seen *t = polite__gw_seen_new(16, 60 * SEC);
  assert_non_null(t);
  int64_t early;
  polite__gw_seen_note(t, "GET", "http://a.test/x", 429, 10000, 0);
  polite__gw_seen_note(t, "GET", "http://a.test/y", 200, 10000, 0);
  assert_int_equal(polite__gw_seen_count(t), 1);
  assert_int_equal(
      polite__gw_seen_retry(t, "POST", "http://a.test/x", 4 * SEC, &early), 0);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/y", 4 * SEC, &early), 0);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/x", 4 * SEC, &early), 1);
  assert_int_equal(early, 6 * SEC);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/x", 5 * SEC, &early), 0);
  /* On time: not early. Forgotten after Retry-After + 60 s. */
  polite__gw_seen_note(t, "GET", "http://a.test/x", 503, 1000, 100 * SEC);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/x", 102 * SEC, &early), 1);
  assert_int_equal(early, 0);
  polite__gw_seen_note(t, "GET", "http://a.test/x", 429, -1, 200 * SEC);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/x", 261 * SEC, &early), 0);
  assert_int_equal(polite__gw_seen_count(t), 0);
  polite__gw_seen_free(t);
}

/* Bounded: the 17th answer pushes the oldest out, and a full table keeps
 * working. */
static void memory_is_bounded(void **state) {
  (void)state;
  gw_seen *t = polite__gw_seen_new(16, 60 * SEC);
  int64_t early;
  char url[64];
  for (int i = 0; i < 1000; i++) {
    snprintf(url, sizeof url, "http://a.test/%d", i);
    polite__gw_seen_note(t, "GET", url, 429, 1000, i);
    assert_true(polite__gw_seen_count(t) <= 16);
  }
  assert_int_equal(polite__gw_seen_count(t), 16);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/983", 2 * SEC, &early), 0);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/984", 2 * SEC, &early), 1);
  assert_int_equal(
      polite__gw_seen_retry(t, "GET", "http://a.test/999", 2 * SEC, &early), 1);
  assert_int_equal(polite__gw_seen_count(t), 14);
  polite__gw_seen_free(t);
  assert_null(polite__gw_seen_new(0, 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(retry_count_headers),
      cmocka_unit_test(answers_remembered),
      cmocka_unit_test(memory_is_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
