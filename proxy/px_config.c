/* polite proxy: options, shared by command-line flags and the JSON --config
 * file. */
#include "px.h"

#include "cli.h"
#include "http_syntax.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

void polite__px_config_init(px_config *c) {
  memset(c, 0, sizeof *c);
  c->listen = strdup("127.0.0.1:8000");
  c->retry_after_s = 5; /* Dev Proxy's retryAfterInSeconds */
  c->burst = 1;
  c->rate_scope = PX_SCOPE_GLOBAL;
  c->rate_cost = 1;
  c->rate_headers = -1;
  c->warn_pct = 80;
  c->conc_scope = PX_SCOPE_GLOBAL;
  c->conc_status = 429;
  c->conc_retry_after_s = 1;
  c->tok.window_us = 60000000; /* Dev Proxy's resetTimeWindowSeconds */
  c->quota = -1;
  c->scope = PX_SCOPE_URL;
  c->max_file = PX_FILE_MAX_DEFAULT;
  c->track.judge = 1; /* polite's own command line judges early retries */
}

void polite__px_config_free(px_config *c) {
  free(c->listen);
  free(c->upstream);
  free(c->upstream_cacert);
  for (size_t i = 0; i < c->nwatch; i++)
    free(c->watch[i]);
  free(c->watch);
  free(c->watch_what);
  polite__px_plugin_watch_free(c);
  for (size_t i = 0; i < c->nallow_host; i++)
    free(c->allow_host[i]);
  free(c->allow_host);
  free(c->errors_file);
  free(c->mocks_file);
  free(c->report);
  free(c->report_md);
  free(c->report_html);
  free(c->log);
  free(c->ready_file);
  free(c->hdr_limit);
  free(c->hdr_remaining);
  free(c->hdr_reset);
  free(c->limit_response_file);
  free(c->warning);
  polite__px_rules_free(&c->limit_response);
  polite__px_rules_free(&c->errors);
  polite__px_rules_free(&c->mocks);
  memset(c, 0, sizeof *c);
}

/* ---- The option table -----------------------------------------------------
 * Every `polite proxy` option is one row (src/cli.h's cli_opt): the command
 * line (src/cmd_proxy.c through cli_parse), the JSON --config file, presets
 * and the devproxyrc reader all set options through these rows, and --help,
 * docs/proxy.md's table and polite-proxy(1) are generated from them. Rows
 * are indexed by opt_id (designated initializers), so px_set finds a row's
 * case in one switch; the value's text is parsed there because most proxy
 * values need more than a cli_kind (paths relative to the config file,
 * owned strings, N/UNIT windows). Never call cli_free on this table: the
 * setters own what they store (polite__px_config_free frees it). */

typedef enum {
  O_LISTEN,
  O_UPSTREAM,
  O_UPSTREAM_CACERT,
  O_UPSTREAM_INSECURE,
  O_MODE,
  O_ALLOW_HOST,
  O_WATCH,
  O_CONFIG,
  O_DEVPROXY,
  O_PRESET,
  O_FAILURE,
  O_SEED,
  O_RETRY_AFTER,
  O_ERRORS,
  O_MOCKS,
  O_LATENCY,
  O_RATE,
  O_BURST,
  O_RATE_SCOPE,
  O_RATE_MODE,
  O_RATE_COST,
  O_RATE_HEADERS,
  O_HEADER_NAMES,
  O_WARN,
  O_RESET_FORMAT,
  O_LIMIT_RESPONSE,
  O_CONC,
  O_CONC_SCOPE,
  O_CONC_STATUS,
  O_CONC_RA,
  O_QUOTA,
  O_QUOTA_PERIOD,
  O_QUOTA_HOUR,
  O_TOK_PROMPT,
  O_TOK_COMPLETION,
  O_TOK_WINDOW,
  O_SCOPE,
  O_PENALTY,
  O_MAX_URLS,
  O_MAX_HEAD,
  O_MAX_HEADERS,
  O_MAX_BODY,
  O_MAX_CONN,
  O_HEADER_TIMEOUT,
  O_IDLE_TIMEOUT,
  O_MAX_FILE,
  O_REPORT,
  O_REPORT_MD,
  O_REPORT_HTML,
  O_LOG,
  O_READY,
  O_COUNT
} opt_id;

static int px_set(void *opts, const cli_opt *o, const char *val, char *err,
                  size_t errlen);

/* One row: id, name, kind (CLI_FLAG for booleans, CLI_UINT/CLI_SIZE where
 * min..max is the range px_set checks, else CLI_CUSTOM), the value's
 * placeholder, range, the default as help shows it, help, group. */
#define ROW(id, name, kind, arg, lo, hi, def, help, group)                     \
  [id] = {name, 0,    kind,  arg, lo, hi,     NULL, def,                       \
          NULL, help, group, 0,   0,  px_set, NULL, 0}

