/* Unit tests for rate-limit headers, Go durations and body quota hints
 * (lib/headers.c). */
#include <polite/core.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* 2023-11-14 22:13:20 UTC on the fake wall clock. */
#define NOW_MS INT64_C(1700000000000)
#define NOW_S INT64_C(1700000000)
#define CAP (POLITE_RA_MAX_SECONDS * 1000)

static int feed(polite_headers *h, const char *name, const char *value) {
  return polite_headers_feed(h, name, strlen(name), value, strlen(value));
}

static int line(polite_headers *h, const char *l) {
  return polite_headers_feed_line(h, l, strlen(l));
}

/* A fresh reader fed one header. */
static polite_headers one(const char *name, const char *value) {
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  feed(&h, name, value);
  return h;
}

static int64_t wait_of(const polite_headers *h, polite_wait_source *src) {
  return polite_headers_wait_ms(h, src);
}

static int64_t dur(const char *s) {
  int64_t ms = -12345;
  int rc = polite_go_duration_ms(s, strlen(s), &ms);
  if (rc != 0) {
    assert_int_equal(rc, POLITE_EINVAL);
    assert_int_equal(ms, -12345);
    return -1;
  }
  return ms;
}

static int quota(const char *body) {
  return polite_body_quota_hint(body, strlen(body));
}

/* ---- init and names ---------------------------------------------------- */

static void test_init(void **state) {
  (void)state;
  polite_headers h;
  memset(&h, 0x77, sizeof h);
  polite_headers_init(&h, NOW_MS);
  assert_int_equal(h.now_ms, NOW_MS);
  assert_int_equal(h.retry_after.kind, POLITE_RA_NONE);
  assert_int_equal(h.retry_after_ms, -1);
  assert_int_equal(h.date_unix, -1);
  assert_int_equal(h.limit, -1);
  assert_int_equal(h.remaining, -1);
  assert_int_equal(h.reset_ms, -1);
  assert_int_equal(h.window_s, -1);
  assert_int_equal(h.tokens_limit, -1);
  assert_int_equal(h.tokens_remaining, -1);
  assert_int_equal(h.tokens_reset_ms, -1);
  assert_int_equal(h.saw_request_id, 0);
  polite_wait_source src = POLITE_WAIT_MS;
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_NONE);
  assert_int_equal(wait_of(&h, NULL), -1);
  assert_int_equal(wait_of(NULL, &src), -1);
  assert_int_equal(src, POLITE_WAIT_NONE);
}

static void test_names_case_insensitive(void **state) {
  (void)state;
  const char *names[] = {"Retry-After", "retry-after", "RETRY-AFTER",
                         "rEtRy-AfTeR", " Retry-After "};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    polite_headers h = one(names[i], "7");
    assert_int_equal(h.retry_after.kind, POLITE_RA_SECONDS);
    assert_int_equal(h.retry_after.seconds, 7);
  }
  /* Near misses are other headers. */
  assert_int_equal(one("Retry-Afte", "7").retry_after.kind, POLITE_RA_NONE);
  assert_int_equal(one("Retry-After-", "7").retry_after.kind, POLITE_RA_NONE);
  assert_int_equal(one("X-Retry-After", "7").retry_after.kind, POLITE_RA_NONE);
  assert_int_equal(one("RETRY-AFTER-MS", "7").retry_after_ms, 7);
  assert_int_equal(one("X-RATELIMIT-REMAINING", "3").remaining, 3);
}

/* ---- Retry-After and its ms cousins -------------------------------------- */

static void test_retry_after_header(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h = one("Retry-After", "120");
  assert_int_equal(wait_of(&h, &src), 120000);
  assert_int_equal(src, POLITE_WAIT_SECONDS);
  h = one("Retry-After", "  30\t");
  assert_int_equal(wait_of(&h, &src), 30000);
  h = one("Retry-After", "Tue, 14 Nov 2023 22:14:20 GMT"); /* now + 60 s */
  assert_int_equal(h.retry_after.kind, POLITE_RA_DATE);
  assert_int_equal(wait_of(&h, &src), 60000);
  assert_int_equal(src, POLITE_WAIT_DATE);
  h = one("Retry-After", "Tue, 14 Nov 2023 22:13:00 GMT"); /* past */
  assert_int_equal(wait_of(&h, &src), 0);
  assert_int_equal(src, POLITE_WAIT_DATE);
  h = one("Retry-After", "soon");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_INVALID);
  h = one("Retry-After", "1.5");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_INVALID);
  h = one("Retry-After", "");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_NONE);
  h = one("Retry-After", "99999999999999999999");
  assert_int_equal(wait_of(&h, &src), CAP);
  assert_int_equal(h.retry_after.saturated, 1);
  /* The RFC 850 year is resolved against the reader's clock. */
  h = one("Retry-After", "Tuesday, 14-Nov-23 22:14:20 GMT");
  assert_int_equal(wait_of(&h, &src), 60000);
}

