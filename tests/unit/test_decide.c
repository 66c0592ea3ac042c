/* Unit tests of the retry decision (lib/decide.c): one test per rule, then
 * invariants over many random inputs. No clock: all times are made up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <polite/core.h>

/* 2026-11-30 00:00:00 UTC, a fixed "now" for the headers. */
#define NOW_MS INT64_C(1795996800000)

static polite_headers hdrs;

/* Headers holding one field (name/value), parsed the way the engine does. */
static const polite_headers *one_header(const char *name, const char *value) {
  polite_headers_init(&hdrs, NOW_MS);
  polite_headers_feed(&hdrs, name, strlen(name), value, strlen(value));
  return &hdrs;
}

/* A GET that got `status` on its first of three attempts, no deadline,
 * 1 s spread, default backoff. */
static polite_decide_in base_in(int status) {
  polite_decide_in in;
  memset(&in, 0, sizeof in);
  in.method = "GET";
  in.status = status;
  in.attempt = 1;
  in.max_attempts = 3;
  in.time_left_ms = -1;
  in.backoff = (polite_backoff)POLITE_BACKOFF_DEFAULT;
  in.spread_ms = 1000;
  in.rnd = UINT64_C(0x123456789abcdef);
  return in;
}

static polite_decision run(const polite_decide_in *in) {
  polite_decision d;
  memset(&d, 0xAB, sizeof d); /* every field must be written */
  polite_decide(in, &d);
  assert_non_null(d.why);
  assert_true(strlen(d.why) > 10);
  return d;
}

/* ---- Rule 1-3: which statuses end, which may be retried ------------------ */

static void success_statuses_are_done_ok(void **state) {
  (void)state;
  int ok[] = {100, 101, 200, 201, 204, 206, 299, 301, 302, 304, 307, 399};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    polite_decide_in in = base_in(ok[i]);
    polite_decision d = run(&in);
    assert_int_equal(d.action, POLITE_DONE);
    assert_int_equal(d.reason, POLITE_R_OK);
    assert_int_equal(d.account_pause, 0);
    assert_int_equal(d.wait_ms, 0);
  }
}

static void unfixable_statuses_are_http_error(void **state) {
  (void)state;
  int bad[] = {400, 401, 402, 403, 404, 405, 409, 410, 413, 422,
               451, 499, 501, 505, 511, 599, 600, 999, -1,  42};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    polite_decide_in in = base_in(bad[i]);
    in.headers = one_header("Retry-After", "5"); /* a wait does not matter */
    polite_decision d = run(&in);
    if (d.action != POLITE_DONE || d.reason != POLITE_R_HTTP_ERROR)
      fail_msg("status %d: action %d reason %d", bad[i], d.action, d.reason);
  }
}

/* Rule 3b: no response because TLS cannot work (the certificate does not
 * verify) ends at once, tls_error, whatever else holds: attempts left, a
 * write without a key (nothing was sent), a deadline. A transient failure
 * with the same inputs is retried (or not_retried_unsafe for the write). */
static void tls_failures_are_not_retried(void **state) {
  (void)state;
  static const struct {
    const char *method;
    int64_t left_ms;
  } cases[] = {{"GET", -1}, {"POST", -1}, {"GET", 5000}, {"PUT", 1}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    polite_decide_in in = base_in(0);
    in.method = cases[i].method;
    in.time_left_ms = cases[i].left_ms;
    in.failure = POLITE_FAILURE_TLS;
    polite_decision d = run(&in);
    assert_int_equal(d.action, POLITE_STOP);
    assert_int_equal(d.reason, POLITE_R_TLS_ERROR);
    assert_string_equal(polite_reason_outcome(d.reason), "tls_error");
    in.failure = POLITE_FAILURE_TRANSIENT;
    d = run(&in);
    assert_int_not_equal(d.reason, POLITE_R_TLS_ERROR);
    assert_int_equal(d.action, strcmp(cases[i].method, "POST") == 0
                                   ? POLITE_STOP
                                   : POLITE_RETRY);
  }
  /* A response is a response: the failure kind is only read for status 0. */
  polite_decide_in in = base_in(503);
  in.failure = POLITE_FAILURE_TLS;
  assert_int_equal(run(&in).action, POLITE_RETRY);
}