const cli_opt polite__px_options[O_COUNT + 1] = {
    ROW(O_LISTEN, "listen", CLI_CUSTOM, "ADDR:PORT", 0, 0, "127.0.0.1:8000",
        "where to listen (port 0: any free port, printed as 'polite proxy: "
        "listening on ...')",
        "Where it listens and what it proxies"),
    ROW(O_UPSTREAM, "upstream", CLI_CUSTOM, "URL", 0, 0, "mock mode",
        "reverse proxy to this http:// or https:// URL", NULL),
    ROW(O_UPSTREAM_CACERT, "upstream-cacert", CLI_CUSTOM, "FILE", 0, 0,
        "the system store", "https upstream: trust the CAs in FILE", NULL),
    ROW(O_UPSTREAM_INSECURE, "upstream-insecure", CLI_FLAG, NULL, 1, 1, NULL,
        "https upstream: do not verify its certificate", NULL),
    ROW(O_MODE, "mode", CLI_CUSTOM, "MODE", 0, 0,
        "reverse (forward with --devproxy-config)",
        "forward, reverse or mock; forward: a proxy for HTTP_PROXY/HTTPS_PROXY "
        "clients, CONNECT to a --watch host decrypted with the local CA, "
        "others tunnelled",
        NULL),
    ROW(O_ALLOW_HOST, "allow-host", CLI_CUSTOM, "GLOB", 0, 0,
        "any, on a loopback --listen only",
        "forward mode connects only to these hosts (repeatable)", NULL),
    ROW(O_WATCH, "watch", CLI_CUSTOM, "GLOB", 0, 0, "all",
        "URLs to act on (repeatable; '*' wildcard, '!' excludes, first match "
        "wins)",
        NULL),
    ROW(O_CONFIG, "config", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "a JSON object of these options (keys without case, '-' or '_'); "
        "flags override it",
        NULL),
    ROW(O_DEVPROXY, "devproxy-config", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "Dev Proxy's devproxyrc.json or .yaml, as it is", NULL),
    ROW(O_PRESET, "preset", CLI_CUSTOM, "NAME", 0, 0, NULL,
        "openai, github or graph limits; --preset list shows them", NULL),
    ROW(O_FAILURE, "failure-rate", CLI_CUSTOM, "PCT", 0, 0,
        "0, 50 with --errors-file", "fail PCT% (0-100) of watched requests",
        "Failures and mocks"),
    ROW(O_SEED, "seed", CLI_CUSTOM, "N", 0, 0, "random",
        "make --failure-rate and --latency deterministic", NULL),
    ROW(O_RETRY_AFTER, "retry-after", CLI_UINT, "SECONDS", 0, 86400 * 366, "5",
        "Retry-After of injected 429s and @dynamic", NULL),
    ROW(O_ERRORS, "errors-file", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "Dev Proxy errors file to draw failures from", NULL),
    ROW(O_MOCKS, "mocks-file", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "Dev Proxy mocks file (mock mode answers)", NULL),
    ROW(O_LATENCY, "latency", CLI_CUSTOM, "MIN-MAX", 0, 0, "0",
        "added latency in ms (uniform; one number: fixed)", NULL),
    ROW(O_RATE, "rate-limit", CLI_CUSTOM, "N/UNIT", 0, 0, "off",
        "simulate a rate limit (10/s, 120/min, 1000/h, 5000/day)",
        "Limits (docs/proxy-limits.md)"),
    ROW(O_BURST, "burst", CLI_UINT, "N", 1, 1000000, "1",
        "requests allowed at once under --rate-limit", NULL),
    ROW(O_RATE_SCOPE, "rate-limit-scope", CLI_CUSTOM, "SCOPE", 0, 0, "global",
        "global, url, host or client", NULL),
    ROW(O_RATE_MODE, "rate-limit-mode", CLI_CUSTOM, "MODE", 0, 0, "gcra",
        "gcra, fixed or sliding", NULL),
    ROW(O_RATE_COST, "rate-limit-cost", CLI_UINT, "N", 1, 1000000, "1",
        "units one request costs", NULL),
    ROW(O_RATE_HEADERS, "rate-limit-headers", CLI_CUSTOM, "KIND", 0, 0,
        "ietf (devproxy with fixed)", "ietf, devproxy, both, openai or none",
        NULL),
    ROW(O_HEADER_NAMES, "header-names", CLI_CUSTOM, "NAMES", 0, 0, "ratelimit",
        "devproxy headers as RateLimit-* (ratelimit) or X-RateLimit-* "
        "(x-ratelimit)",
        NULL),
    ROW(O_WARN, "warning-threshold", CLI_UINT, "PCT", 0, 100, "80",
        "devproxy headers from this % of the limit used", NULL),
    ROW(O_RESET_FORMAT, "reset-format", CLI_CUSTOM, "FORMAT", 0, 0,
        "seconds-left", "RateLimit-Reset as seconds-left or utc-epoch-seconds",
        NULL),
    ROW(O_LIMIT_RESPONSE, "limit-response-file", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "the response sent when a limit is exceeded (Dev Proxy's "
        "customResponseFile)",
        NULL),
    ROW(O_CONC, "concurrency-limit", CLI_UINT, "N", 0, 1000000, "none",
        "requests in flight at once per --concurrency-scope key", NULL),
    ROW(O_CONC_SCOPE, "concurrency-scope", CLI_CUSTOM, "SCOPE", 0, 0, "global",
        "global, url, host or client", NULL),
    ROW(O_CONC_STATUS, "concurrency-status", CLI_CUSTOM, "CODE", 0, 0, "429",
        "status of a request over the concurrency limit: 429, 503 or 403",
        NULL),
    ROW(O_CONC_RA, "concurrency-retry-after", CLI_UINT, "SECONDS", 1, 86400,
        "1", "Retry-After of a request over the concurrency limit", NULL),
    ROW(O_QUOTA, "quota", CLI_CUSTOM, "N", 0, 0, "none",
        "requests allowed per --quota-period, then 429 insufficient_quota",
        NULL),
    ROW(O_QUOTA_PERIOD, "quota-period", CLI_CUSTOM, "PERIOD", 0, 0, "total",
        "total, day, or a window such as 30s, 10m, 1h, 2d", NULL),
    ROW(O_QUOTA_HOUR, "quota-reset-hour", CLI_UINT, "HOUR", 0, 23, "0",
        "UTC hour a day quota resets at", NULL),
    ROW(O_TOK_PROMPT, "prompt-token-limit", CLI_UINT, "N", 0,
        INT64_C(1000000000000), "none",
        "prompt tokens per --token-window (OpenAI-style upstreams)", NULL),
    ROW(O_TOK_COMPLETION, "completion-token-limit", CLI_UINT, "N", 0,
        INT64_C(1000000000000), "none", "completion tokens per --token-window",
        NULL),
    ROW(O_TOK_WINDOW, "token-window", CLI_UINT, "SECONDS", 1, 86400 * 366, "60",
        "the token limits' window", NULL),
    ROW(O_SCOPE, "retry-after-scope", CLI_CUSTOM, "SCOPE", 0, 0, "url",
        "what an early retry is judged by: url (method and URL), host or "
        "client",
        "Judging clients"),
    ROW(O_PENALTY, "penalty", CLI_FLAG, NULL, 1, 1, NULL,
        "an early retry restarts the whole wait", NULL),
    ROW(O_MAX_URLS, "max-urls", CLI_UINT, "N", 1, 10000000, "10000",
        "URLs with their own counts in the report (the one used longest ago "
        "goes first; the report says how many went)",
        NULL),
    ROW(O_MAX_HEAD, "max-head", CLI_SIZE, "BYTES", 1, 64LL << 20, "64k",
        "largest request head (431 above)", "Bounds"),
    ROW(O_MAX_HEADERS, "max-headers", CLI_UINT, "N", 1, 100000, "100",
        "most header fields in a request (431 above)", NULL),
    ROW(O_MAX_BODY, "max-body", CLI_SIZE, "BYTES", 1, 1LL << 40, "16M",
        "largest request body (413 above)", NULL),
    ROW(O_MAX_CONN, "max-connections", CLI_UINT, "N", 1, 1000000, "4096",
        "client connections at once (idle ones are closed first to serve a "
        "new client)",
        NULL),
    ROW(O_HEADER_TIMEOUT, "header-timeout", CLI_CUSTOM, "SECONDS", 0, 86400,
        "10", "time a client has to send a request head", NULL),
    ROW(O_IDLE_TIMEOUT, "idle-timeout", CLI_CUSTOM, "SECONDS", 0, 86400, "60",
        "idle keep-alive, stalled body or stalled reader", NULL),
    ROW(O_MAX_FILE, "max-file-size", CLI_SIZE, "BYTES", 1, 1LL << 30, "16M",
        "largest errors, mocks, config, devproxyrc or response file (and "
        "@file body) read",
        NULL),
    ROW(O_REPORT, "report", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "JSON report written on SIGINT/SIGTERM", "Output"),
    ROW(O_REPORT_MD, "report-md", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "Markdown summary written on SIGINT/SIGTERM", NULL),
    ROW(O_REPORT_HTML, "report-html", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "HTML report written on SIGINT/SIGTERM", NULL),
    ROW(O_LOG, "log", CLI_CUSTOM, "FILE", 0, 0, "stderr",
        "one line per request", NULL),
    ROW(O_READY, "ready-file", CLI_CUSTOM, "FILE", 0, 0, NULL,
        "write the bound ADDR:PORT here once listening", NULL),
    [O_COUNT] = CLI_ROW_END,
};

