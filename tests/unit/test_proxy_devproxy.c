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

/* Applies a devproxyrc text and finishes the config; 0 or -1 (err set). */
static int apply_text(px_config *c, const char *text, char *err, size_t n) {
  polite__px_config_init(c);
  json_error_t je;
  json_t *root = json_loads(text, 0, &je);
  assert_non_null(root);
  int rc =
      polite__px_devproxy_apply(c, root, "rc.json", "/nonexistent", err, n);
  json_decref(root);
  if (rc == 0)
    rc = polite__px_config_finish(c, err, n);
  return rc;
}

/* Dev Proxy runs RetryAfterPlugin's check only when the file enables it:
 * without it the other plugins' 429s are what clients get (the apim sample
 * keeps APIM's body on the second 429); polite's own command line keeps the
 * judge on. */
static void the_judge_runs_only_with_retry_after_plugin(void **state) {
  (void)state;
  px_config c;
  load(&c, "devproxyrc.json");
  assert_int_equal(c.track.judge, 1);
  polite__px_config_free(&c);
  load(&c, "apim/devproxyrc.json");
  assert_int_equal(c.track.judge, 0);
  assert_int_equal(c.limit_response.rules[0].responses[0].status, 429);
  assert_int_equal(c.lim.window_us, 90000000);
  polite__px_config_free(&c);
  char err[512] = "";
  assert_int_equal(apply_text(&c,
                              "{\"plugins\":[{\"name\":\"RetryAfterPlugin\","
                              "\"enabled\":false}],\"urlsToWatch\":[\"*\"]}",
                              err, sizeof err),
                   0);
  assert_int_equal(c.track.judge, 0);
  polite__px_config_free(&c);
  polite__px_config_init(&c);
  assert_int_equal(c.track.judge, 1);
  polite__px_config_free(&c);
}

/* A plugin's own urlsToWatch: it acts on those URLs only, the others on
 * the file's list, and the proxy watches the union (Dev Proxy's
 * PluginServiceExtensions). */
