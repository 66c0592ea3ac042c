/* polite proxy: URL globs (Dev Proxy urlsToWatch, common/url_glob.c), secret
 * redaction and client hashing. */
#include "px.h"

#include "http_syntax.h"
#include "url_glob.h"

#include <polite/batch.h>

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* The globs are common/'s (url_glob.c), shared with the gateway. */
int polite__px_glob_match(const char *pattern, const char *url,
                          const char *path) {
  return polite__url_glob(pattern, url, path);
}

int polite__px_watch_match(char *const *patterns, size_t n, const char *url,
                           const char *path) {
  return polite__url_watch((const char *const *)patterns, n, url, path);
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
  /* Eight bytes a step from the salt (once per request, on an
   * Authorization value of 20 to 200 bytes); its finalizer spreads short
   * inputs over all digits. */
  uint64_t h = polite__hash_words(salt, s, strlen(s));
  static const char hex[] = "0123456789abcdef";
  for (int i = 15; i >= 0; i--) {
    out[i] = hex[h & 15];
    h >>= 4;
  }
  out[16] = '\0';
}

int polite__px_watch_host(char *const *patterns, size_t n,
                          const char *authority, int https) {
  return polite__url_watch_host((const char *const *)patterns, n, authority,
                                https);
}
