/* A table of every kind of row, for the engine's unit test (test_cli.c)
 * and its fuzz target (tests/fuzz/fuzz_cli.c): one table, so the two test
 * the same rows. */
#ifndef POLITE_TEST_CLI_TABLE_H
#define POLITE_TEST_CLI_TABLE_H

#include "cli.h"

#include <stdint.h>

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

#endif
