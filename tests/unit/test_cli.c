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
#include "cli_curl.h"

#include <unistd.h>

#include "cli_table.h"

static const cli_command cmd = {
    "t", "[OPTIONS] [ARG]", "a test", NULL, table, NULL, NULL, 2, NULL, NULL};

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

/* ---- Output of a call, captured ------------------------------------------ */

static char captured[8192];

/* Points fd (1 or 2) at a temporary file; returns the saved descriptor. */
static int capture_begin(int fd, FILE **tmp) {
  fflush(fd == 1 ? stdout : stderr);
  *tmp = tmpfile();
  assert_non_null(*tmp);
  int saved = dup(fd);
  dup2(fileno(*tmp), fd);
  return saved;
}

/* Puts fd back and returns what was written to it meanwhile. */
static const char *capture_end(int fd, FILE *tmp, int saved) {
  fflush(fd == 1 ? stdout : stderr);
  dup2(saved, fd);
  close(saved);
  rewind(tmp);
  size_t n = fread(captured, 1, sizeof captured - 1, tmp);
  captured[n] = '\0';
  fclose(tmp);
  return captured;
}

/* ---- Subcommands ----------------------------------------------------------
 */

static int sub_argc;
static const char *sub_argv0;
static int run_sub(int argc, char **argv) {
  sub_argc = argc;
  sub_argv0 = argv[0];
  return 7;
}

static const cli_command sub_a = {"c a", "[OPTIONS]", "the a", NULL, table,
                                  NULL,  NULL,        0,       NULL, NULL};
static const cli_sub subs[] = {
    {"a", &sub_a, run_sub}, {"b", NULL, NULL}, {NULL, NULL, NULL}};
/* A command made only of subcommands, and one with options of its own. */
static const cli_command container = {
    "c", "a|b [OPTIONS]", "a container", NULL, NULL, NULL, NULL, 0, NULL, subs};
static const cli_command with_opts = {
    "w", "[OPTIONS] | a", "runs itself", NULL, table, NULL, NULL, 0, NULL,
    subs};

/* Runs cli_subcommand on argv; returns its result, stderr in *err. */
static int sub(const cli_command *c, int argc, char **argv, const char **err) {
  FILE *tmp;
  int saved = capture_begin(2, &tmp);
  int rc = cli_subcommand(c, argc, argv);
  *err = capture_end(2, tmp, saved);
  return rc;
}

static void subcommands_dispatch(void **state) {
  (void)state;
  const char *err;
  char *a[] = {"c", "a", "--count=3"};
  assert_int_equal(sub(&container, 3, a, &err), 7);
  assert_int_equal(sub_argc, 2);
  assert_string_equal(sub_argv0, "a");
  char *none[] = {"c"};
  assert_int_equal(sub(&container, 1, none, &err), CLI_EXIT_USAGE);
  assert_non_null(strstr(err, "polite c: expected a subcommand: a, b"));
  char *before[] = {"c", "--count=3", "a"};
  assert_int_equal(sub(&container, 3, before, &err), CLI_EXIT_USAGE);
  assert_non_null(strstr(err, "'--count=3' before the subcommand"));
  char *unknown[] = {"c", "zz"};
  assert_int_equal(sub(&container, 2, unknown, &err), CLI_EXIT_USAGE);
  assert_non_null(
      strstr(err, "unknown subcommand 'zz' (expected one of: a, b)"));
  char *missing[] = {"c", "b"};
  assert_int_equal(sub(&container, 2, missing, &err), CLI_EXIT_USAGE);
  assert_non_null(strstr(err, "'b' is not part of this build"));
  FILE *tmp;
  char *help[] = {"c", "--help"};
  int saved = capture_begin(1, &tmp);
  assert_int_equal(cli_subcommand(&container, 2, help), CLI_EXIT_OK);
  const char *out = capture_end(1, tmp, saved);
  assert_non_null(strstr(out, "Usage: polite c a|b [OPTIONS]"));
  assert_non_null(strstr(out, "Subcommands:\n  a         the a\n"));

  /* With options of its own, a command runs itself unless argv[1] names a
   * subcommand; a stray word is then its parser's business. */
  char *wa[] = {"w", "a"};
  assert_int_equal(sub(&with_opts, 2, wa, &err), 7);
  char *wf[] = {"w", "--flag"};
  assert_int_equal(sub(&with_opts, 2, wf, &err), -1);
  assert_int_equal(sub(&with_opts, 1, wf, &err), -1);
  char *wz[] = {"w", "zz"};
  assert_int_equal(sub(&with_opts, 2, wz, &err), -1);
  opts o;
  cli_args pos;
  memset(&o, 0, sizeof o);
  saved = capture_begin(2, &tmp);
  assert_int_equal(cli_parse(&with_opts, 2, wz, &o, &pos), CLI_EXIT_USAGE);
  err = capture_end(2, tmp, saved);
  assert_non_null(strstr(err, "takes only options, or a subcommand: a, b"));
}