/* The row of option `name` (any case, '-' and '_' alike), or NULL. */
static const cli_opt *find_row(const char *name) {
  return cli_opt_find(polite__px_options, name, strlen(name), 1);
}

static opt_id row_id(const cli_opt *o) {
  return (opt_id)(o - polite__px_options);
}

int polite__px_config_known(const char *name) {
  return find_row(name) != NULL;
}

int polite__px_config_is_bool(const char *name) {
  const cli_opt *o = find_row(name);
  return o && o->kind == CLI_FLAG;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out) {
  if (s == NULL || !isdigit((unsigned char)s[0]))
    return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end != '\0' || v > max)
    return -1;
  *out = v;
  return 0;
}

static int parse_scope(const char *s, int allow_global, px_scope *out) {
  if (strcasecmp(s, "url") == 0)
    *out = PX_SCOPE_URL;
  else if (strcasecmp(s, "host") == 0)
    *out = PX_SCOPE_HOST;
  else if (strcasecmp(s, "client") == 0)
    *out = PX_SCOPE_CLIENT;
  else if (allow_global && strcasecmp(s, "global") == 0)
    *out = PX_SCOPE_GLOBAL;
  else
    return -1;
  return 0;
}

/* "N/UNIT": q and w for RateLimit-Policy. The rate itself comes from
 * polite_rate_parse so that the proxy and `polite run` agree on units. */
