/* Unit tests for Retry-After and HTTP-date parsing/formatting
 * (lib/retry_after.c). */
#define _GNU_SOURCE /* timegm, the independent oracle for the sweep test */
#include <polite/core.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

/* 2025-06-15 00:00:00 UTC: RFC 850 years resolve into [1976, 2075]. */
#define NOW_UNIX INT64_C(1749945600)
#define BAD INT64_MIN

/* Parses an HTTP-date at NOW_UNIX; BAD when it is rejected. */
static int64_t date(const char *s) {
  int64_t t = 12345;
  int rc = polite_http_date_parse(s, strlen(s), NOW_UNIX, &t);
  if (rc != 0) {
    assert_int_equal(rc, POLITE_EINVAL);
    assert_int_equal(t, 12345); /* untouched on failure */
    return BAD;
  }
  return t;
}

static int64_t date_at(const char *s, int64_t now_unix) {
  int64_t t;
  return polite_http_date_parse(s, strlen(s), now_unix, &t) == 0 ? t : BAD;
}

static polite_retry_after ra(const char *s) {
  polite_retry_after r;
  memset(&r, 0x5a, sizeof r); /* the parser must set every field */
  polite_retry_after_parse(s, strlen(s), NOW_UNIX, &r);
  return r;
}

static polite_ra_kind kind(const char *s) {
  return ra(s).kind;
}

/* ---- The three forms ------------------------------------------------- */