static void subcommands_in_help_json_and_markdown(void **state) {
  (void)state;
  FILE *tmp;
  int saved = capture_begin(1, &tmp);
  cli_help_json(&container, stdout);
  const char *out = capture_end(1, tmp, saved);
  json_error_t e;
  json_t *j = json_loads(out, 0, &e);
  assert_non_null(j);
  json_t *subs_j = json_object_get(j, "subcommands");
  assert_int_equal(json_array_size(subs_j), 1); /* b is not built */
  json_t *a = json_array_get(subs_j, 0);
  assert_string_equal(json_string_value(json_object_get(a, "name")), "c a");
  json_t *first = json_array_get(json_object_get(a, "options"), 0);
  assert_string_equal(json_string_value(json_object_get(first, "short")), "f");
  assert_true(json_is_false(json_object_get(first, "takes_value")));
  assert_int_equal(json_array_size(json_object_get(j, "options")), 0);
  json_decref(j);
  saved = capture_begin(1, &tmp);
  cli_help_markdown(&container, stdout);
  out = capture_end(1, tmp, saved);
  assert_non_null(strstr(out, "| Command | What it does |"));
  assert_non_null(strstr(out, "| `polite c a` | the a |"));
}

/* ---- Other tools' options ------------------------------------------------ */

static const cli_foreign foreign[] = {
    {"retry", 0, "count", "why1"},  /* applies where --count exists */
    {"retry", 0, NULL, "why2"},     /* ... else this one */
    {"gone", 0, "missing", "why3"}, /* no command has --missing */
    {NULL, 'm', "wait", "why4"},    /* a short letter */
    {"sleep", 0, NULL, "why5"},     /* not needed anywhere */
    {NULL, 0, NULL, NULL}};
static const cli_opt small_table[] = {{"flag", 'f', CLI_FLAG, NULL, 1, 0, NULL,
                                       NULL, NULL, "a flag", "Options",
                                       CLI_AT(opts, flag), NULL, NULL, 0},
                                      CLI_ROW_END};
static const cli_command with_foreign = {
    "t", "[OPTIONS]", "a test", NULL, table, NULL, NULL, 2, foreign, NULL};
static const cli_command small = {"s",         "[OPTIONS]", "a test", NULL,
                                  small_table, NULL,        NULL,     0,
                                  foreign,     NULL};

/* The usage message of `c` parsing the single argument arg. */
static const char *refusal(const cli_command *c, const char *arg) {
  char *argv[] = {"x", (char *)arg};
  opts o;
  cli_args pos;
  memset(&o, 0, sizeof o);
  FILE *tmp;
  int saved = capture_begin(2, &tmp);
  int rc = cli_parse(c, 2, argv, &o, &pos);
  const char *err = capture_end(2, tmp, saved);
  assert_int_equal(rc, CLI_EXIT_USAGE);
  cli_free(c, &o);
  return err;
}

static void foreign_options_name_the_equivalent(void **state) {
  (void)state;
  assert_non_null(strstr(refusal(&with_foreign, "--retry"),
                         "unknown option '--retry': use --count (why1)"));
  assert_non_null(strstr(refusal(&with_foreign, "--retry=4"),
                         "unknown option '--retry': use --count (why1)"));
  assert_non_null(strstr(refusal(&small, "--retry"),
                         "unknown option '--retry': not needed (why2)"));
  const char *e = refusal(&with_foreign, "--gone");
  assert_non_null(strstr(e, "unknown option '--gone'\n"));
  assert_null(strstr(e, "why3"));
  assert_non_null(strstr(refusal(&with_foreign, "-m"),
                         "unknown option '-m': use --wait (why4)"));
  e = refusal(&small, "-fm"); /* -f parses, -m is refused; no --wait here */
  assert_non_null(strstr(e, "unknown option '-m'\n"));
  assert_non_null(strstr(refusal(&small, "--sleep"), "not needed (why5)"));
  assert_non_null(strstr(refusal(&with_foreign, "--retryx"),
                         "unknown option '--retryx'\n"));
  assert_non_null(
      strstr(refusal(&cmd, "--retry"), "unknown option '--retry'\n"));
}

/* Every row of the real table (curl's options) names something and says
 * why; the rows for one curl option that share an equivalent would never
 * both be reached. */
static void curl_table_rows_are_whole(void **state) {
  (void)state;
  size_t n = 0;
  for (const cli_foreign *f = cli_curl_options; f->name || f->shrt; f++, n++) {
    assert_non_null(f->why);
    assert_true(strlen(f->why) > 5);
    for (const cli_foreign *g = cli_curl_options; g < f; g++) {
      int same = f->name ? g->name && strcmp(f->name, g->name) == 0
                         : !g->name && g->shrt == f->shrt;
      if (same && (g->instead == NULL ||
                   (f->instead && strcmp(g->instead, f->instead) == 0)))
        fail_msg("row %zu (%s) is never reached", n, f->name ? f->name : "-");
    }
  }
  assert_true(n >= 10);
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
      cmocka_unit_test(subcommands_dispatch),
      cmocka_unit_test(subcommands_in_help_json_and_markdown),
      cmocka_unit_test(foreign_options_name_the_equivalent),
      cmocka_unit_test(curl_table_rows_are_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