static void test_retry_after_with_date_header(void **state) {
  (void)state;
  polite_wait_source src;
  /* The server's clock says 22:13:20; the date is 22:14:20: 60 s, whatever
   * the local clock believes. */
  const int64_t skews[] = {0, 3600000, -3600000, 86400000, -5000};
  for (size_t i = 0; i < sizeof skews / sizeof skews[0]; i++) {
    polite_headers h;
    polite_headers_init(&h, NOW_MS + skews[i]);
    feed(&h, "Date", "Tue, 14 Nov 2023 22:13:20 GMT");
    feed(&h, "Retry-After", "Tue, 14 Nov 2023 22:14:20 GMT");
    assert_int_equal(h.date_unix, NOW_S);
    assert_int_equal(wait_of(&h, &src), 60000);
    assert_int_equal(src, POLITE_WAIT_DATE);
  }
  /* Without a Date header the local clock is all there is. */
  polite_headers h;
  polite_headers_init(&h, NOW_MS + 30000);
  feed(&h, "Retry-After", "Tue, 14 Nov 2023 22:14:20 GMT");
  assert_int_equal(wait_of(&h, &src), 30000);
  /* An invalid Date header is ignored. */
  polite_headers_init(&h, NOW_MS + 30000);
  feed(&h, "Date", "yesterday");
  feed(&h, "Retry-After", "Tue, 14 Nov 2023 22:14:20 GMT");
  assert_int_equal(h.date_unix, -1);
  assert_int_equal(wait_of(&h, &src), 30000);
  /* Seconds do not care about the Date header. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "Date", "Tue, 14 Nov 2023 23:13:20 GMT");
  feed(&h, "Retry-After", "5");
  assert_int_equal(wait_of(&h, &src), 5000);
}

static void test_retry_after_ms(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h = one("retry-after-ms", "1500");
  assert_int_equal(wait_of(&h, &src), 1500);
  assert_int_equal(src, POLITE_WAIT_MS);
  assert_int_equal(one("retry-after-ms", "1500.5").retry_after_ms, 1501);
  assert_int_equal(one("retry-after-ms", "1500.0").retry_after_ms, 1500);
  assert_int_equal(one("retry-after-ms", "0.001").retry_after_ms, 1);
  assert_int_equal(one("retry-after-ms", "0").retry_after_ms, 0);
  assert_int_equal(one("retry-after-ms", " 20 ").retry_after_ms, 20);
  assert_int_equal(one("x-ms-retry-after-ms", "250").retry_after_ms, 250);
  assert_int_equal(one("X-Ms-Retry-After-Ms", "250").retry_after_ms, 250);
  assert_int_equal(one("retry-after-ms", "-5").retry_after_ms, -1);
  assert_int_equal(one("retry-after-ms", "abc").retry_after_ms, -1);
  assert_int_equal(one("retry-after-ms", "15ms").retry_after_ms, -1);
  assert_int_equal(one("retry-after-ms", "1.").retry_after_ms, -1);
  assert_int_equal(one("retry-after-ms", ".5").retry_after_ms, -1);
  assert_int_equal(one("retry-after-ms", "").retry_after_ms, -1);
  assert_int_equal(one("retry-after-ms", "1e3").retry_after_ms, -1);
  assert_int_equal(
      one("retry-after-ms", "99999999999999999999999").retry_after_ms, CAP);
  /* An invalid retry-after-ms is not a wait. */
  h = one("retry-after-ms", "abc");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_NONE);
}

/* ---- Precedence ------------------------------------------------------------
 */

static void test_precedence(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h;
  /* ms beats Retry-After beats a reset. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "x-ratelimit-remaining", "0");
  feed(&h, "x-ratelimit-reset", "90");
  feed(&h, "Retry-After", "30");
  feed(&h, "retry-after-ms", "1234");
  assert_int_equal(wait_of(&h, &src), 1234);
  assert_int_equal(src, POLITE_WAIT_MS);

  polite_headers_init(&h, NOW_MS);
  feed(&h, "x-ratelimit-remaining", "0");
  feed(&h, "x-ratelimit-reset", "90");
  feed(&h, "Retry-After", "30");
  assert_int_equal(wait_of(&h, &src), 30000);
  assert_int_equal(src, POLITE_WAIT_SECONDS);

  polite_headers_init(&h, NOW_MS);
  feed(&h, "x-ratelimit-remaining", "0");
  feed(&h, "x-ratelimit-reset", "90");
  assert_int_equal(wait_of(&h, &src), 90000);
  assert_int_equal(src, POLITE_WAIT_RESET);

  /* An invalid Retry-After gives way to a usable reset... */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "Retry-After", "later");
  feed(&h, "x-ratelimit-remaining", "0");
  feed(&h, "x-ratelimit-reset", "90");
  assert_int_equal(wait_of(&h, &src), 90000);
  assert_int_equal(src, POLITE_WAIT_RESET);
  /* ... and to retry-after-ms. */
  feed(&h, "retry-after-ms", "5");
  assert_int_equal(wait_of(&h, &src), 5);
  assert_int_equal(src, POLITE_WAIT_MS);

  /* Remaining > 0: the reset is no wait; an invalid Retry-After shows. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "Retry-After", "later");
  feed(&h, "x-ratelimit-remaining", "1");
  feed(&h, "x-ratelimit-reset", "90");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_INVALID);

  /* Remaining 0 without any reset: no wait known. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "x-ratelimit-remaining", "0");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_NONE);
  /* A reset without remaining: no wait either. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "x-ratelimit-reset", "30");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_NONE);

  /* Retry-After: 0 is a valid zero wait, not "none". */
  h = one("Retry-After", "0");
  assert_int_equal(wait_of(&h, &src), 0);
  assert_int_equal(src, POLITE_WAIT_SECONDS);
}

static void test_duplicate_retry_after(void **state) {
  (void)state;
  polite_wait_source src;
  const char *a[] = {"bogus", "10", "20"};
  /* Every order: the valid, longest one wins. */
  int perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                     {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int p = 0; p < 6; p++) {
    polite_headers h;
    polite_headers_init(&h, NOW_MS);
    for (int i = 0; i < 3; i++)
      feed(&h, "Retry-After", a[perms[p][i]]);
    assert_int_equal(wait_of(&h, &src), 20000);
    assert_int_equal(src, POLITE_WAIT_SECONDS);
  }
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  feed(&h, "Retry-After", "10");
  feed(&h, "Retry-After", "Tue, 14 Nov 2023 22:14:20 GMT");
  assert_int_equal(wait_of(&h, &src), 60000);
  assert_int_equal(src, POLITE_WAIT_DATE);
  /* Equal waits by the local clock: the seconds win in either order, so a
   * Date header an hour behind cannot make the order matter. */
  for (int order = 0; order < 2; order++) {
    polite_headers_init(&h, NOW_MS);
    feed(&h, "Date", "Tue, 14 Nov 2023 21:13:20 GMT");
    feed(&h, "Retry-After", order ? "60" : "Tue, 14 Nov 2023 22:14:20 GMT");
    feed(&h, "Retry-After", order ? "Tue, 14 Nov 2023 22:14:20 GMT" : "60");
    assert_int_equal(wait_of(&h, &src), 60000);
    assert_int_equal(src, POLITE_WAIT_SECONDS);
  }
  /* Two past dates: the later one, in either order. */
  for (int order = 0; order < 2; order++) {
    polite_headers_init(&h, NOW_MS);
    feed(&h, "Retry-After",
         order ? "Sun, 06 Nov 1994 08:49:37 GMT"
               : "Mon, 07 Nov 1994 08:49:37 GMT");
    feed(&h, "Retry-After",
         order ? "Mon, 07 Nov 1994 08:49:37 GMT"
               : "Sun, 06 Nov 1994 08:49:37 GMT");
    assert_int_equal(h.retry_after.date_unix, 784111777 + 86400);
  }
  polite_headers_init(&h, NOW_MS);
  feed(&h, "Retry-After", "x");
  feed(&h, "Retry-After", "y");
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_INVALID);
  feed(&h, "Retry-After", ""); /* empty adds nothing */
  assert_int_equal(h.retry_after.kind, POLITE_RA_INVALID);
  polite_headers_init(&h, NOW_MS);
  feed(&h, "retry-after-ms", "100");
  feed(&h, "x-ms-retry-after-ms", "300");
  feed(&h, "retry-after-ms", "200");
  assert_int_equal(wait_of(&h, &src), 300);
}

