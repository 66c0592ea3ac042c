/* Unit tests of the option table parser (src/cli.c): every kind, both
 * value forms, ranges, secrets kept out of messages, defaults and
 * environment, and the loose names a configuration file uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cli.h"

typedef struct {
  int flag, mode;
  unsigned n;
  uint64_t big;
  int64_t ms, num;
  double rate;
  size_t size;
  const char *s, *secret;
  cli_list list;
} opts;

#define O opts
static const cli_opt table[] = {
    {"flag", 'f', CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL, "a flag", "Options",
     CLI_AT(O, flag), NULL, NULL, 0},
    {"count", 'n', CLI_UINT, "N", 1, 10, "3", NULL, NULL, "a count", NULL,
     CLI_AT(O, n), NULL, NULL, 0},
    {"big", 0, CLI_UINT, "N", 0, UINT64_MAX, NULL, NULL, NULL, "a big one",
     NULL, CLI_AT(O, big), NULL, NULL, 0},
    {"wait", 0, CLI_DURATION, "DURATION", 1, 3600000, "2s", NULL, NULL,
     "a wait", NULL, CLI_AT(O, ms), NULL, NULL, CLI_F_NONE},
    {"num", 0, CLI_INT, "N", -5, 5, NULL, NULL, NULL, "a number", NULL,
     CLI_AT(O, num), NULL, NULL, 0},
    {"rate", 0, CLI_RATE, "N/UNIT", 0, 0, NULL, NULL, NULL, "a rate", NULL,
     CLI_AT(O, rate), NULL, NULL, 0},
    {"max-body", 0, CLI_SIZE, "SIZE", 1, 1 << 30, "16MiB", NULL, "T_MAXBODY",
     "a size", NULL, CLI_AT(O, size), NULL, NULL, 0},
    {"name", 's', CLI_STRING, "S", 0, 0, NULL, NULL, NULL, "a string", NULL,
     CLI_AT(O, s), NULL, NULL, 0},
    {"token", 0, CLI_UINT, "T", 0, 9, NULL, NULL, NULL, "a secret", NULL,
     CLI_AT(O, n), NULL, NULL, CLI_F_SECRET},
    {"mode", 0, CLI_ENUM, "a|b|c", 0, 0, "a", NULL, NULL, "a mode", NULL,
     CLI_AT(O, mode), NULL, "a|b|c", 0},
    {"item", 'i', CLI_LIST, "X", 0, 0, NULL, NULL, NULL, "repeatable", NULL,
     CLI_AT(O, list), NULL, NULL, 0},
    CLI_ROW_END};
#undef O

static const cli_command cmd = {
    "t", "[OPTIONS] [ARG]", "a test", NULL, table, NULL, NULL, 2};

static int parse(opts *o, cli_args *pos, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  assert_int_equal(cli_defaults(&cmd, o), 0);
  return cli_parse(&cmd, argc, argv, o, pos);
}

static void both_value_forms_and_kinds(void **state) {
  (void)state;
  char *argv[] = {"t",          "--count=7",
                  "--wait",     "250ms",
                  "-f",         "--rate=90/min",
                  "--max-body", "64k",
                  "-sNAME",     "--mode",
                  "c",          "-i",
                  "x",          "--item=y",
                  "pos",        "--num=-3",
                  "--big",      "18446744073709551615",
                  "--",         "--not-an-option"};
  opts o;
  cli_args pos;
  assert_int_equal(parse(&o, &pos, 20, argv), -1);
  assert_int_equal(o.n, 7);
  assert_int_equal(o.ms, 250);
  assert_int_equal(o.flag, 1);
  assert_true(o.rate > 1.49 && o.rate < 1.51);
  assert_int_equal(o.size, 65536);
  assert_string_equal(o.s, "NAME");
  assert_int_equal(o.mode, 2);
  assert_int_equal(o.list.n, 2);
  assert_string_equal(o.list.v[1], "y");
  assert_int_equal(o.num, -3);
  assert_true(o.big == UINT64_MAX);
  assert_int_equal(pos.n, 2);
  assert_string_equal(pos.v[0], "pos");
  assert_string_equal(pos.v[1], "--not-an-option");
  cli_free(&cmd, &o);
}

static void defaults_and_environment(void **state) {
  (void)state;
  char *argv[] = {"t"};
  opts o;
  cli_args pos;
  unsetenv("T_MAXBODY");
  assert_int_equal(parse(&o, &pos, 1, argv), -1);
  assert_int_equal(o.n, 3);
  assert_int_equal(o.ms, 2000);
  assert_int_equal(o.size, 16u << 20);
  setenv("T_MAXBODY", "1M", 1);
  assert_int_equal(parse(&o, &pos, 1, argv), -1);
  assert_int_equal(o.size, 1u << 20);
  unsetenv("T_MAXBODY");
  char *none[] = {"t", "--wait", "none"};
  assert_int_equal(parse(&o, &pos, 3, none), -1);
  assert_int_equal(o.ms, -1);
}

static void errors_name_the_value_but_never_a_secret(void **state) {
  (void)state;
  opts o;
  char err[300];
  const cli_opt *count = cli_opt_find(table, "count", 5, 0);
  assert_int_equal(cli_opt_set(count, &o, "11", err, sizeof err), -1);
  assert_non_null(strstr(err, "from 1 to 10, got '11'"));
  const cli_opt *tok = cli_opt_find(table, "token", 5, 0);
  assert_int_equal(cli_opt_set(tok, &o, "sk-SECRET", err, sizeof err), -1);
  assert_null(strstr(err, "SECRET"));
  const cli_opt *wait = cli_opt_find(table, "wait", 4, 0);
  assert_int_equal(cli_opt_set(wait, &o, "0", err, sizeof err), -1);
  assert_non_null(strstr(err, "above zero"));
  const cli_opt *mode = cli_opt_find(table, "mode", 4, 0);
  assert_int_equal(cli_opt_set(mode, &o, "d", err, sizeof err), -1);
  assert_non_null(strstr(err, "a|b|c"));
}

static void usage_errors_exit_2(void **state) {
  (void)state;
  opts o;
  cli_args pos;
  char *a[] = {"t", "--bogus"};
  assert_int_equal(parse(&o, &pos, 2, a), CLI_EXIT_USAGE);
  char *b[] = {"t", "--count"};
  assert_int_equal(parse(&o, &pos, 2, b), CLI_EXIT_USAGE);
  char *c[] = {"t", "--flag=1"};
  assert_int_equal(parse(&o, &pos, 2, c), CLI_EXIT_USAGE);
  char *d[] = {"t", "x", "y", "z"};
  assert_int_equal(parse(&o, &pos, 4, d), CLI_EXIT_USAGE);
  char *e[] = {"t", "--count=abc"};
  assert_int_equal(parse(&o, &pos, 2, e), CLI_EXIT_USAGE);
}

/* A configuration file's keys: "Max_Body", "MAX-BODY" and the camelCase
 * "maxBody" (Dev Proxy's style, the proxy's --config) are --max-body. */
