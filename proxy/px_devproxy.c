/* polite proxy: Dev Proxy's configuration file (devproxyrc.json or .yaml)
 * read as it is: urlsToWatch, plugins[] and their sections, mapped onto
 * the proxy's options; what is not simulated is collected for one warning. */
#include "px.h"

#include "http_syntax.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One loading: the config, the file's name and directory, and the names
 * of what is not simulated (joined into c->warning at the end). */
typedef struct {
  px_config *c;
  const char *name;
  const char *dir;
  char *err;
  size_t errlen;
  char skipped[1024];
} dp_ctx;

static void not_simulated(dp_ctx *x, const char *what) {
  size_t n = strlen(x->skipped);
  if (strstr(x->skipped, what))
    return;
  snprintf(x->skipped + n, sizeof x->skipped - n, "%s%s", n ? ", " : "", what);
}

/* Sets a proxy option from a JSON value of a section; `field` names it in
 * messages ("rateLimiting.rateLimit"). */
static int set_opt(dp_ctx *x, const char *opt, json_t *v, const char *field) {
  char buf[64], msg[512];
  const char *sv = polite__px_json_text(v, 1, buf, sizeof buf);
  if (sv == NULL) {
    polite__px_errf(x->err, x->errlen, "%s: %s: expected a string or a number",
                    x->name, field);
    return -1;
  }
  if (polite__px_config_set(x->c, opt, sv, x->dir, msg, sizeof msg) < 0) {
    polite__px_errf(x->err, x->errlen, "%s: %s: %s", x->name, field, msg);
    return -1;
  }
  return 0;
}

/* A file a section names: relative to the config file's directory, as Dev
 * Proxy resolves it; "~appFolder/" (Dev Proxy's install folder) is looked
 * for there too. */
static int set_file(dp_ctx *x, const char *opt, json_t *v, const char *field) {
  if (!json_is_string(v)) {
    polite__px_errf(x->err, x->errlen, "%s: %s: expected a file name", x->name,
                    field);
    return -1;
  }
  const char *p = json_string_value(v);
  if (strncmp(p, "~appFolder/", 11) == 0)
    p += 11;
  json_t *s = json_string(p);
  int rc = set_opt(x, opt, s, field);
  json_decref(s);
  return rc;
}

/* ---- The sections ---------------------------------------------------------
 * Each plugin's section: its keys mapped to options (a table per plugin);
 * a key of the plugin that is not in its table is named in the warning. */

typedef struct {
  const char *key; /* Dev Proxy's name (camelCase) */
  const char *opt; /* ours; NULL: known, not simulated */
  int is_file;
} dp_key;

static const dp_key random_error_keys[] = {
    {"errorsFile", NULL, 1}, /* section_file */
    {"rate", "failure-rate", 0},
    {"retryAfterInSeconds", "retry-after", 0},
    {NULL, NULL, 0},
};

static const dp_key rate_limit_keys[] = {
    {"costPerRequest", "rate-limit-cost", 0},
    {"warningThresholdPercent", "warning-threshold", 0},
    {"resetFormat", "reset-format", 0},
    {"customResponseFile", NULL, 1}, /* used with whenLimitExceeded Custom */
    {"rateLimit", NULL, 0},          /* with resetTimeWindowSeconds */
    {"resetTimeWindowSeconds", NULL, 0},
    {"whenLimitExceeded", NULL, 0},
    {"headerLimit", NULL, 0},
    {"headerRemaining", NULL, 0},
    {"headerReset", NULL, 0},
    {"headerRetryAfter", NULL, 0},
    {NULL, NULL, 0},
};

static const dp_key latency_keys[] = {
    {"minMs", NULL, 0},
    {"maxMs", NULL, 0},
    {NULL, NULL, 0},
};

static const dp_key mock_keys[] = {
    {"mocksFile", NULL, 1}, /* section_file */
    {NULL, NULL, 0},
};

static const dp_key *find_key(const dp_key *keys, const char *k) {
  for (; keys->key; keys++)
    if (strcmp(keys->key, k) == 0)
      return keys;
  return NULL;
}