static void retryable_statuses_are_retried(void **state) {
  (void)state;
  int st[] = {408, 425, 429, 500, 502, 503, 504, 0};
  for (size_t i = 0; i < sizeof st / sizeof st[0]; i++) {
    polite_decide_in in = base_in(st[i]);
    polite_decision d = run(&in);
    if (d.action != POLITE_RETRY || d.reason != POLITE_R_RETRY_BACKOFF)
      fail_msg("status %d: action %d reason %d", st[i], d.action, d.reason);
  }
}

/* ---- Rule 4: attempts ------------------------------------------------------
 */

static void last_attempt_is_retries_exhausted(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.attempt = 3;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_STOP);
  assert_int_equal(d.reason, POLITE_R_RETRIES_EXHAUSTED);
  in.attempt = 7; /* past the limit (a caller bug) still stops */
  assert_int_equal(run(&in).reason, POLITE_R_RETRIES_EXHAUSTED);
  in.attempt = 2;
  assert_int_equal(run(&in).action, POLITE_RETRY);
}

static void last_attempt_network_error(void **state) {
  (void)state;
  polite_decide_in in = base_in(0);
  in.attempt = 3;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_STOP);
  assert_int_equal(d.reason, POLITE_R_NETWORK_ERROR);
  assert_string_equal(polite_reason_outcome(d.reason), "network_error");
}

static void max_attempts_zero_means_one(void **state) {
  (void)state;
  polite_decide_in in = base_in(429);
  in.max_attempts = 0;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_STOP);
  assert_int_equal(d.reason, POLITE_R_RETRIES_EXHAUSTED);
}

/* The engine's loop: however the server answers, the number of network
 * attempts is at most max_attempts. */
static void network_attempts_never_exceed_max(void **state) {
  (void)state;
  int st[] = {0, 429, 503, 500};
  for (unsigned max = 1; max <= 6; max++)
    for (size_t k = 0; k < 4; k++) {
      polite_decide_in in = base_in(st[k]);
      in.max_attempts = max;
      in.headers = one_header("Retry-After", "0"); /* prompt, then backoff */
      unsigned sent = 1;
      for (;;) {
        in.attempt = sent;
        polite_decision d = run(&in);
        if (d.action != POLITE_RETRY)
          break;
        if (d.reason == POLITE_R_RETRY_PROMPT)
          in.prompt_retry_used = 1;
        sent++;
      }
      assert_int_equal(sent, max);
    }
}

/* ---- Rule 5: writes ------------------------------------------------------ */

static void write_without_key_is_not_retried(void **state) {
  (void)state;
  const char *writes[] = {"POST", "PATCH", "post", "CONNECT", "PURGE", ""};
  int st[] = {429, 503, 500, 0};
  for (size_t m = 0; m < sizeof writes / sizeof writes[0]; m++)
    for (size_t k = 0; k < 4; k++) {
      polite_decide_in in = base_in(st[k]);
      in.method = writes[m];
      in.headers = st[k] ? one_header("Retry-After", "3") : NULL;
      polite_decision d = run(&in);
      assert_int_equal(d.action, POLITE_STOP);
      assert_int_equal(d.reason, POLITE_R_NOT_RETRIED_UNSAFE);
    }
}

static void write_with_key_or_opt_in_is_retried(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.method = "POST";
  in.has_idempotency_key = 1;
  assert_int_equal(run(&in).action, POLITE_RETRY);
  in.has_idempotency_key = 0;
  in.retry_unsafe = 1;
  assert_int_equal(run(&in).action, POLITE_RETRY);
  in.method = "PATCH";
  in.status = 0;
  assert_int_equal(run(&in).action, POLITE_RETRY);
}

/* retry_writes lets a write without a key be retried after a 429 only: a
 * 503, a 500 and a broken connection may come after the work was done. */