/* ---- IETF RateLimit fields --------------------------------------------------
 */

static void test_ietf_current(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  feed(&h, "RateLimit-Policy", "\"default\";q=100;w=60");
  feed(&h, "RateLimit", "\"default\";r=50;t=30");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, 60);
  assert_int_equal(h.remaining, 50);
  assert_int_equal(h.reset_ms, 30000);
  assert_int_equal(wait_of(&h, &src), -1);
  assert_int_equal(src, POLITE_WAIT_NONE);

  h = one("RateLimit", "\"default\";r=0;t=30");
  assert_int_equal(wait_of(&h, &src), 30000);
  assert_int_equal(src, POLITE_WAIT_RESET);
  /* Token policy names and no t. */
  h = one("RateLimit", "default;r=0");
  assert_int_equal(h.remaining, 0);
  assert_int_equal(h.reset_ms, -1);
  /* Several members: the least remaining wins, with its own reset. */
  h = one("RateLimit", "\"hour\";r=10;t=3000, \"minute\";r=0;t=20");
  assert_int_equal(h.remaining, 0);
  assert_int_equal(h.reset_ms, 20000);
  h = one("RateLimit", "\"a\";r=0;t=5, \"b\";r=0;t=50, \"c\";r=3;t=500");
  assert_int_equal(h.remaining, 0);
  assert_int_equal(h.reset_ms, 50000);
  assert_int_equal(wait_of(&h, &src), 50000);
  /* Unknown parameters are comments. */
  h = one("RateLimit", "\"d\";r=4;t=9;acme-x=?1;pk=:cHJvZA==:");
  assert_int_equal(h.remaining, 4);
  assert_int_equal(h.reset_ms, 9000);
  /* Policies: the smallest quota wins, its window rides along. */
  h = one("RateLimit-Policy", "\"burst\";q=100;w=60, \"daily\";q=1000;w=86400");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, 60);
  h = one("RateLimit-Policy", "\"daily\";q=1000;w=86400, \"burst\";q=100;w=1");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, 1);
  h = one("RateLimit-Policy", "default;q=10;qu=\"request\";w=1");
  assert_int_equal(h.limit, 10);
  assert_int_equal(h.window_s, 1);
  h = one("RateLimit-Policy", "default;l=100;w=10"); /* a draft's "l" */
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, 10);
  h = one("RateLimit-Policy", "\"p\";q=5");
  assert_int_equal(h.limit, 5);
  assert_int_equal(h.window_s, -1);
  /* The older policy form: a bare integer item with w. */
  h = one("RateLimit-Policy", "100;w=60, 1000;w=3600");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, 60);
}

static void test_ietf_malformed(void **state) {
  (void)state;
  /* A malformed field is ignored as a whole. */
  const char *bad[] = {"\"default\";r=0;t=30,",
                       "\"default;r=0;t=30",
                       "\"default\";r=0;t=30 junk",
                       "\"default\";=0",
                       "\"default\";r=0;;t=3",
                       ",",
                       "",
                       "\"a\";r=0, ,\"b\";r=1",
                       "\"default\";r=0;t=?2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    polite_headers h = one("RateLimit", bad[i]);
    assert_int_equal(h.remaining, -1);
    assert_int_equal(h.reset_ms, -1);
  }
  /* Negative, fractional and string parameters are not integers. */
  polite_headers h = one("RateLimit", "\"d\";r=-1;t=-5");
  assert_int_equal(h.remaining, -1);
  assert_int_equal(h.reset_ms, -1);
  h = one("RateLimit", "\"d\";r=\"0\";t=\"5\"");
  assert_int_equal(h.remaining, -1);
  h = one("RateLimit-Policy", "\"d\";q=-100;w=60");
  assert_int_equal(h.limit, -1);
  h = one("RateLimit-Policy", "\"d\";q=100;w=60,");
  assert_int_equal(h.limit, -1);
}

static void test_ietf_older_drafts(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h;
  /* draft-07: one dictionary. */
  h = one("RateLimit", "limit=100, remaining=50, reset=30");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.remaining, 50);
  assert_int_equal(h.reset_ms, 30000);
  h = one("RateLimit", "limit=100, remaining=0, reset=7");
  assert_int_equal(wait_of(&h, &src), 7000);
  assert_int_equal(src, POLITE_WAIT_RESET);
  h = one("RateLimit", "remaining=0,reset=7,limit=10");
  assert_int_equal(h.limit, 10);
  assert_int_equal(wait_of(&h, &src), 7000);
  h = one("RateLimit", "limit=100;w=60, remaining=5");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, 60);
  assert_int_equal(h.remaining, 5);
  /* draft-00..06: three fields. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "RateLimit-Limit", "100");
  feed(&h, "RateLimit-Remaining", "0");
  feed(&h, "RateLimit-Reset", "45");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, -1);
  assert_int_equal(wait_of(&h, &src), 45000);
  assert_int_equal(src, POLITE_WAIT_RESET);
  h = one("RateLimit-Limit", "10, 10;w=1, 1000;w=3600");
  assert_int_equal(h.limit, 10);
  assert_int_equal(h.window_s, 1);
  h = one("RateLimit-Remaining", "abc");
  assert_int_equal(h.remaining, -1);
  h = one("RateLimit-Remaining", "-3");
  assert_int_equal(h.remaining, -1);
  h = one("RateLimit-Reset", "1.5");
  assert_int_equal(h.reset_ms, 1500);
  h = one("RateLimit-Reset", "soon");
  assert_int_equal(h.reset_ms, -1);
}

/* ---- X-RateLimit-*
 * ----------------------------------------------------------- */

