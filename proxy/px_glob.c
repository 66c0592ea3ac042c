/* polite proxy: URL globs (Dev Proxy urlsToWatch), secret redaction and client
 * hashing. */
#include "px.h"

#include <ctype.h>
#include <stdlib.h>
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
    } else if (*p && tolower((unsigned char)*p) == tolower((unsigned char)*s)) {
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

/* Query names that carry credentials, matched as substrings (so "api_key",
 * "access_token", "X-Amz-Signature" are caught). */
static int secret_param(const char *name, size_t len) {
  static const char *const words[] = {"key", "token",    "secret", "signature",
                                      "sig", "password", "auth",   NULL};
  char low[64];
  if (len >= sizeof low)
    len = sizeof low - 1;
  for (size_t i = 0; i < len; i++)
    low[i] = (char)tolower((unsigned char)name[i]);
  low[len] = '\0';
  for (int i = 0; words[i]; i++)
    if (strstr(low, words[i]))
      return 1;
  return 0;
}

char *polite__px_redact_url(const char *url) {
  size_t n = strlen(url);
  /* Worst case: every value replaced by REDACTED. */
  char *out = malloc(n * 9 + 16);
  if (out == NULL)
    return NULL;
  size_t o = 0;
  /* Userinfo ("http://user:password@host") is replaced as a whole. */
  const char *sep = strstr(url, "://");
  const char *auth = sep ? sep + 3 : NULL;
  const char *auth_end = auth ? auth + strcspn(auth, "/?#") : NULL;
  const char *at = auth ? memchr(auth, '@', (size_t)(auth_end - auth)) : NULL;
  if (at) {
    o = (size_t)(auth - url);
    memcpy(out, url, o);
    memcpy(out + o, "REDACTED", 8);
    o += 8;
    url = at; /* continue from the '@' */
    n = strlen(url);
  }
  const char *q = strchr(url, '?');
  if (q == NULL) {
    memcpy(out + o, url, n + 1);
    return out;
  }
  memcpy(out + o, url, (size_t)(q - url) + 1);
  o += (size_t)(q - url) + 1;
  const char *p = q + 1;
  const char *hash = strchr(p, '#');
  const char *end = hash ? hash : url + n;
  while (p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    const char *pe = amp ? amp : end;
    const char *eq = memchr(p, '=', (size_t)(pe - p));
    if (eq && secret_param(p, (size_t)(eq - p))) {
      memcpy(out + o, p, (size_t)(eq - p) + 1);
      o += (size_t)(eq - p) + 1;
      memcpy(out + o, "REDACTED", 8);
      o += 8;
    } else {
      memcpy(out + o, p, (size_t)(pe - p));
      o += (size_t)(pe - p);
    }
    if (amp)
      out[o++] = '&';
    p = amp ? amp + 1 : end;
  }
  if (hash) {
    /* Fragments never reach a server; drop them rather than risk a token. */
  }
  out[o] = '\0';
  return out;
}

int polite__px_secret_header(const char *name) {
  static const char *const names[] = {"authorization", "proxy-authorization",
                                      "cookie",        "set-cookie",
                                      "x-api-key",     "api-key",
                                      "x-auth-token",  NULL};
  for (int i = 0; names[i]; i++)
    if (strcasecmp(name, names[i]) == 0)
      return 1;
  return 0;
}

void polite__px_hash_hex(uint64_t salt, const char *s, char *out) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (int i = 0; i < 8; i++) {
    h ^= (salt >> (i * 8)) & 0xff;
    h *= UINT64_C(0x100000001b3);
  }
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    h ^= *p;
    h *= UINT64_C(0x100000001b3);
  }
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