static void test_three_forms(void **state) {
  (void)state;
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  assert_int_equal(date("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
  assert_int_equal(date("Sun Nov  6 08:49:37 1994"), 784111777);
  assert_int_equal(date("Sun Nov 06 08:49:37 1994"), 784111777);
  assert_int_equal(date("Thu, 01 Jan 1970 00:00:00 GMT"), 0);
  assert_int_equal(date("Wed, 31 Dec 1969 23:59:59 GMT"), -1);
  assert_int_equal(date("Sun, 15 Jun 2025 00:00:00 GMT"), NOW_UNIX);
  assert_int_equal(date("Fri, 31 Dec 9999 23:59:59 GMT"),
                   INT64_C(253402300799));
  assert_int_equal(date("Mon, 01 Jan 0001 00:00:00 GMT"),
                   INT64_C(-62135596800));
  /* Every month name, every long day name. */
  const char *months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int m = 0; m < 12; m++) {
    char b[64];
    snprintf(b, sizeof b, "Mon, 01 %s 2024 00:00:00 GMT", months[m]);
    struct tm tm = {.tm_year = 124, .tm_mon = m, .tm_mday = 1};
    assert_int_equal(date(b), (int64_t)timegm(&tm));
  }
  assert_int_equal(date("Monday, 07-Nov-94 08:49:37 GMT"), 784111777 + 86400);
  assert_int_equal(date("Tuesday, 08-Nov-94 08:49:37 GMT"),
                   784111777 + 2 * 86400);
  assert_int_equal(date("Wednesday, 09-Nov-94 08:49:37 GMT"),
                   784111777 + 3 * 86400);
  assert_int_equal(date("Thursday, 10-Nov-94 08:49:37 GMT"),
                   784111777 + 4 * 86400);
  assert_int_equal(date("Friday, 11-Nov-94 08:49:37 GMT"),
                   784111777 + 5 * 86400);
  assert_int_equal(date("Saturday, 12-Nov-94 08:49:37 GMT"),
                   784111777 + 6 * 86400);
}

static void test_surrounding_whitespace(void **state) {
  (void)state;
  assert_int_equal(date("  Sun, 06 Nov 1994 08:49:37 GMT\t "), 784111777);
  assert_int_equal(date("\tSun Nov  6 08:49:37 1994"), 784111777);
  /* Inner whitespace must be exactly as in the grammar. */
  assert_int_equal(date("Sun,  06 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994  08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06\tNov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun  Nov  6 08:49:37 1994"), BAD);
  assert_int_equal(date("Sun Nov   6 08:49:37 1994"), BAD);
  /* Other whitespace is not OWS. */
  assert_int_equal(date("\nSun, 06 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 GMT\r"), BAD);
}

/* ---- Calendar validation ---------------------------------------------- */

static void test_leap_days(void **state) {
  (void)state;
  assert_int_equal(date("Thu, 29 Feb 2024 00:00:00 GMT"), 1709164800);
  assert_int_equal(date("Wed, 28 Feb 2024 00:00:00 GMT"), 1709164800 - 86400);
  assert_int_equal(date("Fri, 01 Mar 2024 00:00:00 GMT"), 1709164800 + 86400);
  assert_int_equal(date("Wed, 29 Feb 2023 00:00:00 GMT"), BAD);
  assert_int_equal(date("Thu, 29 Feb 1900 00:00:00 GMT"), BAD);
  assert_int_equal(date("Thu, 01 Mar 1900 00:00:00 GMT"), INT64_C(-2203891200));
  assert_int_equal(date("Wed, 28 Feb 1900 00:00:00 GMT"),
                   INT64_C(-2203891200) - 86400);
  assert_int_equal(date("Tue, 29 Feb 2000 12:00:00 GMT"), 951825600);
  assert_int_equal(date("Thu, 30 Feb 2024 00:00:00 GMT"), BAD);
  assert_int_equal(date("Thu, 29 Feb 2100 00:00:00 GMT"), BAD);
  assert_int_equal(date("Thu, 29 Feb 2400 00:00:00 GMT") != BAD, 1);
  /* RFC 850 and asctime forms are checked the same way. */
  assert_int_equal(date("Thursday, 29-Feb-24 00:00:00 GMT"), 1709164800);
  assert_int_equal(date("Wednesday, 29-Feb-23 00:00:00 GMT"), BAD);
  assert_int_equal(date("Thu Feb 29 00:00:00 2024"), 1709164800);
  assert_int_equal(date("Wed Feb 29 00:00:00 2023"), BAD);
  assert_int_equal(date("Thu Feb 29 00:00:00 1900"), BAD);
  assert_int_equal(date("Tue Feb 29 12:00:00 2000"), 951825600);
}

static void test_month_lengths(void **state) {
  (void)state;
  static const int len[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const char *months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int m = 0; m < 12; m++) {
    char ok[64], bad[64];
    snprintf(ok, sizeof ok, "Mon, %02d %s 2023 12:00:00 GMT", len[m],
             months[m]);
    snprintf(bad, sizeof bad, "Mon, %02d %s 2023 12:00:00 GMT", len[m] + 1,
             months[m]);
    assert_true(date(ok) != BAD);
    assert_int_equal(date(bad), BAD);
  }
  assert_int_equal(date("Sun, 00 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 32 Jan 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 99 Jan 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun Jan 32 08:49:37 1994"), BAD);
  assert_int_equal(date("Sun Jan  0 08:49:37 1994"), BAD);
  assert_int_equal(date("Sunday, 32-Jan-94 08:49:37 GMT"), BAD);
}

static void test_time_fields(void **state) {
  (void)state;
  assert_int_equal(date("Sun, 06 Nov 1994 23:59:59 GMT"), 784079999 + 86400);
  assert_int_equal(date("Sun, 06 Nov 1994 00:00:00 GMT"), 784080000);
  assert_int_equal(date("Sun, 06 Nov 1994 24:00:00 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:60:00 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:59:61 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 99:00:00 GMT"), BAD);
  /* A leap second counts as the next minute's first second. */
  assert_int_equal(date("Sat, 31 Dec 2016 23:59:60 GMT"), 1483228800);
  assert_int_equal(date("Sat, 31 Dec 2016 23:59:59 GMT"), 1483228799);
  assert_int_equal(date("Sun Nov  6 24:00:00 1994"), BAD);
  assert_int_equal(date("Sun Nov  6 08:60:00 1994"), BAD);
  assert_int_equal(date("Sunday, 06-Nov-94 24:00:00 GMT"), BAD);
  assert_int_equal(date("Sunday, 06-Nov-94 08:49:61 GMT"), BAD);
  /* One-digit fields are not 2DIGIT. */
  assert_int_equal(date("Sun, 06 Nov 1994 8:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:7 GMT"), BAD);
  assert_int_equal(date("Sun, 6 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 94 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 01994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49 GMT"), BAD);
}

static void test_years(void **state) {
  (void)state;
  assert_int_equal(date("Mon, 01 Jan 0000 00:00:00 GMT"), BAD);
  assert_int_equal(date("Sat, 01 Jan 10000 00:00:00 GMT"), BAD);
  assert_int_equal(date("Sun Nov  6 08:49:37 19940"), BAD);
  assert_int_equal(date("Sun Nov  6 08:49:37 994"), BAD);
  assert_int_equal(date("Sat, 01 Jan 1966 00:00:00 GMT") < 0, 1);
}

/* ---- Names, case and form mixing ------------------------------------- */

static void test_names_and_case(void **state) {
  (void)state;
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 gmt"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 UTC"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 +0000"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37"), BAD);
  assert_int_equal(date("Sun, 06 nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 NOV 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("sun, 06 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("SUN, 06 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 Foo 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06 November 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Xyz, 06 Nov 1994 08:49:37 GMT"), BAD);
  /* Wrong name length for the form. */
  assert_int_equal(date("Sunday, 06 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sun, 06-Nov-94 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sunday Nov  6 08:49:37 1994"), BAD);
  assert_int_equal(date("sunday, 06-Nov-94 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sunday, 06-nov-94 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sunday, 06-Nov-94 08:49:37 gmt"), BAD);
  assert_int_equal(date("Sund, 06 Nov 1994 08:49:37 GMT"), BAD);
  /* Missing comma, missing day name. */
  assert_int_equal(date("Sun 06 Nov 1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sunday 06-Nov-94 08:49:37 GMT"), BAD);
  assert_int_equal(date("06 Nov 1994 08:49:37 GMT"), BAD);
  /* A weekday that does not match the date is tolerated (the numbers
   * carry the meaning; RFC 9110 lets recipients ignore the name). */
  assert_int_equal(date("Mon, 06 Nov 1994 08:49:37 GMT"), 784111777);
  assert_int_equal(date("Friday, 06-Nov-94 08:49:37 GMT"), 784111777);
  assert_int_equal(date("Sat Nov  6 08:49:37 1994"), 784111777);
}