static void test_github_epoch_reset(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  line(&h, "x-ratelimit-limit: 5000\r\n");
  line(&h, "x-ratelimit-remaining: 0\r\n");
  line(&h, "x-ratelimit-used: 5000\r\n");
  line(&h, "x-ratelimit-resource: core\r\n");
  line(&h, "x-ratelimit-reset: 1700000600\r\n");
  assert_int_equal(h.limit, 5000);
  assert_int_equal(h.remaining, 0);
  assert_int_equal(h.reset_ms, 600000);
  assert_int_equal(wait_of(&h, &src), 600000);
  assert_int_equal(src, POLITE_WAIT_RESET);
  /* Epoch boundaries: a past epoch is 0; exactly now is 0; 1 s ahead. */
  assert_int_equal(one("X-RateLimit-Reset", "1699999000").reset_ms, 0);
  assert_int_equal(one("X-RateLimit-Reset", "1700000000").reset_ms, 0);
  assert_int_equal(one("X-RateLimit-Reset", "1700000001").reset_ms, 1000);
  /* Delta vs epoch: below 1e9 is a delta, from 1e9 an epoch. */
  assert_int_equal(one("X-RateLimit-Reset", "60").reset_ms, 60000);
  assert_int_equal(one("X-RateLimit-Reset", "0").reset_ms, 0);
  assert_int_equal(one("X-RateLimit-Reset", "999999999").reset_ms,
                   INT64_C(999999999000));
  assert_int_equal(one("X-RateLimit-Reset", "1000000000").reset_ms, 0);
  /* Epoch milliseconds. */
  assert_int_equal(one("X-RateLimit-Reset", "1700000000250").reset_ms, 250);
  assert_int_equal(one("X-RateLimit-Reset", "1699999999999").reset_ms, 0);
  /* Far future epochs cap, garbage is ignored. */
  assert_int_equal(one("X-RateLimit-Reset", "9999999999999999").reset_ms, CAP);
  assert_int_equal(one("X-RateLimit-Reset", "-60").reset_ms, -1);
  assert_int_equal(one("X-RateLimit-Reset", "soon").reset_ms, -1);
  /* Some servers send a Go duration here. */
  assert_int_equal(one("X-RateLimit-Reset", "60s").reset_ms, 60000);
  assert_int_equal(one("X-RateLimit-Reset", "1m30s").reset_ms, 90000);
  assert_int_equal(one("X-RateLimit-Reset", "-1s").reset_ms, -1);
  /* Epochs are relative to the reader's clock. */
  polite_headers_init(&h, NOW_MS - 5000);
  feed(&h, "X-RateLimit-Reset", "1700000000");
  assert_int_equal(h.reset_ms, 5000);
}

static void test_discord(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  feed(&h, "X-RateLimit-Limit", "5");
  feed(&h, "X-RateLimit-Remaining", "0");
  feed(&h, "X-RateLimit-Reset", "1700000001.5");
  feed(&h, "X-RateLimit-Reset-After", "1.5");
  feed(&h, "X-RateLimit-Bucket", "abcd1234");
  assert_int_equal(h.reset_ms, 1500);
  assert_int_equal(wait_of(&h, &src), 1500);
  assert_int_equal(one("X-RateLimit-Reset-After", "0.0001").reset_ms, 1);
  assert_int_equal(one("X-RateLimit-Reset-After", "64.57").reset_ms, 64570);
  assert_int_equal(one("X-RateLimit-Reset-After", "x").reset_ms, -1);
  assert_int_equal(one("X-RateLimit-Reset", "1700000000.001").reset_ms, 1);
}

static void test_openai(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  line(&h, "x-ratelimit-limit-requests: 60");
  line(&h, "x-ratelimit-limit-tokens: 150000");
  line(&h, "x-ratelimit-remaining-requests: 59");
  line(&h, "x-ratelimit-remaining-tokens: 149984");
  line(&h, "x-ratelimit-reset-requests: 1s");
  line(&h, "x-ratelimit-reset-tokens: 6m0s");
  assert_int_equal(h.limit, 60);
  assert_int_equal(h.remaining, 59);
  assert_int_equal(h.reset_ms, 1000);
  assert_int_equal(h.tokens_limit, 150000);
  assert_int_equal(h.tokens_remaining, 149984);
  assert_int_equal(h.tokens_reset_ms, 360000);
  assert_int_equal(wait_of(&h, &src), -1);
  /* Requests used up. */
  polite_headers_init(&h, NOW_MS);
  line(&h, "x-ratelimit-remaining-requests: 0");
  line(&h, "x-ratelimit-reset-requests: 7.66s");
  assert_int_equal(wait_of(&h, &src), 7660);
  assert_int_equal(src, POLITE_WAIT_RESET);
  /* Tokens used up: the token reset is a wait too. */
  polite_headers_init(&h, NOW_MS);
  line(&h, "x-ratelimit-remaining-requests: 10");
  line(&h, "x-ratelimit-reset-requests: 1s");
  line(&h, "x-ratelimit-remaining-tokens: 0");
  line(&h, "x-ratelimit-reset-tokens: 20ms");
  assert_int_equal(wait_of(&h, &src), 20);
  assert_int_equal(src, POLITE_WAIT_RESET);
  /* Both used up: the longer. */
  line(&h, "x-ratelimit-remaining-requests: 0");
  assert_int_equal(wait_of(&h, &src), 1000);
  /* A bare number is taken as seconds; garbage is ignored. */
  assert_int_equal(one("x-ratelimit-reset-requests", "2").reset_ms, 2000);
  assert_int_equal(one("x-ratelimit-reset-requests", "2.5").reset_ms, 2500);
  assert_int_equal(one("x-ratelimit-reset-tokens", "soon").tokens_reset_ms, -1);
  assert_int_equal(one("x-ratelimit-reset-tokens", "-1s").tokens_reset_ms, -1);
  assert_int_equal(one("x-ratelimit-limit-tokens", "1.5").tokens_limit, -1);
}

