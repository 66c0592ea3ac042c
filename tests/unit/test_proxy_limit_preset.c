/* Unit tests of --preset (proxy/px_preset.c): each preset applies, its
 * options are valid, flags given later override it, and --preset list
 * shows every one with its options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px_config.c"
#include "px_glob.c"
#include "px_preset.c"
#include "px_rules.c"

static void presets_apply(void **state) {
  (void)state;
  char err[512];
  for (size_t i = 0; i < NPRESETS; i++) {
    px_config c;
    polite__px_config_init(&c);
    if (polite__px_preset_apply(&c, presets[i].name, err, sizeof err) != 0 ||
        polite__px_config_finish(&c, err, sizeof err) != 0)
      fail_msg("preset %s: %s", presets[i].name, err);
    assert_true(c.rate_n > 0);
    polite__px_config_free(&c);
  }
  px_config c;
  polite__px_config_init(&c);
  assert_int_equal(polite__px_preset_apply(&c, "github", err, sizeof err), 0);
  assert_int_equal(c.rate_mode, PX_LIM_FIXED);
  assert_int_equal(c.rate_n, 5000);
  assert_int_equal(c.rate_window_s, 3600);
  assert_string_equal(c.hdr_remaining, "X-RateLimit-Remaining");
  assert_int_equal(c.conc_status, 403);
  assert_int_equal(c.reset_epoch, 1);
  /* A flag after the preset overrides it. */
  assert_int_equal(
      polite__px_config_set(&c, "rate-limit", "10/s", NULL, err, sizeof err),
      0);
  assert_int_equal(c.rate_n, 10);
  polite__px_config_free(&c);
  polite__px_config_init(&c);
  assert_int_equal(polite__px_preset_apply(&c, "graph", err, sizeof err), 0);
  assert_int_equal(c.penalty, 1);
  assert_int_equal(polite__px_preset_apply(&c, "stripe", err, sizeof err), -1);
  assert_non_null(strstr(err, "openai, github, graph"));
  assert_non_null(strstr(err, "'stripe'"));
  polite__px_config_free(&c);
}

static void list_shows_options(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  polite__px_preset_list(f);
  fclose(f);
  assert_non_null(strstr(buf, "openai\n"));
  assert_non_null(strstr(buf, "--rate-limit 5000/h"));
  assert_non_null(strstr(buf, "--penalty\n")); /* a flag without a value */
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(presets_apply),
      cmocka_unit_test(list_shows_options),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
