/* Small helpers shared by the polite subcommands (not part of libpolite). */
#ifndef POLITE_CLI_H
#define POLITE_CLI_H

#include <stdio.h>

/* Subcommands: each returns the process exit status. */
int cmd_run(int argc, char **argv);
int cmd_proxy(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_delay(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_budget(int argc, char **argv);

/* Exit statuses shared by all subcommands (DESIGN.md). */
enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_FAILED = 1,
  CLI_EXIT_USAGE = 2,
  CLI_EXIT_QUOTA = 3,
  CLI_EXIT_INTERRUPTED = 130
};

/* Prints "polite CMD: <message>" and a hint to stderr; returns
 * CLI_EXIT_USAGE so callers can `return cli_usage(...)`. */
int cli_usage(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses a whole base-10 unsigned number into *out (no sign, no garbage).
 * Returns 0, or -1 when the text is not such a number or exceeds max. */
int cli_parse_uint(const char *s, unsigned long long max,
                   unsigned long long *out);

/* Parses a whole base-10 signed number into *out. Returns 0 or -1. */
int cli_parse_int(const char *s, long long *out);

/* Writes s as a JSON string (quotes and escapes included) to f. */
void cli_json_string(FILE *f, const char *s);

#endif
