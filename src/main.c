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
#pragma weak cmd_report
#pragma weak cmd_budget
#pragma weak cmd_queue
#pragma weak cli_cmd_run
#pragma weak cli_cmd_plan
#pragma weak cli_cmd_delay
#pragma weak cli_cmd_diagnose
#pragma weak cli_cmd_proxy
#pragma weak cli_cmd_queue

struct command {
  const char *name;
  int (*fn)(int, char **);
  const char *summary;     /* NULL: the one in spec */
  const cli_command *spec; /* its option table; NULL: it parses its own */
};

static void usage(FILE *f, const struct command *cmds);

/* `polite help [--markdown | --json] [COMMAND]`: the generated help, the
 * option table docs/COMMAND.md embeds, or the table as JSON (for the man
 * page generator, tools/gen_man.py). */
static int help_cmd(int argc, char **argv, const struct command *cmds) {
  enum { TEXT, MARKDOWN, JSON } form = TEXT;
  const char *name = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--markdown") == 0)
      form = MARKDOWN;
    else if (strcmp(argv[i], "--json") == 0)
      form = JSON;
    else if (argv[i][0] == '-' || name != NULL)
      return cli_usage("help",
                       "unexpected argument '%s' (polite help "
                       "[--markdown | --json] [COMMAND])",
                       argv[i]);
    else
      name = argv[i];
  }
  if (name == NULL) {
    usage(stdout, cmds);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
  }
  for (const struct command *c = cmds; c->name; c++) {
    if (strcmp(c->name, name) != 0)
      continue;
    if (c->spec == NULL && form != TEXT)
      return cli_usage("help", "'%s' has no option table yet", name);
    if (c->spec == NULL) {
      char help[] = "--help";
      char *args[] = {argv[0], help, NULL};
      return c->fn ? c->fn(2, args) : CLI_EXIT_USAGE;
    }
    if (form == MARKDOWN)
      cli_help_markdown(c->spec, stdout);
    else if (form == JSON)
      cli_help_json(c->spec, stdout);
    else
      cli_help(c->spec, stdout);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
  }
  return cli_usage("help", "unknown command '%s'", name);
}

static void usage(FILE *f, const struct command *cmds) {
  fprintf(f, "Usage: polite COMMAND [OPTIONS]\n\n"
             "Call rate-limited HTTP APIs without getting throttled.\n\n"
             "Commands:\n");
  for (const struct command *c = cmds; c->name; c++)
    fprintf(f, "  %-9s %s\n", c->name,
            c->spec      ? c->spec->summary
            : c->summary ? c->summary
                         : "");
  fprintf(
      f, "\n'polite COMMAND --help' (or 'polite help COMMAND') describes one "
         "command;\n'polite help --markdown COMMAND' prints its option table.\n"
         "'polite --version' prints the version.\n");
}

int main(int argc, char **argv) {
  const struct command cmds[] = {
      {"run", cmd_run, NULL, &cli_cmd_run},
      {"plan", cmd_plan, NULL, &cli_cmd_plan},
      {"delay", cmd_delay, NULL, &cli_cmd_delay},
      {"diagnose", cmd_diagnose, NULL, &cli_cmd_diagnose},
      {"report", cmd_report, "draw an HTML timeline of runs from their logs",
       NULL},
      {"proxy", cmd_proxy, "throttling test proxy that catches early retries",
       &cli_cmd_proxy},
      {"budget", cmd_budget, "show or clear a shared budget", NULL},
      {"queue", cmd_queue, NULL, &cli_cmd_queue},
      {NULL, NULL, NULL, NULL}};

  if (argc < 2) {
    usage(stderr, cmds);
    return CLI_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (strcmp(name, "help") == 0)
    return help_cmd(argc - 1, argv + 1, cmds);
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
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