/* Applies the keys of a section that map one to one; names the others
 * (not in the table) as not simulated. */
static int apply_keys(dp_ctx *x, const char *plugin, const char *sname,
                      json_t *sec, const dp_key *keys) {
  const char *k;
  json_t *v;
  json_object_foreach(sec, k, v) {
    if (k[0] == '$')
      continue; /* "$schema" */
    const dp_key *d = find_key(keys, k);
    char field[160];
    snprintf(field, sizeof field, "%s.%s", sname, k);
    if (d == NULL) {
      char what[160];
      snprintf(what, sizeof what, "%s.%s", plugin, k);
      not_simulated(x, what);
      continue;
    }
    if (d->opt == NULL)
      continue; /* the plugin's own function handles it */
    if ((d->is_file ? set_file : set_opt)(x, d->opt, v, field) < 0)
      return -1;
  }
  return 0;
}

static int get_int(dp_ctx *x, json_t *sec, const char *sname, const char *k,
                   long long lo, long long hi, long long *out) {
  json_t *v = json_object_get(sec, k);
  if (v == NULL || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < lo ||
      json_integer_value(v) > hi) {
    polite__px_errf(x->err, x->errlen,
                    "%s: %s.%s: expected a whole number %lld-%lld", x->name,
                    sname, k, lo, hi);
    return -1;
  }
  *out = (long long)json_integer_value(v);
  return 0;
}

/* The file a section's `key` names, or Dev Proxy's default name for it
 * when absent (next to the config file), into option `opt`. */
static int section_file(dp_ctx *x, json_t *sec, const char *sname,
                        const char *key, const char *opt, const char *def) {
  json_t *f = json_object_get(sec, key);
  json_t *d = f ? NULL : json_string(def);
  char field[160];
  snprintf(field, sizeof field, "%s.%s", sname, key);
  int rc = set_file(x, opt, f ? f : d, field);
  json_decref(d);
  return rc;
}

static int plugin_random_error(dp_ctx *x, json_t *sec, const char *sname) {
  if (section_file(x, sec, sname, "errorsFile", "errors-file", "errors.json") <
      0)
    return -1;
  return apply_keys(x, "GenericRandomErrorPlugin", sname, sec,
                    random_error_keys);
}

static int plugin_rate_limit(dp_ctx *x, json_t *sec, const char *sname) {
  px_config *c = x->c;
  /* Dev Proxy's defaults: 120 resources per 60 s, 2 per request. */
  long long limit = 120, window = 60, cost = 2;
  if (get_int(x, sec, sname, "rateLimit", 1, 1000000000, &limit) < 0 ||
      get_int(x, sec, sname, "resetTimeWindowSeconds", 1, 86400 * 366,
              &window) < 0 ||
      get_int(x, sec, sname, "costPerRequest", 1, 1000000, &cost) < 0)
    return -1;
  if (cost > limit) {
    polite__px_errf(x->err, x->errlen,
                    "%s: %s.costPerRequest: %lld is more than rateLimit %lld",
                    x->name, sname, cost, limit);
    return -1;
  }
  c->rate_mode = PX_LIM_FIXED;
  c->rate_n = limit;
  c->rate_in_units = 1;
  c->rate_window_s = window;
  c->rate_per_s = (double)limit / (double)cost / (double)window;
  c->rate_cost = cost;
  c->rate_scope = PX_SCOPE_GLOBAL; /* one window for all watched URLs */
  static const struct {
    const char *key;
    size_t off;
  } names[] = {
      {"headerLimit", offsetof(px_config, hdr_limit)},
      {"headerRemaining", offsetof(px_config, hdr_remaining)},
      {"headerReset", offsetof(px_config, hdr_reset)},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    json_t *v = json_object_get(sec, names[i].key);
    if (json_is_string(v) &&
        polite__px_strset((char **)((char *)c + names[i].off),
                          json_string_value(v)) < 0)
      return -1;
  }
  json_t *rf = json_object_get(sec, "headerRetryAfter");
  if (json_is_string(rf) &&
      strcasecmp(json_string_value(rf), "Retry-After") != 0)
    not_simulated(x, "RateLimitingPlugin.headerRetryAfter");
  json_t *w = json_object_get(sec, "whenLimitExceeded");
  if (json_is_string(w) && strcasecmp(json_string_value(w), "Custom") == 0) {
    if (section_file(x, sec, sname, "customResponseFile", "limit-response-file",
                     "rate-limit-response.json") < 0)
      return -1;
  } else if (w && !(json_is_string(w) &&
                    strcasecmp(json_string_value(w), "Throttle") == 0)) {
    polite__px_errf(x->err, x->errlen,
                    "%s: %s.whenLimitExceeded: expected Throttle or Custom",
                    x->name, sname);
    return -1;
  }
  return apply_keys(x, "RateLimitingPlugin", sname, sec, rate_limit_keys);
}