static void retry_writes_retries_a_429_only(void **state) {
  (void)state;
  static const struct {
    int status;
    polite_action action;
  } rows[] = {
      {429, POLITE_RETRY}, {503, POLITE_STOP}, {500, POLITE_STOP},
      {502, POLITE_STOP},  {0, POLITE_STOP},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    polite_decide_in in = base_in(rows[i].status);
    in.method = "POST";
    in.retry_writes = 1;
    polite_decision d = run(&in);
    assert_int_equal(d.action, rows[i].action);
    if (rows[i].action == POLITE_STOP)
      assert_int_equal(d.reason, POLITE_R_NOT_RETRIED_UNSAFE);
  }
  /* Without it the 429 stops too; the other rules still apply after it. */
  polite_decide_in in = base_in(429);
  in.method = "PATCH";
  assert_int_equal(run(&in).reason, POLITE_R_NOT_RETRIED_UNSAFE);
  in.retry_writes = 1;
  in.attempt = 3;
  assert_int_equal(run(&in).reason, POLITE_R_RETRIES_EXHAUSTED);
}

static void idempotent_methods(void **state) {
  (void)state;
  const char *yes[] = {"GET",     "HEAD",  "PUT", "DELETE",
                       "OPTIONS", "TRACE", "get", "Put"};
  const char *no[] = {"POST", "PATCH", "CONNECT", "PROPFIND",
                      "GETX", "GE",    "",        "POST "};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
    assert_int_equal(polite_method_idempotent(yes[i]), 1);
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
    assert_int_equal(polite_method_idempotent(no[i]), 0);
  assert_int_equal(polite_method_idempotent(NULL), 1);
  polite_decide_in in = base_in(503);
  in.method = NULL; /* NULL means GET */
  assert_int_equal(run(&in).action, POLITE_RETRY);
}

/* ---- Rule 2: quota ------------------------------------------------------- */

static void quota_body_stops(void **state) {
  (void)state;
  int st[] = {429, 403};
  for (size_t k = 0; k < 2; k++) {
    polite_decide_in in = base_in(st[k]);
    in.body_quota = 1;
    in.headers = one_header("Retry-After", "20");
    polite_decision d = run(&in);
    assert_int_equal(d.action, POLITE_STOP);
    assert_int_equal(d.reason, POLITE_R_QUOTA_EXHAUSTED);
    assert_string_equal(polite_reason_outcome(d.reason), "quota_exhausted");
    /* Also for a write without a key and on the last attempt: the quota is
     * the more useful thing to say. */
    in.method = "POST";
    in.attempt = 3;
    assert_int_equal(run(&in).reason, POLITE_R_QUOTA_EXHAUSTED);
  }
}

static void quota_hint_ignored_on_other_statuses(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.body_quota = 1;
  assert_int_equal(run(&in).action, POLITE_RETRY);
  in.status = 400;
  assert_int_equal(run(&in).reason, POLITE_R_HTTP_ERROR);
  in.status = 200;
  assert_int_equal(run(&in).reason, POLITE_R_OK);
}

/* ---- Rule 7: the server's wait ------------------------------------------ */

static void server_seconds_is_a_minimum_plus_spread(void **state) {
  (void)state;
  polite_decide_in in = base_in(429);
  in.headers = one_header("Retry-After", "12");
  in.rnd = 0;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_RETRY);
  assert_int_equal(d.reason, POLITE_R_RETRY_SERVER);
  assert_int_equal(d.source, POLITE_WAIT_SECONDS);
  assert_int_equal(d.server_wait_ms, 12000);
  assert_int_equal(d.wait_ms, 12000);
  assert_int_equal(d.account_pause, 1);
  in.rnd = UINT64_MAX;
  assert_int_equal(run(&in).wait_ms, 13000);
  uint64_t s = 1;
  int64_t lo = INT64_MAX, hi = 0;
  for (int i = 0; i < 2000; i++) {
    in.rnd = polite_rand_next(&s);
    int64_t w = run(&in).wait_ms;
    assert_true(w >= 12000 && w <= 13000);
    lo = w < lo ? w : lo;
    hi = w > hi ? w : hi;
  }
  assert_true(lo < 12100 && hi > 12900); /* the spread is really used */
}