static void test_trailing_and_truncated(void **state) {
  (void)state;
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 GMT x"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 GMTx"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 GMT,"), BAD);
  assert_int_equal(date("Sun Nov  6 08:49:37 1994 GMT"), BAD);
  assert_int_equal(date("Sunday, 06-Nov-94 08:49:37 GMT;"), BAD);
  assert_int_equal(date(""), BAD);
  assert_int_equal(date("   "), BAD);
  assert_int_equal(date("Sun"), BAD);
  assert_int_equal(date("Sun,"), BAD);
  assert_int_equal(date("Sun, 06 Nov 1994 08:49:37 GM"), BAD);
  /* Every proper prefix of each form is rejected. */
  const char *forms[] = {"Sun, 06 Nov 1994 08:49:37 GMT",
                         "Sunday, 06-Nov-94 08:49:37 GMT",
                         "Sun Nov  6 08:49:37 1994"};
  for (int f = 0; f < 3; f++) {
    size_t n = strlen(forms[f]);
    for (size_t k = 0; k < n; k++) {
      int64_t t;
      assert_int_equal(polite_http_date_parse(forms[f], k, NOW_UNIX, &t),
                       POLITE_EINVAL);
    }
  }
  /* The length is honoured: no NUL is needed, bytes after len are unread. */
  int64_t t;
  assert_int_equal(polite_http_date_parse("Sun, 06 Nov 1994 08:49:37 GMTjunk",
                                          29, NOW_UNIX, &t),
                   0);
  assert_int_equal(t, 784111777);
  assert_int_equal(polite_http_date_parse(NULL, 0, NOW_UNIX, &t),
                   POLITE_EINVAL);
  assert_int_equal(polite_http_date_parse("x", 1, NOW_UNIX, NULL),
                   POLITE_EINVAL);
}

