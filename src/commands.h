/* polite: the subcommands and their option tables, for the dispatcher
 * (main.c); each is defined in its own src/cmd_*.c. */
#ifndef POLITE_COMMANDS_H
#define POLITE_COMMANDS_H

#include "cli.h"

/* Subcommands: each returns the process exit status. */
int cmd_run(int argc, char **argv);
int cmd_proxy(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_delay(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_budget(int argc, char **argv);
int cmd_gateway(int argc, char **argv);
int cmd_queue(int argc, char **argv);

/* The commands, each in its own file; cli_cmd_polite (src/main.c) is the
 * root whose subcommands they are, walked by `polite help`. */
extern const cli_command cli_cmd_polite, cli_cmd_run, cli_cmd_plan,
    cli_cmd_delay, cli_cmd_diagnose, cli_cmd_report, cli_cmd_proxy,
    cli_cmd_proxy_ca, cli_cmd_gateway, cli_cmd_budget, cli_cmd_help,
    cli_cmd_queue;
int cmd_proxy_ca(int argc, char **argv);
int cmd_help(int argc, char **argv);

#endif
