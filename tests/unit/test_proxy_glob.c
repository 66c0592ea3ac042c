/* Unit tests of the proxy's URL globs, watch lists, URL redaction and client
 * hashing (proxy/px_glob.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* proxy/ is compiled into the polite binary, not libpolite: include it. */
#include "px.h"

static void glob_star_and_literals(void **state) {
  (void)state;
  const char *u = "https://api.example.com/v1/items?id=3";
  assert_true(
      polite__px_glob_match("https://api.example.com/*", u, "/v1/items?id=3"));
  assert_true(polite__px_glob_match("*", u, NULL));
  assert_true(polite__px_glob_match("*/v1/*", u, NULL));
  assert_true(polite__px_glob_match("https://*.example.com/*", u, NULL));
  assert_true(polite__px_glob_match("HTTPS://API.EXAMPLE.COM/*", u, NULL));
  assert_false(polite__px_glob_match("https://api.example.com/v2/*", u, NULL));
  assert_false(
      polite__px_glob_match("https://api.example.com/v1/items", u, NULL));
  assert_true(
      polite__px_glob_match("https://api.example.com/v1/items?id=3", u, NULL));
  /* '?' and '.' are literal, not regex metacharacters. */
  assert_false(
      polite__px_glob_match("https://api.example.com/v1/items?id=4", u, NULL));
  assert_false(polite__px_glob_match("https://apiXexample.com/*",
                                     "https://api.example.com/x", NULL));
  /* Patterns starting with '/' look at the path only. */
  assert_true(polite__px_glob_match("/v1/*", u, "/v1/items?id=3"));
  assert_false(polite__px_glob_match("/v2/*", u, "/v1/items?id=3"));
  /* Several stars and backtracking. */
  assert_true(polite__px_glob_match("*a*b*c", "xxaxxbxxbxc", NULL));
  assert_false(polite__px_glob_match("*a*b*c", "xxaxxbxxbx", NULL));
  assert_true(polite__px_glob_match("**", "", NULL));
  assert_false(polite__px_glob_match("a", "", NULL));
  assert_false(polite__px_glob_match(NULL, "x", NULL));
}

static void glob_is_linear_on_hostile_input(void **state) {
  (void)state;
  char pat[200], s[5000];
  for (int i = 0; i < 198; i += 2) {
    pat[i] = '*';
    pat[i + 1] = 'a';
  }
  pat[198] = 'b';
  pat[199] = '\0';
  memset(s, 'a', sizeof s - 1);
  s[sizeof s - 1] = '\0';
  assert_false(polite__px_glob_match(pat, s, NULL)); /* returns, no blow-up */
}

static void watch_first_match_wins(void **state) {
  (void)state;
  char *w[] = {"!*/health", "*/api/*", "!*/api/internal/*"};
  assert_true(polite__px_watch_match(NULL, 0, "http://x/any", "/any"));
  assert_false(
      polite__px_watch_match(w, 3, "http://x/api/health", "/api/health"));
  assert_true(polite__px_watch_match(w, 3, "http://x/api/items", "/api/items"));
  /* The exclusion comes after the broader include: the include wins. */
  assert_true(polite__px_watch_match(w, 3, "http://x/api/internal/a",
                                     "/api/internal/a"));
  assert_false(polite__px_watch_match(w, 3, "http://x/other", "/other"));
}

static void redact_secret_query_params(void **state) {
  (void)state;
  struct {
    const char *in, *out;
  } cases[] = {
      {"http://h/p", "http://h/p"},
      {"http://h/p?a=1&b=2", "http://h/p?a=1&b=2"},
      {"http://h/p?api_key=abc&x=1", "http://h/p?api_key=REDACTED&x=1"},
      {"http://h/p?x=1&access_token=t0k",
       "http://h/p?x=1&access_token=REDACTED"},
      {"http://h/p?X-Amz-Signature=ff&sig=1&Password=p&client_secret=s",
       "http://h/"
       "p?X-Amz-Signature=REDACTED&sig=REDACTED&Password=REDACTED&client_"
       "secret=REDACTED"},
      {"http://h/p?token", "http://h/p?token"}, /* no value, nothing to hide */
      {"http://h/p?key=&q=2", "http://h/p?key=REDACTED&q=2"},
      {"http://h/p?code=1#frag",
       "http://h/p?code=REDACTED"}, /* OAuth codes are secret */
      {"http://h/p?auth=zz#t=1", "http://h/p?auth=REDACTED"},
      {"http://user:pw@h:1/p?k=1", "http://user:REDACTED@h:1/p?k=1"},
      {"http://tok@h/p", "http://REDACTED@h/p"},
      {"https://h/p?x=a@b", "https://h/p?x=a@b"}, /* '@' in the query only */
      {"http://u:p@h?api_key=9", "http://u:REDACTED@h?api_key=REDACTED"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *r = polite__px_redact_url(cases[i].in);
    assert_non_null(r);
    assert_string_equal(r, cases[i].out);
    free(r);
  }
}

static void secret_headers(void **state) {
  (void)state;
  assert_true(polite__px_secret_header("Authorization"));
  assert_true(polite__px_secret_header("cookie"));
  assert_true(polite__px_secret_header("X-API-Key"));
  assert_true(polite__px_secret_header("api-key"));
  assert_true(polite__px_secret_header("Proxy-Authorization"));
  assert_false(polite__px_secret_header("Accept"));
}

static void hash_tells_clients_apart(void **state) {
  (void)state;
  char a[17], b[17], c[17], d[17];
  polite__px_hash_hex(1, "Bearer one", a);
  polite__px_hash_hex(1, "Bearer two", b);
  polite__px_hash_hex(1, "Bearer one", c);
  polite__px_hash_hex(2, "Bearer one", d);
  assert_int_equal(strlen(a), 16);
  assert_string_not_equal(a, b);
  assert_string_equal(a, c);
  assert_string_not_equal(a, d); /* salted per process */
  assert_null(strstr(a, "one"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(glob_star_and_literals),
      cmocka_unit_test(glob_is_linear_on_hostile_input),
      cmocka_unit_test(watch_first_match_wins),
      cmocka_unit_test(redact_secret_query_params),
      cmocka_unit_test(secret_headers),
      cmocka_unit_test(hash_tells_clients_apart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
