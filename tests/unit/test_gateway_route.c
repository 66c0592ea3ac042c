/* Unit tests of where an intercepted CONNECT's requests go: which CONNECTs
 * a watch list intercepts (common/url_glob.c: an http:// glob too, since a
 * client may send plain HTTP through a CONNECT), and the scheme a request
 * inside one is sent with (gateway/gw_route.c: https, or http when the
 * client sent plain HTTP in it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "gateway.h"
#include "url_glob.h"

static void watch_connect(void **state) {
  (void)state;
  static const char *const w[] = {
      "!https://skip.test/*", "https://api.openai.com/*", "http://plain.test/*",
      "http://127.0.0.1:8080/*", "https://[::1]:8443/*"};
  static const struct {
    const char *host;
    int port, want;
  } rows[] = {
      {"api.openai.com", 443, 1}, /* https, default port left out */
      {"API.OpenAI.com", 443, 1},
      {"api.openai.com", 80, 0}, /* no http:// glob names it */
      {"plain.test", 80, 1},     /* undici's CONNECT plain.test:80 */
      {"plain.test", 443, 0},
      {"plain.test", 8080, 0},
      {"127.0.0.1", 8080, 1}, /* an http:// glob with its port */
      {"127.0.0.1", 8081, 0},
      {"::1", 8443, 1},
      {"::1", 443, 0},
      {"skip.test", 443, 0}, /* exclusions never intercept */
      {"other.test", 443, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    int got = polite__url_watch_connect(w, 5, rows[i].host, rows[i].port);
    if (got != rows[i].want)
      fail_msg("%s:%d: got %d, want %d", rows[i].host, rows[i].port, got,
               rows[i].want);
  }
  static const char *const paths[] = {"*/v1/*"};
  assert_true(polite__url_watch_connect(paths, 1, "any.test", 80));
  assert_false(polite__url_watch_connect(NULL, 0, "any.test", 443));
}

static void inside_connect(void **state) {
  (void)state;
  static const struct {
    const char *host;
    int port, plain;
    const char *authority;
    int https;
  } rows[] = {
      {"api.example.com", 443, 0, "api.example.com", 1},
      {"api.example.com", 80, 1, "api.example.com", 0},
      {"127.0.0.1", 8080, 1, "127.0.0.1:8080", 0},
      {"127.0.0.1", 8443, 0, "127.0.0.1:8443", 1},
      {"api.example.com", 443, 1, "api.example.com:443", 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    gw_dest d;
    assert_int_equal(polite__gw_dest("GET", "/v1/x?a=1", rows[i].host,
                                     rows[i].port, rows[i].plain, NULL,
                                     "127.0.0.1:9", &d),
                     0);
    assert_int_equal(d.kind, GW_DEST_FORWARD);
    assert_string_equal(d.authority, rows[i].authority);
    assert_int_equal(d.https, rows[i].https);
    assert_int_equal(d.port, rows[i].port);
    assert_string_equal(d.path, "/v1/x?a=1");
  }
  gw_dest d;
  /* Plain or not, inside a CONNECT only origin-form targets are taken. */
  assert_int_equal(polite__gw_dest("GET", "http://elsewhere.test/", "a.test",
                                   80, 1, NULL, NULL, &d),
                   -1);
  assert_non_null(strstr(d.why, "origin-form"));
  assert_int_equal(
      polite__gw_dest("CONNECT", "b.test:80", "a.test", 80, 1, NULL, NULL, &d),
      -1);
  assert_non_null(strstr(d.why, "CONNECT inside a CONNECT"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(watch_connect),
      cmocka_unit_test(inside_connect),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
