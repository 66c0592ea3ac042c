/* polite proxy: URL globs (Dev Proxy urlsToWatch), secret redaction and client
 * hashing. */
#include "px.h"

#include "http_syntax.h"

#include <polite/batch.h>

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Iterative glob with one backtrack point: `*` matches any run (including
 * '/'), all other characters match themselves ignoring ASCII case. Linear in
 * practice and never recursive, so hostile patterns cannot blow the stack. */
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

int polite__px_glob_match(const char *pattern, const char *url,
                          const char *path) {
  if (pattern == NULL)
    return 0;
  if (pattern[0] == '/')
    return glob_ci(pattern, path ? path : "");
  return glob_ci(pattern, url ? url : "");
}

int polite__px_watch_match(char *const *patterns, size_t n, const char *url,
                           const char *path) {
  if (n == 0)
    return 1;
  for (size_t i = 0; i < n; i++) {
    const char *p = patterns[i];
    int exclude = p[0] == '!';
    if (polite__px_glob_match(p + exclude, url, path))
      return !exclude;
  }
  return 0;
}

/* Redaction is libpolite's (lib/redact.c), so the proxy and polite run hide
 * the same headers and query parameters. */
char *polite__px_redact_url(const char *url) {
  return polite_redact_url(url);
}

int polite__px_secret_header(const char *name) {
  return polite_header_is_secret(name, strlen(name));
}

void polite__px_hash_hex(uint64_t salt, const char *s, char *out) {
  /* FNV-1a of the salt's 8 bytes (least significant first), then s. */
  unsigned char sb[8];
  for (int i = 0; i < 8; i++)
    sb[i] = (unsigned char)(salt >> (i * 8));
  uint64_t h = polite__fnv1a_more(polite__fnv1a(sb, sizeof sb), s, strlen(s));
  /* One extra mixing round so that short inputs spread over all digits. */
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  static const char hex[] = "0123456789abcdef";
  for (int i = 15; i >= 0; i--) {
    out[i] = hex[h & 15];
    h >>= 4;
  }
  out[16] = '\0';
}

int polite__px_watch_host(char *const *patterns, size_t n,
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
    if (polite__px_glob_match(hp, authority, NULL))
      return 1;
  }
  return 0;
}