static void test_anthropic(void **state) {
  (void)state;
  polite_wait_source src;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  line(&h, "anthropic-ratelimit-requests-limit: 50");
  line(&h, "anthropic-ratelimit-requests-remaining: 0");
  line(&h, "anthropic-ratelimit-requests-reset: 2023-11-14T22:14:20Z");
  line(&h, "anthropic-ratelimit-input-tokens-limit: 40000");
  line(&h, "anthropic-ratelimit-input-tokens-remaining: 39000");
  line(&h, "anthropic-ratelimit-input-tokens-reset: 2023-11-14T22:13:21Z");
  line(&h, "anthropic-ratelimit-output-tokens-remaining: 7000");
  line(&h, "anthropic-ratelimit-tokens-remaining: 46000");
  assert_int_equal(h.limit, 50);
  assert_int_equal(h.remaining, 0);
  assert_int_equal(h.reset_ms, 60000);
  assert_int_equal(h.tokens_limit, 40000);
  assert_int_equal(h.tokens_remaining, 7000);
  assert_int_equal(h.tokens_reset_ms, 1000);
  assert_int_equal(wait_of(&h, &src), 60000);
  assert_int_equal(src, POLITE_WAIT_RESET);
  /* RFC 3339 forms. */
  const char *n = "anthropic-ratelimit-requests-reset";
  assert_int_equal(one(n, "2023-11-14T23:14:20+01:00").reset_ms, 60000);
  assert_int_equal(one(n, "2023-11-14T21:14:20-01:00").reset_ms, 60000);
  assert_int_equal(one(n, "2023-11-14t22:14:20z").reset_ms, 60000);
  assert_int_equal(one(n, "2023-11-14T22:13:20.5Z").reset_ms, 500);
  assert_int_equal(one(n, "2023-11-14T22:13:20.0001Z").reset_ms, 1);
  assert_int_equal(one(n, "2023-11-14T22:13:19Z").reset_ms, 0);
  assert_int_equal(one(n, "2024-02-29T00:00:00Z").reset_ms > 0, 1);
  assert_int_equal(one(n, "2023-02-29T00:00:00Z").reset_ms, -1);
  assert_int_equal(one(n, "2023-11-14 22:14:20Z").reset_ms, -1);
  assert_int_equal(one(n, "2023-11-14T22:14:20").reset_ms, -1);
  assert_int_equal(one(n, "2023-11-14T24:00:00Z").reset_ms, -1);
  assert_int_equal(one(n, "2023-11-14T22:14:20Zx").reset_ms, -1);
  assert_int_equal(one(n, "2023-11-14T22:14:20.Z").reset_ms, -1);
  assert_int_equal(one(n, "2023-11-14T22:14:20+0100").reset_ms, -1);
  assert_int_equal(one(n, "60").reset_ms, -1);
  assert_int_equal(one("anthropic-ratelimit-requests-remaining", "x").remaining,
                   -1);
  assert_int_equal(one("anthropic-ratelimit-foo-remaining", "0").remaining, -1);
  assert_int_equal(one("anthropic-ratelimit-requests-", "0").remaining, -1);
}

static void test_most_restrictive_across_sources(void **state) {
  (void)state;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  feed(&h, "RateLimit-Remaining", "10");
  feed(&h, "X-RateLimit-Remaining", "3");
  feed(&h, "RateLimit-Limit", "100");
  feed(&h, "X-RateLimit-Limit", "50");
  feed(&h, "RateLimit-Reset", "5");
  feed(&h, "X-RateLimit-Reset", "8");
  assert_int_equal(h.remaining, 3);
  assert_int_equal(h.limit, 50);
  assert_int_equal(h.reset_ms, 8000);
  /* A policy with the same quota as a plain limit lends its window. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "X-RateLimit-Limit", "100");
  feed(&h, "RateLimit-Policy", "\"d\";q=100;w=60");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.window_s, 60);
  /* A smaller plain limit replaces the policy, window and all. */
  feed(&h, "X-RateLimit-Limit", "40");
  assert_int_equal(h.limit, 40);
  assert_int_equal(h.window_s, -1);
}