static int parse_rate_window(const char *s, int64_t *n, int64_t *w) {
  uint64_t v;
  const char *slash = strchr(s, '/');
  if (slash == NULL)
    return -1;
  char num[32];
  size_t len = (size_t)(slash - s);
  if (len == 0 || len >= sizeof num)
    return -1;
  memcpy(num, s, len);
  num[len] = '\0';
  if (parse_u64(num, 1000000000, &v) < 0 || v == 0)
    return -1;
  const char *u = slash + 1;
  int64_t win;
  if (!strcmp(u, "s") || !strcmp(u, "sec") || !strcmp(u, "second"))
    win = 1;
  else if (!strcmp(u, "m") || !strcmp(u, "min") || !strcmp(u, "minute"))
    win = 60;
  else if (!strcmp(u, "h") || !strcmp(u, "hour"))
    win = 3600;
  else if (!strcmp(u, "d") || !strcmp(u, "day"))
    win = 86400;
  else
    return -1;
  *n = (int64_t)v;
  *w = win;
  return 0;
}

static char *resolve(const char *base_dir, const char *value) {
  if (base_dir == NULL || value[0] == '/' || base_dir[0] == '\0')
    return strdup(value);
  size_t n = strlen(base_dir) + strlen(value) + 2;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s/%s", base_dir, value);
  return p;
}

int polite__px_strset(char **dst, const char *v) {
  char *p = strdup(v);
  if (p == NULL)
    return -1;
  free(*dst);
  *dst = p;
  return 0;
}

/* Options whose value is one word of a table: the word, the option, and
 * the int written (word_target says where). */
static const struct {
  const char *word;
  opt_id id;
  int value;
} words[] = {
    {"gcra", O_RATE_MODE, PX_LIM_GCRA},
    {"fixed", O_RATE_MODE, PX_LIM_FIXED},
    {"sliding", O_RATE_MODE, PX_LIM_SLIDING},
    {"ietf", O_RATE_HEADERS, PX_HDR_IETF},
    {"devproxy", O_RATE_HEADERS, PX_HDR_DEVPROXY},
    {"both", O_RATE_HEADERS, PX_HDR_IETF | PX_HDR_DEVPROXY},
    {"openai", O_RATE_HEADERS, PX_HDR_OPENAI},
    {"none", O_RATE_HEADERS, 0},
    {"seconds-left", O_RESET_FORMAT, 0},
    {"secondsleft", O_RESET_FORMAT, 0},
    {"utc-epoch-seconds", O_RESET_FORMAT, 1},
    {"utcepochseconds", O_RESET_FORMAT, 1},
    {"429", O_CONC_STATUS, 429},
    {"503", O_CONC_STATUS, 503},
    {"403", O_CONC_STATUS, 403}, /* GitHub's secondary limits */
};

static int *word_target(px_config *c, opt_id id) {
  switch (id) {
  case O_RATE_MODE: return (int *)&c->rate_mode;
  case O_RATE_HEADERS: return &c->rate_headers;
  case O_RESET_FORMAT: return &c->reset_epoch;
  case O_CONC_STATUS: return &c->conc_status;
  default: return NULL;
  }
}

static int set_word(px_config *c, opt_id id, const char *value, char *err,
                    size_t errlen) {
  char list[160] = "";
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    if (words[i].id != id)
      continue;
    if (strcasecmp(words[i].word, value) == 0) {
      *word_target(c, id) = words[i].value;
      return 0;
    }
    size_t n = strlen(list);
    snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", words[i].word);
  }
  polite__px_errf(err, errlen, "expected one of %s, got '%s'", list, value);
  return -1;
}

/* Where a whole-number row's value goes (px_set has checked its range,
 * the row's min..max). */
static int store_number(px_config *c, opt_id id, uint64_t u) {
  switch (id) {
  case O_RETRY_AFTER: c->retry_after_s = (int64_t)u; break;
  case O_BURST: c->burst = (unsigned)u; break;
  case O_RATE_COST: c->rate_cost = (int64_t)u; break;
  case O_WARN: c->warn_pct = (int)u; break;
  case O_CONC: c->concurrency = (int64_t)u; break;
  case O_CONC_RA: c->conc_retry_after_s = (int64_t)u; break;
  case O_QUOTA_HOUR: c->quota_cfg.reset_hour = (int)u; break;
  case O_TOK_PROMPT: c->tok.prompt_limit = (int64_t)u; break;
  case O_TOK_COMPLETION: c->tok.completion_limit = (int64_t)u; break;
  case O_TOK_WINDOW: c->tok.window_us = (int64_t)u * 1000000; break;
  case O_MAX_HEAD: c->max_head = (int64_t)u; break;
  case O_MAX_HEADERS: c->max_headers = (int64_t)u; break;
  case O_MAX_BODY: c->max_body = (int64_t)u; break;
  case O_MAX_CONN: c->max_connections = (int64_t)u; break;
  case O_MAX_FILE: c->max_file = (size_t)u; break;
  case O_MAX_URLS: c->track.max_urls = (int64_t)u; break;
  default: return -1;
  }
  return 0;
}

/* Seconds with decimals ("10", "0.5") in (0, max]: milliseconds out. */
static int parse_seconds(const char *v, long long max, int *out) {
  char *end;
  if ((v[0] < '0' || v[0] > '9') && v[0] != '.')
    return -1;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || *end != '\0' || !(d > 0) || d > (double)max)
    return -1;
  *out = (int)(d * 1000 + 0.5);
  return *out > 0 ? 0 : -1;
}

