/* Unit tests of reading Dev Proxy's devproxyrc (JSON and YAML) into the
 * proxy's configuration (proxy/px_devproxy.c, px_devproxy_yaml.c), on the
 * fixtures in tests/fixtures/devproxy/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px_config.c"
#include "px_devproxy.c"
#include "px_devproxy_yaml.c"
#include "px_glob.c"
#include "px_rules.c"

static void fixture(char *buf, size_t size, const char *name) {
  const char *f = __FILE__;
  const char *slash = strrchr(f, '/');
  snprintf(buf, size, "%.*s/../fixtures/devproxy/%s",
           (int)(slash ? slash - f : 1), slash ? f : ".", name);
}

static void load(px_config *c, const char *name) {
  char path[4096], err[1024] = "";
  fixture(path, sizeof path, name);
  polite__px_config_init(c);
  if (polite__px_devproxy_load(c, path, err, sizeof err) != 0)
    fail_msg("%s: %s", name, err);
  if (polite__px_config_finish(c, err, sizeof err) != 0)
    fail_msg("%s: finish: %s", name, err);
}

static void check_main(const px_config *c) {
  assert_int_equal(c->nwatch, 4);
  assert_string_equal(c->watch[0], "!https://api.contoso.test/health");
  assert_non_null(strstr(c->errors_file, "devproxy-errors.json"));
  assert_non_null(strstr(c->mocks_file, "mocks.json"));
  assert_true(c->failure_rate == 50);
  assert_int_equal(c->retry_after_s, 5);
  assert_int_equal(c->lim.mode, PX_LIM_FIXED);
  assert_int_equal(c->lim.limit, 20);
  assert_int_equal(c->lim.cost, 2);
  assert_int_equal(c->lim.window_us, 60000000);
  assert_int_equal(c->warn_pct, 80);
  assert_int_equal(c->rate_headers, PX_HDR_DEVPROXY);
  assert_int_equal(c->latency_max_ms, 0); /* LatencyPlugin disabled */
  assert_int_equal(c->forward_mode, 1);
  assert_int_equal(c->scope, PX_SCOPE_HOST); /* Dev Proxy's throttle key */
  assert_int_equal(c->errors.n, 1);
  assert_int_equal(c->mocks.n, 3);
  assert_true(c->mocks.rules[2].never);                 /* nth: 0 */
  assert_non_null(c->mocks.rules[0].responses[0].body); /* @users.json */
  assert_non_null(strstr(c->mocks.rules[0].responses[0].body, "Adele"));
  /* One warning, naming what is not simulated, not Dev Proxy's own
   * settings. */
  assert_non_null(c->warning);
  assert_non_null(strstr(c->warning, "not simulated: ExecutionSummaryPlugin"));
  assert_null(strstr(c->warning, "LanguageModelRateLimitingPlugin"));
  /* LanguageModelRateLimitingPlugin: the token window. */
  assert_int_equal(c->tok.prompt_limit, 5000);
  assert_int_equal(c->tok.completion_limit, 5000);
  assert_int_equal(c->tok.window_us, 60000000);
  assert_null(strstr(c->warning, "logLevel"));
  assert_null(strstr(c->warning, "LatencyPlugin"));
}

static void json_as_shipped(void **state) {
  (void)state;
  px_config c;
  load(&c, "devproxyrc.json");
  check_main(&c);
  assert_string_equal(c.listen, "127.0.0.1:8000"); /* no port: ours */
  polite__px_config_free(&c);
}

static void yaml_reads_the_same(void **state) {
  (void)state;
  px_config c;
  load(&c, "devproxyrc.yaml");
  check_main(&c);
  polite__px_config_free(&c);
}

static void custom_response_and_header_names(void **state) {
  (void)state;
  px_config c;
  load(&c, "devproxyrc-custom.json");
  assert_string_equal(c.listen, "127.0.0.1:8897");
  assert_string_equal(c.hdr_remaining, "X-RateLimit-Remaining");
  assert_int_equal(c.reset_epoch, 1);
  assert_int_equal(c.limit_response.n, 1);
  assert_int_equal(c.limit_response.rules[0].responses[0].status, 403);
  assert_int_equal(c.lim.limit, 3);
  assert_int_equal(c.lim.cost, 1);
  assert_null(c.warning);
  polite__px_config_free(&c);
}

