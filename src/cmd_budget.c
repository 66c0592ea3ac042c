/* `polite budget show|clear URI`: inspects or clears a shared budget
 * (docs/budget.md); two subcommands, each with its own option table. */
#include "cli.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <polite/budget.h>
#include <polite/clock.h>

static void print_text(const char *uri, const char *key,
                       const polite_budget_state *st) {
  printf("budget: %s\n", uri);
  printf("account: %s\n", key[0] ? key : "(default)");
  if (st->pause_left_us > 0)
    printf("pause: %.3f s left\n", (double)st->pause_left_us / 1e6);
  else
    printf("pause: none\n");
  if (st->rate.rate_per_s > 0)
    printf("learned rate: %.3f/s (limit found %.3f/s, generation %" PRIu64
           ")\n",
           st->rate.rate_per_s, st->rate.limit_per_s, st->rate.generation);
  else
    printf("learned rate: none\n");
  printf("slots in use: %u\n", st->slots_in_use);
  for (unsigned i = 0; i < st->n_holders; i++)
    printf("holder: %s: %u slot%s, lease %.1f s left\n", st->holders[i].id,
           st->holders[i].slots, st->holders[i].slots == 1 ? "" : "s",
           (double)st->holders[i].lease_left_us / 1e6);
  if (st->config_stored)
    printf("config: rate %g/s%s, burst %u, concurrency %u%s\n",
           st->config.rate_per_s,
           st->config.rate_per_s > 0 ? "" : " (unlimited)", st->config.burst,
           st->config.concurrency,
           st->config.concurrency > 0 ? "" : " (unlimited)");
  else
    printf("config: not stored (each participant passes its own)\n");
}

static void print_json(const char *uri, const char *key,
                       const polite_budget_state *st) {
  printf("{\"budget\":");
  cli_json_string(stdout, uri);
  printf(",\"key\":");
  cli_json_string(stdout, key);
  printf(",\"pause_left_ms\":%" PRId64 ",\"rate_per_s\":%.6g,"
         "\"limit_per_s\":%.6g,\"generation\":%" PRIu64
         ",\"slots_in_use\":%u,\"holders\":[",
         (st->pause_left_us + 999) / 1000, st->rate.rate_per_s,
         st->rate.limit_per_s, st->rate.generation, st->slots_in_use);
  for (unsigned i = 0; i < st->n_holders; i++) {
    printf("%s{\"id\":", i ? "," : "");
    cli_json_string(stdout, st->holders[i].id);
    printf(",\"slots\":%u,\"lease_left_ms\":%" PRId64 "}", st->holders[i].slots,
           (st->holders[i].lease_left_us + 999) / 1000);
  }
  printf("],\"config\":");
  if (st->config_stored)
    printf("{\"rate_per_s\":%.6g,\"burst\":%u,\"concurrency\":%u}",
           st->config.rate_per_s, st->config.burst, st->config.concurrency);
  else
    printf("null");
  printf("}\n");
}

typedef struct {
  int json;
  const char *key;
} budget_opts;

/* --key, the same in both subcommands. */
#define KEY_ROW                                                                \
  {                                                                            \
    "key", 0, CLI_STRING, "KEY", 0, 0, "", "the default account", NULL,        \
        "the account; with polite run --budget-scope host, the host name "     \
        "(host[:port])",                                                       \
        "Options", CLI_AT(budget_opts, key), NULL, NULL, 0                     \
  }

static const cli_opt show_table[] = {KEY_ROW,
                                     {"json", 0, CLI_FLAG, NULL, 1, 0, NULL,
                                      NULL, NULL, "print one JSON object", NULL,
                                      CLI_AT(budget_opts, json), NULL, NULL, 0},
                                     CLI_ROW_END};
static const cli_opt clear_table[] = {KEY_ROW, CLI_ROW_END};

#define URI_NOTE                                                               \
  "URI is file:PATH or redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME, the one\n"  \
  "the participants use; a file is never created.\n"