int polite__px_list_add(char ***v_, size_t *n, const char *v) {
  char **grown = realloc(*v_, (*n + 1) * sizeof *grown);
  if (grown == NULL)
    return -1;
  *v_ = grown;
  if ((grown[*n] = strdup(v)) == NULL)
    return -1;
  (*n)++;
  return 0;
}

/* total, day, or a window "N/UNIT"-free duration: 30s, 10m, 1h, 2d. */
static int set_quota_period(px_config *c, const char *value, char *err,
                            size_t errlen) {
  if (strcasecmp(value, "total") == 0) {
    c->quota_cfg.period = PX_QUOTA_TOTAL;
    return 0;
  }
  if (strcasecmp(value, "day") == 0) {
    c->quota_cfg.period = PX_QUOTA_DAY;
    return 0;
  }
  static const struct {
    char unit;
    int64_t ms;
  } units[] = {{'s', 1000}, {'m', 60000}, {'h', 3600000}, {'d', 86400000}};
  size_t n = strlen(value);
  char num[24];
  uint64_t v;
  if (n >= 2 && n - 1 < sizeof num) {
    memcpy(num, value, n - 1);
    num[n - 1] = '\0';
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
      if (value[n - 1] == units[i].unit && parse_u64(num, 1000000, &v) == 0 &&
          v > 0) {
        c->quota_cfg.period = PX_QUOTA_WINDOW;
        c->quota_cfg.window_ms = (int64_t)v * units[i].ms;
        return 0;
      }
  }
  polite__px_errf(err, errlen,
                  "expected total, day or a duration like 30s, 10m, 1h, 2d, "
                  "got '%s'",
                  value);
  return -1;
}

/* The rows' one setter (cli_setter): parses val for row o into the
 * px_config `opts`. A relative path is resolved against c->set_dir (the
 * config file's directory, NULL on the command line). Messages name neither
 * the option nor a secret; cli_parse and polite__px_config_set add the
 * name. */
