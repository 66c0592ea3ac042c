/* polite gateway: where a client's request goes, from its request line
 * alone (pure: no sockets). Its own endpoints (/__polite/...), a CONNECT
 * (intercepted or tunnelled by the caller), a request inside an
 * intercepted CONNECT (https to that host), an absolute-form request
 * (HTTP_PROXY), or an origin-form one for the --upstream base URL. A parser
 * of what clients send: bounded, and it says what it refuses
 * (tests/fuzz/fuzz_gateway_route.c). */
#include "gateway.h"

#include "http_syntax.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Splits a canonical authority ("host", "host:port", "[v6]:port") into the
 * host as sockets want it (brackets removed) and the port (the scheme's
 * when none). */
static void host_port(const char *auth, int https, char *host, size_t hl,
                      int *port) {
  const char *colon = NULL;
  const char *h = auth;
  size_t n = strlen(auth);
  if (auth[0] == '[') {
    const char *close = strchr(auth, ']');
    h = auth + 1;
    n = close ? (size_t)(close - h) : 0;
    colon = close && close[1] == ':' ? close + 1 : NULL;
  } else if ((colon = strrchr(auth, ':')) != NULL) {
    n = (size_t)(colon - auth);
  }
  snprintf(host, hl, "%.*s", (int)n, h);
  *port = colon ? (int)strtol(colon + 1, NULL, 10) : https ? 443 : 80;
}

/* Fills d's destination from scheme and authority a[0..n). 0, or -1 with
 * d->why. */
static int set_dest(gw_dest *d, int https, const char *a, size_t n) {
  char err[160];
  if (polite__gw_authority(https ? "https" : "http", a, n, d->authority,
                           sizeof d->authority, err, sizeof err) != 0) {
    snprintf(d->why, sizeof d->why, "the request names no usable host: %s",
             err);
    return -1;
  }
  d->https = https;
  host_port(d->authority, https, d->host, sizeof d->host, &d->port);
  return 0;
}

/* An origin-form target: the gateway's own endpoint, the base URL's, or
 * nowhere. */
static int origin_form(gw_dest *d, const char *target, const gw_base *base) {
  if (strncmp(target, GW_OWN_PREFIX, sizeof GW_OWN_PREFIX - 1) == 0) {
    d->kind = GW_DEST_OWN;
    d->path = target;
    return 0;
  }
  if (base == NULL) {
    d->kind = GW_DEST_NONE;
    snprintf(d->why, sizeof d->why,
             "no destination: send absolute-form requests (HTTP_PROXY), "
             "CONNECT (HTTPS_PROXY), or start the gateway with --upstream");
    return -1;
  }
  d->kind = GW_DEST_BASE;
  d->https = base->https;
  d->port = base->port;
  /* Copied, not printed: two snprintf calls on every request's path. The
   * base's fields are as large as d's, and end within them. */
  _Static_assert(sizeof d->host == sizeof base->host, "host sizes");
  _Static_assert(sizeof d->authority == sizeof base->authority, "sizes");
  memcpy(d->host, base->host, strnlen(base->host, sizeof d->host - 1) + 1);
  memcpy(d->authority, base->authority,
         strnlen(base->authority, sizeof d->authority - 1) + 1);
  d->path = target;
  return 0;
}

int polite__gw_dest(const char *method, const char *target,
                    const char *origin_host, int origin_port, int origin_plain,
                    const gw_base *base, const char *self, gw_dest *d) {
  memset(d, 0, sizeof *d);
  d->kind = GW_DEST_BAD;
  if (strcmp(method, "CONNECT") == 0) {
    if (origin_host && origin_host[0]) {
      snprintf(d->why, sizeof d->why, "CONNECT inside a CONNECT");
      return -1;
    }
    const char *colon = strrchr(target, ':');
    if (colon == NULL || colon[1] == '\0') {
      snprintf(d->why, sizeof d->why, "CONNECT needs HOST:PORT");
      return -1;
    }
    if (set_dest(d, 1, target, strlen(target)) != 0)
      return -1;
    d->port = (int)strtol(colon + 1, NULL, 10); /* CONNECT names its port */
    d->kind = GW_DEST_CONNECT;
    return 0;
  }
  if (origin_host && origin_host[0]) {
    /* Inside an intercepted CONNECT: to that host, whatever form; https
     * unless the client spoke plain HTTP in it. */
    char a[GW_ACCOUNT_MAX + 8];
    int v6 = strchr(origin_host, ':') != NULL;
    snprintf(a, sizeof a, "%s%s%s:%d", v6 ? "[" : "", origin_host,
             v6 ? "]" : "", origin_port);
    if (target[0] != '/' || set_dest(d, !origin_plain, a, strlen(a)) != 0) {
      if (d->why[0] == '\0')
        snprintf(d->why, sizeof d->why,
                 "inside CONNECT, send origin-form targets (/path)");
      return -1;
    }
    d->port = origin_port;
    d->kind = GW_DEST_FORWARD;
    d->path = target;
    return 0;
  }
  if (target[0] == '/')
    return origin_form(d, target, base);
  int https = polite__ci_prefix(target, strlen(target), "https://");
  if (!https && !polite__ci_prefix(target, strlen(target), "http://")) {
    snprintf(d->why, sizeof d->why,
             "the request target is neither /path nor an http(s):// URL");
    return -1;
  }
  const char *a = target + (https ? 8 : 7);
  size_t n = strcspn(a, "/?#");
  const char *path = a[n] == '/' ? a + n : a[n] == '?' ? NULL : "/";
  if (self && strlen(self) == n && polite__ci_eqn(a, n, self, n) && !https)
    return origin_form(d, path ? path : "/", base); /* the gateway itself */
  if (set_dest(d, https, a, n) != 0)
    return -1;
  d->kind = GW_DEST_FORWARD;
  d->path = path ? path : a + n; /* "?q": the caller sends "/?q" */
  return 0;
}

int polite__gw_base_parse(const char *url, gw_base *b, char *err,
                          size_t errlen) {
  memset(b, 0, sizeof *b);
  if (url == NULL) {
    snprintf(err, errlen, "expected an http:// or https:// URL");
    return -1;
  }
  size_t len = strlen(url);
  int https = polite__ci_prefix(url, len, "https://");
  if (!https && !polite__ci_prefix(url, len, "http://")) {
    snprintf(err, errlen, "expected an http:// or https:// URL");
    return -1;
  }
  const char *a = url + (https ? 8 : 7);
  size_t n = strcspn(a, "/?#");
  if (a[n] == '?' || a[n] == '#') {
    snprintf(err, errlen, "a base URL takes no query or fragment");
    return -1;
  }
  gw_dest d;
  memset(&d, 0, sizeof d);
  if (set_dest(&d, https, a, n) != 0) {
    snprintf(err, errlen, "%s", d.why);
    return -1;
  }
  b->https = https;
  b->port = d.port;
  snprintf(b->host, sizeof b->host, "%s", d.host);
  snprintf(b->authority, sizeof b->authority, "%s", d.authority);
  /* The path prefix, without its trailing slashes: "/v1/" + "/chat" must
   * not become "/v1//chat". */
  size_t pl = strlen(a + n);
  while (pl > 0 && a[n + pl - 1] == '/')
    pl--;
  if (pl >= sizeof b->prefix || memchr(a + n, '?', pl)) {
    snprintf(err, errlen, "the base URL's path is longer than %zu bytes",
             sizeof b->prefix - 1);
    return -1;
  }
  memcpy(b->prefix, a + n, pl);
  b->prefix[pl] = '\0';
  return 0;
}