static void loose_names_for_config_files(void **state) {
  (void)state;
  assert_non_null(cli_opt_find(table, "Max_Body", 8, 1));
  assert_non_null(cli_opt_find(table, "MAX-BODY", 8, 1));
  assert_null(cli_opt_find(table, "Max_Body", 8, 0));
  assert_non_null(cli_opt_find(table, "maxBody", 7, 1));
  assert_null(cli_opt_find(table, "maxBod", 6, 1));
  assert_null(cli_opt_find(table, "max-body-", 9, 0));
}

/* A JSON configuration through the same rows (the proxy's config file). */
static void json_config_through_the_table(void **state) {
  (void)state;
  opts o;
  memset(&o, 0, sizeof o);
  char err[300];
  json_error_t je;
  json_t *cfg =
      json_loads("{\"Count\": 4, \"max_body\": \"1M\", \"flag\": true,"
                 " \"wait\": 1.5, \"item\": [\"a\", \"b\"], \"mode\": \"b\"}",
                 0, &je);
  assert_non_null(cfg);
  assert_int_equal(cli_config_apply(table, &o, cfg, err, sizeof err), 0);
  assert_int_equal(o.n, 4);
  assert_int_equal(o.size, 1u << 20);
  assert_int_equal(o.flag, 1);
  assert_int_equal(o.ms, 1500);
  assert_int_equal(o.list.n, 2);
  assert_int_equal(o.mode, 1);
  free(o.list.v);
  json_decref(cfg);
  cfg = json_loads("{\"count\": 40}", 0, &je);
  assert_int_equal(cli_config_apply(table, &o, cfg, err, sizeof err), -1);
  assert_non_null(strstr(
      err, "key 'count': expected a whole number from 1 to 10, got '40'"));
  json_decref(cfg);
  cfg = json_loads("{\"colour\": 1}", 0, &je);
  assert_int_equal(cli_config_apply(table, &o, cfg, err, sizeof err), -1);
  assert_non_null(strstr(err, "unknown key 'colour'"));
  json_decref(cfg);
  cfg = json_loads("{\"flag\": 1}", 0, &je);
  assert_int_equal(cli_config_apply(table, &o, cfg, err, sizeof err), -1);
  json_decref(cfg);
}

static void sizes(void **state) {
  (void)state;
  unsigned long long v;
  assert_int_equal(cli_parse_size("16MiB", 1ull << 40, &v), 0);
  assert_true(v == 16ull << 20);
  assert_int_equal(cli_parse_size("1g", 1ull << 40, &v), 0);
  assert_true(v == 1ull << 30);
  assert_int_equal(cli_parse_size("2G", 1ull << 30, &v), -1);
  assert_int_equal(cli_parse_size("-1", 100, &v), -1);
  assert_int_equal(cli_parse_size("5x", 100, &v), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(both_value_forms_and_kinds),
      cmocka_unit_test(defaults_and_environment),
      cmocka_unit_test(errors_name_the_value_but_never_a_secret),
      cmocka_unit_test(usage_errors_exit_2),
      cmocka_unit_test(loose_names_for_config_files),
      cmocka_unit_test(json_config_through_the_table),
      cmocka_unit_test(sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