static int px_set(void *opts, const cli_opt *o, const char *val, char *err,
                  size_t errlen) {
  px_config *c = opts;
  const char *value = val;
  const char *base_dir = c->set_dir;
  opt_id id = row_id(o);
  if (value == NULL) {
    if (o->kind != CLI_FLAG) {
      polite__px_errf(err, errlen, "needs a value");
      return -1;
    }
    /* A bare boolean flag means true; with value never NULL below, no case
       has to remember (and the static analyzer need not guess) which
       options may come without one. */
    value = "true";
  }
  uint64_t u;
  if (o->kind == CLI_UINT || o->kind == CLI_SIZE) {
    unsigned long long v = 0;
    int bad = o->kind == CLI_SIZE
                  ? cli_parse_size(value, (unsigned long long)o->max, &v)
                  : parse_u64(value, (uint64_t)o->max, &u) < 0;
    if (o->kind == CLI_UINT && !bad)
      v = u;
    if (bad || v < (unsigned long long)o->min) {
      polite__px_errf(err, errlen, "expected %s %lld-%lld, got '%s'",
                      o->kind == CLI_SIZE ? "a size in bytes (or 64k, 16M)"
                                          : "a whole number",
                      o->min, o->max, value);
      return -1;
    }
    return store_number(c, id, v);
  }
  switch (id) {
  case O_COUNT: return -1;
  case O_MODE:
    if (strcmp(value, "forward") == 0)
      c->forward_mode = 1;
    else if (strcmp(value, "reverse") == 0 || strcmp(value, "mock") == 0)
      c->forward_mode = 0;
    else {
      polite__px_errf(err, errlen,
                      "expected forward, reverse or mock, got '%s'", value);
      return -1;
    }
    c->mode_set = 1;
    return 0;
  case O_ALLOW_HOST:
    if (value[0] == '\0') {
      polite__px_errf(err, errlen, "empty pattern");
      return -1;
    }
    return polite__px_list_add(&c->allow_host, &c->nallow_host, value);
  case O_HEADER_TIMEOUT:
  case O_IDLE_TIMEOUT:
    if (parse_seconds(value, o->max,
                      id == O_IDLE_TIMEOUT ? &c->idle_timeout_ms
                                           : &c->header_timeout_ms) < 0) {
      polite__px_errf(err, errlen,
                      "expected seconds > 0 (up to %lld), got '%s'", o->max,
                      value);
      return -1;
    }
    return 0;
  case O_CONFIG:
  case O_DEVPROXY:
  case O_PRESET: {
    /* The command line reads these first (src/cmd_proxy.c), so that flags
     * override what they set; its second pass skips them. */
    if (c->skip_sources)
      return 0;
    if (id == O_CONFIG && c->set_dir != NULL) {
      polite__px_errf(err, errlen, "a config file cannot include another");
      return -1;
    }
    char *p = id == O_PRESET ? strdup(value) : resolve(base_dir, value);
    if (p == NULL)
      return -1;
    const char *saved = c->set_dir;
    int rc = id == O_PRESET   ? polite__px_preset_apply(c, p, err, errlen)
             : id == O_CONFIG ? polite__px_config_load(c, p, err, errlen)
                              : polite__px_devproxy_load(c, p, err, errlen);
    c->set_dir = saved;
    free(p);
    return rc;
  }
  case O_LISTEN: {
    const char *colon = strrchr(value, ':');
    if (colon == NULL || colon == value ||
        parse_u64(colon + 1, 65535, &u) < 0) {
      polite__px_errf(err, errlen,
                      "expected ADDR:PORT (e.g. 127.0.0.1:8000), got '%s'",
                      value);
      return -1;
    }
    return polite__px_strset(&c->listen, value);
  }
  case O_UPSTREAM:
    if (!((strncasecmp(value, "http://", 7) == 0 && value[7] != '\0') ||
          (strncasecmp(value, "https://", 8) == 0 && value[8] != '\0'))) {
      char *shown = polite__px_redact_url(value);
      polite__px_errf(err, errlen,
                      "expected an http:// or https:// URL, got '%s'",
                      shown ? shown : "?");
      free(shown);
      return -1;
    }
    return polite__px_strset(&c->upstream, value);
  case O_UPSTREAM_CACERT: {
    char *p = resolve(base_dir, value);
    if (p == NULL)
      return -1;
    free(c->upstream_cacert);
    c->upstream_cacert = p;
    return 0;
  }
  case O_UPSTREAM_INSECURE:
    if (!strcasecmp(value, "true") || !strcmp(value, "1"))
      c->upstream_insecure = 1;
    else if (!strcasecmp(value, "false") || !strcmp(value, "0"))
      c->upstream_insecure = 0;
    else {
      polite__px_errf(err, errlen, "expected true or false, got '%s'", value);
      return -1;
    }
    return 0;
  case O_WATCH:
    if (value[0] == '\0' || (value[0] == '!' && value[1] == '\0')) {
      polite__px_errf(err, errlen, "empty pattern '%s'", value);
      return -1;
    }
    return polite__px_list_add(&c->watch, &c->nwatch, value);
  case O_FAILURE: {
    char *end;
    errno = 0;
    double d = strtod(value, &end);
    if (value[0] == '\0' || *end != '\0' || errno || !(d >= 0 && d <= 100)) {
      polite__px_errf(err, errlen, "expected a percentage 0-100, got '%s'",
                      value);
      return -1;
    }
    c->failure_rate = d;
    c->failure_rate_set = 1;
    return 0;
  }
  case O_SEED:
    if (parse_u64(value, UINT64_MAX, &u) < 0) {
      polite__px_errf(err, errlen, "expected a whole number, got '%s'", value);
      return -1;
    }
    c->seed = u;
    c->has_seed = 1;
    return 0;
  case O_ERRORS:
  case O_MOCKS: {
    char *p = resolve(base_dir, value);
    if (p == NULL)
      return -1;
    char **dst = id == O_ERRORS ? &c->errors_file : &c->mocks_file;
    free(*dst);
    *dst = p;
    return 0;
  }
  case O_RATE: {
    if (!strcmp(value, "0") || !strcasecmp(value, "off")) {
      c->rate_per_s = 0;
      c->rate_n = 0;
      return 0;
    }
    double per_s = 0;
    int64_t n, w;
    if (polite_rate_parse(value, &per_s) != 0 || !(per_s > 0) ||
        parse_rate_window(value, &n, &w) < 0) {
      polite__px_errf(err, errlen,
                      "expected N/UNIT with UNIT s, min, h or day (e.g. 10/s, "
                      "120/min), got '%s'",
                      value);
      return -1;
    }
    c->rate_per_s = per_s;
    c->rate_n = n;
    c->rate_window_s = w;
    return 0;
  }
  case O_RATE_SCOPE:
  case O_SCOPE: {
    int glob = id == O_RATE_SCOPE;
    px_scope sc;
    if (parse_scope(value, glob, &sc) < 0) {
      polite__px_errf(
          err, errlen, "expected %s, got '%s'",
          glob ? "global, url, host or client" : "url, host or client", value);
      return -1;
    }
    if (glob)
      c->rate_scope = sc;
    else
      c->scope = sc;
    return 0;
  }
  case O_QUOTA:
    if (parse_u64(value, INT64_MAX, &u) < 0) {
      polite__px_errf(err, errlen,
                      "expected a whole number of requests, got '%s'", value);
      return -1;
    }
    c->quota = (int64_t)u;
    return 0;
  case O_PENALTY:
    if (value == NULL || !strcasecmp(value, "true") || !strcmp(value, "1"))
      c->penalty = 1;
    else if (!strcasecmp(value, "false") || !strcmp(value, "0"))
      c->penalty = 0;
    else {
      polite__px_errf(err, errlen, "expected true or false, got '%s'", value);
      return -1;
    }
    return 0;
  case O_LATENCY: {
    uint64_t lo, hi;
    char a[32], b[32];
    const char *dash = strchr(value, '-');
    size_t la = dash ? (size_t)(dash - value) : strlen(value);
    if (la == 0 || la >= sizeof a || (dash && strlen(dash + 1) >= sizeof b))
      goto bad_latency;
    memcpy(a, value, la);
    a[la] = '\0';
    snprintf(b, sizeof b, "%s", dash ? dash + 1 : a);
    if (parse_u64(a, 600000, &lo) < 0 || parse_u64(b, 600000, &hi) < 0 ||
        hi < lo)
      goto bad_latency;
    c->latency_min_ms = (int64_t)lo;
    c->latency_max_ms = (int64_t)hi;
    return 0;
  bad_latency:
    polite__px_errf(
        err, errlen,
        "expected MIN-MAX milliseconds (e.g. 50-200) or one number, "
        "got '%s'",
        value);
    return -1;
  }
  case O_RATE_MODE:
  case O_RATE_HEADERS:
  case O_RESET_FORMAT:
  case O_CONC_STATUS: return set_word(c, id, value, err, errlen);
  default: break; /* the whole numbers, above */
  case O_LIMIT_RESPONSE: {
    char *p = resolve(base_dir, value);
    if (p == NULL)
      return -1;
    free(c->limit_response_file);
    c->limit_response_file = p;
    return 0;
  }
  case O_CONC_SCOPE:
    if (parse_scope(value, 1, &c->conc_scope) < 0) {
      polite__px_errf(err, errlen,
                      "expected global, url, host or client, got '%s'", value);
      return -1;
    }
    return 0;
  case O_QUOTA_PERIOD: return set_quota_period(c, value, err, errlen);
  case O_HEADER_NAMES: {
    /* The names of the devproxy headers: RateLimit-* or X-RateLimit-*. */
    const char *pre = NULL;
    if (strcasecmp(value, "ratelimit") == 0)
      pre = "RateLimit";
    else if (strcasecmp(value, "x-ratelimit") == 0)
      pre = "X-RateLimit";
    if (pre == NULL) {
      polite__px_errf(err, errlen,
                      "expected ratelimit or x-ratelimit, got '%s'", value);
      return -1;
    }
    char n[40];
    snprintf(n, sizeof n, "%s-Limit", pre);
    if (polite__px_strset(&c->hdr_limit, n) < 0)
      return -1;
    snprintf(n, sizeof n, "%s-Remaining", pre);
    if (polite__px_strset(&c->hdr_remaining, n) < 0)
      return -1;
    snprintf(n, sizeof n, "%s-Reset", pre);
    return polite__px_strset(&c->hdr_reset, n);
  }
  case O_REPORT: return polite__px_strset(&c->report, value);
  case O_REPORT_MD: return polite__px_strset(&c->report_md, value);
  case O_REPORT_HTML: return polite__px_strset(&c->report_html, value);
  case O_LOG: return polite__px_strset(&c->log, value);
  case O_READY: return polite__px_strset(&c->ready_file, value);
  }
  return -1;
}