static int plugin_latency(dp_ctx *x, json_t *sec, const char *sname) {
  long long lo = 0, hi = 5000; /* Dev Proxy's defaults */
  if (get_int(x, sec, sname, "minMs", 0, 600000, &lo) < 0 ||
      get_int(x, sec, sname, "maxMs", 0, 600000, &hi) < 0)
    return -1;
  if (hi < lo) {
    polite__px_errf(x->err, x->errlen, "%s: %s: maxMs %lld is below minMs %lld",
                    x->name, sname, hi, lo);
    return -1;
  }
  char v[48];
  snprintf(v, sizeof v, "%lld-%lld", lo, hi);
  json_t *s = json_string(v);
  int rc = set_opt(x, "latency", s, sname);
  json_decref(s);
  return rc < 0 ? rc : apply_keys(x, "LatencyPlugin", sname, sec, latency_keys);
}

static int plugin_mocks(dp_ctx *x, json_t *sec, const char *sname) {
  if (section_file(x, sec, sname, "mocksFile", "mocks-file", "mocks.json") < 0)
    return -1;
  return apply_keys(x, "MockResponsePlugin", sname, sec, mock_keys);
}

static const dp_key llm_keys[] = {
    {"promptTokenLimit", "prompt-token-limit", 0},
    {"completionTokenLimit", "completion-token-limit", 0},
    {"resetTimeWindowSeconds", "token-window", 0},
    {"headerRetryAfter", NULL, 0},
    {NULL, NULL, 0},
};

/* LanguageModelRateLimitingPlugin: tokens per window, Dev Proxy's defaults
 * 5000 prompt and 5000 completion tokens per 60 s; charged after the
 * answer. whenLimitExceeded Custom is not simulated. */
static int plugin_llm_limit(dp_ctx *x, json_t *sec, const char *sname) {
  static const char *const defaults[][2] = {
      {"prompt-token-limit", "5000"},
      {"completion-token-limit", "5000"},
      {"token-window", "60"},
  };
  for (size_t i = 0; i < 3; i++) {
    json_t *d = json_string(defaults[i][1]);
    int rc = set_opt(x, defaults[i][0], d, sname);
    json_decref(d);
    if (rc < 0)
      return rc;
  }
  json_t *w = json_object_get(sec, "whenLimitExceeded");
  if (json_is_string(w) && strcasecmp(json_string_value(w), "Custom") == 0)
    not_simulated(x,
                  "LanguageModelRateLimitingPlugin.whenLimitExceeded Custom");
  json_t *copy = json_copy(sec);
  json_object_del(copy, "whenLimitExceeded");
  json_object_del(copy, "customResponseFile");
  int rc =
      apply_keys(x, "LanguageModelRateLimitingPlugin", sname, copy, llm_keys);
  json_decref(copy);
  return rc;
}

/* RetryAfterPlugin has no section: its throttling is the judge's, which
 * runs only when the file enables the plugin, as in Dev Proxy (where the
 * other plugins' 429s are enforced by it alone). */
