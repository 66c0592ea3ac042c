/* polite proxy: command-line flags and --config, then the proxy engine
 * (proxy/). */
#include "cli.h"
#include "px.h"

#include <stdlib.h>
#include <string.h>

static void help(FILE *f) {
  fprintf(
      f,
      "Usage: polite proxy [OPTIONS]\n\n"
      "A throttling HTTP proxy for tests: injects 429s, simulates rate limits "
      "and\n"
      "quotas, and flags every client that retries before its Retry-After.\n\n"
      "  --listen ADDR:PORT        where to listen (default 127.0.0.1:8000; "
      "port 0 = any,\n"
      "                            the address is printed as 'polite proxy: "
      "listening on ...')\n"
      "  --upstream URL            reverse proxy to this http:// or https:// "
      "URL (default:\n"
      "                            mock mode)\n"
      "  --upstream-cacert FILE    https upstream: trust FILE's CAs, not the "
      "system store\n"
      "  --upstream-insecure       https upstream: do not verify its "
      "certificate\n"
      "  --watch GLOB              URLs to act on (repeatable; '*' wildcard, "
      "'!' excludes,\n"
      "                            first match wins; default: all)\n"
      "  --failure-rate PCT        fail PCT%% of watched requests (0-100; "
      "default 0,\n"
      "                            50 with --errors-file)\n"
      "  --seed N                  make --failure-rate and --latency "
      "deterministic\n"
      "  --retry-after SECONDS     Retry-After of injected 429s and @dynamic "
      "(default 2)\n"
      "  --errors-file FILE        Dev Proxy errors file to draw failures "
      "from\n"
      "  --mocks-file FILE         Dev Proxy mocks file (mock mode answers)\n"
      "  --rate-limit N/UNIT       simulate a rate limit (10/s, 120/min, "
      "1000/h, 5000/day)\n"
      "  --burst N                 requests allowed at once under --rate-limit "
      "(default 1)\n"
      "  --rate-limit-scope S      global (default), url, host or client\n"
      "  --quota N                 total requests allowed, then 429 "
      "insufficient_quota\n"
      "  --retry-after-scope S     url (default: method+URL), host or client\n"
      "  --penalty                 an early retry restarts the whole wait\n"
      "  --latency MIN-MAX         added latency in ms (uniform)\n"
      "  --report FILE             JSON report written on SIGINT/SIGTERM\n"
      "  --report-md FILE          Markdown summary written on SIGINT/SIGTERM\n"
      "  --log FILE                one line per request (default stderr)\n"
      "  --ready-file FILE         write the bound ADDR:PORT here once "
      "listening\n"
      "  --devproxy-config FILE    Dev Proxy's devproxyrc.json or .yaml, as it "
      "is\n"
      "  --preset NAME             openai, github or graph limits; --preset "
      "list shows them\n"
      "  --rate-limit-mode M       gcra (default), fixed or sliding; more "
      "limits\n"
      "                            (concurrency, quotas) in "
      "docs/proxy-limits.md\n"
      "  --config FILE             JSON object of the options above\n"
      "                            "
      "({\"listen\":\"127.0.0.1:8000\",\"failureRate\":50})\n\n"
      "Live report: GET http://ADDR:PORT/__polite/report. See "
      "docs/proxy.md.\n"
      "The local CA for HTTPS interception: polite proxy ca --help.\n");
}

int cmd_proxy_ca(int argc, char **argv); /* src/cmd_proxy_ca.c */

int cmd_proxy(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "ca") == 0)
    return cmd_proxy_ca(argc - 1, argv + 1);
  px_config c;
  polite__px_config_init(&c);
  char err[1024];
  int rc = CLI_EXIT_USAGE;

  /* --config first, so that flags given on the command line override it. */
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      help(stdout);
      polite__px_config_free(&c);
      return CLI_EXIT_OK;
    }
    const char *path = NULL;
    /* pxlimits: --preset and --devproxy-config are read here too, so that
     * flags override them. */
    if (strcmp(a, "--preset") == 0 && i + 1 < argc) {
      const char *name = argv[++i];
      if (strcmp(name, "list") == 0) {
        polite__px_preset_list(stdout);
        polite__px_config_free(&c);
        return CLI_EXIT_OK;
      }
      if (polite__px_preset_apply(&c, name, err, sizeof err) < 0) {
        polite__px_config_free(&c);
        return cli_usage("proxy", "%s", err);
      }
      continue;
    }
    int dp = strcmp(a, "--devproxy-config") == 0;
    if (strcmp(a, "--config") == 0 || dp) {
      if (i + 1 >= argc) {
        polite__px_config_free(&c);
        return cli_usage("proxy", "%s needs a FILE", a);
      }
      path = argv[++i];
    } else if (strncmp(a, "--config=", 9) == 0) {
      path = a + 9;
    }
    if (path && (dp ? polite__px_devproxy_load(&c, path, err, sizeof err)
                    : polite__px_config_load(&c, path, err, sizeof err)) < 0) {
      fprintf(stderr, "polite proxy: %s\n", err);
      polite__px_config_free(&c);
      return CLI_EXIT_USAGE;
    }
  }

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    /* argv[i] is never NULL for i < argc (C11 5.1.2.2.1). */
    // NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker)
    if (strcmp(a, "--config") == 0 || strcmp(a, "--devproxy-config") == 0 ||
        strcmp(a, "--preset") == 0) {
      i++;
      continue;
    }
    if (strncmp(a, "--config=", 9) == 0)
      continue;
    if (strncmp(a, "--", 2) != 0) {
      rc = cli_usage("proxy", "unexpected argument '%s'", a);
      goto out;
    }
    char name[64];
    const char *value = NULL;
    const char *eq = strchr(a + 2, '=');
    size_t nl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (nl == 0 || nl >= sizeof name) {
      rc = cli_usage("proxy", "unknown option '%s'", a);
      goto out;
    }
    memcpy(name, a + 2, nl);
    name[nl] = '\0';
    if (!polite__px_config_known(name) || strchr(name, '_')) {
      rc = cli_usage("proxy", "unknown option '--%s'", name);
      goto out;
    }
    if (eq) {
      value = eq + 1;
    } else if (!polite__px_config_is_bool(name)) {
      if (i + 1 >= argc) {
        rc = cli_usage("proxy", "--%s needs a value", name);
        goto out;
      }
      value = argv[++i];
    }
    if (polite__px_config_set(&c, name, value, NULL, err, sizeof err) < 0) {
      rc = cli_usage("proxy", "%s", err);
      goto out;
    }
  }
  if (polite__px_config_finish(&c, err, sizeof err) < 0) {
    fprintf(stderr, "polite proxy: %s\n", err);
    rc = CLI_EXIT_USAGE;
    goto out;
  }
  rc = polite__px_run(&c) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
out:
  polite__px_config_free(&c);
  return rc;
}
