/* polite proxy: command-line flags and --config, then the proxy engine
 * (proxy/). */
#include "cli.h"
#include "px.h"

#include <stddef.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- The server's own options (mode and bounds) --------------------------
 * One table, walked by server_option(): name, what the value is, where it
 * lands, its range. These are command-line flags only; everything else
 * goes to px_config.c (flags and the JSON --config file). */

typedef enum { K_BYTES, K_COUNT, K_SECONDS, K_MODE, K_GLOB } opt_kind;

typedef struct {
  const char *name;
  opt_kind kind;
  size_t offset; /* into px_config */
  long long max;
} server_opt;

static const server_opt server_opts[] = {
    {"mode", K_MODE, offsetof(px_config, forward_mode), 0},
    {"allow-host", K_GLOB, 0, 0},
    {"max-head", K_BYTES, offsetof(px_config, max_head), 64LL << 20},
    {"max-headers", K_COUNT, offsetof(px_config, max_headers), 100000},
    {"max-body", K_BYTES, offsetof(px_config, max_body), 1LL << 40},
    {"max-connections", K_COUNT, offsetof(px_config, max_connections), 1000000},
    {"header-timeout", K_SECONDS, offsetof(px_config, header_timeout_ms),
     86400},
    {"idle-timeout", K_SECONDS, offsetof(px_config, idle_timeout_ms), 86400},
};

static const server_opt *find_server_opt(const char *name) {
  for (size_t i = 0; i < sizeof server_opts / sizeof server_opts[0]; i++)
    if (strcmp(server_opts[i].name, name) == 0)
      return &server_opts[i];
  return NULL;
}

/* "65536", "64k", "16M", "1G" (powers of 1024). */
static int parse_bytes(const char *v, long long max, long long *out) {
  char *end;
  if (v[0] < '0' || v[0] > '9')
    return -1;
  long long n = strtoll(v, &end, 10);
  long long mul = 1;
  if (*end == 'k' || *end == 'K')
    mul = 1024;
  else if (*end == 'm' || *end == 'M')
    mul = 1024 * 1024;
  else if (*end == 'g' || *end == 'G')
    mul = 1024 * 1024 * 1024;
  if (mul > 1)
    end++;
  if (*end != '\0' || n <= 0 || n > max / mul)
    return -1;
  *out = n * mul;
  return 0;
}

/* Seconds, with decimals ("10", "0.5"): milliseconds out. */
static int parse_seconds(const char *v, long long max, long long *out) {
  char *end;
  if ((v[0] < '0' || v[0] > '9') && v[0] != '.')
    return -1;
  double d = strtod(v, &end);
  if (*end != '\0' || !(d > 0) || d > (double)max)
    return -1;
  *out = (long long)(d * 1000 + 0.5);
  return *out > 0 ? 0 : -1;
}

/* Applies one server option. Returns 0, or a usage error's exit status. */
static int server_option(px_config *c, const server_opt *o, const char *value) {
  long long n = 0;
  if (value == NULL)
    return cli_usage("proxy", "--%s needs a value", o->name);
  char *base = (char *)c + o->offset;
  switch (o->kind) {
  case K_MODE:
    if (strcmp(value, "forward") == 0)
      c->forward_mode = 1;
    else if (strcmp(value, "reverse") == 0 || strcmp(value, "mock") == 0)
      c->forward_mode = 0;
    else
      return cli_usage("proxy",
                       "--mode: expected forward, reverse or mock, got '%s'",
                       value);
    return 0;
  case K_GLOB: {
    char **grown = realloc(c->allow_host, (c->nallow_host + 1) * sizeof *grown);
    if (grown == NULL || (grown[c->nallow_host] = strdup(value)) == NULL) {
      if (grown)
        c->allow_host = grown;
      return cli_usage("proxy", "out of memory");
    }
    c->allow_host = grown;
    c->nallow_host++;
    return 0;
  }
  case K_BYTES:
  case K_COUNT:
    if ((o->kind == K_BYTES ? parse_bytes(value, o->max, &n)
                            : cli_parse_uint(value, (unsigned long long)o->max,
                                             (unsigned long long *)&n)) < 0 ||
        n <= 0)
      return cli_usage("proxy", "--%s: expected %s up to %lld, got '%s'",
                       o->name,
                       o->kind == K_BYTES ? "a size in bytes (or 64k, 16M)"
                                          : "a positive count",
                       o->max, value);
    *(int64_t *)base = n;
    return 0;
  case K_SECONDS:
    if (parse_seconds(value, o->max, &n) < 0)
      return cli_usage("proxy", "--%s: expected seconds > 0, got '%s'", o->name,
                       value);
    *(int *)base = (int)n;
    return 0;
  }
  return 0;
}

static void free_server_options(px_config *c) {
  for (size_t i = 0; i < c->nallow_host; i++)
    free(c->allow_host[i]);
  free(c->allow_host);
  c->allow_host = NULL;
  c->nallow_host = 0;
}

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
      "  --mode forward            a forward proxy for HTTP_PROXY/HTTPS_PROXY "
      "clients:\n"
      "                            requests go to their real destination; "
      "CONNECT to a\n"
      "                            --watch host is decrypted with the local "
      "CA, "
      "others tunnelled\n"
      "  --allow-host GLOB         forward mode connects only to these hosts "
      "(repeatable;\n"
      "                            default: any, and then only on a loopback "
      "--listen)\n"
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
      "  --max-head BYTES          largest request head (default 64k; 431)\n"
      "  --max-headers N           most header fields (default 100; 431)\n"
      "  --max-body BYTES          largest request body (default 16M; 413)\n"
      "  --header-timeout SECONDS  time to send a request head (default 10)\n"
      "  --idle-timeout SECONDS    idle keep-alive, stalled body or reader "
      "(default 60)\n"
      "  --max-connections N       client connections at once (default "
      "4096; idle ones\n"
      "                            are closed first to serve a new client)\n"
      "  --config FILE             JSON object of the options above "
      "(not --mode,\n"
      "                            --allow-host, --max-*, --*-timeout)\n"
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
  const char *mode_value = NULL; /* the last --mode given */

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
    const server_opt *so = find_server_opt(name);
    if (so) {
      if (!eq && i + 1 >= argc) {
        rc = cli_usage("proxy", "--%s needs a value", name);
        goto out;
      }
      const char *v = eq ? eq + 1 : argv[++i];
      if (so->kind == K_MODE)
        mode_value = v;
      int urc = server_option(&c, so, v);
      if (urc != 0) {
        rc = urc;
        goto out;
      }
      continue;
    }
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
  /* A devproxyrc implies forward mode (Dev Proxy is one); --mode, wherever
   * it stands on the line, and an --upstream say otherwise. */
  if (mode_value)
    server_option(&c, find_server_opt("mode"), mode_value);
  else if (c.upstream)
    c.forward_mode = 0;
  rc = polite__px_run(&c) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
out:
  free_server_options(&c);
  polite__px_config_free(&c);
  return rc;
}