static void per_plugin_urls_to_watch(void **state) {
  (void)state;
  px_config c;
  char err[512] = "";
  int rc = apply_text(
      &c,
      "{\"urlsToWatch\":[\"https://a.test/*\"],\"plugins\":["
      "{\"name\":\"RetryAfterPlugin\",\"enabled\":true},"
      "{\"name\":\"RateLimitingPlugin\",\"enabled\":true,"
      "\"configSection\":\"rl\",\"urlsToWatch\":[\"https://b.test/*\"]},"
      "{\"name\":\"LatencyPlugin\",\"enabled\":true,"
      "\"urlsToWatch\":[]}],\"rl\":{\"rateLimit\":10}}",
      err, sizeof err);
  assert_int_equal(rc, 0);
  assert_int_equal(c.nwatch, 2);
  assert_string_equal(c.watch[1], "https://b.test/*");
  static const struct {
    px_plugin p;
    const char *url;
    int want;
  } rows[] = {
      {PX_PLUG_RATE, "https://b.test/x", 1},
      {PX_PLUG_RATE, "https://a.test/x", 0},
      {PX_PLUG_RETRY_AFTER, "https://a.test/x", 1},
      {PX_PLUG_RETRY_AFTER, "https://b.test/x", 0},
      {PX_PLUG_LATENCY, "https://a.test/x", 1}, /* empty: the file's */
      {PX_PLUG_LATENCY, "https://b.test/x", 0},
      {PX_PLUG_ERRORS, "https://b.test/x", 1}, /* not in the file: all */
      {PX_PLUG_NONE, "https://b.test/x", 1},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (polite__px_plugin_watches(&c, rows[i].p, rows[i].url, "/x") !=
        rows[i].want)
      fail_msg("row %zu: plugin %d on %s", i, rows[i].p, rows[i].url);
  assert_non_null(strstr(c.plugin_watch[PX_PLUG_RATE].what,
                         "plugins[1].urlsToWatch (RateLimitingPlugin)"));
  assert_null(c.warning); /* per-plugin lists are simulated now */
  assert_int_equal(polite__px_watch_check(&c, err, sizeof err), 0);
  polite__px_config_free(&c);
}

/* An unknown key is named in the warning whether it holds a scalar or an
 * object; an object that is some plugin's configSection is not unknown. */
static void unknown_keys_are_named(void **state) {
  (void)state;
  px_config c;
  char err[512] = "";
  int rc = apply_text(
      &c,
      "{\"urlsToWatch\":[\"*\"],\"plugins\":[{\"name\":\"LatencyPlugin\","
      "\"enabled\":false,\"configSection\":\"latencySection\"},{\"name\":"
      "\"RetryAfterPlugin\",\"colour\":\"red\"}],\"latencySection\":{\"minMs\":"
      "1},"
      "\"mystery\":{\"a\":1},\"oddity\":3,\"languageModel\":{\"enabled\":"
      "true}}",
      err, sizeof err);
  assert_int_equal(rc, 0);
  assert_non_null(c.warning);
  assert_non_null(strstr(c.warning, "mystery"));
  assert_non_null(strstr(c.warning, "oddity"));
  assert_non_null(strstr(c.warning, "plugins[1].colour"));
  assert_null(strstr(c.warning, "latencySection"));
  assert_null(strstr(c.warning, "languageModel"));
  polite__px_config_free(&c);
}

/* A watch list that can match nothing in the mode in force is refused with
 * the list, the mode and what requests look like there. */
static void a_watch_list_must_be_able_to_match(void **state) {
  (void)state;
  static const struct {
    int forward;
    const char *upstream, *pattern;
    int ok;
    const char *says;
  } rows[] = {
      {1, NULL, "https://api.openai.com/*", 1, NULL},
      {0, "https://localhost:19443", "https://api.openai.com/*", 0,
       "reverse mode"},
      {0, "https://localhost:19443", "https://localhost:19443/v1/*", 1, NULL},
      {0, "https://api.test", "https://api.test:443/*", 1, NULL},
      {0, "http://127.0.0.1:9", "http://api.contoso.test/*", 1, NULL},
      {0, "http://127.0.0.1:9", "https://127.0.0.1:9/*", 0,
       "http://127.0.0.1:9"},
      {0, NULL, "https://api.test/*", 0, "mock mode"},
      {0, NULL, "http*://api.test/*", 1, NULL},
      {0, NULL, "/v1/*", 1, NULL},
      {1, NULL, "ftp://files.test/*", 0, "no pattern"},
      {1, NULL, "!https://api.test/health", 0, "no pattern"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    px_config c;
    polite__px_config_init(&c);
    char err[1024] = "";
    c.forward_mode = rows[i].forward;
    if (rows[i].upstream)
      polite__px_strset(&c.upstream, rows[i].upstream);
    assert_int_equal(polite__px_config_set(&c, "watch", rows[i].pattern, NULL,
                                           err, sizeof err),
                     0);
    int rc = polite__px_watch_check(&c, err, sizeof err);
    if ((rc == 0) != rows[i].ok ||
        (rows[i].says &&
         (strstr(err, rows[i].says) == NULL || strstr(err, "--watch") == NULL)))
      fail_msg("row %zu (%s): rc %d, '%s'", i, rows[i].pattern, rc, err);
    polite__px_config_free(&c);
  }
  /* The apim sample beside --upstream: its urlsToWatch is named. */
  px_config c;
  load(&c, "apim/devproxyrc.json");
  polite__px_strset(&c.upstream, "https://localhost:19443");
  c.forward_mode = 0;
  char err[1024] = "";
  assert_int_equal(polite__px_watch_check(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "apim/devproxyrc.json: urlsToWatch"));
  assert_non_null(strstr(err, "--mode forward"));
  polite__px_config_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_as_shipped),
      cmocka_unit_test(yaml_reads_the_same),
      cmocka_unit_test(custom_response_and_header_names),
      cmocka_unit_test(bad_files_name_the_field),
      cmocka_unit_test(yaml_scalars_and_errors),
      cmocka_unit_test(the_judge_runs_only_with_retry_after_plugin),
      cmocka_unit_test(per_plugin_urls_to_watch),
      cmocka_unit_test(unknown_keys_are_named),
      cmocka_unit_test(a_watch_list_must_be_able_to_match),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
