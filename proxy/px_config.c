/* polite proxy: its configuration: made, set option by option (the rows
 * are px_options.c's), read from a JSON --config file, finished (files
 * loaded, the mode settled, the limits built). The reload of rules files
 * is px_reload.c. */
#include "px.h"

#include "cli.h"
#include "http_syntax.h"
#include "net_upstream.h"

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

px_config *polite__px_config_new(void) {
  px_config *c = malloc(sizeof *c);
  if (c)
    polite__px_config_init(c);
  return c;
}

void polite__px_config_delete(px_config *c) {
  if (c == NULL)
    return;
  polite__px_config_free(c);
  free(c);
}

void polite__px_config_sources_done(px_config *c) {
  c->skip_sources = 1;
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
  for (size_t i = 0; i < c->nconnect_to; i++)
    free(c->connect_to[i]);
  free(c->connect_to);
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

/* The row of option `name` (any case, '-' and '_' alike), or NULL. */
static const cli_opt *find_row(const char *name) {
  return cli_opt_find(polite__px_options, name, strlen(name), 1);
}

int polite__px_config_known(const char *name) {
  return find_row(name) != NULL;
}

int polite__px_config_is_bool(const char *name) {
  const cli_opt *o = find_row(name);
  return o && o->kind == CLI_FLAG;
}

int polite__px_strset(char **dst, const char *v) {
  char *p = strdup(v);
  if (p == NULL)
    return -1;
  free(*dst);
  *dst = p;
  return 0;
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
  int rc = -1;
  if (value == NULL && o->kind != CLI_FLAG)
    polite__px_errf(msg, sizeof msg, "needs a value");
  else
    rc = o->set(c, o, value, msg, sizeof msg);
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

int polite__px_config_parse_json(px_config *c, const char *text, size_t len,
                                 const char *name, const char *base_dir,
                                 char *err, size_t errlen) {
  /* The one JSON-over-rows reader, the command's too (common/cli.c):
   * errors name the file, the line of the key and the field. */
  const char *saved = c->set_dir;
  c->set_dir = base_dir;
  int rc = cli_config_apply_text(polite__px_options, c, text, len, name, err,
                                 errlen);
  c->set_dir = saved;
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

/* The mode, from --mode (wherever it stands), else --upstream (reverse),
 * else what a devproxyrc implies (forward: Dev Proxy is one). A devproxyrc
 * with --upstream is a reverse proxy whose urlsToWatch match the
 * absolute-form requests of plain-HTTP clients; HTTPS clients (CONNECT)
 * are refused there. That used to happen silently: it now says so at start
 * with the way to serve an HTTPS host locally (docs/proxy.md, "Modes"). */
static void settle_mode(px_config *c) {
  if (c->mode_set || c->upstream == NULL)
    return;
  if (c->forward_mode && c->nwatch > 0)
    c->mode_note =
        "reverse (--upstream with a devproxyrc), so its urlsToWatch "
        "match plain-HTTP absolute-form requests only and HTTPS clients "
        "(CONNECT) are refused; to intercept HTTPS hosts and serve them "
        "from a local server use --mode forward --connect-to "
        "HOST:443:127.0.0.1:PORT (and --upstream-cacert)";
  c->forward_mode = 0;
}

int polite__px_config_finish(px_config *c, char *err, size_t errlen) {
  settle_mode(c);
  /* The lists are checked against the mode once it is settled. */
  if (polite__px_plugin_watch_finish(c, err, errlen) < 0 ||
      polite__px_watch_check(c, err, errlen) < 0)
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
  c->errors_mtime_ns = polite__px_file_mtime_ns(c->errors_file);
  c->mocks_mtime_ns = polite__px_file_mtime_ns(c->mocks_file);
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
