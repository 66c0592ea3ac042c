/* polite proxy: options, shared by command-line flags and the JSON --config
 * file. */
#include "px.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void cfg_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void cfg_err(char *err, size_t errlen, const char *fmt, ...) {
  if (err == NULL || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

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
  c->quota = -1;
  c->scope = PX_SCOPE_URL;
}

void polite__px_config_free(px_config *c) {
  free(c->listen);
  free(c->upstream);
  free(c->upstream_cacert);
  for (size_t i = 0; i < c->nwatch; i++)
    free(c->watch[i]);
  free(c->watch);
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

/* Option names compared without case, dashes or underscores, so that
 * "failure-rate", "failureRate" and "failure_rate" are one option. */
static void norm(const char *in, char *out, size_t size) {
  size_t o = 0;
  for (; *in && o + 1 < size; in++) {
    if (*in == '-' || *in == '_')
      continue;
    out[o++] = (char)tolower((unsigned char)*in);
  }
  out[o] = '\0';
}

typedef enum {
  O_LISTEN,
  O_UPSTREAM,
  O_UPSTREAM_CACERT,
  O_UPSTREAM_INSECURE,
  O_WATCH,
  O_FAILURE,
  O_SEED,
  O_RETRY_AFTER,
  O_ERRORS,
  O_MOCKS,
  O_RATE,
  O_BURST,
  O_RATE_SCOPE,
  O_QUOTA,
  O_SCOPE,
  O_PENALTY,
  O_LATENCY,
  O_REPORT,
  O_REPORT_MD,
  O_REPORT_HTML,
  O_LOG,
  O_READY,
  O_RATE_MODE,
  O_RATE_COST,
  O_RATE_HEADERS,
  O_WARN,
  O_RESET_FORMAT,
  O_LIMIT_RESPONSE,
  O_CONC,
  O_CONC_SCOPE,
  O_CONC_STATUS,
  O_CONC_RA,
  O_QUOTA_PERIOD,
  O_QUOTA_HOUR
} opt_id;

static const struct {
  const char *name; /* kebab-case, as on the command line */
  opt_id id;
  int is_bool;
} opts[] = {
    {"listen", O_LISTEN, 0},
    {"upstream", O_UPSTREAM, 0},
    {"upstream-cacert", O_UPSTREAM_CACERT, 0},
    {"upstream-insecure", O_UPSTREAM_INSECURE, 1},
    {"watch", O_WATCH, 0},
    {"failure-rate", O_FAILURE, 0},
    {"seed", O_SEED, 0},
    {"retry-after", O_RETRY_AFTER, 0},
    {"errors-file", O_ERRORS, 0},
    {"mocks-file", O_MOCKS, 0},
    {"rate-limit", O_RATE, 0},
    {"burst", O_BURST, 0},
    {"rate-limit-scope", O_RATE_SCOPE, 0},
    {"quota", O_QUOTA, 0},
    {"retry-after-scope", O_SCOPE, 0},
    {"penalty", O_PENALTY, 1},
    {"latency", O_LATENCY, 0},
    {"report", O_REPORT, 0},
    {"report-md", O_REPORT_MD, 0},
    {"report-html", O_REPORT_HTML, 0},
    {"log", O_LOG, 0},
    {"ready-file", O_READY, 0},
    {"rate-limit-mode", O_RATE_MODE, 0},
    {"rate-limit-cost", O_RATE_COST, 0},
    {"rate-limit-headers", O_RATE_HEADERS, 0},
    {"warning-threshold", O_WARN, 0},
    {"reset-format", O_RESET_FORMAT, 0},
    {"limit-response-file", O_LIMIT_RESPONSE, 0},
    {"concurrency-limit", O_CONC, 0},
    {"concurrency-scope", O_CONC_SCOPE, 0},
    {"concurrency-status", O_CONC_STATUS, 0},
    {"concurrency-retry-after", O_CONC_RA, 0},
    {"quota-period", O_QUOTA_PERIOD, 0},
    {"quota-reset-hour", O_QUOTA_HOUR, 0},
};

static int find_opt(const char *name) {
  char a[64], b[64];
  norm(name, a, sizeof a);
  for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
    norm(opts[i].name, b, sizeof b);
    if (strcmp(a, b) == 0)
      return (int)i;
  }
  return -1;
}

int polite__px_config_known(const char *name) {
  return find_opt(name) >= 0;
}

