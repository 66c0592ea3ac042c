/* Unit tests of the gateway's honest answer (gateway/gw_answer.c): the
 * status each outcome calls for, Retry-After in whole seconds rounded up
 * (never 0), the RateLimit field on a 429, the JSON body and its fields,
 * and no secret in it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <string.h>

#include "gateway.h"

static polite_result result(polite_outcome out, int status, int64_t ra_ms,
                            int pause_status, const char *error) {
  polite_result r;
  memset(&r, 0, sizeof r);
  r.outcome = out;
  r.status = status;
  r.retry_after_ms = ra_ms;
  r.pause_status = pause_status;
  r.error = error;
  return r;
}

static const char *header(const gw_reply *g, const char *name) {
  for (size_t i = 0; i < g->nheaders; i++)
    if (strcmp(g->headers[i].name, name) == 0)
      return g->headers[i].value;
  return NULL;
}

static void statuses_by_outcome(void **state) {
  (void)state;
  static const struct {
    polite_outcome out;
    int64_t ra_ms;
    int pause_status, status;
    const char *retry_after; /* NULL: none */
  } rows[] = {
      {POLITE_OUT_QUEUE_FULL, 2500, 0, 503, "3"},
      {POLITE_OUT_QUEUE_FULL, -1, 0, 503, "1"},
      {POLITE_OUT_WAIT_TOO_LONG, 3600000, 429, 429, "3600"},
      {POLITE_OUT_WAIT_TOO_LONG, 120001, 503, 503, "121"},
      {POLITE_OUT_WAIT_TOO_LONG, 9000, 0, 429, "9"},
      {POLITE_OUT_DEADLINE, 4000, 0, 429, "4"},
      {POLITE_OUT_DEADLINE, -1, 0, 504, NULL},
      {POLITE_OUT_QUOTA_EXHAUSTED, 60000, 429, 429, "60"},
      {POLITE_OUT_QUOTA_EXHAUSTED, 1, 403, 403, "1"},
      {POLITE_OUT_NETWORK_ERROR, -1, 0, 502, NULL},
      {POLITE_OUT_CANCELLED, -1, 0, 503, NULL},
      {POLITE_OUT_INVALID_INPUT, -1, 0, 400, NULL},
      {POLITE_OUT_RETRIES_EXHAUSTED, -1, 0, 502, NULL},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    polite_result r =
        result(rows[i].out, 0, rows[i].ra_ms, rows[i].pause_status, "why");
    gw_reply g;
    assert_int_equal(polite__gw_reply(&r, "api.test", &g), 0);
    if (g.status != rows[i].status)
      fail_msg("row %zu: %d, not %d", i, g.status, rows[i].status);
    const char *ra = header(&g, "Retry-After");
    if (rows[i].retry_after)
      assert_string_equal(ra, rows[i].retry_after);
    else
      assert_null(ra);
    /* A 429 says the same in the IETF RateLimit field. */
    const char *rl = header(&g, "RateLimit");
    if (g.status == 429 && ra) {
      char want[64];
      snprintf(want, sizeof want, "\"polite\";r=0;t=%s", ra);
      assert_string_equal(rl, want);
    } else {
      assert_null(rl);
    }
    assert_string_equal(header(&g, "Content-Type"), "application/json");
    assert_string_equal(header(&g, "X-Polite-Outcome"),
                        polite_outcome_name(rows[i].out));
    assert_non_null(g.reason);
    polite__gw_reply_free(&g);
  }
}

static void retry_after_rounds_up(void **state) {
  (void)state;
  static const int64_t in[] = {-1, 0, 1, 999, 1000, 1001, 59999, 60000};
  static const int64_t out[] = {1, 1, 1, 1, 1, 2, 60, 60};
  for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
    assert_int_equal(polite__gw_retry_after_s(in[i]), out[i]);
}

/* The body: the error object the SDKs print, and polite's fields. */
static void body_fields(void **state) {
  (void)state;
  polite_result r =
      result(POLITE_OUT_WAIT_TOO_LONG, 429, 12345, 429,
             "the server asked this account to wait 3600 s, longer than "
             "max-wait (900 s); not waiting and not sending early");
  r.attempts = 1;
  gw_reply g;
  assert_int_equal(polite__gw_reply(&r, "api.example.com", &g), 0);
  json_error_t je;
  json_t *o = json_loadb(g.body, g.body_len, 0, &je);
  assert_non_null(o);
  assert_string_equal(json_string_value(json_object_get(o, "type")), "error");
  json_t *e = json_object_get(o, "error");
  assert_string_equal(json_string_value(json_object_get(e, "type")),
                      "rate_limit_error");
  assert_string_equal(json_string_value(json_object_get(e, "code")),
                      "wait_too_long");
  assert_non_null(strstr(json_string_value(json_object_get(e, "message")),
                         "max-wait (900 s)"));
  json_t *p = json_object_get(o, "polite");
  assert_string_equal(json_string_value(json_object_get(p, "outcome")),
                      "wait_too_long");
  assert_int_equal(json_integer_value(json_object_get(p, "status")), 429);
  assert_int_equal(json_integer_value(json_object_get(p, "upstream_status")),
                   429);
  assert_int_equal(json_integer_value(json_object_get(p, "attempts")), 1);
  assert_int_equal(json_integer_value(json_object_get(p, "retry_after_ms")),
                   12345);
  assert_int_equal(json_integer_value(json_object_get(p, "retry_after_s")), 13);
  assert_string_equal(json_string_value(json_object_get(p, "account")),
                      "api.example.com");
  json_decref(o);
  polite__gw_reply_free(&g);

  /* Never sent: upstream_status is null; no account, no retry_after. */
  r = result(POLITE_OUT_NETWORK_ERROR, 0, -1, 0, NULL);
  assert_int_equal(polite__gw_reply(&r, NULL, &g), 0);
  o = json_loadb(g.body, g.body_len, 0, &je);
  p = json_object_get(o, "polite");
  assert_true(json_is_null(json_object_get(p, "upstream_status")));
  assert_null(json_object_get(p, "account"));
  assert_null(json_object_get(p, "retry_after_ms"));
  json_decref(o);
  polite__gw_reply_free(&g);
}

/* A transport error may quote a URL with a key in it: the body says
 * REDACTED instead. */
static void no_secret_in_the_body(void **state) {
  (void)state;
  polite_result r =
      result(POLITE_OUT_NETWORK_ERROR, 0, -1, 0,
             "Could not connect to https://api.test/v1?api_key=SEKRIT123 "
             "(connection refused)");
  gw_reply g;
  assert_int_equal(polite__gw_reply(&r, "api.test", &g), 0);
  assert_null(strstr(g.body, "SEKRIT123"));
  assert_non_null(strstr(g.body, "REDACTED"));
  polite__gw_reply_free(&g);
  /* Bytes that are not UTF-8 (or control characters) still give a valid
   * JSON answer. */
  r.error = "bad \xff\xfe bytes\x01";
  assert_int_equal(polite__gw_reply(&r, "api.test", &g), 0);
  json_error_t je;
  json_t *o = json_loadb(g.body, g.body_len, 0, &je);
  assert_non_null(o);
  json_decref(o);
  polite__gw_reply_free(&g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(statuses_by_outcome),
      cmocka_unit_test(retry_after_rounds_up),
      cmocka_unit_test(body_fields),
      cmocka_unit_test(no_secret_in_the_body),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