/* ---- RFC 850 two-digit years ------------------------------------------- */

static void test_rfc850_years(void **state) {
  (void)state;
  /* now = 2025: "75" is 50 years ahead (allowed), "76" would be 51, so it
   * is the most recent past 1976. */
  assert_int_equal(date("Tuesday, 31-Dec-75 23:59:59 GMT"),
                   INT64_C(3345062399));
  assert_int_equal(date("Thursday, 01-Jan-76 00:00:00 GMT"), 189302400);
  assert_int_equal(date("Sunday, 15-Jun-25 00:00:00 GMT"), NOW_UNIX);
  assert_int_equal(date("Saturday, 01-Jan-00 00:00:00 GMT"), 946684800);
  assert_int_equal(date("Friday, 31-Dec-99 23:59:59 GMT"), 946684799);
  /* The same text moves with now. */
  int64_t y2030 = 1893456000; /* 2030-01-01 */
  assert_int_equal(date_at("Thursday, 01-Jan-76 00:00:00 GMT", y2030),
                   INT64_C(3345062400)); /* 2076 */
  assert_int_equal(date_at("Friday, 01-Jan-81 00:00:00 GMT", y2030),
                   347155200); /* 1981: 2081 is 51 years ahead */
  assert_int_equal(date_at("Friday, 01-Jan-80 00:00:00 GMT", y2030),
                   INT64_C(3471292800)); /* 2080: exactly 50 ahead */
  /* now = 2080: "10" is 2110 (30 ahead), not 2010 (70 back). */
  int64_t y2080 = INT64_C(3471292800);
  assert_int_equal(date_at("Wednesday, 01-Jan-10 00:00:00 GMT", y2080),
                   INT64_C(4417977600));
  assert_int_equal(date_at("Wednesday, 01-Jan-31 00:00:00 GMT", y2080),
                   1924992000); /* 2131 would be 51 ahead: 2031 */
  /* Feb 29 depends on the resolved century. */
  assert_int_equal(date_at("Tuesday, 29-Feb-00 00:00:00 GMT", y2030),
                   951782400);
  assert_int_equal(date_at("Tuesday, 29-Feb-00 00:00:00 GMT",
                           INT64_C(-2208988800) /* 1900 */),
                   BAD);
  /* Three- and one-digit years are not two digits. */
  assert_int_equal(date("Sunday, 06-Nov-994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sunday, 06-Nov-1994 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sunday, 06-Nov-4 08:49:37 GMT"), BAD);
  assert_int_equal(date("Sunday, 6-Nov-94 08:49:37 GMT"), BAD);
  /* An absurd now resolves to an out-of-range year: rejected, no UB. */
  assert_int_equal(date_at("Sunday, 06-Nov-94 08:49:37 GMT", INT64_MAX), BAD);
  assert_int_equal(date_at("Sunday, 06-Nov-94 08:49:37 GMT", INT64_MIN), BAD);
}

static void test_asctime_day_padding(void **state) {
  (void)state;
  assert_int_equal(date("Sun Nov  6 08:49:37 1994"), 784111777);
  assert_int_equal(date("Sun Nov 06 08:49:37 1994"), 784111777);
  assert_int_equal(date("Sun Nov 6 08:49:37 1994"), BAD);
  assert_int_equal(date("Sun Nov  16 08:49:37 1994"), BAD);
  assert_int_equal(date("Wed Nov 16 08:49:37 1994"), 784111777 + 10 * 86400);
  assert_int_equal(date("Sun Nov 6  08:49:37 1994"), BAD);
}

/* ---- Formatting and the round trip ----------------------------------------
 */