static void negative_or_zero_spread_is_none(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.headers = one_header("Retry-After", "7");
  int64_t spreads[] = {0, -1, -5000, INT64_MIN};
  for (size_t i = 0; i < 4; i++) {
    in.spread_ms = spreads[i];
    in.rnd = UINT64_MAX;
    polite_decision d = run(&in);
    assert_int_equal(d.wait_ms, 7000);
    assert_int_equal(d.account_pause, 1); /* 503 with a wait */
  }
}

static void server_date_and_ms_headers(void **state) {
  (void)state;
  polite_decide_in in = base_in(429);
  in.spread_ms = 0;
  polite_headers_init(&hdrs, NOW_MS);
  /* The Date header is the server's clock; the wait is measured on it. */
  const char *date = "Sun, 29 Nov 2026 23:59:00 GMT"; /* server 60 s behind */
  const char *ra = "Sun, 29 Nov 2026 23:59:45 GMT";
  polite_headers_feed(&hdrs, "Date", 4, date, strlen(date));
  polite_headers_feed(&hdrs, "Retry-After", 11, ra, strlen(ra));
  in.headers = &hdrs;
  polite_decision d = run(&in);
  assert_int_equal(d.source, POLITE_WAIT_DATE);
  assert_int_equal(d.server_wait_ms, 45000);
  assert_int_equal(d.wait_ms, 45000);
  in.headers = one_header("retry-after-ms", "1500");
  d = run(&in);
  assert_int_equal(d.source, POLITE_WAIT_MS);
  assert_int_equal(d.wait_ms, 1500);
  assert_int_equal(d.reason, POLITE_R_RETRY_SERVER);
}

static void account_pause_only_for_429_and_503(void **state) {
  (void)state;
  int st[] = {500, 502, 504, 408, 425};
  for (size_t i = 0; i < 5; i++) {
    polite_decide_in in = base_in(st[i]);
    in.headers = one_header("Retry-After", "3");
    polite_decision d = run(&in);
    assert_int_equal(d.reason, POLITE_R_RETRY_SERVER);
    assert_int_equal(d.account_pause, 0);
  }
  /* No server wait: nothing to pause for. */
  polite_decide_in in = base_in(429);
  assert_int_equal(run(&in).account_pause, 0);
  /* The account is throttled even when this request stops. */
  in.headers = one_header("Retry-After", "3");
  in.attempt = 3;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_STOP);
  assert_int_equal(d.account_pause, 1);
  assert_int_equal(d.server_wait_ms, 3000);
}

static void server_wait_beyond_deadline_stops_now(void **state) {
  (void)state;
  polite_decide_in in = base_in(429);
  in.headers = one_header("Retry-After", "12");
  in.time_left_ms = 11999;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_STOP);
  assert_int_equal(d.reason, POLITE_R_DEADLINE);
  assert_int_equal(d.server_wait_ms, 12000);
  assert_string_equal(polite_reason_outcome(d.reason), "deadline");
}

static void spread_is_cut_at_the_deadline(void **state) {
  (void)state;
  polite_decide_in in = base_in(429);
  in.headers = one_header("Retry-After", "12");
  in.rnd = UINT64_MAX; /* would be 13000 */
  in.time_left_ms = 12500;
  assert_int_equal(run(&in).wait_ms, 12500);
  in.time_left_ms = 12000; /* exactly the server's time: still allowed */
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_RETRY);
  assert_int_equal(d.wait_ms, 12000);
  in.rnd = 0;
  in.time_left_ms = 60000; /* plenty: untouched */
  assert_int_equal(run(&in).wait_ms, 12000);
}

