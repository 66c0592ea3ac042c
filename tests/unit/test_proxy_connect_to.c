/* Unit tests of --connect-to (net/net_connect_to.c): curl's
 * HOST:PORT:HOST2:PORT2 with empty parts and bracketed IPv6, the first
 * matching rule wins, bad specs are refused with the spec quoted, and the
 * watch-list question an intercepted CONNECT asks (proxy/px_glob.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net_upstream.h"
#include "px.h"

/* Each row: the rules, the connection asked for, where it must go. */
static const struct {
  const char *rules[3];
  const char *host;
  int port;
  const char *want_host;
  int want_port;
  int matched;
} cases[] = {
    {{"api.openai.com:443:127.0.0.1:8443"},
     "api.openai.com",
     443,
     "127.0.0.1",
     8443,
     1},
    /* Names compare without case; another port does not match. */
    {{"API.OpenAI.com:443:127.0.0.1:8443"},
     "api.openai.com",
     443,
     "127.0.0.1",
     8443,
     1},
    {{"api.openai.com:443:127.0.0.1:8443"},
     "api.openai.com",
     80,
     "api.openai.com",
     80,
     0},
    /* Empty HOST and PORT match any; empty HOST2 or PORT2 keep it. */
    {{"::127.0.0.1:9000"}, "anything.test", 1234, "127.0.0.1", 9000, 1},
    {{"example.com:443::8443"}, "example.com", 443, "example.com", 8443, 1},
    {{"example.com:443:other.test:"}, "example.com", 443, "other.test", 443, 1},
    {{":443:local.test:4443"}, "x.test", 443, "local.test", 4443, 1},
    /* IPv6 literals in brackets, on either side; a bracketed host asked. */
    {{"[::1]:443:[fe80::2]:8443"}, "[::1]", 443, "fe80::2", 8443, 1},
    {{"example.com:443:[::1]:8443"}, "example.com", 443, "::1", 8443, 1},
    /* The first rule that matches wins. */
    {{"a.test:443:first.test:1", "a.test:443:second.test:2"},
     "a.test",
     443,
     "first.test",
     1,
     1},
    {{"b.test:443:first.test:1", "::fallback.test:2"},
     "a.test",
     443,
     "fallback.test",
     2,
     1},
};

static void maps_as_curl_does(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    net_connect_to *l = NULL;
    char err[512];
    for (int k = 0; k < 3 && cases[i].rules[k]; k++)
      assert_int_equal(
          polite__net_connect_to_add(&l, cases[i].rules[k], err, sizeof err),
          0);
    char host[256];
    int port = -1;
    int m = polite__net_connect_to_map(l, cases[i].host, cases[i].port, host,
                                       sizeof host, &port);
    if (m != cases[i].matched || strcmp(host, cases[i].want_host) != 0 ||
        port != cases[i].want_port)
      fail_msg("case %zu (%s): got %d %s:%d", i, cases[i].rules[0], m, host,
               port);
    polite__net_connect_to_free(l);
  }
}

static void no_rules_keeps_the_host(void **state) {
  (void)state;
  char host[256];
  int port = 0;
  assert_int_equal(
      polite__net_connect_to_map(NULL, "[::1]", 443, host, sizeof host, &port),
      0);
  assert_string_equal(host, "::1");
  assert_int_equal(port, 443);
}

static void bad_specs_are_refused(void **state) {
  (void)state;
  static const char *const bad[] = {
      "",           "api.openai.com", "api.openai.com:443",
      "a:443:b",    "a:443:b:99999",  "a:x:b:1",
      "a:443:b:1:", "[::1:443:b:1",   "a:443:b:-1",
      "a:0:b:1",    "[::1]x:443:b:1", "a:443:b:1 ",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    net_connect_to *l = NULL;
    char err[512] = "";
    if (polite__net_connect_to_add(&l, bad[i], err, sizeof err) != -1)
      fail_msg("'%s' was accepted", bad[i]);
    assert_non_null(strstr(err, "HOST:PORT:HOST2:PORT2"));
    polite__net_connect_to_free(l);
  }
}

static void rules_are_bounded(void **state) {
  (void)state;
  net_connect_to *l = NULL;
  char err[512];
  for (int i = 0; i < NET_CONNECT_TO_MAX; i++)
    assert_int_equal(polite__net_connect_to_add(&l, "a:1:b:2", err, sizeof err),
                     0);
  assert_int_equal(polite__net_connect_to_add(&l, "a:1:b:2", err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "more than"));
  polite__net_connect_to_free(l);
}

/* Which CONNECT hosts a watch list intercepts, and which --upstream it can
 * see: the pattern's scheme and host part decide. */
static void watch_host(void **state) {
  (void)state;
  char *w[] = {"!https://skip.test/*", "https://api.openai.com/*",
               "http://plain.test/*"};
  assert_true(polite__px_watch_host(w, 3, "api.openai.com", 1));
  assert_false(polite__px_watch_host(w, 3, "api.openai.com", 0));
  assert_true(polite__px_watch_host(w, 3, "plain.test", 0));
  assert_false(polite__px_watch_host(w, 3, "plain.test", 1));
  assert_false(polite__px_watch_host(w, 3, "skip.test", 1));
  char *paths[] = {"*/v1/*"};
  assert_true(polite__px_watch_host(paths, 1, "any.test", 1));
  char *star[] = {"*://*.example.com/*"};
  assert_true(polite__px_watch_host(star, 1, "a.example.com", 0));
  assert_true(polite__px_watch_host(star, 1, "a.example.com", 1));
  assert_false(polite__px_watch_host(NULL, 0, "a.example.com", 1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(maps_as_curl_does),
      cmocka_unit_test(no_rules_keeps_the_host),
      cmocka_unit_test(bad_specs_are_refused),
      cmocka_unit_test(rules_are_bounded),
      cmocka_unit_test(watch_host),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
