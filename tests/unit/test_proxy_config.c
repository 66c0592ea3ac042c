/* Unit tests of the proxy's options: flags and JSON config share one table
 * (proxy/px_config.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px.h"

static void defaults(void **state) {
  (void)state;
  px_config c;
  polite__px_config_init(&c);
  assert_string_equal(c.listen, "127.0.0.1:8000");
  assert_null(c.upstream);
  assert_int_equal(c.retry_after_s, 5); /* Dev Proxy's retryAfterInSeconds */
  assert_int_equal(c.burst, 1);
  assert_int_equal(c.quota, -1);
  assert_int_equal(c.scope, PX_SCOPE_URL);
  assert_int_equal(c.rate_scope, PX_SCOPE_GLOBAL);
  assert_true(c.failure_rate == 0);
  assert_int_equal(c.rate_mode, PX_LIM_GCRA);
  assert_int_equal(c.concurrency, 0);
  assert_int_equal(c.conc_status, 429);
  polite__px_config_free(&c);
}

/* The limit modes' options: values checked, errors name option and value. */
static void limit_options(void **state) {
  (void)state;
  px_config c;
  char err[256];
  polite__px_config_init(&c);
  assert_int_equal(
      polite__px_config_set(&c, "rate-limit", "120/min", NULL, err, sizeof err),
      0);
  assert_int_equal(polite__px_config_set(&c, "rateLimitMode", "fixed", NULL,
                                         err, sizeof err),
                   0);
  assert_int_equal(
      polite__px_config_set(&c, "rate-limit-cost", "2", NULL, err, sizeof err),
      0);
  assert_int_equal(polite__px_config_set(&c, "reset-format", "UtcEpochSeconds",
                                         NULL, err, sizeof err),
                   0);
  assert_int_equal(polite__px_config_set(&c, "concurrency-limit", "4", NULL,
                                         err, sizeof err),
                   0);
  assert_int_equal(polite__px_config_set(&c, "concurrency-status", "503", NULL,
                                         err, sizeof err),
                   0);
  assert_int_equal(
      polite__px_config_set(&c, "quota", "100", NULL, err, sizeof err), 0);
  assert_int_equal(
      polite__px_config_set(&c, "quota-period", "1h", NULL, err, sizeof err),
      0);
  assert_int_equal(polite__px_config_finish(&c, err, sizeof err), 0);
  assert_int_equal(c.lim.mode, PX_LIM_FIXED);
  assert_int_equal(c.lim.limit, 240); /* 120 requests x cost 2 */
  assert_int_equal(c.lim.window_us, 60000000);
  assert_int_equal(c.rate_headers, PX_HDR_DEVPROXY); /* fixed: Dev Proxy's */
  assert_int_equal(c.reset_epoch, 1);
  assert_int_equal(c.conc_status, 503);
  assert_int_equal(c.quota_cfg.period, PX_QUOTA_WINDOW);
  assert_int_equal(c.quota_cfg.window_ms, 3600000);
  assert_int_equal(c.quota_cfg.limit, 100);
  assert_int_equal(polite__px_config_set(&c, "rate-limit-mode", "leaky", NULL,
                                         err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "'leaky'"));
  assert_non_null(strstr(err, "gcra, fixed, sliding"));
  assert_int_equal(polite__px_config_set(&c, "concurrency-status", "500", NULL,
                                         err, sizeof err),
                   -1);
  assert_int_equal(
      polite__px_config_set(&c, "quota-period", "week", NULL, err, sizeof err),
      -1);
  assert_non_null(strstr(err, "--quota-period"));
  assert_int_equal(polite__px_config_set(&c, "warning-threshold", "101", NULL,
                                         err, sizeof err),
                   -1);
  polite__px_config_free(&c);
}

static void names_in_any_case_style(void **state) {
  (void)state;
  px_config c;
  char err[256];
  polite__px_config_init(&c);
  assert_int_equal(
      polite__px_config_set(&c, "failure-rate", "12.5", NULL, err, sizeof err),
      0);
  assert_true(c.failure_rate == 12.5);
  assert_int_equal(
      polite__px_config_set(&c, "failureRate", "50", NULL, err, sizeof err), 0);
  assert_true(c.failure_rate == 50);
  assert_int_equal(polite__px_config_set(&c, "retry_after_scope", "client",
                                         NULL, err, sizeof err),
                   0);
  assert_int_equal(c.scope, PX_SCOPE_CLIENT);
  assert_int_equal(
      polite__px_config_set(&c, "rateLimit", "120/min", NULL, err, sizeof err),
      0);
  assert_true(c.rate_per_s > 1.99 && c.rate_per_s < 2.01);
  assert_int_equal(c.rate_n, 120);
  assert_int_equal(c.rate_window_s, 60);
  assert_int_equal(
      polite__px_config_set(&c, "latency", "50-200", NULL, err, sizeof err), 0);
  assert_int_equal(c.latency_min_ms, 50);
  assert_int_equal(c.latency_max_ms, 200);
  assert_int_equal(
      polite__px_config_set(&c, "latency", "30", NULL, err, sizeof err), 0);
  assert_int_equal(c.latency_min_ms, 30);
  assert_int_equal(c.latency_max_ms, 30);
  assert_int_equal(
      polite__px_config_set(&c, "penalty", NULL, NULL, err, sizeof err), 0);
  assert_true(c.penalty);
  assert_int_equal(
      polite__px_config_set(&c, "watch", "*/a/*", NULL, err, sizeof err), 0);
  assert_int_equal(
      polite__px_config_set(&c, "watch", "!*/b", NULL, err, sizeof err), 0);
  assert_int_equal(c.nwatch, 2);
  assert_int_equal(polite__px_config_set(&c, "errors-file", "e.json", "/etc/x",
                                         err, sizeof err),
                   0);
  assert_string_equal(c.errors_file,
                      "/etc/x/e.json"); /* relative to the config file */
  polite__px_config_free(&c);
}

