/* polite help: any command's generated help, the option table its docs page
 * embeds (--markdown), or the command tree as JSON (--json) for
 * tools/polite_docs.py, which makes the docs tables and the man pages. */
#include "commands.h"

#include <string.h>

typedef struct {
  int markdown, json;
} help_opts;

#define H help_opts
static const cli_opt help_table[] = {
    {"markdown", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "the option table of docs/COMMAND.md (Markdown)", "Options",
     CLI_AT(H, markdown), NULL, NULL, 0},
    {"json", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "the command, its options and its subcommands as one JSON object "
     "(without COMMAND: every command)",
     NULL, CLI_AT(H, json), NULL, NULL, 0},
    CLI_ROW_END};
#undef H

/* Designated fields: a command says only what it has (no hint, no foreign
 * options, no subcommands here). */
const cli_command cli_cmd_help = {
    .name = "help",
    .synopsis = "[--markdown | --json] [COMMAND [SUBCOMMAND]]",
    .summary = "describe a command: its help, its docs table or JSON",
    .description =
        "Prints the help of COMMAND (or of COMMAND SUBCOMMAND: 'polite help\n"
        "proxy ca'), generated from its option table, as 'polite COMMAND\n"
        "--help' does; without COMMAND, the list of commands.\n",
    .opts = help_table,
    .footer = "Exit status: 0, or 2 for a usage error (an unknown command).\n",
    .max_positional = 2};

int cmd_help(int argc, char **argv) {
  help_opts o = {0, 0};
  cli_args pos = {{NULL}, 0};
  int rc = cli_parse(&cli_cmd_help, argc, argv, &o, &pos);
  if (rc >= 0)
    return rc;
  if (o.markdown && o.json)
    return cli_usage("help", "--markdown and --json exclude each other");
  const cli_command *cmd = &cli_cmd_polite;
  for (int i = 0; i < pos.n; i++) {
    const cli_sub *s = cli_sub_find(cmd, pos.v[i]);
    if (s == NULL)
      return cli_usage("help", "unknown %s '%.64s'%s%s",
                       i ? "subcommand" : "command", pos.v[i], i ? " of " : "",
                       i ? cmd->name : "");
    if (s->cmd == NULL)
      return cli_usage("help", "'%s' is not part of this build", pos.v[i]);
    cmd = s->cmd;
  }
  if (o.markdown)
    cli_help_markdown(cmd, stdout);
  else if (o.json)
    cli_help_json(cmd, stdout);
  else
    cli_help(cmd, stdout);
  return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