int polite__px_config_set(px_config *c, const char *name, const char *value,
                          const char *base_dir, char *err, size_t errlen) {
  const cli_opt *o = find_row(name);
  if (o == NULL) {
    polite__px_errf(err, errlen, "unknown option '%s'", name);
    return -2;
  }
  char msg[768];
  const char *saved = c->set_dir;
  c->set_dir = base_dir;
  int rc = px_set(c, o, value, msg, sizeof msg);
  c->set_dir = saved;
  if (rc != 0)
    polite__px_errf(err, errlen, "--%s: %s", o->name, msg);
  return rc;
}

const char *polite__px_json_text(json_t *v, int allow_bool, char *buf,
                                 size_t size) {
  if (json_is_string(v))
    return json_string_value(v);
  if (json_is_integer(v)) {
    snprintf(buf, size, "%lld", (long long)json_integer_value(v));
    return buf;
  }
  if (json_is_real(v)) {
    snprintf(buf, size, "%.17g", json_real_value(v));
    return buf;
  }
  if (json_is_boolean(v) && allow_bool)
    return json_is_true(v) ? "true" : "false";
  return NULL;
}

/* Line of the first occurrence of "key" in the text: jansson gives positions
 * only for syntax errors, and a field name is what a reader looks for. */
static int key_line(const char *text, size_t len, const char *key) {
  size_t k = strlen(key);
  int line = 1;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\n')
      line++;
    else if (text[i] == '"' && i + k + 1 < len &&
             memcmp(text + i + 1, key, k) == 0 && text[i + k + 1] == '"')
      return line;
  }
  return 0;
}

