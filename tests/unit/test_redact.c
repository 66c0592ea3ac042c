/* Unit tests of redaction (lib/redact.c): secret headers, secret query
 * parameters, URL passwords, URLs inside messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <polite/batch.h>

static void expect_url(const char *in, const char *want) {
  char *got = polite_redact_url(in);
  assert_non_null(got);
  assert_string_equal(got, want);
  free(got);
}

static void secret_headers(void **state) {
  (void)state;
  const char *secret[] = {
      "Authorization", "authorization", "Proxy-Authorization",
      "Cookie",        "SET-COOKIE",    "X-Api-Key",
      "api-key",       "Api-Key "};
  for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
    assert_true(polite_header_is_secret(secret[i], strlen(secret[i])));
  const char *plain[] = {"Accept",  "X-Api-Keys",   "Authorizations",
                         "Cookies", "X-Request-Id", ""};
  for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
    assert_false(polite_header_is_secret(plain[i], strlen(plain[i])));
  char *h = polite_redact_header("Authorization: Bearer abc");
  assert_string_equal(h, "Authorization: REDACTED");
  free(h);
  h = polite_redact_header("Accept: text/plain");
  assert_string_equal(h, "Accept: text/plain");
  free(h);
}

static void secret_params(void **state) {
  (void)state;
  const char *secret[] = {
      "api_key", "KEY",      "access_token", "client_secret", "X-Amz-Signature",
      "sig",     "password", "passWord2",    "monkey"};
  for (size_t i = 0; i < sizeof secret / sizeof *secret; i++)
    assert_true(polite_param_is_secret(secret[i], strlen(secret[i])));
  const char *plain[] = {"page", "q", "id", "user", "limit"};
  assert_true(polite_param_is_secret("oauth_verifier", 14));
  assert_true(polite_header_is_secret("X-Auth-Token", 12));
  for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
    assert_false(polite_param_is_secret(plain[i], strlen(plain[i])));
}

static void urls(void **state) {
  (void)state;
  expect_url("https://h/p", "https://h/p");
  expect_url("https://h/p?page=2", "https://h/p?page=2");
  expect_url("https://h/p?api_key=abc&page=2",
             "https://h/p?api_key=REDACTED&page=2");
  expect_url("https://h/p?page=2&token=abc",
             "https://h/p?page=2&token=REDACTED");
  /* Fragments never reach a server and carry OAuth tokens: dropped. */
  expect_url("https://h/p?a=1;sig=xyz#frag?key=no",
             "https://h/p?a=1;sig=REDACTED");
  expect_url("https://h/cb#access_token=abc", "https://h/cb");
  expect_url("https://h/?key=", "https://h/?key=REDACTED");
  expect_url("https://h/?key", "https://h/?key");
  expect_url("https://h/?", "https://h/?");
  expect_url("https://h/?&&", "https://h/?&&");
  expect_url("https://user:pw@h/x?secret=1&secret=2",
             "https://user:REDACTED@h/x?secret=REDACTED&secret=REDACTED");
  /* A lone user name is often a token (https://ghp_xxx@github.com/). */
  expect_url("https://ghp_abc@h/x", "https://REDACTED@h/x");
  expect_url("http://h/a@b?x=1", "http://h/a@b?x=1");
  expect_url("", "");
  assert_null(polite_redact_url(NULL));
}

static void text(void **state) {
  (void)state;
  char *t = polite_redact_text(
      "failed for https://h/x?api_key=abc and \"http://u:p@h/?token=t\" ok");
  assert_string_equal(t, "failed for https://h/x?api_key=REDACTED and "
                         "\"http://u:REDACTED@h/?token=REDACTED\" ok");
  free(t);
  t = polite_redact_text("no url here: key=1");
  assert_string_equal(t, "no url here: key=1");
  free(t);
  t = polite_redact_text("://?key=1");
  assert_string_equal(t, "://?key=REDACTED");
  free(t);
}

/* Many separators: the output buffer is sized for the worst case (ASan
 * catches an overflow). */
static void worst_case_growth(void **state) {
  (void)state;
  char in[4096] = "https://a:b@h/?";
  for (int i = 0; i < 300; i++)
    strcat(in, "key=&");
  char *got = polite_redact_url(in);
  assert_non_null(got);
  assert_non_null(strstr(got, "key=REDACTED&key=REDACTED&"));
  char *t = polite_redact_text(in);
  assert_string_equal(t, got);
  free(t);
  free(got);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(secret_headers),
      cmocka_unit_test(secret_params),
      cmocka_unit_test(urls),
      cmocka_unit_test(text),
      cmocka_unit_test(worst_case_growth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