/* Feeding the same headers in every order gives the same reader. */
static void test_order_independence(void **state) {
  (void)state;
  const char *lines[] = {
      "Retry-After: bogus",
      "Retry-After: 12",
      "retry-after-ms: 900.5",
      "Date: Tue, 14 Nov 2023 22:13:20 GMT",
      "RateLimit: \"a\";r=3;t=9, \"b\";r=0;t=4",
      "RateLimit-Policy: \"a\";q=10;w=1, \"b\";q=500;w=3600",
      "X-RateLimit-Limit: 10",
      "X-RateLimit-Remaining: 7",
      "X-RateLimit-Reset: 1700000030",
      "x-ratelimit-remaining-tokens: 0",
      "x-ratelimit-reset-tokens: 1m30s",
      "x-ratelimit-limit-tokens: 9000",
      "x-request-id: req_123",
  };
  enum { N = sizeof lines / sizeof lines[0] };
  polite_headers ref;
  polite_headers_init(&ref, NOW_MS);
  for (int i = 0; i < N; i++)
    line(&ref, lines[i]);
  assert_int_equal(ref.remaining, 0);
  assert_int_equal(ref.reset_ms, 30000);
  assert_int_equal(ref.limit, 10);
  assert_int_equal(ref.window_s, 1);
  assert_int_equal(ref.retry_after_ms, 901);
  assert_int_equal(ref.retry_after.seconds, 12);
  uint64_t rnd = 42;
  for (int round = 0; round < 200; round++) {
    int order[N];
    for (int i = 0; i < N; i++)
      order[i] = i;
    for (int i = N - 1; i > 0; i--) { /* Fisher-Yates on a fixed seed */
      int j = (int)polite_rand_uniform(polite_rand_next(&rnd), i);
      int t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    polite_headers h;
    polite_headers_init(&h, NOW_MS);
    for (int i = 0; i < N; i++)
      line(&h, lines[order[i]]);
    assert_int_equal(h.remaining, ref.remaining);
    assert_int_equal(h.reset_ms, ref.reset_ms);
    assert_int_equal(h.limit, ref.limit);
    assert_int_equal(h.window_s, ref.window_s);
    assert_int_equal(h.tokens_limit, ref.tokens_limit);
    assert_int_equal(h.tokens_remaining, ref.tokens_remaining);
    assert_int_equal(h.tokens_reset_ms, ref.tokens_reset_ms);
    assert_int_equal(h.retry_after_ms, ref.retry_after_ms);
    assert_int_equal(h.retry_after.kind, ref.retry_after.kind);
    assert_int_equal(h.retry_after.seconds, ref.retry_after.seconds);
    assert_int_equal(h.date_unix, ref.date_unix);
    assert_int_equal(h.saw_request_id, 1);
    assert_int_equal(wait_of(&h, NULL), 901);
  }
}

/* ---- Request ids
 * -------------------------------------------------------------- */

static void test_request_ids(void **state) {
  (void)state;
  const char *ids[] = {"x-request-id",
                       "Request-Id",
                       "x-amzn-RequestId",
                       "x-amz-request-id",
                       "x-amz-cf-id",
                       "CF-RAY",
                       "X-GitHub-Request-Id",
                       "x-ms-request-id",
                       "apim-request-id",
                       "X-Correlation-ID",
                       "X-Cloud-Trace-Context",
                       "x-amzn-trace-id",
                       "x-ms-client-request-id",
                       "x-trace-id"};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    polite_headers h;
    polite_headers_init(&h, NOW_MS);
    assert_int_equal(feed(&h, ids[i], "abc-123"), 1);
    assert_int_equal(h.saw_request_id, 1);
  }
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  assert_int_equal(feed(&h, "x-request-id", "  "), 0); /* empty value */
  assert_int_equal(feed(&h, "x-request-ids", "a"), 0);
  assert_int_equal(feed(&h, "request", "a"), 0);
  assert_int_equal(feed(&h, "Retry-After", "5"), 0);
  assert_int_equal(feed(&h, "Content-Type", "text/plain"), 0);
  assert_int_equal(h.saw_request_id, 0);
  assert_int_equal(line(&h, "X-Request-Id: 9f8e\r\n"), 1);
  assert_int_equal(h.saw_request_id, 1);
}

/* ---- Raw lines
 * --------------------------------------------------------------- */

static void test_feed_line(void **state) {
  (void)state;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  assert_int_equal(line(&h, "HTTP/1.1 429 Too Many Requests\r\n"), 0);
  assert_int_equal(line(&h, "HTTP/2 429"), 0);
  assert_int_equal(line(&h, "HTTP/1.1 503 Busy: Retry-After: 5\r\n"), 0);
  assert_int_equal(line(&h, "\r\n"), 0);
  assert_int_equal(line(&h, ""), 0);
  assert_int_equal(line(&h, "no colon here"), 0);
  assert_int_equal(line(&h, ": 5"), 0);
  assert_int_equal(line(&h, "Retry-After : 5"), 0); /* space before colon */
  assert_int_equal(line(&h, " Retry-After: 5"), 0); /* obs-fold line */
  assert_int_equal(polite_headers_feed_line(&h, "Retry\0After: 5", 14), 0);
  assert_int_equal(line(&h, "Retry/After: 5"), 0);
  assert_int_equal(h.retry_after.kind, POLITE_RA_NONE);
  line(&h, "Retry-After: 5\r\n");
  assert_int_equal(h.retry_after.seconds, 5);
  polite_headers_init(&h, NOW_MS);
  line(&h, "Retry-After:7\n");
  assert_int_equal(h.retry_after.seconds, 7);
  polite_headers_init(&h, NOW_MS);
  line(&h, "Retry-After:   \t8 \t\r\n");
  assert_int_equal(h.retry_after.seconds, 8);
  /* The value may contain colons (dates do). */
  polite_headers_init(&h, NOW_MS);
  line(&h, "Date: Tue, 14 Nov 2023 22:13:20 GMT\r\n");
  assert_int_equal(h.date_unix, NOW_S);
  /* Only len bytes are read. */
  polite_headers_init(&h, NOW_MS);
  polite_headers_feed_line(&h, "Retry-After: 12345", 15);
  assert_int_equal(h.retry_after.seconds, 12);
  assert_int_equal(polite_headers_feed_line(&h, NULL, 4), 0);
  assert_int_equal(polite_headers_feed_line(NULL, "a: b", 4), 0);
  assert_int_equal(polite_headers_feed(&h, "Retry-After", 11, NULL, 5), 0);
}

/* ---- Go durations
 * ------------------------------------------------------------ */

