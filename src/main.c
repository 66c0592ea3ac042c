/* polite: the command-line tool; the root of the command tree, whose
 * commands each live in their own file. */
#include "commands.h"

#include <polite/polite.h>
#include <string.h>

/* Commands are weak references so that a build without one of them (a
 * trimmed build) still links and says plainly what is missing. */
#pragma weak cmd_run
#pragma weak cmd_proxy
#pragma weak cmd_plan
#pragma weak cmd_delay
#pragma weak cmd_diagnose
#pragma weak cmd_report
#pragma weak cmd_budget
#pragma weak cmd_gateway
#pragma weak cmd_queue
#pragma weak cmd_help
#pragma weak cli_cmd_run
#pragma weak cli_cmd_plan
#pragma weak cli_cmd_delay
#pragma weak cli_cmd_diagnose
#pragma weak cli_cmd_report
#pragma weak cli_cmd_proxy
#pragma weak cli_cmd_budget
#pragma weak cli_cmd_gateway
#pragma weak cli_cmd_queue
#pragma weak cli_cmd_help

static const cli_sub commands[] = {
    {"run", &cli_cmd_run, cmd_run},
    {"plan", &cli_cmd_plan, cmd_plan},
    {"delay", &cli_cmd_delay, cmd_delay},
    {"diagnose", &cli_cmd_diagnose, cmd_diagnose},
    {"report", &cli_cmd_report, cmd_report},
    {"proxy", &cli_cmd_proxy, cmd_proxy},
    {"gateway", &cli_cmd_gateway, cmd_gateway},
    {"budget", &cli_cmd_budget, cmd_budget},
    {"queue", &cli_cmd_queue, cmd_queue},
    {"help", &cli_cmd_help, cmd_help},
    {NULL, NULL, NULL}};

const cli_command cli_cmd_polite = {
    "",
    "COMMAND [OPTIONS]",
    "call rate-limited HTTP APIs without getting throttled",
    "Call rate-limited HTTP APIs without getting throttled.\n",
    NULL,
    "'polite COMMAND --help' (or 'polite help COMMAND') describes one "
    "command;\n'polite help --markdown COMMAND' prints its option table.\n"
    "'polite --version' prints the version.\n",
    NULL,
    0,
    NULL,
    commands};

int main(int argc, char **argv) {
  if (argc < 2) {
    cli_help(&cli_cmd_polite, stderr);
    return CLI_EXIT_USAGE;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("polite %s\n", polite_version());
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
  }
  return cli_subcommand(&cli_cmd_polite, argc, argv);
}
