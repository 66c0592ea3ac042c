/* Unit tests of rate and duration parsing (lib/units.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <polite/core.h>

static void rate_ok(const char *s, double want) {
  double v = -1;
  int rc = polite_rate_parse(s, &v);
  if (rc != 0)
    fail_msg("'%s': expected success, got %d", s, rc);
  if (v < want * (1 - 1e-12) || v > want * (1 + 1e-12))
    fail_msg("'%s': expected %.12g, got %.12g", s, want, v);
}

static void rate_bad(const char *s) {
  double v = 12345;
  int rc = polite_rate_parse(s, &v);
  if (rc != POLITE_EINVAL)
    fail_msg("'%s': expected EINVAL, got %d (%g)", s, rc, v);
  assert_true(v == 12345); /* untouched */
}

static void rates_in_every_unit(void **state) {
  (void)state;
  rate_ok("10/s", 10);
  rate_ok("10/sec", 10);
  rate_ok("10/second", 10);
  rate_ok("10/seconds", 10);
  rate_ok("120/min", 2);
  rate_ok("120/m", 2);
  rate_ok("120/minute", 2);
  rate_ok("90/min", 1.5);
  rate_ok("3600/h", 1);
  rate_ok("3600/hour", 1);
  rate_ok("7200/hr", 2);
  rate_ok("86400/d", 1);
  rate_ok("86400/day", 1);
  rate_ok("43200/days", 0.5);
  rate_ok("1/MIN", 1.0 / 60);
  rate_ok("1/day", 1.0 / 86400);
}

static void rates_with_decimals(void **state) {
  (void)state;
  rate_ok("1.5/s", 1.5);
  rate_ok(".5/s", 0.5);
  rate_ok("2./s", 2);
  rate_ok("0.25/min", 0.25 / 60);
  rate_ok("007/s", 7);
}

static void rates_rejected(void **state) {
  (void)state;
  const char *bad[] = {"",
                       "/s",
                       "10",
                       "10/",
                       "10/x",
                       "10/ms",
                       "0/s",
                       "0.0/min",
                       "-1/s",
                       "+1/s",
                       "1e3/s",
                       " 10/s",
                       "10/s ",
                       "10 /s",
                       "10/ s",
                       "10/2s",
                       "inf/s",
                       "nan/s",
                       "abc",
                       "1.2.3/s",
                       ".",
                       "./s",
                       "10//s",
                       "10/s/s",
                       "0x10/s",
                       "2000000000/s",
                       "0.00000001/day",
                       "1000000000000000000000000000000000000000000/s"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    rate_bad(bad[i]);
  double v;
  assert_int_equal(polite_rate_parse(NULL, &v), POLITE_EINVAL);
  assert_int_equal(polite_rate_parse("1/s", NULL), POLITE_EINVAL);
}

static void dur_ok(const char *s, int64_t want) {
  int64_t v = -1;
  int rc = polite_duration_parse(s, &v);
  if (rc != 0)
    fail_msg("'%s': expected success, got %d", s, rc);
  if (v != want)
    fail_msg("'%s': expected %lld ms, got %lld", s, (long long)want,
             (long long)v);
}

static void dur_err(const char *s, int err) {
  int64_t v = 777;
  int rc = polite_duration_parse(s, &v);
  if (rc != err)
    fail_msg("'%s': expected %d, got %d (%lld)", s, err, rc, (long long)v);
  assert_int_equal(v, 777);
}

static void durations_in_every_unit(void **state) {
  (void)state;
  dur_ok("250ms", 250);
  dur_ok("2s", 2000);
  dur_ok("3m", 180000);
  dur_ok("3min", 180000);
  dur_ok("1h", 3600000);
  dur_ok("2d", 172800000);
  dur_ok("0s", 0);
  dur_ok("0", 0);
  dur_ok("2S", 2000);
  dur_ok("10MS", 10);
}

static void durations_combined_and_decimal(void **state) {
  (void)state;
  dur_ok("1h30m", 5400000);
  dur_ok("1h2m3s", 3723000);
  dur_ok("1m500ms", 60500);
  dur_ok("1.5s", 1500);
  dur_ok("0.5h", 1800000);
  dur_ok("1d12h", 129600000);
  dur_ok("500", 500000); /* bare number = seconds */
  dur_ok("1.5", 1500);
  dur_ok(".25s", 250);
}

static void durations_round_up(void **state) {
  (void)state;
  dur_ok("1.0001s", 1001);
  dur_ok("0.1ms", 1);
  dur_ok("1.5ms", 2);
  dur_ok("0.0000000000000000000001s", 1); /* beyond ns, still non-zero */
  dur_ok("1.000000000000000000000s", 1000);
}

static void durations_rejected(void **state) {
  (void)state;
  const char *bad[] = {"",    "-1s",  "+1s",    "1x",  "s",    "1 s", " 1s",
                       "1s ", "1h30", "1.2.3s", "ms",  "1e3s", "1us", "abc",
                       "1s-", "..5s", "1ss",    "1hh", "0x1s"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    dur_err(bad[i], POLITE_EINVAL);
  int64_t v;
  assert_int_equal(polite_duration_parse(NULL, &v), POLITE_EINVAL);
  assert_int_equal(polite_duration_parse("1s", NULL), POLITE_EINVAL);
}

static void durations_overflow_is_erange(void **state) {
  (void)state;
  dur_err("9223372036854775808ms", POLITE_ERANGE);
  dur_err("99999999999999999999999999999999999999d", POLITE_ERANGE);
  dur_err("106751991168d", POLITE_ERANGE); /* > 2^63 ms */
  dur_err("9223372036854775s9223372036854775s", POLITE_ERANGE);
  dur_ok("9223372036854775807ms", INT64_MAX);
  dur_ok("106751991167d", INT64_C(106751991167) * 86400000);
  /* Garbage wins over size: the string is not a duration at all. */
  dur_err("99999999999999999999999999999x", POLITE_EINVAL);
  dur_err("99999999999999999999999999999999999999999999d", POLITE_ERANGE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rates_in_every_unit),
      cmocka_unit_test(rates_with_decimals),
      cmocka_unit_test(rates_rejected),
      cmocka_unit_test(durations_in_every_unit),
      cmocka_unit_test(durations_combined_and_decimal),
      cmocka_unit_test(durations_round_up),
      cmocka_unit_test(durations_rejected),
      cmocka_unit_test(durations_overflow_is_erange),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