static void test_go_durations(void **state) {
  (void)state;
  assert_int_equal(dur("6m0s"), 360000);
  assert_int_equal(dur("1s"), 1000);
  assert_int_equal(dur("20ms"), 20);
  assert_int_equal(dur("1h2m3.5s"), 3723500);
  assert_int_equal(dur("0.5s"), 500);
  assert_int_equal(dur("7.66s"), 7660);
  assert_int_equal(dur("0"), 0);
  assert_int_equal(dur("0s"), 0);
  assert_int_equal(dur("1m"), 60000);
  assert_int_equal(dur("2h"), 7200000);
  assert_int_equal(dur(" 3s "), 3000);
  assert_int_equal(dur(".5s"), 500);
  assert_int_equal(dur("1.s"), 1000);
  assert_int_equal(dur("1s500ms"), 1500);
  assert_int_equal(dur("1m1m"), 120000);
  /* Rounded up to whole milliseconds. */
  assert_int_equal(dur("1ns"), 1);
  assert_int_equal(dur("999us"), 1);
  assert_int_equal(dur("1000us"), 1);
  assert_int_equal(dur("1001us"), 2);
  assert_int_equal(dur("1\xc2\xb5s"), 1);
  assert_int_equal(dur("1\xce\xbcs"), 1);
  assert_int_equal(dur("0.0001s"), 1);
  assert_int_equal(dur("1.0000000000000000000000001s"), 1001);
  assert_int_equal(dur("2.5ms"), 3);
  assert_int_equal(dur("1000000ns"), 1);
  assert_int_equal(dur("1000001ns"), 2);
  /* Saturates, never wraps. */
  assert_int_equal(dur("99999999999999999999999h"), CAP);
  assert_int_equal(dur("9223372036854775807s"), CAP);
  /* Rejected. */
  assert_int_equal(dur(""), -1);
  assert_int_equal(dur(" "), -1);
  assert_int_equal(dur("5"), -1);
  assert_int_equal(dur("00"), -1);
  assert_int_equal(dur("-1s"), -1);
  assert_int_equal(dur("+1s"), -1);
  assert_int_equal(dur("1x"), -1);
  assert_int_equal(dur("s"), -1);
  assert_int_equal(dur(".s"), -1);
  assert_int_equal(dur("1S"), -1);
  assert_int_equal(dur("1 s"), -1);
  assert_int_equal(dur("1s "), 1000); /* surrounding whitespace only */
  assert_int_equal(dur("1s 2s"), -1);
  assert_int_equal(dur("1d"), -1);
  assert_int_equal(dur("1s2"), -1);
  assert_int_equal(dur("1\xc2s"), -1);
  int64_t ms;
  assert_int_equal(polite_go_duration_ms(NULL, 0, &ms), POLITE_EINVAL);
  assert_int_equal(polite_go_duration_ms("1s", 2, NULL), POLITE_EINVAL);
}

/* ---- Quota hints
 * --------------------------------------------------------------- */

static void test_quota_hint(void **state) {
  (void)state;
  /* OpenAI. */
  assert_int_equal(quota("{\"error\":{\"type\":\"requests\",\"code\":"
                         "\"rate_limit_exceeded\"}}"),
                   0);
  assert_int_equal(quota("{\"error\":{\"message\":\"Rate limit reached for "
                         "gpt-4 in organization org-x on requests per min "
                         "(RPM): Limit 3, Used 3, Requested 1. Please try "
                         "again in 20s.\",\"type\":\"requests\",\"code\":"
                         "\"rate_limit_exceeded\"}}"),
                   0);
  assert_int_equal(quota("{\"error\":{\"message\":\"Rate limit reached on "
                         "requests per day (RPD): Limit 200, Used 200. "
                         "Please try again in 7m12s.\",\"code\":"
                         "\"rate_limit_exceeded\"}}"),
                   0);
  assert_int_equal(quota("{\"error\":{\"type\":\"insufficient_quota\","
                         "\"code\":\"insufficient_quota\",\"message\":\"You "
                         "exceeded your current quota, please check your plan "
                         "and billing details.\"}}"),
                   1);
  assert_int_equal(quota("INSUFFICIENT_QUOTA"), 1);
  /* Anthropic. */
  assert_int_equal(quota("{\"type\":\"error\",\"error\":{\"type\":"
                         "\"invalid_request_error\",\"message\":\"Your credit "
                         "balance is too low to access the Anthropic API.\"}}"),
                   1);
  assert_int_equal(quota("{\"type\":\"error\",\"error\":{\"type\":"
                         "\"rate_limit_error\",\"message\":\"Number of request "
                         "tokens has exceeded your per-minute rate limit\"}}"),
                   0);
  assert_int_equal(quota("You have reached your specified API usage limits."),
                   1);
  /* Google. */
  assert_int_equal(quota("{\"error\":{\"code\":429,\"message\":\"Quota "
                         "exceeded for quota metric 'Requests' and limit "
                         "'Requests per minute' of service 'x.googleapis.com'"
                         "\",\"status\":\"RESOURCE_EXHAUSTED\"}}"),
                   0);
  assert_int_equal(quota("{\"error\":{\"code\":429,\"message\":\"Quota "
                         "exceeded for quota metric 'Requests' and limit "
                         "'Requests per day' of service 'x.googleapis.com'\","
                         "\"status\":\"RESOURCE_EXHAUSTED\"}}"),
                   1);
  assert_int_equal(quota("{\"error\":{\"message\":\"You exceeded your current "
                         "quota, please check your plan and billing details.\","
                         "\"details\":[{\"quotaId\":\"GenerateRequestsPerMinute"
                         "PerProjectPerModel-FreeTier\"}]}}"),
                   0);
  assert_int_equal(quota("{\"error\":{\"message\":\"You exceeded your current "
                         "quota, please check your plan and billing details.\","
                         "\"details\":[{\"quotaId\":\"GenerateRequestsPerDay"
                         "PerProjectPerModel-FreeTier\"}]}}"),
                   1);
  assert_int_equal(quota("{\"status\":\"RESOURCE_EXHAUSTED\"}"), 0);
  /* "Try again in" means the window is short. */
  assert_int_equal(quota("Quota exceeded. Please try again in 30s."), 0);
  assert_int_equal(quota("Quota exceeded."), 1);
  /* The IETF draft's problem type is used for ordinary windows. */
  assert_int_equal(quota("{\"type\":\"https://iana.org/assignments/http-problem"
                         "-types#quota-exceeded\",\"title\":\"Quota Exceeded\","
                         "\"detail\":\"The default policy allows 100 requests "
                         "per 60 seconds. Retry in 5 seconds.\"}"),
                   0);
  assert_int_equal(quota("{\"type\":\"https://example.com/problems/quota-"
                         "exceeded\",\"detail\":\"Monthly allowance used.\"}"),
                   1);
  assert_int_equal(quota("{\"type\":\"https://example.com/problems/quota-"
                         "exceeded\"}"),
                   1);
  /* Spend, billing, daily and monthly markers. */
  assert_int_equal(quota("You have hit your spend limit"), 1);
  assert_int_equal(quota("Spending limit reached"), 1);
  assert_int_equal(quota("billing_hard_limit_reached"), 1);
  assert_int_equal(quota("daily limit reached"), 1);
  assert_int_equal(quota("Daily quota exhausted"), 1);
  assert_int_equal(quota("monthly quota used"), 1);
  assert_int_equal(quota("Please update your billing details"), 1);
  /* Plain rate limits and unrelated text. */
  assert_int_equal(quota("Rate limit reached"), 0);
  assert_int_equal(quota("Too Many Requests"), 0);
  assert_int_equal(quota("slow down"), 0);
  assert_int_equal(quota(""), 0);
  assert_int_equal(polite_body_quota_hint(NULL, 10), 0);
  assert_int_equal(quota("quota"), 0);
  /* Only the first 64 KiB are read; len is honoured. */
  static char big[70000];
  memset(big, ' ', sizeof big);
  memcpy(big + 65536 - 18, "insufficient_quota", 18);
  assert_int_equal(polite_body_quota_hint(big, sizeof big), 1);
  memset(big, ' ', sizeof big);
  memcpy(big + 65536 - 17, "insufficient_quota", 18);
  assert_int_equal(polite_body_quota_hint(big, sizeof big), 0);
  assert_int_equal(polite_body_quota_hint("insufficient_quota", 17), 0);
}

