/* polite proxy: its options, one row each (common/cli.h's cli_opt): the
 * command line (cli_parse), the JSON --config file (cli_config_apply_text),
 * presets and the devproxyrc reader all set options through these rows, and
 * --help, docs/proxy.md's table and polite-proxy(1) are generated from
 * them. A row names where its value lands (CLI_AT(px_config, field)) and
 * its kind's setter: a new option is one row. Never cli_free this table:
 * the setters own what they store (polite__px_config_free frees it). */
#include "px.h"

#include "cli_rows.h"
#include "http_syntax.h"
#include "net_upstream.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Helpers --------------------------------------------------------------
 */

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
/* total, day, or a window "N/UNIT"-free duration: 30s, 10m, 1h, 2d. */
static int quota_period(px_config *c, const char *value, char *err,
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

/* The field row o lands in. */
static void *field(void *opts, const cli_opt *o) {
  return (char *)opts + o->off;
}

/* ---- Row kinds: one setter each -------------------------------------------
 */

/* A whole number (CLI_UINT) or a byte size (CLI_SIZE) in [min, max], into
 * an integer field of 4 or 8 bytes. */
static int set_number(void *opts, const cli_opt *o, const char *value,
                      char *err, size_t errlen) {
  unsigned long long v = 0;
  uint64_t u = 0;
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
  if (o->size == sizeof(int32_t))
    *(int32_t *)field(opts, o) = (int32_t)v;
  else
    *(int64_t *)field(opts, o) = (int64_t)v;
  return 0;
}

/* true/false (or 1/0) into an int; a bare flag on the command line is
 * true. */
static int set_bool(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  int *dst = field(opts, o);
  if (value == NULL || !strcasecmp(value, "true") || !strcmp(value, "1"))
    *dst = 1;
  else if (!strcasecmp(value, "false") || !strcmp(value, "0"))
    *dst = 0;
  else {
    polite__px_errf(err, errlen, "expected true or false, got '%s'", value);
    return -1;
  }
  return 0;
}

/* One word of o->choices, "word=value|word=value", into an int (words
 * without case); the message lists the words. */
static int set_enum(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  char list[200] = "";
  for (const char *p = o->choices; *p;) {
    const char *eq = strchr(p, '='), *bar = strchr(p, '|');
    const char *end = bar ? bar : p + strlen(p);
    size_t n = (size_t)(eq - p);
    if (strlen(value) == n && strncasecmp(p, value, n) == 0) {
      *(int *)field(opts, o) = (int)strtol(eq + 1, NULL, 10);
      return 0;
    }
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%.*s", l ? ", " : "", (int)n, p);
    p = bar ? bar + 1 : end;
  }
  polite__px_errf(err, errlen, "expected one of %s, got '%s'", list, value);
  return -1;
}

/* A string the config owns. */
static int set_text(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  (void)err;
  (void)errlen;
  return polite__px_strset(field(opts, o), value);
}

/* A file path, relative ones resolved against the config file's folder. */
static int set_path(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  (void)err;
  (void)errlen;
  px_config *c = opts;
  char *p = resolve(c->set_dir, value);
  if (p == NULL)
    return -1;
  char **dst = field(opts, o);
  free(*dst);
  *dst = p;
  return 0;
}

/* Seconds with decimals ("10", "0.5") in (0, max], into int milliseconds. */
static int set_seconds(void *opts, const cli_opt *o, const char *value,
                       char *err, size_t errlen) {
  if (parse_seconds(value, o->max, field(opts, o)) < 0) {
    polite__px_errf(err, errlen, "expected seconds > 0 (up to %lld), got '%s'",
                    o->max, value);
    return -1;
  }
  return 0;
}

/* A repeatable value appended to a list: the field is a char ** and the
 * size_t count right after it (checked at compile time below). Empty
 * values are refused ("!" alone too: an exclusion of nothing). */
static int set_list(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  if (value[0] == '\0' || (value[0] == '!' && value[1] == '\0')) {
    polite__px_errf(err, errlen, "empty pattern '%s'", value);
    return -1;
  }
  char ***v = field(opts, o);
  size_t *n = (size_t *)((char *)v + sizeof(char **));
  return polite__px_list_add(v, n, value);
}

#define LIST_FIELDS(v, n)                                                      \
  _Static_assert(offsetof(px_config, n) ==                                     \
                     offsetof(px_config, v) + sizeof(char **),                 \
                 #n " must follow " #v)
LIST_FIELDS(watch, nwatch);
LIST_FIELDS(allow_host, nallow_host);
LIST_FIELDS(connect_to, nconnect_to);

/* ---- Setters of their own (values no kind describes) --------------------- */

/* --connect-to: checked now, used at start. */
static int set_connect_to(void *opts, const cli_opt *o, const char *value,
                          char *err, size_t errlen) {
  char why[400];
  net_connect_to *probe = NULL;
  int bad = polite__net_connect_to_add(&probe, value, why, sizeof why);
  polite__net_connect_to_free(probe);
  if (bad) {
    polite__px_errf(err, errlen, "%s", why);
    return -1;
  }
  return set_list(opts, o, value, err, errlen);
}

static int set_mode(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  px_config *c = opts;
  if (set_enum(opts, o, value, err, errlen) < 0)
    return -1;
  c->mode_set = 1;
  return 0;
}

static int set_listen(void *opts, const cli_opt *o, const char *value,
                      char *err, size_t errlen) {
  const char *colon = strrchr(value, ':');
  uint64_t u;
  if (colon == NULL || colon == value || parse_u64(colon + 1, 65535, &u) < 0) {
    polite__px_errf(err, errlen,
                    "expected ADDR:PORT (e.g. 127.0.0.1:8000), got '%s'",
                    value);
    return -1;
  }
  return set_text(opts, o, value, err, errlen);
}

static int set_upstream(void *opts, const cli_opt *o, const char *value,
                        char *err, size_t errlen) {
  if (!((strncasecmp(value, "http://", 7) == 0 && value[7] != '\0') ||
        (strncasecmp(value, "https://", 8) == 0 && value[8] != '\0'))) {
    char *shown = polite__px_redact_url(value);
    polite__px_errf(err, errlen,
                    "expected an http:// or https:// URL, got '%s'",
                    shown ? shown : "?");
    free(shown);
    return -1;
  }
  return set_text(opts, o, value, err, errlen);
}

/* --config, --devproxy-config, --preset: the command line reads these
 * first (src/cmd_proxy.c), so that flags override what they set; its
 * second pass skips them. */
static int set_source(void *opts, const cli_opt *o, const char *value,
                      char *err, size_t errlen) {
  px_config *c = opts;
  if (c->skip_sources)
    return 0;
  int preset = strcmp(o->name, "preset") == 0;
  int config = strcmp(o->name, "config") == 0;
  if (config && c->set_dir != NULL) {
    polite__px_errf(err, errlen, "a config file cannot include another");
    return -1;
  }
  char *p = preset ? strdup(value) : resolve(c->set_dir, value);
  if (p == NULL)
    return -1;
  const char *saved = c->set_dir;
  int rc = preset   ? polite__px_preset_apply(c, p, err, errlen)
           : config ? polite__px_config_load(c, p, err, errlen)
                    : polite__px_devproxy_load(c, p, err, errlen);
  c->set_dir = saved;
  free(p);
  return rc;
}

static int set_failure(void *opts, const cli_opt *o, const char *value,
                       char *err, size_t errlen) {
  (void)o;
  px_config *c = opts;
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

static int set_seed(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  (void)o;
  px_config *c = opts;
  uint64_t u;
  if (parse_u64(value, UINT64_MAX, &u) < 0) {
    polite__px_errf(err, errlen, "expected a whole number, got '%s'", value);
    return -1;
  }
  c->seed = u;
  c->has_seed = 1;
  return 0;
}

static int set_rate(void *opts, const cli_opt *o, const char *value, char *err,
                    size_t errlen) {
  (void)o;
  px_config *c = opts;
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

static int set_quota(void *opts, const cli_opt *o, const char *value, char *err,
                     size_t errlen) {
  (void)o;
  uint64_t u;
  if (parse_u64(value, INT64_MAX, &u) < 0) {
    polite__px_errf(err, errlen,
                    "expected a whole number of requests, got '%s'", value);
    return -1;
  }
  ((px_config *)opts)->quota = (int64_t)u;
  return 0;
}

static int set_quota_period(void *opts, const cli_opt *o, const char *value,
                            char *err, size_t errlen) {
  (void)o;
  return quota_period(opts, value, err, errlen);
}

/* --token-window SECONDS, kept in microseconds. */
static int set_window(void *opts, const cli_opt *o, const char *value,
                      char *err, size_t errlen) {
  int64_t s = 0;
  cli_opt as = *o;
  as.off = 0;
  as.size = sizeof s;
  if (set_number(&s, &as, value, err, errlen) < 0)
    return -1;
  ((px_config *)opts)->tok.window_us = s * 1000000;
  return 0;
}

static int set_latency(void *opts, const cli_opt *o, const char *value,
                       char *err, size_t errlen) {
  (void)o;
  px_config *c = opts;
  uint64_t lo, hi;
  char a[32], b[32];
  const char *dash = strchr(value, '-');
  size_t la = dash ? (size_t)(dash - value) : strlen(value);
  if (la > 0 && la < sizeof a && !(dash && strlen(dash + 1) >= sizeof b)) {
    memcpy(a, value, la);
    a[la] = '\0';
    snprintf(b, sizeof b, "%s", dash ? dash + 1 : a);
    if (parse_u64(a, 600000, &lo) == 0 && parse_u64(b, 600000, &hi) == 0 &&
        hi >= lo) {
      c->latency_min_ms = (int64_t)lo;
      c->latency_max_ms = (int64_t)hi;
      return 0;
    }
  }
  polite__px_errf(err, errlen,
                  "expected MIN-MAX milliseconds (e.g. 50-200) or one number, "
                  "got '%s'",
                  value);
  return -1;
}

/* The names of the devproxy headers: RateLimit-* or X-RateLimit-*. */
static int set_header_names(void *opts, const cli_opt *o, const char *value,
                            char *err, size_t errlen) {
  (void)o;
  px_config *c = opts;
  const char *pre = !strcasecmp(value, "ratelimit")     ? "RateLimit"
                    : !strcasecmp(value, "x-ratelimit") ? "X-RateLimit"
                                                        : NULL;
  if (pre == NULL) {
    polite__px_errf(err, errlen, "expected ratelimit or x-ratelimit, got '%s'",
                    value);
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

/* One row: name, kind (what help and the JSON reader see: CLI_FLAG,
 * CLI_UINT or CLI_SIZE with the range min..max, CLI_LIST for repeatable
 * values, else CLI_CUSTOM), the value's placeholder, range, the default as
 * help shows it, help, group; then where the value lands, the kind's
 * setter and, for a word, its "word=value|..." choices. */
#define PXROW(name, kind, arg, lo, hi, def, help, group, at, set, ch)          \
  { name, 0, kind, arg, lo, hi, NULL, def, NULL, help, group, at, set, ch, 0 }
/* A row whose setter fills fields of its own. */
#define NO_FIELD 0, 0

const cli_opt polite__px_options[] = {
    CLI_ROW_LISTEN(px_config, listen, set_listen, "127.0.0.1:8000",
                   "where to listen (port 0: any free port, printed as "
                   "'polite proxy: listening on ...')",
                   "Where it listens and what it proxies"),
    PXROW("upstream", CLI_CUSTOM, "URL", 0, 0, "mock mode",
          "reverse proxy to this http:// or https:// URL", NULL,
          CLI_AT(px_config, upstream), set_upstream, NULL),
    CLI_ROWS_UPSTREAM_TLS(px_config, upstream_cacert, set_path,
                          upstream_insecure, set_bool),
    PXROW(
        "mode", CLI_CUSTOM, "MODE", 0, 0,
        "reverse (forward with --devproxy-config)",
        "forward, reverse or mock; forward: a proxy for HTTP_PROXY/HTTPS_PROXY "
        "clients, CONNECT to a --watch host decrypted with the local CA, "
        "others tunnelled",
        NULL, CLI_AT(px_config, forward_mode), set_mode,
        "forward=1|reverse=0|mock=0"),
    CLI_ROW_ALLOW_HOST(px_config, allow_host, set_list),
    CLI_ROW_CONNECT_TO(px_config, connect_to, set_connect_to),
    CLI_ROW_WATCH(px_config, watch, set_list),
    PXROW("config", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "a JSON object of these options (keys without case, '-' or '_'); "
          "flags override it",
          NULL, NO_FIELD, set_source, NULL),
    PXROW("devproxy-config", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "Dev Proxy's devproxyrc.json or .yaml, as it is", NULL, NO_FIELD,
          set_source, NULL),
    PXROW("preset", CLI_CUSTOM, "NAME", 0, 0, NULL,
          "openai, github or graph limits; --preset list shows them", NULL,
          NO_FIELD, set_source, NULL),
    PXROW("failure-rate", CLI_CUSTOM, "PCT", 0, 0, "0, 50 with --errors-file",
          "fail PCT% (0-100) of watched requests", "Failures and mocks",
          NO_FIELD, set_failure, NULL),
    PXROW("seed", CLI_CUSTOM, "N", 0, 0, "random",
          "make --failure-rate and --latency deterministic", NULL, NO_FIELD,
          set_seed, NULL),
    PXROW("retry-after", CLI_UINT, "SECONDS", 0, 86400 * 366, "5",
          "Retry-After of injected 429s and @dynamic", NULL,
          CLI_AT(px_config, retry_after_s), set_number, NULL),
    PXROW("errors-file", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "Dev Proxy errors file to draw failures from", NULL,
          CLI_AT(px_config, errors_file), set_path, NULL),
    PXROW("mocks-file", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "Dev Proxy mocks file (mock mode answers)", NULL,
          CLI_AT(px_config, mocks_file), set_path, NULL),
    PXROW("latency", CLI_CUSTOM, "MIN-MAX", 0, 0, "0",
          "added latency in ms (uniform; one number: fixed)", NULL, NO_FIELD,
          set_latency, NULL),
    PXROW("rate-limit", CLI_CUSTOM, "N/UNIT", 0, 0, "off",
          "simulate a rate limit (10/s, 120/min, 1000/h, 5000/day)",
          "Limits (docs/proxy-limits.md)", NO_FIELD, set_rate, NULL),
    PXROW("burst", CLI_UINT, "N", 1, 1000000, "1",
          "requests allowed at once under --rate-limit", NULL,
          CLI_AT(px_config, burst), set_number, NULL),
    PXROW("rate-limit-scope", CLI_CUSTOM, "SCOPE", 0, 0, "global",
          "global, url, host or client", NULL, CLI_AT(px_config, rate_scope),
          set_enum, "global=3|url=0|host=1|client=2"),
    PXROW("rate-limit-mode", CLI_CUSTOM, "MODE", 0, 0, "gcra",
          "gcra, fixed or sliding", NULL, CLI_AT(px_config, rate_mode),
          set_enum, "gcra=0|fixed=1|sliding=2"),
    PXROW("rate-limit-cost", CLI_UINT, "N", 1, 1000000, "1",
          "units one request costs", NULL, CLI_AT(px_config, rate_cost),
          set_number, NULL),
    PXROW("rate-limit-headers", CLI_CUSTOM, "KIND", 0, 0,
          "ietf (devproxy with fixed)", "ietf, devproxy, both, openai or none",
          NULL, CLI_AT(px_config, rate_headers), set_enum,
          "ietf=1|devproxy=2|both=3|openai=4|none=0"),
    PXROW("header-names", CLI_CUSTOM, "NAMES", 0, 0, "ratelimit",
          "devproxy headers as RateLimit-* (ratelimit) or X-RateLimit-* "
          "(x-ratelimit)",
          NULL, NO_FIELD, set_header_names, NULL),
    PXROW("warning-threshold", CLI_UINT, "PCT", 0, 100, "80",
          "devproxy headers from this % of the limit used", NULL,
          CLI_AT(px_config, warn_pct), set_number, NULL),
    PXROW("reset-format", CLI_CUSTOM, "FORMAT", 0, 0, "seconds-left",
          "RateLimit-Reset as seconds-left or utc-epoch-seconds", NULL,
          CLI_AT(px_config, reset_epoch), set_enum,
          "seconds-left=0|secondsleft=0|utc-epoch-seconds=1|utcepochseconds=1"),
    PXROW("limit-response-file", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "the response sent when a limit is exceeded (Dev Proxy's "
          "customResponseFile)",
          NULL, CLI_AT(px_config, limit_response_file), set_path, NULL),
    PXROW("concurrency-limit", CLI_UINT, "N", 0, 1000000, "none",
          "requests in flight at once per --concurrency-scope key", NULL,
          CLI_AT(px_config, concurrency), set_number, NULL),
    PXROW("concurrency-scope", CLI_CUSTOM, "SCOPE", 0, 0, "global",
          "global, url, host or client", NULL, CLI_AT(px_config, conc_scope),
          set_enum, "global=3|url=0|host=1|client=2"),
    PXROW("concurrency-status", CLI_CUSTOM, "CODE", 0, 0, "429",
          "status of a request over the concurrency limit: 429, 503 or 403",
          NULL, CLI_AT(px_config, conc_status), set_enum,
          "429=429|503=503|403=403"),
    PXROW("concurrency-retry-after", CLI_UINT, "SECONDS", 1, 86400, "1",
          "Retry-After of a request over the concurrency limit", NULL,
          CLI_AT(px_config, conc_retry_after_s), set_number, NULL),
    PXROW("quota", CLI_CUSTOM, "N", 0, 0, "none",
          "requests allowed per --quota-period, then 429 insufficient_quota",
          NULL, NO_FIELD, set_quota, NULL),
    PXROW("quota-period", CLI_CUSTOM, "PERIOD", 0, 0, "total",
          "total, day, or a window such as 30s, 10m, 1h, 2d", NULL, NO_FIELD,
          set_quota_period, NULL),
    PXROW("quota-reset-hour", CLI_UINT, "HOUR", 0, 23, "0",
          "UTC hour a day quota resets at", NULL,
          CLI_AT(px_config, quota_cfg.reset_hour), set_number, NULL),
    PXROW("prompt-token-limit", CLI_UINT, "N", 0, INT64_C(1000000000000),
          "none", "prompt tokens per --token-window (OpenAI-style upstreams)",
          NULL, CLI_AT(px_config, tok.prompt_limit), set_number, NULL),
    PXROW("completion-token-limit", CLI_UINT, "N", 0, INT64_C(1000000000000),
          "none", "completion tokens per --token-window", NULL,
          CLI_AT(px_config, tok.completion_limit), set_number, NULL),
    PXROW("token-window", CLI_UINT, "SECONDS", 1, 86400 * 366, "60",
          "the token limits' window", NULL, NO_FIELD, set_window, NULL),
    PXROW("retry-after-scope", CLI_CUSTOM, "SCOPE", 0, 0, "url",
          "what an early retry is judged by: url (method and URL), host or "
          "client",
          "Judging clients", CLI_AT(px_config, scope), set_enum,
          "url=0|host=1|client=2"),
    PXROW("penalty", CLI_FLAG, NULL, 1, 1, NULL,
          "an early retry restarts the whole wait", NULL,
          CLI_AT(px_config, penalty), set_bool, NULL),
    PXROW("max-urls", CLI_UINT, "N", 1, 10000000, "10000",
          "URLs with their own counts in the report (the one used longest ago "
          "goes first; the report says how many went)",
          NULL, CLI_AT(px_config, track.max_urls), set_number, NULL),
    PXROW("max-head", CLI_SIZE, "BYTES", 1, 64LL << 20, "64k",
          "largest request head (431 above)", "Bounds",
          CLI_AT(px_config, max_head), set_number, NULL),
    PXROW("max-headers", CLI_UINT, "N", 1, 100000, "100",
          "most header fields in a request (431 above)", NULL,
          CLI_AT(px_config, max_headers), set_number, NULL),
    PXROW("max-body", CLI_SIZE, "BYTES", 1, 1LL << 40, "16M",
          "largest request body (413 above)", NULL, CLI_AT(px_config, max_body),
          set_number, NULL),
    PXROW("max-connections", CLI_UINT, "N", 1, 1000000, "4096",
          "client connections at once (idle ones are closed first to serve a "
          "new client)",
          NULL, CLI_AT(px_config, max_connections), set_number, NULL),
    PXROW("header-timeout", CLI_CUSTOM, "SECONDS", 0, 86400, "10",
          "time a client has to send a request head", NULL,
          CLI_AT(px_config, header_timeout_ms), set_seconds, NULL),
    PXROW("idle-timeout", CLI_CUSTOM, "SECONDS", 0, 86400, "60",
          "idle keep-alive, stalled body or stalled reader", NULL,
          CLI_AT(px_config, idle_timeout_ms), set_seconds, NULL),
    PXROW("max-file-size", CLI_SIZE, "BYTES", 1, 1LL << 30, "16M",
          "largest errors, mocks, config, devproxyrc or response file (and "
          "@file body) read",
          NULL, CLI_AT(px_config, max_file), set_number, NULL),
    PXROW("report", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "JSON report written on SIGINT/SIGTERM", "Output",
          CLI_AT(px_config, report), set_text, NULL),
    PXROW("report-md", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "Markdown summary written on SIGINT/SIGTERM", NULL,
          CLI_AT(px_config, report_md), set_text, NULL),
    PXROW("report-html", CLI_CUSTOM, "FILE", 0, 0, NULL,
          "HTML report written on SIGINT/SIGTERM", NULL,
          CLI_AT(px_config, report_html), set_text, NULL),
    PXROW("log", CLI_CUSTOM, "FILE", 0, 0, "stderr",
          "one line per request (none: no request log)", NULL,
          CLI_AT(px_config, log), set_text, NULL),
    CLI_ROW_READY_FILE(px_config, ready_file, set_text),
    /* Tests only (docs/proxy.md, "A controlled clock"): hidden from help. */
    {"test-clock", 0, CLI_FLAG, NULL, 1, 1, NULL, NULL, NULL,
     "time moves only through POST /__polite/clock", NULL,
     CLI_AT(px_config, test_clock), set_bool, NULL, CLI_F_HIDDEN},
    CLI_ROW_END,
};
