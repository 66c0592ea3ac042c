/* `polite budget show|clear URI`: inspects or clears a shared budget
 * (docs/budget.md). */
#include "cli.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <polite/budget.h>
#include <polite/clock.h>

static void usage(FILE *f) {
  fprintf(f,
          "Usage: polite budget show [--json] [--key KEY] URI\n"
          "       polite budget clear [--key KEY] URI\n\n"
          "show prints a shared budget's pause, learned rate, slots in use\n"
          "and their holders, and its settings; clear removes the pause and\n"
          "the learned rate (slots and their leases stay).\n"
          "URI is file:PATH or redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME;\n"
          "a file is never created.\n\n"
          "Options:\n"
          "  --key KEY   the account (with --budget-scope host: the host\n"
          "              name; default: the default account)\n"
          "  --json      print one JSON object (show)\n"
          "  -h, --help  this help\n\n"
          "Exit status: 0, 1 when the budget cannot be used, 2 for a usage\n"
          "error.\n");
}

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

int cmd_budget(int argc, char **argv) {
  const char *verb = NULL, *uri = NULL, *key = "";
  int json = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      return CLI_EXIT_OK;
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "--key") == 0 || strncmp(a, "--key=", 6) == 0) {
      if (a[5] == '=')
        key = a + 6;
      else if (++i < argc)
        key = argv[i];
      else
        return cli_usage("budget", "--key needs a value");
    } else if (a[0] == '-' && a[1] != '\0') {
      return cli_usage("budget", "unknown option '%s'", a);
    } else if (verb == NULL) {
      verb = a;
    } else if (uri == NULL) {
      uri = a;
    } else {
      return cli_usage("budget", "one URI only (got '%s' too)", a);
    }
  }
  if (verb == NULL || (strcmp(verb, "show") != 0 && strcmp(verb, "clear") != 0))
    return cli_usage("budget", "expected 'show' or 'clear'%s%s%s",
                     verb ? " (got '" : "", verb ? verb : "", verb ? "')" : "");
  if (uri == NULL)
    return cli_usage("budget", "%s needs a budget URI", verb);
  if (json && strcmp(verb, "clear") == 0)
    return cli_usage("budget", "--json is for show");
  if (strcmp(uri, "local") == 0)
    return cli_usage("budget", "a local budget lives inside one process; "
                               "show and clear take file:PATH or redis://");
  polite_budget *b = NULL;
  char err[256];
  if (polite_budget_open_inspect(uri, &b, err, sizeof err) != 0) {
    fprintf(stderr, "polite budget: %s\n", err);
    return CLI_EXIT_FAILED;
  }
  int64_t now = polite_mono_us();
  int rc;
  if (strcmp(verb, "clear") == 0) {
    rc = polite_budget_clear(b, key, now);
    if (rc == 0)
      printf("cleared the pause and the learned rate of %s\n", b->uri);
  } else {
    polite_budget_state st;
    rc = polite_budget_inspect(b, key, now, &st);
    if (rc == 0 && json)
      print_json(b->uri, key, &st);
    else if (rc == 0)
      print_text(b->uri, key, &st);
  }
  if (rc != 0)
    fprintf(stderr, "polite budget: %s\n", polite_budget_errstr(b));
  polite_budget_close(b);
  return rc == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