/* Each source keeps its own (remaining, reset) pair for the planner; Kong's
 * per-window headers and the draft's qu are read. */
static void test_pairs_kong_qu(void **state) {
  (void)state;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  feed(&h, "RateLimit", "\"a\";r=0;t=1, \"b\";r=50;t=30");
  feed(&h, "X-RateLimit-Remaining", "7");
  feed(&h, "X-RateLimit-Reset", "1700000060");
  /* Merged (the old fields): nothing left, the longest reset. */
  assert_int_equal(h.remaining, 0);
  assert_int_equal(h.reset_ms, 60000);
  /* Paired: each member and each family keeps its own. */
  assert_int_equal(h.pairs[POLITE_RL_IETF].remaining, 50);
  assert_int_equal(h.pairs[POLITE_RL_IETF].reset_ms, 30000);
  assert_int_equal(h.pairs[POLITE_RL_IETF_SPENT].remaining, 0);
  assert_int_equal(h.pairs[POLITE_RL_IETF_SPENT].reset_ms, 1000);
  assert_int_equal(h.pairs[POLITE_RL_X].remaining, 7);
  assert_int_equal(h.pairs[POLITE_RL_X].reset_ms, 60000);
  assert_int_equal(h.pairs[POLITE_RL_OPENAI].remaining, -1);
  /* The member allowing least is kept, whatever the order. */
  h = one("RateLimit", "\"sec\";r=9;t=1, \"hour\";r=100;t=3600");
  assert_int_equal(h.pairs[POLITE_RL_IETF].remaining, 100);
  assert_int_equal(h.pairs[POLITE_RL_IETF].reset_ms, 3600000);
  /* Kong: a limit and remaining per window. */
  polite_headers_init(&h, NOW_MS);
  feed(&h, "X-RateLimit-Limit-Minute", "60");
  feed(&h, "X-RateLimit-Remaining-Minute", "30");
  feed(&h, "X-RateLimit-Limit-Hour", "1000");
  feed(&h, "x-ratelimit-remaining-hour", "990");
  assert_int_equal(h.limit, 60);
  assert_int_equal(h.window_s, 60);
  assert_int_equal(h.remaining, 30);
  assert_int_equal(h.pairs[POLITE_RL_KONG_MINUTE].remaining, 30);
  assert_int_equal(h.pairs[POLITE_RL_KONG_HOUR].remaining, 990);
  assert_int_equal(h.pairs[POLITE_RL_KONG_MINUTE].reset_ms, -1);
  /* 60/60 s = 1/s against 1000/3600 s: the hour is the lower average. */
  assert_int_equal(h.avg_quota, 1000);
  assert_int_equal(h.avg_window_s, 3600);
  h = one("X-RateLimit-Limit-Second", "abc");
  assert_int_equal(h.limit, -1);
  /* qu: only requests count. */
  h = one("RateLimit-Policy", "\"b\";q=10;qu=\"content-bytes\";w=1");
  assert_int_equal(h.limit, -1);
  assert_int_equal(h.avg_quota, -1);
  h = one(
      "RateLimit-Policy",
      "\"b\";q=10;qu=\"content-bytes\";w=1, \"r\";q=100;qu=\"requests\";w=60");
  assert_int_equal(h.limit, 100);
  assert_int_equal(h.avg_quota, 100);
  assert_int_equal(h.avg_window_s, 60);
  /* Whitespace after ';' as servers send it. */
  h = one("RateLimit", "\"200-in-5sec\"; r=199; t=5");
  assert_int_equal(h.pairs[POLITE_RL_IETF].remaining, 199);
  assert_int_equal(h.pairs[POLITE_RL_IETF].reset_ms, 5000);
  for (int i = 0; i < POLITE_RL_SOURCES; i++) {
    polite_headers_init(&h, NOW_MS);
    assert_int_equal(h.pairs[i].remaining, -1);
    assert_int_equal(h.pairs[i].reset_ms, -1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_init),
      cmocka_unit_test(test_names_case_insensitive),
      cmocka_unit_test(test_retry_after_header),
      cmocka_unit_test(test_retry_after_with_date_header),
      cmocka_unit_test(test_retry_after_ms),
      cmocka_unit_test(test_precedence),
      cmocka_unit_test(test_duplicate_retry_after),
      cmocka_unit_test(test_ietf_current),
      cmocka_unit_test(test_ietf_malformed),
      cmocka_unit_test(test_ietf_older_drafts),
      cmocka_unit_test(test_github_epoch_reset),
      cmocka_unit_test(test_discord),
      cmocka_unit_test(test_openai),
      cmocka_unit_test(test_anthropic),
      cmocka_unit_test(test_most_restrictive_across_sources),
      cmocka_unit_test(test_order_independence),
      cmocka_unit_test(test_request_ids),
      cmocka_unit_test(test_feed_line),
      cmocka_unit_test(test_go_durations),
      cmocka_unit_test(test_quota_hint),
      cmocka_unit_test(test_pairs_kong_qu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