static void test_format(void **state) {
  (void)state;
  char b[64];
  assert_int_equal(polite_http_date_format(784111777, b, sizeof b), 29);
  assert_string_equal(b, "Sun, 06 Nov 1994 08:49:37 GMT");
  assert_int_equal(polite_http_date_format(0, b, sizeof b), 29);
  assert_string_equal(b, "Thu, 01 Jan 1970 00:00:00 GMT");
  assert_int_equal(polite_http_date_format(-1, b, sizeof b), 29);
  assert_string_equal(b, "Wed, 31 Dec 1969 23:59:59 GMT");
  assert_int_equal(polite_http_date_format(1709164800, b, sizeof b), 29);
  assert_string_equal(b, "Thu, 29 Feb 2024 00:00:00 GMT");
  assert_int_equal(polite_http_date_format(INT64_C(253402300799), b, 30), 29);
  assert_string_equal(b, "Fri, 31 Dec 9999 23:59:59 GMT");
  assert_int_equal(polite_http_date_format(INT64_C(-62135596800), b, 30), 29);
  assert_string_equal(b, "Mon, 01 Jan 0001 00:00:00 GMT");
  assert_int_equal(polite_http_date_format(INT64_C(253402300800), b, 30),
                   POLITE_EINVAL);
  assert_int_equal(polite_http_date_format(INT64_C(-62135596801), b, 30),
                   POLITE_EINVAL);
  assert_int_equal(polite_http_date_format(INT64_MAX, b, 30), POLITE_EINVAL);
  assert_int_equal(polite_http_date_format(INT64_MIN, b, 30), POLITE_EINVAL);
  assert_int_equal(polite_http_date_format(0, b, 29), POLITE_EINVAL);
  assert_int_equal(polite_http_date_format(0, NULL, 30), POLITE_EINVAL);
}

/* Every day from 1899 to 2101 at a varying time of day: format against the
 * C library's timegm/gmtime and parse(format(t)) == t. */
static void test_sweep_against_libc(void **state) {
  (void)state;
  int64_t start = INT64_C(-2240524800); /* 1899-01-01 */
  int64_t end = INT64_C(4133980800);    /* 2101-01-01 */
  int checked = 0;
  for (int64_t t = start; t < end; t += 86400 + 3607) {
    char b[64], want[64];
    time_t tt = (time_t)t;
    struct tm tm;
    assert_non_null(gmtime_r(&tt, &tm));
    strftime(want, sizeof want, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    assert_int_equal(polite_http_date_format(t, b, sizeof b), 29);
    assert_string_equal(b, want);
    int64_t back;
    assert_int_equal(polite_http_date_parse(b, 29, NOW_UNIX, &back), 0);
    assert_int_equal(back, t);
    /* The asctime form of the same instant parses to the same time. */
    strftime(want, sizeof want, "%a %b %e %H:%M:%S %Y", &tm);
    assert_int_equal(
        polite_http_date_parse(want, strlen(want), NOW_UNIX, &back), 0);
    assert_int_equal(back, t);
    checked++;
  }
  assert_true(checked > 70000);
}

/* ---- Retry-After values ----------------------------------------------------
 */

static void test_ra_seconds(void **state) {
  (void)state;
  polite_retry_after r = ra("120");
  assert_int_equal(r.kind, POLITE_RA_SECONDS);
  assert_int_equal(r.seconds, 120);
  assert_int_equal(r.saturated, 0);
  assert_int_equal(r.date_unix, 0);
  assert_int_equal(ra("0").seconds, 0);
  assert_int_equal(ra("0").kind, POLITE_RA_SECONDS);
  assert_int_equal(ra("007").seconds, 7);
  assert_int_equal(ra(" 120 ").seconds, 120);
  assert_int_equal(ra("\t5").seconds, 5);
  assert_int_equal(ra("5\t \t").seconds, 5);
  assert_int_equal(kind(" 120 "), POLITE_RA_SECONDS);
}

static void test_ra_saturation(void **state) {
  (void)state;
  polite_retry_after r = ra("2147483648"); /* exactly the cap */
  assert_int_equal(r.kind, POLITE_RA_SECONDS);
  assert_int_equal(r.seconds, POLITE_RA_MAX_SECONDS);
  assert_int_equal(r.saturated, 0);
  r = ra("2147483647");
  assert_int_equal(r.seconds, POLITE_RA_MAX_SECONDS - 1);
  assert_int_equal(r.saturated, 0);
  r = ra("2147483649");
  assert_int_equal(r.seconds, POLITE_RA_MAX_SECONDS);
  assert_int_equal(r.saturated, 1);
  r = ra("99999999999999999999999999999999");
  assert_int_equal(r.kind, POLITE_RA_SECONDS);
  assert_int_equal(r.seconds, POLITE_RA_MAX_SECONDS);
  assert_int_equal(r.saturated, 1);
  char big[1002];
  memset(big, '9', 1000);
  big[1000] = '\0';
  r = ra(big);
  assert_int_equal(r.kind, POLITE_RA_SECONDS);
  assert_int_equal(r.seconds, POLITE_RA_MAX_SECONDS);
  assert_int_equal(r.saturated, 1);
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, -1),
                   POLITE_RA_MAX_SECONDS * 1000);
  /* Leading zeros do not count towards saturation. */
  memset(big, '0', 1000);
  big[999] = '7';
  r = ra(big);
  assert_int_equal(r.seconds, 7);
  assert_int_equal(r.saturated, 0);
  /* Garbage after a saturated number still makes it invalid. */
  memset(big, '9', 1000);
  big[1000] = 'x';
  big[1001] = '\0';
  assert_int_equal(kind(big), POLITE_RA_INVALID);
}

