/* libFuzzer target for the command-line engine (src/cli.c): the input is an
 * argv (NUL- or newline-separated words) given to a command tree with a
 * subcommand, the unit test's table of every kind (tests/unit/cli_table.h)
 * and curl's table of foreign options.
 * No crash, no undefined behaviour, and the results keep their promises:
 * an exit status the contract allows, positional arguments within bounds
 * and pointing into argv, strings stored from argv or the defaults. */
#include "../unit/cli_table.h"
#include "cli.h"
#include "cli_curl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cli_command leaf = {
    "t s", "[OPTIONS] [ARG]...", "a leaf", NULL, table, NULL, NULL,
    3,     cli_curl_options,     NULL};
static int leaf_argc;
static char **leaf_argv;
static int run_leaf(int argc, char **argv) {
  leaf_argc = argc;
  leaf_argv = argv;
  return 42;
}
static const cli_sub subs[] = {{"s", &leaf, run_leaf}, {NULL, NULL, NULL}};
static const cli_command top = {
    "t", "[OPTIONS] | s",  "the top", NULL, table, NULL, NULL,
    2,   cli_curl_options, subs};

/* 1 when p is one of argv's words or a row's default text. */
static int from_argv(const char *p, int argc, char **argv) {
  for (int i = 0; i < argc; i++)
    if (p >= argv[i] && p <= argv[i] + strlen(argv[i]))
      return 1;
  return 0;
}

/* Parses argv with cmd; checks what the parser promises. */
static void parse(const cli_command *cmd, int argc, char **argv) {
  opts o;
  memset(&o, 0, sizeof o);
  cli_args pos;
  int rc = cli_defaults(cmd, &o);
  if (rc != 0)
    abort(); /* the table's own defaults are valid */
  rc = cli_parse(cmd, argc, argv, &o, &pos);
  if (rc != -1 && rc != CLI_EXIT_OK && rc != CLI_EXIT_USAGE)
    abort();
  if (rc == -1) {
    if (pos.n < 0 || pos.n > cmd->max_positional)
      abort();
    for (int i = 0; i < pos.n; i++)
      if (!from_argv(pos.v[i], argc, argv))
        abort();
    if (o.s && !from_argv(o.s, argc, argv))
      abort();
    for (size_t i = 0; i < o.list.n; i++)
      if (!from_argv(o.list.v[i], argc, argv))
        abort();
    if (o.n > 10 || o.num < -5 || o.num > 5 || o.mode < 0 || o.mode > 2 ||
        (o.ms != -1 && (o.ms < 1 || o.ms > 3600000)) || o.size < 1 ||
        o.size > (1u << 30) || o.rate < 0)
      abort();
  }
  cli_free(cmd, &o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int quiet;
  if (!quiet) {
    /* Help and usage messages are not the point. The streams are replaced,
     * not reopened: libFuzzer keeps writing its reports to the real stderr
     * FILE, which freopen would silence too. */
    quiet = 1;
    FILE *null = fopen("/dev/null", "w");
    if (null == NULL)
      abort();
    stdout = null;
    stderr = null;
  }
  char *buf = malloc(size + 1);
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *argv[33];
  int argc = 0;
  argv[argc++] = "t";
  for (char *p = buf; argc < 32 && p <= buf + size;) {
    size_t n = strcspn(p, "\n");
    p[n] = '\0';
    argv[argc++] = p;
    p += n + 1;
  }
  argv[argc] = NULL;
  leaf_argc = -1;
  int rc = cli_subcommand(&top, argc, argv);
  if (rc == 42) {
    if (leaf_argc != argc - 1 || leaf_argv != argv + 1 ||
        strcmp(argv[1], "s") != 0)
      abort();
    parse(&leaf, leaf_argc, leaf_argv);
  } else if (rc == -1) {
    parse(&top, argc, argv);
  } else {
    abort(); /* top has options of its own: only the subcommand's status */
  }
  free(buf);
  return 0;
}
