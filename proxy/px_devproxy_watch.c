/* polite proxy: which URLs each part acts on. Dev Proxy's per-plugin
 * urlsToWatch (a plugin with its own list acts on those URLs only, the
 * others on the file's list, and the proxy watches the union), and the
 * check that a watch list can match something in the mode the proxy runs
 * in. */
#include "px.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

void polite__px_plugin_watch_free(px_config *c) {
  for (int p = 0; p < PX_PLUG__COUNT; p++) {
    px_watch *w = &c->plugin_watch[p];
    for (size_t i = 0; i < w->n; i++)
      free(w->pat[i]);
    free(w->pat);
    free(w->what);
    memset(w, 0, sizeof *w);
  }
}

static int has_pattern(char *const *pat, size_t n, const char *v) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(pat[i], v) == 0)
      return 1;
  return 0;
}

int polite__px_plugin_watch_finish(px_config *c, char *err, size_t errlen) {
  int own = 0;
  for (int p = 0; p < PX_PLUG__COUNT; p++)
    own |= c->plugin_watch[p].own && !c->plugin_watch[p].set;
  if (!own)
    return 0;
  /* The others' copies are taken before the union grows. */
  for (int p = 0; p < PX_PLUG__COUNT; p++) {
    px_watch *w = &c->plugin_watch[p];
    if (!w->used || w->own || w->set)
      continue;
    for (size_t i = 0; i < c->nwatch; i++)
      if (polite__px_list_add(&w->pat, &w->n, c->watch[i]) < 0)
        goto oom;
    w->set = 1;
  }
  for (int p = 0; p < PX_PLUG__COUNT; p++) {
    px_watch *w = &c->plugin_watch[p];
    if (!w->own || w->set)
      continue;
    for (size_t i = 0; i < w->n; i++)
      if (!has_pattern(c->watch, c->nwatch, w->pat[i]) &&
          polite__px_list_add(&c->watch, &c->nwatch, w->pat[i]) < 0)
        goto oom;
    w->set = 1;
  }
  return 0;
oom:
  polite__px_errf(err, errlen, "out of memory");
  return -1;
}

int polite__px_plugin_watches(const px_config *c, px_plugin p, const char *url,
                              const char *path) {
  if ((unsigned)p >= PX_PLUG__COUNT || !c->plugin_watch[p].set)
    return 1;
  const px_watch *w = &c->plugin_watch[p];
  /* An empty list here watches nothing (Dev Proxy loads no plugin without
   * a URL to watch); polite__px_watch_check refuses it at start. */
  return w->n > 0 && polite__px_watch_match(w->pat, w->n, url, path);
}

/* ---- Can a pattern match in this mode? -----------------------------------
 * Forward mode sees every http:// URL (absolute-form) and every https://
 * URL of a host it intercepts (all hosts a pattern names). Reverse and mock
 * modes see the upstream's URLs (http://Host/... in mock mode) and
 * absolute-form http:// requests; an https:// URL of another host never
 * reaches them (a client CONNECTs for it, and only forward mode accepts
 * CONNECT). */

/* The upstream's scheme and authority (host[:port], no userinfo). */
static void upstream_parts(const char *up, int *https, char *auth,
                           size_t size) {
  *https = strncasecmp(up, "https://", 8) == 0;
  const char *h = strstr(up, "://");
  h = h ? h + 3 : up;
  size_t n = strcspn(h, "/?#");
  const char *at = memchr(h, '@', n);
  if (at) {
    n -= (size_t)(at + 1 - h);
    h = at + 1;
  }
  snprintf(auth, size, "%.*s", (int)n, h);
}

static int pattern_can_match(const px_config *c, const char *p) {
  const char *sep = strstr(p, "://");
  if (sep == NULL)
    return 1; /* a path pattern or a bare glob */
  char scheme[32], host[512];
  snprintf(scheme, sizeof scheme, "%.*s", (int)(sep - p), p);
  int http = polite__px_glob_match(scheme, "http", NULL);
  int https = polite__px_glob_match(scheme, "https", NULL);
  if (!http && !https)
    return 0;
  if (c->forward_mode || http)
    return 1;
  if (c->upstream == NULL)
    return 0; /* mock mode: every URL is http:// */
  int up_https;
  char auth[512], with_port[560];
  upstream_parts(c->upstream, &up_https, auth, sizeof auth);
  if (!up_https)
    return 0;
  snprintf(host, sizeof host, "%.*s", (int)strcspn(sep + 3, "/?#"), sep + 3);
  snprintf(with_port, sizeof with_port, "%s:443", auth);
  return polite__px_glob_match(host, auth, NULL) ||
         (strchr(auth, ':') == NULL &&
          polite__px_glob_match(host, with_port, NULL));
}

/* What the mode is called and what its requests look like, for messages. */
static void mode_words(const px_config *c, char *out, size_t size) {
  if (c->forward_mode) {
    snprintf(out, size, "forward mode");
    return;
  }
  if (c->upstream == NULL) {
    snprintf(out, size,
             "mock mode (no --upstream): requests reach it as http://HOST/...; "
             "give --mode forward to watch https:// URLs");
    return;
  }
  int https;
  char auth[512];
  upstream_parts(c->upstream, &https, auth, sizeof auth);
  snprintf(out, size,
           "reverse mode (--upstream): requests reach it as %s://%s/... and "
           "absolute-form http:// URLs; give --mode forward to watch the "
           "https:// URLs of other hosts",
           https ? "https" : "http", auth);
}

/* 0 when some include pattern of the list can match; else -1 with a
 * message naming the list. */
static int list_check(const px_config *c, char *const *pat, size_t n,
                      const char *what, char *err, size_t errlen) {
  for (size_t i = 0; i < n; i++)
    if (pat[i][0] != '!' && pattern_can_match(c, pat[i]))
      return 0;
  char mode[800];
  mode_words(c, mode, sizeof mode);
  polite__px_errf(err, errlen, "%s: %s in %s", what,
                  n == 0 ? "an empty list matches no request"
                         : "no pattern can match a request",
                  mode);
  return -1;
}

int polite__px_watch_check(const px_config *c, char *err, size_t errlen) {
  /* An empty --watch list watches everything (polite's own default). */
  if (c->nwatch > 0 &&
      list_check(c, c->watch, c->nwatch,
                 c->watch_what ? c->watch_what : "--watch", err, errlen) < 0)
    return -1;
  for (int p = 0; p < PX_PLUG__COUNT; p++) {
    const px_watch *w = &c->plugin_watch[p];
    if (w->set && list_check(c, w->pat, w->n, w->what ? w->what : "urlsToWatch",
                             err, errlen) < 0)
      return -1;
  }
  return 0;
}
