/* Redis URIs (redis:// and rediss://) for libpolite's Redis clients: the
 * parts, the parameters as table rows, and a masked copy for messages. */
#define _GNU_SOURCE
#include "redis_uri.h"

#include <polite/core.h>

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Kinds of URI parameter. */
enum { P_DURATION, P_PATH, P_FLAG };

/* One parameter: its name, where it lands, its kind and whether it needs
 * TLS. */
typedef struct {
  const char *name;
  size_t off;
  int kind;
  int tls_only;
} uri_param;

static const uri_param params[] = {
    {"timeout", offsetof(polite__redis_uri, timeout_ms), P_DURATION, 0},
    {"cacert", offsetof(polite__redis_uri, cacert), P_PATH, 1},
    {"cert", offsetof(polite__redis_uri, cert), P_PATH, 1},
    {"key", offsetof(polite__redis_uri, key), P_PATH, 1},
    {"insecure", offsetof(polite__redis_uri, insecure), P_FLAG, 1},
    {NULL, 0, 0, 0}};

/* "URI 'SAFE': " + fmt into err. */
static int fail(char *err, size_t len, const char *safe, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, const char *safe, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  polite__redis_vmsg(err, len, "", safe, fmt, ap);
  va_end(ap);
  return POLITE_EINVAL;
}