static int plugin_retry_after(dp_ctx *x, json_t *sec, const char *sname) {
  (void)sec;
  (void)sname;
  x->c->track.judge = 1;
  return 0;
}

static const struct {
  const char *name;
  int (*apply)(dp_ctx *, json_t *, const char *);
  px_plugin plugin; /* whose urlsToWatch it follows */
} plugins[] = {
    {"RetryAfterPlugin", plugin_retry_after, PX_PLUG_RETRY_AFTER},
    {"GenericRandomErrorPlugin", plugin_random_error, PX_PLUG_ERRORS},
    {"RateLimitingPlugin", plugin_rate_limit, PX_PLUG_RATE},
    {"LatencyPlugin", plugin_latency, PX_PLUG_LATENCY},
    {"MockResponsePlugin", plugin_mocks, PX_PLUG_MOCKS},
    {"LanguageModelRateLimitingPlugin", plugin_llm_limit, PX_PLUG_TOKENS},
};

#define NPLUGINS (sizeof plugins / sizeof plugins[0])

/* The keys of a plugins[] entry (Dev Proxy's PluginReference). */
static const char *const plugin_keys[] = {
    "name", "enabled", "pluginPath", "configSection", "urlsToWatch", NULL,
};

/* Names the keys of plugins[i] that Dev Proxy does not know. */
static void plugin_unknown_keys(dp_ctx *x, json_t *p, size_t i) {
  const char *k;
  json_t *v;
  json_object_foreach(p, k, v) {
    size_t j = 0;
    while (plugin_keys[j] && strcmp(plugin_keys[j], k) != 0)
      j++;
    if (plugin_keys[j] == NULL && k[0] != '$') {
      char what[160];
      snprintf(what, sizeof what, "plugins[%zu].%s", i, k);
      not_simulated(x, what);
    }
  }
}

/* A plugin's own urlsToWatch (plugins[i].urlsToWatch): it acts on those
 * URLs only, and the proxy watches them too (polite__px_plugin_watch_finish
 * builds the union). An empty list means the file's, as in Dev Proxy. */
static int plugin_own_watch(dp_ctx *x, json_t *list, size_t i, size_t k) {
  if (list == NULL)
    return 0;
  if (!json_is_array(list)) {
    polite__px_errf(x->err, x->errlen,
                    "%s: plugins[%zu].urlsToWatch: expected an array of URL "
                    "patterns",
                    x->name, i);
    return -1;
  }
  if (k >= NPLUGINS)
    return 0; /* the plugin is not simulated (named in the warning) */
  px_watch *w = &x->c->plugin_watch[plugins[k].plugin];
  size_t j;
  json_t *item;
  json_array_foreach(list, j, item) {
    const char *v = json_string_value(item);
    if (v == NULL || v[0] == '\0') {
      polite__px_errf(x->err, x->errlen,
                      "%s: plugins[%zu].urlsToWatch[%zu]: expected a URL "
                      "pattern",
                      x->name, i, j);
      return -1;
    }
    if (polite__px_list_add(&w->pat, &w->n, v) < 0) {
      polite__px_errf(x->err, x->errlen, "out of memory");
      return -1;
    }
    w->own = 1;
  }
  return 0;
}

/* Where plugin k's list comes from, for messages. */
static int plugin_what(dp_ctx *x, size_t k, size_t i) {
  px_watch *w = &x->c->plugin_watch[plugins[k].plugin];
  char what[600];
  if (w->own)
    snprintf(what, sizeof what, "%s: plugins[%zu].urlsToWatch (%s)", x->name, i,
             plugins[k].name);
  else
    snprintf(what, sizeof what, "%s: urlsToWatch (for %s)", x->name,
             plugins[k].name);
  w->used = 1;
  return polite__px_strset(&w->what, what);
}

/* Top-level keys: mapped ones, and those that are about Dev Proxy itself
 * (not about what a client sees), which are accepted silently. */
