/* Unit tests of Dev Proxy errors/mocks file parsing and request matching
 * (proxy/px_rules.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px.h"

static int parse(px_rules *r, px_rules_kind k, const char *text, char *err) {
  return polite__px_rules_parse(r, k, text, strlen(text), "f.json", NULL,
                                PX_FILE_MAX_DEFAULT, err, 512);
}

static void errors_file_parsed(void **state) {
  (void)state;
  px_rules r;
  char err[512] = "";
  const char *t =
      "{\"$schema\":\"x\",\"errors\":[{\"request\":{\"url\":\"https://api.x/"
      "*\"},"
      "\"responses\":[{\"statusCode\":429,\"headers\":[{\"name\":\"Retry-"
      "After\","
      "\"value\":\"@dynamic=17\"}],\"body\":{\"error\":{\"code\":\"x\"}}},"
      "{\"statusCode\":503,\"body\":\"busy\"}]},"
      "{\"request\":{\"url\":\"*/"
      "p\",\"method\":\"POST\",\"bodyFragment\":\"abc\"},"
      "\"responses\":[{\"statusCode\":500}]}]}";
  assert_int_equal(parse(&r, PX_RULES_ERRORS, t, err), 0);
  assert_int_equal(r.n, 2);
  assert_int_equal(r.rules[0].nresponses, 2);
  assert_int_equal(r.rules[0].responses[0].status, 429);
  assert_string_equal(r.rules[0].responses[0].headers[0].value, "@dynamic=17");
  assert_string_equal(r.rules[0].responses[0].body,
                      "{\"error\":{\"code\":\"x\"}}");
  assert_string_equal(r.rules[0].responses[1].body, "busy");
  assert_null(r.rules[0].method); /* errors: any method */
  assert_null(r.rules[1].responses[0].body);

  assert_ptr_equal(
      polite__px_rules_match(&r, "GET", "https://api.x/v1", NULL, 0),
      &r.rules[0]);
  assert_null(polite__px_rules_match(&r, "GET", "https://other/v1", NULL, 0));
  assert_null(polite__px_rules_match(&r, "POST", "http://h/p", "xyz", 3));
  assert_null(polite__px_rules_match(&r, "GET", "http://h/p", "abc", 3));
  assert_ptr_equal(
      polite__px_rules_match(&r, "post", "http://h/p", "xxabcxx", 7),
      &r.rules[1]);
  polite__px_rules_free(&r);
}

static void mocks_nth_and_default_method(void **state) {
  (void)state;
  px_rules r;
  char err[512] = "";
  const char *t =
      "{\"mocks\":[{\"request\":{\"url\":\"/u/"
      "*\",\"nth\":2},\"response\":{\"statusCode\":418}},"
      "{\"request\":{\"url\":\"/u/*\"},\"response\":{\"body\":[1,2]}}]}";
  assert_int_equal(parse(&r, PX_RULES_MOCKS, t, err), 0);
  assert_string_equal(r.rules[0].method, "GET"); /* Dev Proxy's default */
  assert_int_equal(r.rules[1].responses[0].status, 200);
  assert_string_equal(r.rules[1].responses[0].body, "[1,2]");
  assert_ptr_equal(polite__px_rules_match(&r, "GET", "http://h/u/1", NULL, 0),
                   &r.rules[1]);
  assert_ptr_equal(polite__px_rules_match(&r, "GET", "http://h/u/2", NULL, 0),
                   &r.rules[0]);
  assert_ptr_equal(polite__px_rules_match(&r, "GET", "http://h/u/3", NULL, 0),
                   &r.rules[1]);
  assert_null(polite__px_rules_match(&r, "POST", "http://h/u/3", NULL, 0));
  polite__px_rules_free(&r);
  /* nth 0 loads (as in Dev Proxy) and never matches. */
  assert_int_equal(
      parse(&r, PX_RULES_MOCKS,
            "{\"mocks\":[{\"request\":{\"url\":\"*\",\"nth\":0}}]}", err),
      0);
  for (int i = 0; i < 3; i++)
    assert_null(polite__px_rules_match(&r, "GET", "http://h/x", NULL, 0));
  polite__px_rules_free(&r);
}

static void bad_files_name_the_field(void **state) {
  (void)state;
  struct {
    px_rules_kind k;
    const char *text, *want;
  } cases[] = {
      {PX_RULES_ERRORS, "{\"errors\":[", "f.json:1:"},
      {PX_RULES_ERRORS, "{\"nope\":[]}", "\"errors\""},
      {PX_RULES_ERRORS, "{\"errors\":[{\"request\":{}}]}",
       "errors[0].request.url"},
      {PX_RULES_ERRORS, "{\"errors\":[{\"request\":{\"url\":\"*\"}}]}",
       "errors[0].responses"},
      {PX_RULES_ERRORS,
       "{\"errors\":[{\"request\":{\"url\":\"*\"},\"responses\":[{"
       "\"statusCode\":99}]}]}",
       "errors[0].responses[0].statusCode"},
      {PX_RULES_ERRORS,
       "{\"errors\":[{\"request\":{\"url\":\"*\"},\"responses\":[{"
       "\"statusCode\":429,"
       "\"headers\":[{\"name\":\"A\",\"value\":\"x\\r\\nB: y\"}]}]}]}",
       "errors[0].responses[0].headers[0]"},
      {PX_RULES_MOCKS, "{\"mocks\":[{\"request\":{\"url\":\"*\",\"nth\":-1}}]}",
       "mocks[0].request.nth"},
      {PX_RULES_MOCKS,
       "{\"mocks\":[{\"request\":{\"url\":\"*\",\"method\":5}}]}",
       "mocks[0].request.method"},
      {PX_RULES_MOCKS,
       "{\"mocks\":[{\"request\":{\"url\":\"*\"},\"response\":{\"headers\":{}}}"
       "]}",
       "mocks[0].response.headers"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    px_rules r;
    char err[512] = "";
    assert_int_not_equal(parse(&r, cases[i].k, cases[i].text, err), 0);
    if (strstr(err, cases[i].want) == NULL)
      fail_msg("case %zu: '%s' does not mention '%s'", i, err, cases[i].want);
    assert_int_equal(r.n, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(errors_file_parsed),
      cmocka_unit_test(mocks_nth_and_default_method),
      cmocka_unit_test(bad_files_name_the_field),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