void polite__redis_vmsg(char *buf, size_t len, const char *what,
                        const char *safe, const char *fmt, va_list ap) {
  if (buf == NULL || len == 0)
    return;
  int n = snprintf(buf, len, "%s'%.200s': ", what, safe ? safe : "");
  if (n >= 0 && (size_t)n < len)
    vsnprintf(buf + n, len - (size_t)n, fmt, ap);
}

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A percent-decoded copy of s[0..n) (malloc'ed), or NULL: *bad is set when
 * a '%' is not followed by two hex digits or decodes to NUL. */
static char *pct_decode(const char *s, size_t n, int *bad) {
  char *out = malloc(n + 1);
  size_t o = 0;
  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++) {
    int hi, lo;
    if (s[i] != '%') {
      out[o++] = s[i];
    } else if (i + 2 < n && (hi = hexval((unsigned char)s[i + 1])) >= 0 &&
               (lo = hexval((unsigned char)s[i + 2])) >= 0 && hi * 16 + lo) {
      out[o++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      *bad = 1;
      free(out);
      return NULL;
    }
  }
  out[o] = '\0';
  return out;
}

static const uri_param *find_param(const char *s, size_t kn) {
  const uri_param *p = params;
  while (p->name && (strlen(p->name) != kn || memcmp(p->name, s, kn) != 0))
    p++;
  return p->name ? p : NULL;
}

/* The masked copy for messages: the password (between the userinfo's
 * first ':' and its last '@'; a userinfo without ':' is all password, as
 * people write redis://PASSWORD@HOST) and the value of every parameter
 * polite does not know (it may be a secret put in the wrong place) become
 * REDACTED. */
static char *mask(const char *uri, const char *p, const char *at) {
  const char *colon = at ? memchr(p, ':', (size_t)(at - p)) : NULL;
  if (at && colon == NULL)
    colon = p - 1; /* mask from the start of the userinfo */
  const char *q = strchr(at ? at : p, '?');
  size_t len = strlen(uri);
  char *safe = malloc(len + 16 * (len / 2 + 2));
  if (safe == NULL)
    return NULL;
  size_t o = 0, head = colon ? (size_t)(colon + 1 - uri)
                       : q   ? (size_t)(q - uri)
                             : len;
  memcpy(safe, uri, head);
  o = head;
  if (colon) {
    memcpy(safe + o, "REDACTED", 8);
    o += 8;
    size_t mid = q ? (size_t)(q - at) : strlen(at);
    memcpy(safe + o, at, mid);
    o += mid;
  }
  while (q != NULL) {
    const char *s = q + 1, *amp = strchr(s, '&');
    size_t n = amp ? (size_t)(amp - s) : strlen(s);
    const char *eq = memchr(s, '=', n);
    size_t kn = eq ? (size_t)(eq - s) : n;
    safe[o++] = *q;
    if (eq && find_param(s, kn) == NULL) {
      memcpy(safe + o, s, kn + 1);
      o += kn + 1;
      memcpy(safe + o, "REDACTED", 8);
      o += 8;
    } else {
      memcpy(safe + o, s, n);
      o += n;
    }
    q = amp;
  }
  safe[o] = '\0';
  return safe;
}

/* USER:PASSWORD or :PASSWORD between p and at. */
static int parse_userinfo(polite__redis_uri *u, const char *p, const char *at,
                          char *err, size_t len) {
  const char *colon = memchr(p, ':', (size_t)(at - p));
  int bad = 0;
  if (colon == NULL)
    return fail(err, len, u->safe,
                "expected USER:PASSWORD@ or :PASSWORD@ before the host");
  if (colon > p && (u->user = pct_decode(p, (size_t)(colon - p), &bad)) == NULL)
    return bad ? fail(err, len, u->safe,
                      "the user name has a bad %%-escape (write %% as %%25)")
               : POLITE_ENOMEM;
  u->pass = pct_decode(colon + 1, (size_t)(at - colon - 1), &bad);
  if (u->pass == NULL)
    return bad ? fail(err, len, u->safe,
                      "the password has a bad %%-escape (write %% as %%25)")
               : POLITE_ENOMEM;
  return 0;
}

/* HOST[:PORT] or [IPV6][:PORT] in s[0..n). */
static int parse_hostport(polite__redis_uri *u, const char *s, size_t n,
                          char *err, size_t len) {
  const char *end = s + n, *port = NULL, *h = s, *he;
  if (n > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (close == NULL)
      return fail(err, len, u->safe, "an IPv6 host lacks its ']'");
    h = s + 1;
    he = close;
    if (close + 1 < end && close[1] != ':')
      return fail(err, len, u->safe, "expected ':PORT' after ']'");
    port = close + 1 < end ? close + 2 : NULL;
  } else {
    const char *colon = memchr(s, ':', n);
    he = colon ? colon : end;
    port = colon ? colon + 1 : NULL;
  }
  if (he == h)
    return fail(err, len, u->safe, "expected a host: redis://HOST:PORT/NAME");
  for (const char *c = h; c < he; c++)
    if (!isalnum((unsigned char)*c) && !strchr(".-_:%", *c))
      return fail(err, len, u->safe,
                  "the host has a character '%c' it may "
                  "not have",
                  isprint((unsigned char)*c) ? *c : '?');
  u->port = 6379;
  if (port != NULL) {
    long v = 0;
    const char *c = port;
    for (; c < end && isdigit((unsigned char)*c) && v <= 65535; c++)
      v = v * 10 + (*c - '0');
    if (c != end || c == port || v < 1 || v > 65535)
      return fail(err, len, u->safe, "port: expected 1-65535, got '%.*s'",
                  (int)(end - port > 20 ? 20 : end - port), port);
    u->port = (int)v;
  }
  u->host = strndup(h, (size_t)(he - h));
  return u->host ? 0 : POLITE_ENOMEM;
}

/* One NAME=VALUE of the query, checked against the table. */
static int parse_param(polite__redis_uri *u, const char *s, size_t n, char *err,
                       size_t len) {
  const char *eq = memchr(s, '=', n);
  size_t kn = eq ? (size_t)(eq - s) : n;
  const uri_param *p = find_param(s, kn);
  if (p == NULL)
    /* The name only: an unknown parameter's value may be a secret. */
    return fail(err, len, u->safe,
                "unknown parameter '%.*s' (expected timeout=, and with "
                "rediss:// cacert=, cert=, key=, insecure=1)",
                (int)(kn > 40 ? 40 : kn), s);
  if (p->tls_only && !u->tls)
    return fail(err, len, u->safe, "'%s' needs rediss:// (TLS)", p->name);
  char *v = eq ? strndup(eq + 1, n - kn - 1) : strdup("");
  if (v == NULL)
    return POLITE_ENOMEM;
  char *field = (char *)u + p->off;
  int rc = 0;
  if (p->kind == P_DURATION) {
    int64_t ms = 0;
    if (polite_duration_parse(v, &ms) != 0 || ms < 1 || ms > 3600000)
      rc = fail(err, len, u->safe,
                "%s: expected a duration from 1ms to 1h like 500ms or 2s, "
                "got '%.40s'",
                p->name, v);
    else
      memcpy(field, &ms, sizeof ms);
  } else if (p->kind == P_FLAG) {
    int on = strcmp(v, "1") == 0 || strcmp(v, "yes") == 0;
    if (!on && strcmp(v, "0") != 0 && strcmp(v, "no") != 0)
      rc = fail(err, len, u->safe, "%s: expected 1 or 0, got '%.40s'", p->name,
                v);
    else
      memcpy(field, &on, sizeof on);
  } else if (v[0] == '\0') {
    rc = fail(err, len, u->safe, "%s: expected a file name", p->name);
  } else {
    char **dst = (char **)(void *)field;
    free(*dst);
    *dst = v;
    return 0;
  }
  free(v);
  return rc;
}

/* NAME[?PARAMS] after the first '/'. */
static int parse_tail(polite__redis_uri *u, const char *name, char *err,
                      size_t len) {
  const char *q = strchr(name, '?');
  size_t nlen = q ? (size_t)(q - name) : strlen(name);
  if (nlen == 0 || nlen > POLITE__REDIS_NAME_MAX)
    return fail(err, len, u->safe,
                "expected a NAME of 1 to %d characters after the host",
                POLITE__REDIS_NAME_MAX);
  for (size_t i = 0; i < nlen; i++)
    if (!isalnum((unsigned char)name[i]) && !strchr("._:-", name[i]))
      return fail(err, len, u->safe,
                  "NAME: only letters, digits and . _ : - are allowed");
  if ((u->name = strndup(name, nlen)) == NULL)
    return POLITE_ENOMEM;
  while (q != NULL) {
    const char *s = q + 1;
    q = strchr(s, '&');
    size_t n = q ? (size_t)(q - s) : strlen(s);
    int rc = n ? parse_param(u, s, n, err, len) : 0;
    if (rc != 0)
      return rc;
  }
  if (u->key && !u->cert)
    return fail(err, len, u->safe, "key= needs cert=");
  return 0;
}

static int parse(const char *uri, polite__redis_uri *u, char *err, size_t len) {
  size_t scheme = strncmp(uri, "redis://", 8) == 0    ? 8
                  : strncmp(uri, "rediss://", 9) == 0 ? 9
                                                      : 0;
  const char *p = uri + scheme;
  /* The userinfo ends at the last '@' before the first '/' that follows
   * it: a password may hold '/', NAME cannot hold '@'. */
  const char *qm = strchr(p, '?'), *at = NULL;
  for (const char *x = p; *x && (qm == NULL || x < qm); x++)
    if (*x == '@')
      at = x;
  if ((u->safe = mask(uri, p, at)) == NULL)
    return POLITE_ENOMEM;
  if (scheme == 0)
    return fail(err, len, u->safe,
                "expected redis://HOST:PORT/NAME or rediss://HOST:PORT/NAME");
  u->tls = scheme == 9;
  u->timeout_ms = POLITE__REDIS_TIMEOUT_DEFAULT_MS;
  int rc = at ? parse_userinfo(u, p, at, err, len) : 0;
  if (rc != 0)
    return rc;
  const char *hp = at ? at + 1 : p;
  const char *slash = strchr(hp, '/');
  if (slash == NULL)
    return fail(err, len, u->safe, "expected redis://HOST:PORT/NAME");
  if ((rc = parse_hostport(u, hp, (size_t)(slash - hp), err, len)) != 0)
    return rc;
  return parse_tail(u, slash + 1, err, len);
}

int polite__redis_uri_parse(const char *uri, polite__redis_uri *u, char *err,
                            size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  memset(u, 0, sizeof *u);
  if (uri == NULL)
    return POLITE_EINVAL;
  int rc = parse(uri, u, err, errlen);
  if (rc != 0)
    polite__redis_uri_free(u);
  return rc;
}

void polite__redis_uri_free(polite__redis_uri *u) {
  free(u->host);
  free(u->user);
  if (u->pass)
    memset(u->pass, 0, strlen(u->pass));
  free(u->pass);
  free(u->name);
  free(u->safe);
  free(u->cacert);
  free(u->cert);
  free(u->key);
  memset(u, 0, sizeof *u);
}