static const char *const quiet_keys[] = {
    "plugins",
    "urlsToWatch",
    "port",
    "ipAddress",
    "rate",
    "logLevel",
    "labelMode",
    "newVersionNotification",
    "showSkipMessages",
    "showTimestamps",
    "validateSchemas",
    "asSystemProxy",
    "installCert",
    "record",
    "timeout",
    "apiPort",
    "languageModel",
    NULL,
};

static int is_quiet(const char *k) {
  for (int i = 0; quiet_keys[i]; i++)
    if (strcmp(quiet_keys[i], k) == 0)
      return 1;
  return 0;
}

static int apply_plugin(dp_ctx *x, json_t *root, json_t *p, size_t i) {
  json_t *name = json_object_get(p, "name");
  json_t *en = json_object_get(p, "enabled");
  json_t *cs = json_object_get(p, "configSection");
  if (!json_is_string(name)) {
    polite__px_errf(x->err, x->errlen,
                    "%s: plugins[%zu].name: expected a string", x->name, i);
    return -1;
  }
  if (en && !json_is_boolean(en)) {
    polite__px_errf(x->err, x->errlen,
                    "%s: plugins[%zu].enabled: expected true or false", x->name,
                    i);
    return -1;
  }
  if (json_is_false(en))
    return 0;
  plugin_unknown_keys(x, p, i);
  const char *pn = json_string_value(name);
  size_t k;
  for (k = 0; k < NPLUGINS; k++)
    if (strcmp(plugins[k].name, pn) == 0)
      break;
  if (plugin_own_watch(x, json_object_get(p, "urlsToWatch"), i, k) < 0 ||
      (k < NPLUGINS && plugin_what(x, k, i) < 0))
    return -1;
  const char *sname = json_is_string(cs) ? json_string_value(cs) : pn;
  json_t *sec = json_is_string(cs) ? json_object_get(root, sname) : NULL;
  if (json_is_string(cs) && sec == NULL)
    sec = json_object(); /* a section named but absent: the defaults */
  else if (sec == NULL)
    sec = json_object();
  else
    json_incref(sec);
  int rc = 0;
  if (!json_is_object(sec)) {
    polite__px_errf(x->err, x->errlen, "%s: %s: expected an object", x->name,
                    sname);
    rc = -1;
  } else if (k < NPLUGINS) {
    rc = plugins[k].apply(x, sec, sname);
  } else {
    not_simulated(x, pn);
  }
  json_decref(sec);
  return rc;
}

/* ipAddress and port as --listen. */
static int apply_listen(dp_ctx *x, json_t *root) {
  json_t *ip = json_object_get(root, "ipAddress");
  json_t *port = json_object_get(root, "port");
  if (ip == NULL && port == NULL)
    return 0;
  char listen[300];
  long long pv = 8000;
  if (port && (!json_is_integer(port) || json_integer_value(port) < 0 ||
               json_integer_value(port) > 65535)) {
    polite__px_errf(x->err, x->errlen, "%s: port: expected 0-65535", x->name);
    return -1;
  }
  if (port)
    pv = (long long)json_integer_value(port);
  if (ip && !json_is_string(ip)) {
    polite__px_errf(x->err, x->errlen, "%s: ipAddress: expected a string",
                    x->name);
    return -1;
  }
  const char *host = ip ? json_string_value(ip) : "127.0.0.1";
  snprintf(listen, sizeof listen, strchr(host, ':') ? "[%s]:%lld" : "%s:%lld",
           host, pv);
  json_t *l = json_string(listen);
  int rc = set_opt(x, "listen", l, "ipAddress/port");
  json_decref(l);
  return rc;
}

/* urlsToWatch as --watch, the list's origin kept for messages. */
static int apply_watch(dp_ctx *x, json_t *root) {
  json_t *w = json_object_get(root, "urlsToWatch");
  if (w && !json_is_array(w)) {
    polite__px_errf(x->err, x->errlen,
                    "%s: urlsToWatch: expected an array of URL patterns",
                    x->name);
    return -1;
  }
  size_t i;
  json_t *item;
  json_array_foreach(w, i, item) {
    char field[48];
    snprintf(field, sizeof field, "urlsToWatch[%zu]", i);
    if (set_opt(x, "watch", item, field) < 0)
      return -1;
  }
  char what[600];
  snprintf(what, sizeof what, "%s: urlsToWatch", x->name);
  return polite__px_strset(&x->c->watch_what, what);
}