int polite__px_config_parse_json(px_config *c, const char *text, size_t len,
                                 const char *name, const char *base_dir,
                                 char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) {
    polite__px_errf(err, errlen, "%s:%d:%d: %s", name, je.line, je.column,
                    je.text);
    return -1;
  }
  if (!json_is_object(root)) {
    polite__px_errf(err, errlen, "%s:1: expected a JSON object of options",
                    name);
    json_decref(root);
    return -1;
  }
  const char *key;
  json_t *v;
  int rc = 0;
  json_object_foreach(root, key, v) {
    if (key[0] == '$' || json_is_null(v))
      continue; /* "$schema" and the like */
    int line = key_line(text, len, key);
    char msg[512];
    char buf[64];
    if (!polite__px_config_known(key)) {
      polite__px_errf(err, errlen, "%s:%d: field '%s': unknown option", name,
                      line, key);
      rc = -1;
      break;
    }
    opt_id id = row_id(find_row(key));
    if (json_is_array(v) && (id == O_WATCH || id == O_ALLOW_HOST)) {
      size_t i;
      json_t *item;
      json_array_foreach(v, i, item) {
        if (!json_is_string(item)) {
          polite__px_errf(err, errlen,
                          "%s:%d: field '%s'[%zu]: expected a string", name,
                          line, key, i);
          rc = -1;
          break;
        }
        if (polite__px_config_set(c, key, json_string_value(item), base_dir,
                                  msg, sizeof msg) < 0) {
          polite__px_errf(err, errlen, "%s:%d: field '%s': %s", name, line, key,
                          msg);
          rc = -1;
          break;
        }
      }
      if (rc)
        break;
      continue;
    }
    const char *sv = polite__px_json_text(v, polite__px_config_is_bool(key),
                                          buf, sizeof buf);
    if (sv == NULL) {
      polite__px_errf(err, errlen, "%s:%d: field '%s': expected %s", name, line,
                      key,
                      polite__px_config_is_bool(key) ? "true or false"
                                                     : "a string or a number");
      rc = -1;
      break;
    }
    if (polite__px_config_is_bool(key) && !json_is_boolean(v)) {
      polite__px_errf(err, errlen, "%s:%d: field '%s': expected true or false",
                      name, line, key);
      rc = -1;
      break;
    }
    if (polite__px_config_set(c, key, sv, base_dir, msg, sizeof msg) < 0) {
      polite__px_errf(err, errlen, "%s:%d: field '%s': %s", name, line, key,
                      msg);
      rc = -1;
      break;
    }
  }
  json_decref(root);
  return rc;
}

int polite__px_config_load(px_config *c, const char *path, char *err,
                           size_t errlen) {
  size_t n = 0;
  char *text = NULL;
  if (polite__read_file(path, c->max_file, &text, &n) != 0) {
    polite__px_file_error(err, errlen, path, c->max_file);
    return -1;
  }
  char dir[4096];
  polite__px_dirname(path, dir, sizeof dir, "");
  int rc = polite__px_config_parse_json(c, text, n, path, dir, err, errlen);
  free(text);
  return rc;
}

/* Modification time in ns, 0 when the file cannot be read. */
static int64_t file_mtime_ns(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    return 0;
  return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

/* One rules file: reload when its time changed; keep the old rules when the
 * new text does not load. */
static int reload_one(const char *path, px_rules_kind kind, size_t max,
                      px_rules *rules, int64_t *mtime, FILE *log) {
  if (path == NULL)
    return 0;
  int64_t m = file_mtime_ns(path);
  if (m == 0 || m == *mtime)
    return 0;
  *mtime = m;
  px_rules fresh;
  char err[1024];
  if (polite__px_rules_load(&fresh, kind, path, max, err, sizeof err) < 0) {
    if (log)
      fprintf(log,
              "polite proxy: %s changed but does not load, keeping the "
              "previous one: %s\n",
              path, err);
    return 0;
  }
  polite__px_rules_free(rules);
  *rules = fresh;
  if (log)
    fprintf(log, "polite proxy: reloaded %s (%zu entries)\n", path, fresh.n);
  return 1;
}

int polite__px_config_reload(px_config *c, FILE *log) {
  return reload_one(c->errors_file, PX_RULES_ERRORS, c->max_file, &c->errors,
                    &c->errors_mtime_ns, log) +
         reload_one(c->mocks_file, PX_RULES_MOCKS, c->max_file, &c->mocks,
                    &c->mocks_mtime_ns, log);
}

int polite__px_config_finish(px_config *c, char *err, size_t errlen) {
  if (polite__px_plugin_watch_finish(c, err, errlen) < 0)
    return -1;
  /* Dev Proxy fails half the requests by default when an errors file is
   * given; without a file the default is 0 (failures are opt-in). */
  if (c->errors_file && !c->failure_rate_set)
    c->failure_rate = 50;
  if (c->errors_file &&
      polite__px_rules_load(&c->errors, PX_RULES_ERRORS, c->errors_file,
                            c->max_file, err, errlen) < 0)
    return -1;
  if (c->mocks_file &&
      polite__px_rules_load(&c->mocks, PX_RULES_MOCKS, c->mocks_file,
                            c->max_file, err, errlen) < 0)
    return -1;
  if (c->limit_response_file &&
      polite__px_response_load(&c->limit_response, c->limit_response_file,
                               c->max_file, err, errlen) < 0)
    return -1;
  c->errors_mtime_ns = c->errors_file ? file_mtime_ns(c->errors_file) : 0;
  c->mocks_mtime_ns = c->mocks_file ? file_mtime_ns(c->mocks_file) : 0;
  c->quota_cfg.limit = c->quota;
  if (c->rate_headers < 0)
    c->rate_headers =
        c->rate_mode == PX_LIM_FIXED ? PX_HDR_DEVPROXY : PX_HDR_IETF;
  if (c->rate_n > 0) {
    c->lim.mode = c->rate_mode;
    c->lim.limit = c->rate_in_units ? c->rate_n : c->rate_n * c->rate_cost;
    c->lim.window_us = c->rate_window_s * 1000000;
    c->lim.burst = c->burst;
    c->lim.cost = c->rate_cost;
    if (c->rate_mode == PX_LIM_SLIDING && c->rate_n > PX_SLIDING_MAX) {
      polite__px_errf(
          err, errlen,
          "--rate-limit: the sliding window keeps every request; at most "
          "%d per window",
          PX_SLIDING_MAX);
      return -1;
    }
  }
  return 0;
}