#define EXIT_NOTE                                                              \
  "Exit status: 0, 1 when the budget cannot be used, 2 for a usage error.\n"

static const cli_command budget_show = {
    "budget show",
    "[OPTIONS] URI",
    "print a shared budget's pause, learned rate, slots and holders",
    "Prints a shared budget's pause, learned rate, slots in use and their\n"
    "holders, and its settings.\n" URI_NOTE,
    show_table,
    EXIT_NOTE,
    NULL,
    1,
    NULL,
    NULL};

static const cli_command budget_clear = {
    "budget clear",
    "[OPTIONS] URI",
    "remove a shared budget's pause and learned rate",
    "Removes the account's pause and learned rate, for every participant at\n"
    "once (slots and their leases stay).\n" URI_NOTE,
    clear_table,
    EXIT_NOTE,
    NULL,
    1,
    NULL,
    NULL};

/* Parses a subcommand's command line; opens its budget. Returns -1 to go
 * on with *b open, else an exit status. */
static int open_budget(const cli_command *cmd, int argc, char **argv,
                       budget_opts *o, polite_budget **b) {
  cli_args pos = {{NULL}, 0};
  int rc = cli_defaults(cmd, o);
  if (rc == 0)
    rc = cli_parse(cmd, argc, argv, o, &pos);
  if (rc >= 0)
    return rc;
  if (pos.n == 0)
    return cli_usage(cmd->name, "needs a budget URI (file:PATH or "
                                "redis://HOST:PORT/NAME)");
  if (strcmp(pos.v[0], "local") == 0)
    return cli_usage(cmd->name, "a local budget lives inside one process; "
                                "give file:PATH or redis://");
  char err[256];
  if (polite_budget_open_inspect(pos.v[0], b, err, sizeof err) != 0) {
    fprintf(stderr, "polite %s: %s\n", cmd->name, err);
    return CLI_EXIT_FAILED;
  }
  return -1;
}

/* Ends a subcommand: its error (rc != 0) on stderr, the budget closed. */
static int close_budget(const cli_command *cmd, polite_budget *b, int rc) {
  if (rc != 0)
    fprintf(stderr, "polite %s: %s\n", cmd->name, polite_budget_errstr(b));
  polite_budget_close(b);
  return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

static int cmd_budget_show(int argc, char **argv) {
  budget_opts o = {0, ""};
  polite_budget *b = NULL;
  int rc = open_budget(&budget_show, argc, argv, &o, &b);
  if (rc >= 0)
    return rc;
  polite_budget_state st;
  rc = polite_budget_inspect(b, o.key, polite_mono_us(), &st);
  if (rc == 0 && o.json)
    print_json(b->uri, o.key, &st);
  else if (rc == 0)
    print_text(b->uri, o.key, &st);
  return close_budget(&budget_show, b, rc);
}

static int cmd_budget_clear(int argc, char **argv) {
  budget_opts o = {0, ""};
  polite_budget *b = NULL;
  int rc = open_budget(&budget_clear, argc, argv, &o, &b);
  if (rc >= 0)
    return rc;
  rc = polite_budget_clear(b, o.key, polite_mono_us());
  if (rc == 0)
    printf("cleared the pause and the learned rate of %s\n", b->uri);
  return close_budget(&budget_clear, b, rc);
}

static const cli_sub budget_subs[] = {
    {"show", &budget_show, cmd_budget_show},
    {"clear", &budget_clear, cmd_budget_clear},
    {NULL, NULL, NULL}};

const cli_command cli_cmd_budget = {
    "budget",
    "show|clear [OPTIONS] URI",
    "show or clear a shared budget",
    "Inspects or clears a shared budget (file: or redis://): what every\n"
    "participant waits on, what rate they learned, who holds slots.\n",
    NULL,
    "'polite budget show --help' describes one subcommand. See "
    "docs/budget.md.\n",
    NULL,
    0,
    NULL,
    budget_subs};

int cmd_budget(int argc, char **argv) {
  return cli_subcommand(&cli_cmd_budget, argc, argv);
}