static void test_ra_invalid(void **state) {
  (void)state;
  assert_int_equal(kind(""), POLITE_RA_NONE);
  assert_int_equal(kind("   "), POLITE_RA_NONE);
  assert_int_equal(kind(" \t "), POLITE_RA_NONE);
  assert_int_equal(kind("-1"), POLITE_RA_INVALID);
  assert_int_equal(kind("+1"), POLITE_RA_INVALID);
  assert_int_equal(kind("1.5"), POLITE_RA_INVALID);
  assert_int_equal(kind("1."), POLITE_RA_INVALID);
  assert_int_equal(kind(".5"), POLITE_RA_INVALID);
  assert_int_equal(kind("120abc"), POLITE_RA_INVALID);
  assert_int_equal(kind("120s"), POLITE_RA_INVALID);
  assert_int_equal(kind("1e3"), POLITE_RA_INVALID);
  assert_int_equal(kind("0x10"), POLITE_RA_INVALID);
  assert_int_equal(kind("1 2"), POLITE_RA_INVALID);
  assert_int_equal(kind("120, 60"), POLITE_RA_INVALID);
  assert_int_equal(kind("abc"), POLITE_RA_INVALID);
  assert_int_equal(kind("Sun, 06 Nov 1994 08:49:37 GMT x"), POLITE_RA_INVALID);
  assert_int_equal(kind("Sun, 06 Nov 1994 08:49:37 gmt"), POLITE_RA_INVALID);
  assert_int_equal(kind("2024-01-01T00:00:00Z"), POLITE_RA_INVALID);
  assert_int_equal(kind("\xef\xbc\x91"), POLITE_RA_INVALID); /* fullwidth 1 */
  assert_int_equal(kind("1\r\n"), POLITE_RA_INVALID);
  /* Embedded NUL: the length is what counts. */
  polite_retry_after r;
  polite_retry_after_parse("12\0"
                           "3",
                           4, NOW_UNIX, &r);
  assert_int_equal(r.kind, POLITE_RA_INVALID);
  polite_retry_after_parse(NULL, 5, NOW_UNIX, &r);
  assert_int_equal(r.kind, POLITE_RA_NONE);
  polite_retry_after_parse("5", 1, NOW_UNIX, NULL); /* must not crash */
}

