/* Unit tests of the account of a request (gateway/gw_account.c): one host
 * is one account however a client spells its authority, and what is not
 * an authority is refused with a message naming the problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "gateway.h"

static void canonical_forms(void **state) {
  (void)state;
  static const struct {
    const char *scheme, *in, *out;
  } rows[] = {
      {"https", "api.example.com", "api.example.com"},
      {"https", "API.Example.COM:443", "api.example.com"},
      {"http", "api.example.com:80", "api.example.com"},
      {"http", "api.example.com:443", "api.example.com:443"},
      {"https", "api.example.com:80", "api.example.com:80"},
      {"http", "127.0.0.1:8080", "127.0.0.1:8080"},
      {"http", "localhost:", "localhost"},
      {"https", "[::1]:8443", "[::1]:8443"},
      {"https", "[2001:DB8::1]", "[2001:db8::1]"},
      {"https", "[::1]:443", "[::1]"},
      {"http", "under_score.test:00080", "under_score.test"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char out[GW_ACCOUNT_MAX], err[128];
    int rc =
        polite__gw_authority(rows[i].scheme, rows[i].in, strlen(rows[i].in),
                             out, sizeof out, err, sizeof err);
    if (rc != 0)
      fail_msg("%s %s: %s", rows[i].scheme, rows[i].in, err);
    assert_string_equal(out, rows[i].out);
  }
}

static void refused_with_a_reason(void **state) {
  (void)state;
  static const struct {
    const char *scheme, *in, *why;
  } rows[] = {
      {"https", "", "no host"},
      {"https", ":443", "no host"},
      {"https", "user:pw@api.example.com", "credentials"},
      {"https", "api.example.com:0", "not in 1..65535"},
      {"https", "api.example.com:65536", "not in 1..65535"},
      {"https", "api.example.com:123456", "digits"},
      {"https", "api.example.com:8o", "'o' in the port"},
      {"https", "api example.com", "' ' in the host"},
      {"https", "api.example.com/x", "'/' in the host"},
      {"https", "[::1", "closing"},
      {"https", "[]", "empty IPv6"},
      {"https", "[::1]x", "after the IPv6"},
      {"https", "[::g]", "in an IPv6"},
      {"ftp", "api.example.com", "scheme 'ftp'"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char out[GW_ACCOUNT_MAX], err[128];
    int rc =
        polite__gw_authority(rows[i].scheme, rows[i].in, strlen(rows[i].in),
                             out, sizeof out, err, sizeof err);
    assert_int_equal(rc, POLITE_EINVAL);
    if (strstr(err, rows[i].why) == NULL)
      fail_msg("%s: '%s' does not say '%s'", rows[i].in, err, rows[i].why);
  }
  /* Long names are bounded; NUL bytes are not host characters. */
  char big[400];
  memset(big, 'a', sizeof big);
  char out[GW_ACCOUNT_MAX];
  assert_int_equal(
      polite__gw_authority("https", big, sizeof big, out, sizeof out, NULL, 0),
      POLITE_EINVAL);
  assert_int_equal(
      polite__gw_authority("https", big, 253, out, sizeof out, NULL, 0), 0);
  assert_int_equal(strlen(out), 253);
  assert_int_equal(
      polite__gw_authority("https", big, 254, out, sizeof out, NULL, 0),
      POLITE_EINVAL);
  assert_int_equal(
      polite__gw_authority("https", "a\0b", 3, out, sizeof out, NULL, 0),
      POLITE_EINVAL);
  assert_int_equal(polite__gw_authority("https", "a", 1, out, 10, NULL, 0),
                   POLITE_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(canonical_forms),
      cmocka_unit_test(refused_with_a_reason),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
