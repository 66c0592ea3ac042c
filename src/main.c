/* polite: the command-line tool; dispatches to one file per subcommand. */
#include "cli.h"

#include <polite/polite.h>
#include <string.h>

/* Subcommands are weak references so that a build without one of them (a
 * trimmed build) still links and says plainly what is missing. */
#pragma weak cmd_run
#pragma weak cmd_proxy
#pragma weak cmd_plan
#pragma weak cmd_delay
#pragma weak cmd_diagnose

struct command {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;
};

static void usage(FILE *f, const struct command *cmds) {
  fprintf(f, "Usage: polite COMMAND [OPTIONS]\n\n"
             "Call rate-limited HTTP APIs without getting throttled.\n\n"
             "Commands:\n");
  for (const struct command *c = cmds; c->name; c++)
    fprintf(f, "  %-9s %s\n", c->name, c->summary);
  fprintf(f, "\n'polite COMMAND --help' describes one command.\n"
             "'polite --version' prints the version.\n");
}

int main(int argc, char **argv) {
  const struct command cmds[] = {
      {"run", cmd_run, "run a batch of requests under one shared budget"},
      {"plan", cmd_plan, "rate and Little's-law arithmetic for a batch"},
      {"delay", cmd_delay, "explain the wait for one Retry-After value"},
      {"diagnose", cmd_diagnose, "say who sent a 429 and what kind of limit"},
      {"proxy", cmd_proxy, "throttling test proxy that catches early retries"},
      {"budget", cmd_budget, "show or clear a shared budget"},
      {NULL, NULL, NULL}};

  if (argc < 2) {
    usage(stderr, cmds);
    return CLI_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 ||
      strcmp(name, "help") == 0) {
    usage(stdout, cmds);
    return CLI_EXIT_OK;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    printf("polite %s\n", polite_version());
    return CLI_EXIT_OK;
  }
  for (const struct command *c = cmds; c->name; c++) {
    if (strcmp(c->name, name) != 0)
      continue;
    if (c->fn == NULL) {
      fprintf(stderr, "polite: '%s' is not part of this build\n", name);
      return CLI_EXIT_USAGE;
    }
    return c->fn(argc - 1, argv + 1);
  }
  fprintf(stderr, "polite: unknown command '%s'\n", name);
  usage(stderr, cmds);
  return CLI_EXIT_USAGE;
}