static void bad_files_name_the_field(void **state) {
  (void)state;
  static const struct {
    const char *text, *want;
  } cases[] = {
      {"{\"plugins\":[{\"name\":\"RateLimitingPlugin\",\"configSection\":"
       "\"rl\"}],\"rl\":{\"rateLimit\":\"lots\"}}",
       "rl.rateLimit"},
      {"{\"plugins\":[{\"name\":\"RateLimitingPlugin\",\"configSection\":"
       "\"rl\"}],\"rl\":{\"costPerRequest\":5,\"rateLimit\":2}}",
       "rl.costPerRequest"},
      {"{\"urlsToWatch\":\"https://x/*\"}", "urlsToWatch"},
      {"{\"plugins\":[{\"name\":\"LatencyPlugin\",\"configSection\":\"l\"}],"
       "\"l\":{\"minMs\":50,\"maxMs\":10}}",
       "maxMs"},
      {"{\"plugins\":[{\"enabled\":true}]}", "plugins[0].name"},
      {"{\"port\":70000}", "port"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    px_config c;
    polite__px_config_init(&c);
    char err[512] = "";
    json_error_t je;
    json_t *root = json_loads(cases[i].text, 0, &je);
    assert_non_null(root);
    assert_int_equal(
        polite__px_devproxy_apply(&c, root, "rc.json", ".", err, sizeof err),
        -1);
    if (strstr(err, cases[i].want) == NULL || strstr(err, "rc.json") == NULL)
      fail_msg("case %zu: '%s' does not name '%s'", i, err, cases[i].want);
    json_decref(root);
    polite__px_config_free(&c);
  }
}

static void yaml_scalars_and_errors(void **state) {
  (void)state;
  char err[256] = "";
  const char *t = "a: 1\nb: true\nc: ~\nd: '5'\ne: 1.5\nf: [x, 2]\ng: ~app/x\n";
  json_t *j = polite__px_yaml_to_json(t, strlen(t), "y.yaml", err, sizeof err);
  assert_non_null(j);
  assert_int_equal(json_integer_value(json_object_get(j, "a")), 1);
  assert_true(json_is_true(json_object_get(j, "b")));
  assert_true(json_is_null(json_object_get(j, "c")));
  assert_string_equal(json_string_value(json_object_get(j, "d")), "5");
  assert_true(json_is_real(json_object_get(j, "e")));
  assert_int_equal(json_array_size(json_object_get(j, "f")), 2);
  assert_string_equal(json_string_value(json_object_get(j, "g")), "~app/x");
  json_decref(j);
  const char *bad = "a: [1, 2\nb: 3\n";
  assert_null(
      polite__px_yaml_to_json(bad, strlen(bad), "y.yaml", err, sizeof err));
  assert_non_null(strstr(err, "y.yaml:"));
  const char *dup = "a: 1\na: 2\n";
  assert_null(
      polite__px_yaml_to_json(dup, strlen(dup), "y.yaml", err, sizeof err));
  assert_non_null(strstr(err, "duplicate key 'a'"));
  /* Aliases cannot blow a small file up. */
  char laughs[2048] = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 0; i < 9; i++) {
    size_t n = strlen(laughs);
    snprintf(laughs + n, sizeof laughs - n,
             "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n",
             'b' + i, 'b' + i, 'a' + i, 'a' + i, 'a' + i, 'a' + i, 'a' + i,
             'a' + i, 'a' + i, 'a' + i, 'a' + i, 'a' + i);
  }
  assert_null(polite__px_yaml_to_json(laughs, strlen(laughs), "y.yaml", err,
                                      sizeof err));
  assert_non_null(strstr(err, "more than"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_as_shipped),
      cmocka_unit_test(yaml_reads_the_same),
      cmocka_unit_test(custom_response_and_header_names),
      cmocka_unit_test(bad_files_name_the_field),
      cmocka_unit_test(yaml_scalars_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