static void deadline_reached_stops(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.time_left_ms = 0;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_STOP);
  assert_int_equal(d.reason, POLITE_R_DEADLINE);
  in.headers = one_header("Retry-After", "0");
  assert_int_equal(run(&in).reason, POLITE_R_DEADLINE);
  in.status = 0;
  in.headers = NULL;
  assert_int_equal(run(&in).reason, POLITE_R_DEADLINE);
}

/* ---- Rule 7b: zero waits --------------------------------------------------
 */

static void past_date_gives_one_prompt_retry(void **state) {
  (void)state;
  polite_decide_in in = base_in(429);
  in.headers = one_header("Retry-After", "Sun, 06 Nov 1994 08:49:37 GMT");
  in.rnd = UINT64_MAX;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_RETRY);
  assert_int_equal(d.reason, POLITE_R_RETRY_PROMPT);
  assert_int_equal(d.source, POLITE_WAIT_DATE);
  assert_int_equal(d.server_wait_ms, 0);
  assert_int_equal(d.wait_ms, 1000); /* 0 + the whole spread */
  assert_int_equal(d.account_pause, 0);
  in.rnd = 0;
  assert_int_equal(run(&in).wait_ms, 0);
  /* The second zero wait is not prompt: backoff, window for attempt 2. */
  in.prompt_retry_used = 1;
  in.attempt = 2;
  in.rnd = UINT64_MAX;
  d = run(&in);
  assert_int_equal(d.action, POLITE_RETRY);
  assert_int_equal(d.reason, POLITE_R_RETRY_BACKOFF);
  assert_int_equal(d.wait_ms, 2000);
  assert_int_equal(d.server_wait_ms, 0);
}

static void zero_seconds_is_a_prompt_retry_too(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.headers = one_header("Retry-After", "0");
  in.spread_ms = 0;
  polite_decision d = run(&in);
  assert_int_equal(d.reason, POLITE_R_RETRY_PROMPT);
  assert_int_equal(d.wait_ms, 0);
  in.spread_ms = 5000;
  in.time_left_ms = 300; /* the spread stays inside the deadline */
  in.rnd = UINT64_MAX;
  assert_int_equal(run(&in).wait_ms, 300);
}

/* ---- Rule 8: backoff ---------------------------------------------------- */

static void no_header_backs_off_by_attempt(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.max_attempts = 10;
  uint64_t s = 5;
  for (unsigned a = 1; a < 10; a++) {
    in.attempt = a;
    in.rnd = polite_rand_next(&s);
    polite_decision d = run(&in);
    assert_int_equal(d.reason, POLITE_R_RETRY_BACKOFF);
    assert_int_equal(d.source, POLITE_WAIT_NONE);
    assert_int_equal(d.server_wait_ms, -1);
    assert_int_equal(d.account_pause, 0);
    assert_int_equal(d.wait_ms,
                     polite_backoff_delay_ms(&in.backoff, a - 1, in.rnd));
  }
  in.attempt = 4;
  in.rnd = UINT64_MAX;
  assert_int_equal(run(&in).wait_ms, 8000);
  in.attempt = 9;
  assert_int_equal(run(&in).wait_ms, 30000); /* the cap */
}

static void invalid_header_backs_off(void **state) {
  (void)state;
  polite_decide_in in = base_in(429);
  in.headers = one_header("Retry-After", "soon");
  in.rnd = UINT64_MAX;
  polite_decision d = run(&in);
  assert_int_equal(d.reason, POLITE_R_RETRY_BACKOFF);
  assert_int_equal(d.source, POLITE_WAIT_INVALID);
  assert_int_equal(d.server_wait_ms, -1);
  assert_int_equal(d.wait_ms, 1000);
  assert_int_equal(d.account_pause, 0);
}

static void network_error_ignores_headers(void **state) {
  (void)state;
  polite_decide_in in = base_in(0);
  in.headers = one_header("Retry-After", "50"); /* stale, from nowhere */
  polite_decision d = run(&in);
  assert_int_equal(d.reason, POLITE_R_RETRY_BACKOFF);
  assert_int_equal(d.server_wait_ms, -1);
  assert_int_equal(d.source, POLITE_WAIT_NONE);
}