static void test_ra_dates(void **state) {
  (void)state;
  polite_retry_after r = ra("Sun, 06 Nov 1994 08:49:37 GMT");
  assert_int_equal(r.kind, POLITE_RA_DATE);
  assert_int_equal(r.date_unix, 784111777);
  assert_int_equal(r.seconds, 0);
  assert_int_equal(r.saturated, 0);
  assert_int_equal(ra("Sunday, 06-Nov-94 08:49:37 GMT").kind, POLITE_RA_DATE);
  assert_int_equal(ra("Sun Nov  6 08:49:37 1994").date_unix, 784111777);
  assert_int_equal(ra(" Sun Nov  6 08:49:37 1994 ").kind, POLITE_RA_DATE);
}

/* ---- Delays
 * ------------------------------------------------------------------ */

static void test_delay_seconds(void **state) {
  (void)state;
  polite_retry_after r = ra("120");
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, -1), 120000);
  /* Seconds ignore both clocks. */
  assert_int_equal(polite_retry_after_delay_ms(&r, INT64_MAX, INT64_MAX),
                   120000);
  assert_int_equal(polite_retry_after_delay_ms(&r, INT64_MIN, 5), 120000);
  r = ra("0");
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, -1), 0);
  r = ra("");
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, -1), -1);
  r = ra("bogus");
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, -1), -1);
  assert_int_equal(polite_retry_after_delay_ms(NULL, 0, -1), -1);
}

static void test_delay_dates(void **state) {
  (void)state;
  polite_retry_after r = ra("Sun, 15 Jun 2025 00:01:00 GMT"); /* NOW + 60 s */
  int64_t now_ms = NOW_UNIX * 1000;
  /* Against the local clock when there is no Date header. */
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms, -1), 60000);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms + 250, -1), 59750);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms + 60000, -1), 0);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms + 60001, -1), 0);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms + 59999, -1), 1);
  /* Against the server's Date when present: a skewed local clock (an hour
   * fast or slow) does not change the wait. */
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms, NOW_UNIX), 60000);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms + 3600000, NOW_UNIX),
                   60000);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms - 3600000, NOW_UNIX),
                   60000);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms, NOW_UNIX + 61), 0);
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms, NOW_UNIX + 59),
                   1000);
  /* Server date 0 (1970) is a real date, not "absent". */
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms, 0),
                   (NOW_UNIX + 60) * 1000);
  /* Past dates give 0, pre-1970 dates too. */
  r = ra("Sun, 06 Nov 1994 08:49:37 GMT");
  assert_int_equal(polite_retry_after_delay_ms(&r, now_ms, -1), 0);
  r = ra("Sat, 01 Jan 1966 00:00:00 GMT");
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, -1), 0);
  /* Extreme clocks never wrap; far future dates cap. */
  r = ra("Fri, 31 Dec 9999 23:59:59 GMT");
  assert_int_equal(polite_retry_after_delay_ms(&r, INT64_MIN, -1),
                   POLITE_RA_MAX_SECONDS * 1000);
  assert_int_equal(polite_retry_after_delay_ms(&r, INT64_MAX, -1), 0);
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, INT64_MAX), 0);
  assert_int_equal(polite_retry_after_delay_ms(&r, 0, 0),
                   POLITE_RA_MAX_SECONDS * 1000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_three_forms),
      cmocka_unit_test(test_surrounding_whitespace),
      cmocka_unit_test(test_leap_days),
      cmocka_unit_test(test_month_lengths),
      cmocka_unit_test(test_time_fields),
      cmocka_unit_test(test_years),
      cmocka_unit_test(test_names_and_case),
      cmocka_unit_test(test_trailing_and_truncated),
      cmocka_unit_test(test_rfc850_years),
      cmocka_unit_test(test_asctime_day_padding),
      cmocka_unit_test(test_format),
      cmocka_unit_test(test_sweep_against_libc),
      cmocka_unit_test(test_ra_seconds),
      cmocka_unit_test(test_ra_saturation),
      cmocka_unit_test(test_ra_invalid),
      cmocka_unit_test(test_ra_dates),
      cmocka_unit_test(test_delay_seconds),
      cmocka_unit_test(test_delay_dates),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
