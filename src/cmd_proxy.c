/* polite proxy: its options (proxy/px_config.c's table, read by src/cli.c's
 * parser), then the proxy engine (proxy/). */
#include "cli.h"
#include "px.h"

#include <stdlib.h>
#include <string.h>

static const cli_sub proxy_subs[] = {{"ca", &cli_cmd_proxy_ca, cmd_proxy_ca},
                                     {NULL, NULL, NULL}};

const cli_command cli_cmd_proxy = {
    "proxy",
    "[OPTIONS] | ca [OPTIONS]",
    "throttling test proxy that catches early retries",
    "A throttling HTTP proxy for tests: injects 429s, simulates rate limits "
    "and\nquotas, and flags every client that retries before its "
    "Retry-After.\nEvery option is also a key of the --config file "
    "({\"listen\":\"127.0.0.1:8000\",\n\"failureRate\":50}); flags given on "
    "the command line override it.\n",
    polite__px_options,
    "Live report: GET http://ADDR:PORT/__polite/report. See docs/proxy.md.\n"
    "The local CA for HTTPS interception: polite proxy ca --help.\n",
    NULL,
    0,
    NULL,
    proxy_subs};

/* The option at argv[i] when it is --config, --devproxy-config,
 * --preset or --max-file-size ("--name VALUE" or "--name=VALUE"): its row and
 * value; *i moves past the value. Any other option's value is stepped over, so
 * that a value that looks like one of these is not read as it. NULL for others.
 */
static const cli_opt *source_option(int argc, char **argv, int *i,
                                    const char **value) {
  const char *a = argv[*i];
  if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
    return NULL;
  const char *eq = strchr(a + 2, '=');
  size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
  const cli_opt *o = cli_opt_find(polite__px_options, a + 2, n, 0);
  if (o == NULL || o->kind == CLI_FLAG)
    return NULL;
  if (!eq && *i + 1 >= argc)
    return NULL; /* cli_parse says it needs a value */
  *value = eq ? eq + 1 : argv[++*i];
  /* --max-file-size too, so that it bounds the files read here. */
  static const char *const sources[] = {"config", "devproxy-config", "preset",
                                        "max-file-size"};
  for (size_t k = 0; k < sizeof sources / sizeof sources[0]; k++)
    if (strcmp(o->name, sources[k]) == 0)
      return o;
  return NULL;
}

/* Reads --config, --devproxy-config and --preset first, in the order given,
 * so that the flags cli_parse applies afterwards override them. Returns -1
 * to go on, or an exit status (--preset list printed, or an error). */
static int read_sources(px_config *c, int argc, char **argv) {
  char err[1024];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0 || strcmp(a, "--help") == 0 ||
        strcmp(a, "-h") == 0)
      return -1; /* cli_parse prints help */
    const char *value = NULL;
    const cli_opt *o = source_option(argc, argv, &i, &value);
    if (o == NULL)
      continue;
    if (strcmp(o->name, "preset") == 0 && strcmp(value, "list") == 0) {
      polite__px_preset_list(stdout);
      return CLI_EXIT_OK;
    }
    if (polite__px_config_set(c, o->name, value, NULL, err, sizeof err) < 0) {
      fprintf(stderr, "polite proxy: %s\n", err);
      return CLI_EXIT_USAGE;
    }
  }
  return -1;
}

int cmd_proxy(int argc, char **argv) {
  int rc = cli_subcommand(&cli_cmd_proxy, argc, argv);
  if (rc >= 0)
    return rc; /* polite proxy ca */
  px_config c;
  polite__px_config_init(&c);
  char err[1024];
  cli_args pos;
  rc = read_sources(&c, argc, argv);
  if (rc >= 0)
    goto out;
  c.skip_sources = 1;
  rc = cli_parse(&cli_cmd_proxy, argc, argv, &c, &pos);
  if (rc >= 0)
    goto out;
  if (polite__px_config_finish(&c, err, sizeof err) < 0) {
    fprintf(stderr, "polite proxy: %s\n", err);
    rc = CLI_EXIT_USAGE;
    goto out;
  }
  /* A devproxyrc implies forward mode (Dev Proxy is one); --mode, wherever
   * it stands, and an --upstream say otherwise. */
  if (!c.mode_set && c.upstream)
    c.forward_mode = 0;
  if (polite__px_watch_check(&c, err, sizeof err) < 0) {
    fprintf(stderr, "polite proxy: %s\n", err);
    rc = CLI_EXIT_USAGE;
    goto out;
  }
  rc = polite__px_run(&c) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
out:
  polite__px_config_free(&c);
  return rc;
}