static void backoff_window_cut_to_time_left(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.attempt = 2; /* window 2000, cut to the 1500 ms left */
  in.time_left_ms = 1500;
  in.rnd = UINT64_MAX;
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_RETRY);
  assert_int_equal(d.wait_ms, 1500);
  /* Still uniform inside the cut window, not piled up at its end. */
  uint64_t s = 3;
  int at_end = 0;
  for (int i = 0; i < 1000; i++) {
    in.rnd = polite_rand_next(&s);
    int64_t w = run(&in).wait_ms;
    assert_true(w >= 0 && w <= 1500);
    at_end += (w == 1500);
  }
  assert_true(at_end < 10);
}

static void zeroed_backoff_uses_defaults(void **state) {
  (void)state;
  polite_decide_in in = base_in(503);
  in.backoff.base_ms = 0;
  in.backoff.cap_ms = 0;
  in.attempt = 2;
  in.rnd = UINT64_MAX;
  assert_int_equal(run(&in).wait_ms, 2000);
}

/* ---- Names ----------------------------------------------------------------
 */

static void reason_names_and_outcomes(void **state) {
  (void)state;
  struct {
    polite_reason r;
    const char *outcome, *name;
  } t[] = {
      {POLITE_R_OK, "ok", "ok"},
      {POLITE_R_HTTP_ERROR, "http_error", "http_error"},
      {POLITE_R_RETRY_SERVER, NULL, "server"},
      {POLITE_R_RETRY_PROMPT, NULL, "prompt"},
      {POLITE_R_RETRY_BACKOFF, NULL, "backoff"},
      {POLITE_R_RETRIES_EXHAUSTED, "retries_exhausted", "retries_exhausted"},
      {POLITE_R_DEADLINE, "deadline", "deadline"},
      {POLITE_R_QUOTA_EXHAUSTED, "quota_exhausted", "quota_exhausted"},
      {POLITE_R_NOT_RETRIED_UNSAFE, "not_retried_unsafe", "not_retried_unsafe"},
      {POLITE_R_NETWORK_ERROR, "network_error", "network_error"},
      {POLITE_R_WAIT_TOO_LONG, "wait_too_long", "wait_too_long"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (t[i].outcome)
      assert_string_equal(polite_reason_outcome(t[i].r), t[i].outcome);
    else
      assert_null(polite_reason_outcome(t[i].r));
    assert_string_equal(polite_reason_name(t[i].r), t[i].name);
  }
  assert_null(polite_reason_outcome((polite_reason)99));
  assert_string_equal(polite_reason_name((polite_reason)99), "unknown");
}

/* ---- max_wait_ms ----------------------------------------------------------
 */

/* A server wait longer than max_wait_ms stops the request at once (never
 * by sending early), whatever the deadline; the account pause is still
 * reported, so the engine can refuse it. A wait of exactly max_wait, or no
 * limit (<= 0), is waited for. */
static void wait_longer_than_max_wait_stops(void **state) {
  (void)state;
  const char *huge[] = {"99999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "901"};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    polite_decide_in in = base_in(429);
    in.headers = one_header("Retry-After", huge[i]);
    in.max_wait_ms = 900000;
    in.time_left_ms = 5; /* the limit comes first, not the deadline */
    polite_decision d = run(&in);
    assert_int_equal(d.action, POLITE_STOP);
    assert_int_equal(d.reason, POLITE_R_WAIT_TOO_LONG);
    assert_int_equal(d.account_pause, 1);
    assert_true(d.server_wait_ms > 900000);
    assert_int_equal(d.wait_ms, 0);
  }
  polite_decide_in in = base_in(503);
  in.headers = one_header("retry-after-ms", "999999999999999");
  in.max_wait_ms = 1000;
  assert_int_equal(run(&in).reason, POLITE_R_WAIT_TOO_LONG);

  in = base_in(429);
  in.headers = one_header("Retry-After", "900");
  in.max_wait_ms = 900000; /* exactly the limit: waited for */
  polite_decision d = run(&in);
  assert_int_equal(d.action, POLITE_RETRY);
  assert_int_equal(d.reason, POLITE_R_RETRY_SERVER);
  assert_true(d.wait_ms >= 900000);
  for (int64_t none = -1; none <= 0; none++) {
    in = base_in(429);
    in.headers = one_header("Retry-After", "99999999");
    in.max_wait_ms = none;
    d = run(&in);
    assert_int_equal(d.action, POLITE_RETRY);
    assert_int_equal(d.wait_ms >= INT64_C(99999999000), 1);
  }
  /* Backoff is our own choice and never counts against max-wait. */
  in = base_in(503);
  in.max_wait_ms = 1;
  assert_int_equal(run(&in).reason, POLITE_R_RETRY_BACKOFF);
}

/* ---- Invariants over random inputs ------------------------------------- */

static void invariants_hold_for_random_inputs(void **state) {
  (void)state;
  const int statuses[] = {0,   200, 204, 304, 400, 403, 404, 408,
                          425, 429, 500, 501, 502, 503, 504, 599};
  const char *methods[] = {"GET",  "HEAD",  "PUT", "DELETE",
                           "POST", "PATCH", NULL};
  const char *ra[] = {"0",
                      "1",
                      "12",
                      "120",
                      "99999999999999999999",
                      "soon",
                      "",
                      "Sun, 06 Nov 1994 08:49:37 GMT",
                      "Mon, 30 Nov 2026 00:00:30 GMT",
                      "Monday, 30-Nov-26 00:05:00 GMT",
                      "Mon Nov 30 00:00:09 2026"};
  uint64_t s = 20261130;
  int counts[3] = {0};
  for (int iter = 0; iter < 200000; iter++) {
    uint64_t r = polite_rand_next(&s);
    polite_decide_in in;
    memset(&in, 0, sizeof in);
    in.status = statuses[r % 16];
    in.method = methods[(r >> 4) % 7];
    in.has_idempotency_key = (r >> 7) & 1;
    in.retry_unsafe = ((r >> 8) & 7) == 0;
    in.retry_writes = (r >> 31) & 1;
    in.body_quota = ((r >> 11) & 7) == 0;
    in.max_attempts = (unsigned)((r >> 14) % 7); /* 0 .. 6 */
    in.attempt = 1 + (unsigned)((r >> 17) % 7);
    in.prompt_retry_used = (r >> 20) & 1;
    uint64_t r2 = polite_rand_next(&s);
    in.time_left_ms = (r2 & 3) == 0 ? -1 : (int64_t)((r2 >> 2) % 200000);
    if ((r2 & 15) == 1)
      in.time_left_ms = 0;
    in.spread_ms = (int64_t)((r2 >> 20) % 4000) - 500;
    in.backoff.base_ms = (int64_t)((r2 >> 32) % 3000);
    in.backoff.cap_ms = (int64_t)((r2 >> 44) % 100000);
    in.rnd = polite_rand_next(&s);
    in.max_wait_ms = (r2 >> 56) & 1 ? (int64_t)((r2 >> 8) % 20000) : 0;
    size_t k = (size_t)((r >> 24) % 13);
    if (k < 11) {
      polite_headers_init(&hdrs, NOW_MS);
      polite_headers_feed(&hdrs, "Retry-After", 11, ra[k], strlen(ra[k]));
      if ((r >> 30) & 1)
        polite_headers_feed(&hdrs, "retry-after-ms", 14, "2500", 4);
      in.headers = &hdrs;
    } else if (k == 11) {
      in.headers = NULL;
    } else {
      polite_headers_init(&hdrs, NOW_MS);
      polite_headers_feed(&hdrs, "x-ratelimit-remaining", 21, "0", 1);
      polite_headers_feed(&hdrs, "x-ratelimit-reset-requests", 26, "6m0s", 4);
      in.headers = &hdrs;
    }

    polite_decision d = run(&in);
    unsigned max = in.max_attempts ? in.max_attempts : 1;
    int unsafe = !polite_method_idempotent(in.method) &&
                 !in.has_idempotency_key && !in.retry_unsafe &&
                 !(in.retry_writes && in.status == 429);
    int64_t spread = in.spread_ms > 0 ? in.spread_ms : 0;
    counts[d.action]++;

    assert_true(d.action == POLITE_RETRY
                    ? polite_reason_outcome(d.reason) == NULL
                    : polite_reason_outcome(d.reason) != NULL);
    if (d.action != POLITE_RETRY)
      continue;
    assert_true(in.attempt < max);
    assert_false(unsafe);
    assert_true(in.status == 0 || in.status >= 400);
    assert_true(d.wait_ms >= 0);
    assert_true(in.time_left_ms != 0);
    if (in.time_left_ms > 0)
      assert_true(d.wait_ms <= in.time_left_ms);
    if (d.server_wait_ms >= 0)
      assert_true(d.wait_ms >= d.server_wait_ms);
    if (d.reason == POLITE_R_RETRY_SERVER) {
      assert_true(d.server_wait_ms > 0);
      if (in.max_wait_ms > 0)
        assert_true(d.server_wait_ms <= in.max_wait_ms);
      assert_true(d.wait_ms <= d.server_wait_ms + spread);
    }
    if (d.reason == POLITE_R_RETRY_PROMPT) {
      assert_int_equal(d.server_wait_ms, 0);
      assert_false(in.prompt_retry_used);
      assert_true(d.wait_ms <= spread);
    }
    if (d.reason == POLITE_R_RETRY_BACKOFF) {
      assert_true(d.server_wait_ms <= 0);
      assert_true(d.wait_ms <=
                  polite_backoff_window_ms(&in.backoff, in.attempt - 1));
    }
  }
  /* The generator really reaches every action. */
  assert_true(counts[POLITE_DONE] > 1000 && counts[POLITE_RETRY] > 1000 &&
              counts[POLITE_STOP] > 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(success_statuses_are_done_ok),
      cmocka_unit_test(unfixable_statuses_are_http_error),
      cmocka_unit_test(tls_failures_are_not_retried),
      cmocka_unit_test(retryable_statuses_are_retried),
      cmocka_unit_test(last_attempt_is_retries_exhausted),
      cmocka_unit_test(last_attempt_network_error),
      cmocka_unit_test(max_attempts_zero_means_one),
      cmocka_unit_test(network_attempts_never_exceed_max),
      cmocka_unit_test(write_without_key_is_not_retried),
      cmocka_unit_test(write_with_key_or_opt_in_is_retried),
      cmocka_unit_test(retry_writes_retries_a_429_only),
      cmocka_unit_test(idempotent_methods),
      cmocka_unit_test(quota_body_stops),
      cmocka_unit_test(quota_hint_ignored_on_other_statuses),
      cmocka_unit_test(server_seconds_is_a_minimum_plus_spread),
      cmocka_unit_test(negative_or_zero_spread_is_none),
      cmocka_unit_test(server_date_and_ms_headers),
      cmocka_unit_test(account_pause_only_for_429_and_503),
      cmocka_unit_test(server_wait_beyond_deadline_stops_now),
      cmocka_unit_test(spread_is_cut_at_the_deadline),
      cmocka_unit_test(deadline_reached_stops),
      cmocka_unit_test(past_date_gives_one_prompt_retry),
      cmocka_unit_test(zero_seconds_is_a_prompt_retry_too),
      cmocka_unit_test(no_header_backs_off_by_attempt),
      cmocka_unit_test(invalid_header_backs_off),
      cmocka_unit_test(network_error_ignores_headers),
      cmocka_unit_test(backoff_window_cut_to_time_left),
      cmocka_unit_test(zeroed_backoff_uses_defaults),
      cmocka_unit_test(reason_names_and_outcomes),
      cmocka_unit_test(wait_longer_than_max_wait_stops),
      cmocka_unit_test(invariants_hold_for_random_inputs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