static void bad_values_name_option_and_value(void **state) {
  (void)state;
  struct {
    const char *name, *value;
  } bad[] = {
      {"failure-rate", "101"},
      {"failure-rate", "-1"},
      {"failure-rate", "x"},
      {"failure-rate", ""},
      {"rate-limit", "10"},
      {"rate-limit", "0/s"},
      {"rate-limit", "5/week"},
      {"burst", "0"},
      {"quota", "-3"},
      {"listen", "8000"},
      {"listen", "h:99999"},
      {"upstream", "ftp://x"},
      {"latency", "5-1"},
      {"latency", "a-b"},
      {"penalty", "maybe"},
      {"retry-after", "1.5"},
      {"seed", "abc"},
      {"watch", "!"},
      {"rate-limit-scope", "galaxy"},
      {"retry-after-scope", "global"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    px_config c;
    char err[256] = "";
    polite__px_config_init(&c);
    assert_int_equal(polite__px_config_set(&c, bad[i].name, bad[i].value, NULL,
                                           err, sizeof err),
                     -1);
    if (strstr(err, bad[i].name) == NULL ||
        (bad[i].value[0] && strstr(err, bad[i].value) == NULL))
      fail_msg("'%s %s': message '%s' must name both", bad[i].name,
               bad[i].value, err);
    polite__px_config_free(&c);
  }
  px_config c;
  char err[256];
  polite__px_config_init(&c);
  assert_int_equal(
      polite__px_config_set(&c, "frobnicate", "1", NULL, err, sizeof err), -2);
  polite__px_config_free(&c);
}

static int json_cfg(const char *text, char *err) {
  px_config c;
  polite__px_config_init(&c);
  int rc = polite__px_config_parse_json(&c, text, strlen(text), "c.json", NULL,
                                        err, 512);
  polite__px_config_free(&c);
  return rc;
}

static void json_errors_name_file_line_field(void **state) {
  (void)state;
  char err[512];
  assert_int_equal(
      json_cfg("{\n\"listen\": \"127.0.0.1:1\",\n\"quota\": 3\n}", err), 0);
  assert_int_equal(
      json_cfg("{\n\"watch\": [\"*/a\", \"*/b\"], \"penalty\": true}", err), 0);

  assert_int_equal(
      json_cfg("{\n\"listen\": \"127.0.0.1:1\",\n\"quota\": \"many\"\n}", err),
      -1);
  assert_non_null(strstr(err, "c.json:3"));
  assert_non_null(strstr(err, "'quota'"));
  assert_non_null(strstr(err, "many"));

  assert_int_equal(json_cfg("{\n\n\"penalty\": 1}", err), -1);
  assert_non_null(strstr(err, "c.json:3"));
  assert_non_null(strstr(err, "penalty"));

  assert_int_equal(json_cfg("{\"watch\": [1]}", err), -1);
  assert_non_null(strstr(err, "'watch'[0]"));

  assert_int_equal(json_cfg("{\"listen\": {\"a\":1}}", err), -1);
  assert_non_null(strstr(err, "'listen'"));

  assert_int_equal(json_cfg("{\n\"a\": 1,,}", err), -1);
  assert_non_null(strstr(err, "c.json:2:"));

  assert_int_equal(json_cfg("[1]", err), -1);
  assert_non_null(strstr(err, "c.json:1"));

  assert_int_equal(json_cfg("{\"quota\":1,\"quota\":2}", err),
                   -1); /* duplicate keys */
}

static void errors_file_turns_on_half_failures(void **state) {
  (void)state;
  px_config c;
  char err[512];
  polite__px_config_init(&c);
  c.errors_file = strdup("/nonexistent/errors.json");
  assert_int_equal(polite__px_config_finish(&c, err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent/errors.json"));
  assert_true(c.failure_rate == 50);
  polite__px_config_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults),
      cmocka_unit_test(limit_options),
      cmocka_unit_test(names_in_any_case_style),
      cmocka_unit_test(bad_values_name_option_and_value),
      cmocka_unit_test(json_errors_name_file_line_field),
      cmocka_unit_test(errors_file_turns_on_half_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