int polite__px_config_is_bool(const char *name) {
  int i = find_opt(name);
  return i >= 0 && opts[i].is_bool;
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

static int set_str(char **dst, const char *v) {
  char *p = strdup(v);
  if (p == NULL)
    return -1;
  free(*dst);
  *dst = p;
  return 0;
}

/* Options whose value is one word of a table: the word, the option, the
 * int written and where. */
static const struct {
  opt_id id;
  const char *word;
  int value;
} words[] = {
    {O_RATE_MODE, "gcra", PX_LIM_GCRA},
    {O_RATE_MODE, "fixed", PX_LIM_FIXED},
    {O_RATE_MODE, "sliding", PX_LIM_SLIDING},
    {O_RATE_HEADERS, "ietf", PX_HDR_IETF},
    {O_RATE_HEADERS, "devproxy", PX_HDR_DEVPROXY},
    {O_RATE_HEADERS, "both", PX_HDR_IETF | PX_HDR_DEVPROXY},
    {O_RATE_HEADERS, "none", 0},
    {O_RESET_FORMAT, "seconds-left", 0},
    {O_RESET_FORMAT, "secondsleft", 0},
    {O_RESET_FORMAT, "utc-epoch-seconds", 1},
    {O_RESET_FORMAT, "utcepochseconds", 1},
    {O_CONC_STATUS, "429", 429},
    {O_CONC_STATUS, "503", 503},
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

static int set_word(px_config *c, opt_id id, const char *on, const char *value,
                    char *err, size_t errlen) {
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
  cfg_err(err, errlen, "--%s: expected one of %s, got '%s'", on, list, value);
  return -1;
}

/* Whole-number options: bounds and where the value goes. */
static int set_number(px_config *c, opt_id id, const char *on,
                      const char *value, char *err, size_t errlen) {
  static const struct {
    opt_id id;
    uint64_t lo, hi;
  } bounds[] = {
      {O_RATE_COST, 1, 1000000}, {O_WARN, 0, 100}, {O_CONC, 0, 1000000},
      {O_CONC_RA, 1, 86400},     {O_QUOTA_HOUR, 0, 23},
  };
  uint64_t u = 0, lo = 0, hi = 0;
  for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++)
    if (bounds[i].id == id) {
      lo = bounds[i].lo;
      hi = bounds[i].hi;
    }
  if (parse_u64(value, hi, &u) < 0 || u < lo) {
    cfg_err(err, errlen, "--%s: expected a whole number %llu-%llu, got '%s'",
            on, (unsigned long long)lo, (unsigned long long)hi, value);
    return -1;
  }
  switch (id) {
  case O_RATE_COST: c->rate_cost = (int64_t)u; break;
  case O_WARN: c->warn_pct = (int)u; break;
  case O_CONC: c->concurrency = (int64_t)u; break;
  case O_CONC_RA: c->conc_retry_after_s = (int64_t)u; break;
  case O_QUOTA_HOUR: c->quota_cfg.reset_hour = (int)u; break;
  default: return -1;
  }
  return 0;
}

/* total, day, or a window "N/UNIT"-free duration: 30s, 10m, 1h, 2d. */
static int set_quota_period(px_config *c, const char *on, const char *value,
                            char *err, size_t errlen) {
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
  cfg_err(err, errlen,
          "--%s: expected total, day or a duration like 30s, 10m, 1h, 2d, "
          "got '%s'",
          on, value);
  return -1;
}

int polite__px_config_set(px_config *c, const char *name, const char *value,
                          const char *base_dir, char *err, size_t errlen) {
  int i = find_opt(name);
  if (i < 0) {
    cfg_err(err, errlen, "unknown option '%s'", name);
    return -2;
  }
  const char *on = opts[i].name;
  if (value == NULL) {
    if (!opts[i].is_bool) {
      cfg_err(err, errlen, "--%s needs a value", on);
      return -1;
    }
    /* A bare boolean flag means true; with value never NULL below, no case
       has to remember (and the static analyzer need not guess) which
       options may come without one. */
    value = "true";
  }
  uint64_t u;
  switch (opts[i].id) {
  case O_LISTEN: {
    const char *colon = strrchr(value, ':');
    if (colon == NULL || colon == value ||
        parse_u64(colon + 1, 65535, &u) < 0) {
      cfg_err(err, errlen,
              "--%s: expected ADDR:PORT (e.g. 127.0.0.1:8000), got '%s'", on,
              value);
      return -1;
    }
    return set_str(&c->listen, value);
  }
  case O_UPSTREAM:
    if (!((strncasecmp(value, "http://", 7) == 0 && value[7] != '\0') ||
          (strncasecmp(value, "https://", 8) == 0 && value[8] != '\0'))) {
      char *shown = polite__px_redact_url(value);
      cfg_err(err, errlen, "--%s: expected an http:// or https:// URL, got '%s'",
              on, shown ? shown : "?");
      free(shown);
      return -1;
    }
    return set_str(&c->upstream, value);
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
      cfg_err(err, errlen, "--%s: expected true or false, got '%s'", on, value);
      return -1;
    }
    return 0;
  case O_WATCH: {
    if (value[0] == '\0' || (value[0] == '!' && value[1] == '\0')) {
      cfg_err(err, errlen, "--%s: empty pattern '%s'", on, value);
      return -1;
    }
    char **nw = realloc(c->watch, (c->nwatch + 1) * sizeof *nw);
    if (nw == NULL)
      return -1;
    c->watch = nw;
    if ((c->watch[c->nwatch] = strdup(value)) == NULL)
      return -1;
    c->nwatch++;
    return 0;
  }
  case O_FAILURE: {
    char *end;
    errno = 0;
    double d = strtod(value, &end);
    if (value[0] == '\0' || *end != '\0' || errno || !(d >= 0 && d <= 100)) {
      cfg_err(err, errlen, "--%s: expected a percentage 0-100, got '%s'", on,
              value);
      return -1;
    }
    c->failure_rate = d;
    c->failure_rate_set = 1;
    return 0;
  }
  case O_SEED:
    if (parse_u64(value, UINT64_MAX, &u) < 0) {
      cfg_err(err, errlen, "--%s: expected a whole number, got '%s'", on,
              value);
      return -1;
    }
    c->seed = u;
    c->has_seed = 1;
    return 0;
  case O_RETRY_AFTER:
    if (parse_u64(value, 86400 * 366, &u) < 0) {
      cfg_err(err, errlen, "--%s: expected whole seconds 0-31622400, got '%s'",
              on, value);
      return -1;
    }
    c->retry_after_s = (int64_t)u;
    return 0;
  case O_ERRORS:
  case O_MOCKS: {
    char *p = resolve(base_dir, value);
    if (p == NULL)
      return -1;
    char **dst = opts[i].id == O_ERRORS ? &c->errors_file : &c->mocks_file;
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
      cfg_err(err, errlen,
              "--%s: expected N/UNIT with UNIT s, min, h or day (e.g. 10/s, "
              "120/min), got '%s'",
              on, value);
      return -1;
    }
    c->rate_per_s = per_s;
    c->rate_n = n;
    c->rate_window_s = w;
    return 0;
  }
  case O_BURST:
    if (parse_u64(value, 1000000, &u) < 0 || u == 0) {
      cfg_err(err, errlen, "--%s: expected a whole number >= 1, got '%s'", on,
              value);
      return -1;
    }
    c->burst = (unsigned)u;
    return 0;
  case O_RATE_SCOPE:
  case O_SCOPE: {
    int glob = opts[i].id == O_RATE_SCOPE;
    px_scope sc;
    if (parse_scope(value, glob, &sc) < 0) {
      cfg_err(err, errlen, "--%s: expected %s, got '%s'", on,
              glob ? "global, url, host or client" : "url, host or client",
              value);
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
      cfg_err(err, errlen,
              "--%s: expected a whole number of requests, got '%s'", on, value);
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
      cfg_err(err, errlen, "--%s: expected true or false, got '%s'", on, value);
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
    cfg_err(err, errlen,
            "--%s: expected MIN-MAX milliseconds (e.g. 50-200) or one number, "
            "got '%s'",
            on, value);
    return -1;
  }
  case O_RATE_MODE:
  case O_RATE_HEADERS:
  case O_RESET_FORMAT:
  case O_CONC_STATUS:
    return set_word(c, opts[i].id, on, value, err, errlen);
  case O_RATE_COST:
  case O_WARN:
  case O_CONC:
  case O_CONC_RA:
  case O_QUOTA_HOUR:
    return set_number(c, opts[i].id, on, value, err, errlen);
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
      cfg_err(err, errlen, "--%s: expected global, url, host or client, got '%s'",
              on, value);
      return -1;
    }
    return 0;
  case O_QUOTA_PERIOD: return set_quota_period(c, on, value, err, errlen);
  case O_REPORT: return set_str(&c->report, value);
  case O_REPORT_MD: return set_str(&c->report_md, value);
  case O_REPORT_HTML: return set_str(&c->report_html, value);
  case O_LOG: return set_str(&c->log, value);
  case O_READY: return set_str(&c->ready_file, value);
  }
  return -1;
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
    cfg_err(err, errlen, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    return -1;
  }
  if (!json_is_object(root)) {
    cfg_err(err, errlen, "%s:1: expected a JSON object of options", name);
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
      cfg_err(err, errlen, "%s:%d: field '%s': unknown option", name, line,
              key);
      rc = -1;
      break;
    }
    int is_watch = find_opt(key) == find_opt("watch");
    if (json_is_array(v) && is_watch) {
      size_t i;
      json_t *item;
      json_array_foreach(v, i, item) {
        if (!json_is_string(item)) {
          cfg_err(err, errlen, "%s:%d: field '%s'[%zu]: expected a string",
                  name, line, key, i);
          rc = -1;
          break;
        }
        if (polite__px_config_set(c, key, json_string_value(item), base_dir,
                                  msg, sizeof msg) < 0) {
          cfg_err(err, errlen, "%s:%d: field '%s': %s", name, line, key, msg);
          rc = -1;
          break;
        }
      }
      if (rc)
        break;
      continue;
    }
    const char *sv = NULL;
    if (json_is_string(v))
      sv = json_string_value(v);
    else if (json_is_integer(v)) {
      snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
      sv = buf;
    } else if (json_is_real(v)) {
      snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
      sv = buf;
    } else if (json_is_boolean(v) && polite__px_config_is_bool(key)) {
      sv = json_is_true(v) ? "true" : "false";
    } else {
      cfg_err(err, errlen, "%s:%d: field '%s': expected %s", name, line, key,
              polite__px_config_is_bool(key) ? "true or false"
                                             : "a string or a number");
      rc = -1;
      break;
    }
    if (polite__px_config_is_bool(key) && !json_is_boolean(v)) {
      cfg_err(err, errlen, "%s:%d: field '%s': expected true or false", name,
              line, key);
      rc = -1;
      break;
    }
    if (polite__px_config_set(c, key, sv, base_dir, msg, sizeof msg) < 0) {
      cfg_err(err, errlen, "%s:%d: field '%s': %s", name, line, key, msg);
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
  char *text = polite__px_slurp(path, &n);
  if (text == NULL) {
    cfg_err(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    return -1;
  }
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    dir[0] = '\0';
  int rc = polite__px_config_parse_json(c, text, n, path, dir, err, errlen);
  free(text);
  return rc;
}

int polite__px_config_finish(px_config *c, char *err, size_t errlen) {
  /* Dev Proxy fails half the requests by default when an errors file is
   * given; without a file the default is 0 (failures are opt-in). */
  if (c->errors_file && !c->failure_rate_set)
    c->failure_rate = 50;
  if (c->errors_file && polite__px_rules_load(&c->errors, PX_RULES_ERRORS,
                                              c->errors_file, err, errlen) < 0)
    return -1;
  if (c->mocks_file && polite__px_rules_load(&c->mocks, PX_RULES_MOCKS,
                                             c->mocks_file, err, errlen) < 0)
    return -1;
  if (c->limit_response_file &&
      polite__px_response_load(&c->limit_response, c->limit_response_file, err,
                               errlen) < 0)
    return -1;
  c->quota_cfg.limit = c->quota;
  if (c->rate_headers < 0)
    c->rate_headers = c->rate_mode == PX_LIM_FIXED ? PX_HDR_DEVPROXY : PX_HDR_IETF;
  if (c->rate_n > 0) {
    c->lim.mode = c->rate_mode;
    c->lim.limit = c->rate_in_units ? c->rate_n : c->rate_n * c->rate_cost;
    c->lim.window_us = c->rate_window_s * 1000000;
    c->lim.burst = c->burst;
    c->lim.cost = c->rate_cost;
    if (c->rate_mode == PX_LIM_SLIDING && c->rate_n > PX_SLIDING_MAX) {
      cfg_err(err, errlen,
              "--rate-limit: the sliding window keeps every request; at most "
              "%d per window",
              PX_SLIDING_MAX);
      return -1;
    }
  }
  return 0;
}
