/* URL globs (Dev Proxy urlsToWatch) for --watch and --allow-host, shared by
 * the test proxy and the gateway. */
#include "url_glob.h"

#include "http_syntax.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Iterative glob with one backtrack point: `*` matches any run (including
 * '/'), all other characters match themselves ignoring ASCII case. */
static int glob_ci(const char *p, const char *s) {
  const char *star = NULL, *resume = NULL;
  while (*s) {
    if (*p == '*') {
      star = p++;
      resume = s;
    } else if (*p && polite__lower(*p) == polite__lower(*s)) {
      p++;
      s++;
    } else if (star) {
      p = star + 1;
      s = ++resume;
    } else {
      return 0;
    }
  }
  while (*p == '*')
    p++;
  return *p == '\0';
}

int polite__url_glob(const char *pattern, const char *url, const char *path) {
  if (pattern == NULL)
    return 0;
  if (pattern[0] == '/')
    return glob_ci(pattern, path ? path : "");
  return glob_ci(pattern, url ? url : "");
}

int polite__url_watch(const char *const *patterns, size_t n, const char *url,
                      const char *path) {
  if (n == 0)
    return 1;
  for (size_t i = 0; i < n; i++) {
    const char *p = patterns[i];
    int exclude = p[0] == '!';
    if (polite__url_glob(p + exclude, url, path))
      return !exclude;
  }
  return 0;
}

int polite__url_watch_host(const char *const *patterns, size_t n,
                           const char *authority, int https) {
  for (size_t i = 0; i < n; i++) {
    const char *p = patterns[i];
    if (p[0] == '!')
      continue;
    const char *sep = strstr(p, "://");
    if (sep == NULL)
      return 1; /* a path glob, or a bare star: any host */
    int p_https = strncasecmp(p, "https://", 8) == 0;
    if (p_https != (https != 0) && strncmp(p, "*://", 4) != 0)
      continue; /* a pattern of the other scheme */
    char hp[512];
    const char *h = sep + 3;
    size_t hn = strcspn(h, "/");
    snprintf(hp, sizeof hp, "%.*s", (int)hn, h);
    if (polite__url_glob(hp, authority, NULL))
      return 1;
  }
  return 0;
}

int polite__url_watch_connect(const char *const *patterns, size_t n,
                              const char *host, int port) {
  int v6 = strchr(host, ':') != NULL;
  char bare[300], full[320];
  snprintf(bare, sizeof bare, v6 ? "[%s]" : "%s", host);
  snprintf(full, sizeof full, "%s:%d", bare, port);
  for (int https = 1; https >= 0; https--)
    if (polite__url_watch_host(patterns, n, full, https) ||
        (port == (https ? 443 : 80) &&
         polite__url_watch_host(patterns, n, bare, https)))
      return 1;
  return 0;
}
