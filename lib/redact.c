/* polite redaction: keeps credentials out of results, logs, errors and
 * summaries (secret headers, secret query parameters, URL passwords). */
#define _GNU_SOURCE
#include <polite/batch.h>

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char REDACTED[] = "REDACTED";

static int ieq(const char *a, size_t alen, const char *b) {
  size_t blen = strlen(b);
  if (alen != blen)
    return 0;
  for (size_t i = 0; i < alen; i++)
    if (tolower((unsigned char)a[i]) != b[i])
      return 0;
  return 1;
}

int polite_header_is_secret(const char *name, size_t len) {
  static const char *const names[] = {"authorization",
                                      "proxy-authorization",
                                      "cookie",
                                      "set-cookie",
                                      "x-api-key",
                                      "api-key",
                                      "x-auth-token",
                                      NULL};
  if (name == NULL)
    return 0;
  while (len > 0 && isspace((unsigned char)name[len - 1]))
    len--;
  for (const char *const *n = names; *n; n++)
    if (ieq(name, len, *n))
      return 1;
  return 0;
}

/* Case-insensitive substring search of needle (lower case) in s[0..len). */
static int icontains(const char *s, size_t len, const char *needle) {
  size_t nl = strlen(needle);
  for (size_t i = 0; i + nl <= len; i++) {
    size_t j = 0;
    while (j < nl && tolower((unsigned char)s[i + j]) == needle[j])
      j++;
    if (j == nl)
      return 1;
  }
  return 0;
}

int polite_param_is_secret(const char *name, size_t len) {
  /* "sig" also covers "signature"; both are listed for the reader. "auth"
   * catches auth=, oauth_..., authorization=; redacting a harmless "author"
   * is the cheaper mistake. */
  static const char *const parts[] = {"key", "token",    "secret", "signature",
                                      "sig", "password", "auth",   NULL};
  if (name == NULL)
    return 0;
  for (const char *const *p = parts; *p; p++)
    if (icontains(name, len, *p))
      return 1;
  return 0;
}

/* Appends n bytes to the growing output. The buffer was sized for the worst
 * case by the caller, so no bounds are re-checked here. */
static char *put(char *o, const char *s, size_t n) {
  memcpy(o, s, n);
  return o + n;
}

char *polite_redact_url(const char *url) {
  if (url == NULL)
    return NULL;
  size_t len = strlen(url);
  /* Each parameter or the userinfo can grow by at most strlen(REDACTED). */
  size_t cap = len + 1;
  for (size_t i = 0; i < len; i++)
    if (url[i] == '&' || url[i] == '?' || url[i] == ';' || url[i] == '@')
      cap += sizeof REDACTED;
  cap += sizeof REDACTED;
  char *out = malloc(cap);
  if (out == NULL)
    return NULL;
  char *o = out;
  const char *p = url, *end = url + len;

  /* The authority's userinfo: "scheme://user:password@host". */
  const char *scheme_end = strstr(url, "://");
  if (scheme_end != NULL) {
    const char *auth = scheme_end + 3;
    const char *auth_end = auth + strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *q = auth; q < auth_end; q++)
      if (*q == '@')
        at = q;
    if (at != NULL) {
      /* "user:password@" keeps the user; a lone "token@" (GitHub-style
       * tokens as user names) is all secret. */
      const char *colon = memchr(auth, ':', (size_t)(at - auth));
      o = put(o, url, (size_t)((colon ? colon + 1 : auth) - url));
      o = put(o, REDACTED, sizeof REDACTED - 1);
      p = at;
    }
  }

  /* A fragment never reaches a server, and it is where OAuth's implicit
   * flow puts access tokens: it is dropped, not shown. */
  const char *frag = strchr(p, '#');
  if (frag != NULL)
    end = frag;
  const char *q = memchr(p, '?', (size_t)(end - p));
  if (q == NULL) {
    o = put(o, p, (size_t)(end - p));
    *o = '\0';
    return out;
  }
  o = put(o, p, (size_t)(q + 1 - p));
  const char *qend = end;
  const char *s = q + 1;
  while (s <= qend) {
    const char *e = s;
    while (e < qend && *e != '&' && *e != ';')
      e++;
    const char *eq = memchr(s, '=', (size_t)(e - s));
    if (eq != NULL && polite_param_is_secret(s, (size_t)(eq - s))) {
      o = put(o, s, (size_t)(eq + 1 - s));
      o = put(o, REDACTED, sizeof REDACTED - 1);
    } else {
      o = put(o, s, (size_t)(e - s));
    }
    if (e < qend)
      *o++ = *e;
    s = e + 1;
  }
  *o = '\0';
  return out;
}

char *polite_redact_header(const char *line) {
  if (line == NULL)
    return NULL;
  const char *colon = strchr(line, ':');
  if (colon == NULL || !polite_header_is_secret(line, (size_t)(colon - line)))
    return strdup(line);
  size_t n = (size_t)(colon - line);
  char *out = malloc(n + 3 + sizeof REDACTED);
  if (out == NULL)
    return NULL;
  memcpy(out, line, n);
  memcpy(out + n, ": ", 2);
  memcpy(out + n + 2, REDACTED, sizeof REDACTED);
  return out;
}

char *polite_redact_text(const char *text) {
  if (text == NULL)
    return NULL;
  size_t len = strlen(text);
  /* Worst case: every URL grows by a few REDACTED markers; size it by the
   * number of separators that could start a parameter. */
  size_t cap = len + 1;
  for (size_t i = 0; i < len; i++)
    if (strchr("&?;@", text[i]))
      cap += sizeof REDACTED;
  char *out = malloc(cap);
  if (out == NULL)
    return NULL;
  size_t o = 0;
  const char *p = text;
  while (*p) {
    const char *s = strstr(p, "://");
    if (s == NULL) {
      size_t n = strlen(p);
      memcpy(out + o, p, n);
      o += n;
      break;
    }
    /* Back up to the scheme's start, forward to the URL's end. */
    const char *b = s;
    while (b > p && (isalnum((unsigned char)b[-1]) || b[-1] == '+' ||
                     b[-1] == '-' || b[-1] == '.'))
      b--;
    const char *e = s + 3;
    while (*e && !isspace((unsigned char)*e) && *e != '"' && *e != '\'' &&
           *e != '<' && *e != '>')
      e++;
    memcpy(out + o, p, (size_t)(b - p));
    o += (size_t)(b - p);
    char *u = strndup(b, (size_t)(e - b));
    char *r = u ? polite_redact_url(u) : NULL;
    if (r == NULL) {
      free(u);
      free(out);
      return NULL;
    }
    size_t rl = strlen(r);
    memcpy(out + o, r, rl);
    o += rl;
    free(u);
    free(r);
    p = e;
  }
  out[o] = '\0';
  return out;
}