/* 1 when some plugins[] entry names `key` as its configSection. */
static int is_section(json_t *root, const char *key) {
  size_t i;
  json_t *p;
  json_array_foreach(json_object_get(root, "plugins"), i, p) {
    const char *cs = json_string_value(json_object_get(p, "configSection"));
    if (cs && strcmp(cs, key) == 0)
      return 1;
  }
  return 0;
}

/* Top-level keys that are neither a plugin's section nor Dev Proxy's own
 * settings, scalars and objects alike, into the warning. */
static void unknown_keys(dp_ctx *x, json_t *root) {
  const char *k;
  json_t *v;
  json_object_foreach(root, k, v) {
    if (k[0] == '$' || is_quiet(k) ||
        (json_is_object(v) && is_section(root, k)))
      continue;
    not_simulated(x, k);
  }
}

int polite__px_devproxy_apply(px_config *c, json_t *root, const char *name,
                              const char *dir, char *err, size_t errlen) {
  dp_ctx x = {c, name, dir, err, errlen, ""};
  if (!json_is_object(root)) {
    polite__px_errf(err, errlen, "%s: expected an object (a devproxyrc)", name);
    return -1;
  }
  /* As Dev Proxy runs: a forward proxy, throttling per host, judging early
   * retries only if RetryAfterPlugin is enabled. */
  c->forward_mode = 1;
  c->scope = PX_SCOPE_HOST;
  c->track.judge = 0;
  json_t *v;
  if ((v = json_object_get(root, "rate")) &&
      set_opt(&x, "failure-rate", v, "rate") < 0)
    return -1;
  if (apply_listen(&x, root) < 0 || apply_watch(&x, root) < 0)
    return -1;
  size_t i;
  json_t *item;
  json_t *ps = json_object_get(root, "plugins");
  if (ps && !json_is_array(ps)) {
    polite__px_errf(err, errlen, "%s: plugins: expected an array", name);
    return -1;
  }
  json_array_foreach(ps, i, item) {
    if (!json_is_object(item)) {
      polite__px_errf(err, errlen, "%s: plugins[%zu]: expected an object", name,
                      i);
      return -1;
    }
    if (apply_plugin(&x, root, item, i) < 0)
      return -1;
  }
  unknown_keys(&x, root);
  if (x.skipped[0]) {
    size_t n = strlen(name) + strlen(x.skipped) + 32;
    free(c->warning);
    c->warning = malloc(n);
    if (c->warning)
      snprintf(c->warning, n, "%s: not simulated: %s", name, x.skipped);
  }
  return 0;
}

/* JSON, or YAML when the name ends in .yaml/.yml (Dev Proxy reads both). */
int polite__px_devproxy_load(px_config *c, const char *path, char *err,
                             size_t errlen) {
  size_t len = 0;
  char *text = NULL;
  if (polite__read_file(path, c->max_file, &text, &len) != 0) {
    polite__px_file_error(err, errlen, path, c->max_file);
    return -1;
  }
  size_t pl = strlen(path);
  int yaml = (pl > 5 && strcasecmp(path + pl - 5, ".yaml") == 0) ||
             (pl > 4 && strcasecmp(path + pl - 4, ".yml") == 0);
  json_t *root = NULL;
  if (yaml) {
    root = polite__px_yaml_to_json(text, len, path, err, errlen);
  } else {
    json_error_t je;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
      polite__px_errf(err, errlen, "%s:%d:%d: %s", path, je.line, je.column,
                      je.text);
  }
  free(text);
  if (root == NULL)
    return -1;
  char dir[4096];
  polite__px_dirname(path, dir, sizeof dir, ".");
  int rc = polite__px_devproxy_apply(c, root, path, dir, err, errlen);
  json_decref(root);
  return rc;
}
