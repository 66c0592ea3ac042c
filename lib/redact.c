/* polite redaction: keeps credentials out of results, logs, errors and
 * summaries. What counts as a secret is one table (rules[] below, listed
 * row by row in docs/redaction.md); the functions here walk it. */
#define _GNU_SOURCE
#include <polite/redact.h>

#include "http_syntax.h"
#include "redact.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char REDACTED[] = "REDACTED";
#define REDACTED_LEN (sizeof REDACTED - 1)

/* Nested values (a URL inside a parameter inside a URL ...) are followed
 * this deep; a deeper one is left as it is. Real redirect chains nest two
 * or three levels. */
#define MAX_DEPTH 4

#define H POLITE__RULE_HEADER
#define V POLITE__RULE_VALUE
#define P POLITE__RULE_PARAM
#define S POLITE__RULE_SHAPE
#define EXACT POLITE__MATCH_EXACT
#define CONTAINS POLITE__MATCH_CONTAINS
#define PREFIX POLITE__MATCH_PREFIX
#define CODE POLITE__MATCH_CODE

/* Redacting a harmless name ("author", "monkey", "keyword") is the cheaper
 * mistake, so parameter rules match anywhere in the name unless a short
 * word would hit too much ("pass" in "compass", "code" in "zipcode"). */
static const polite__redact_rule rules[] = {
    /* Headers whose whole value is a credential. */
    {H, EXACT, "authorization", "Authorization: Bearer sk-1",
     "Authorization: REDACTED"},
    {H, EXACT, "proxy-authorization", "Proxy-Authorization: Basic dTpw",
     "Proxy-Authorization: REDACTED"},
    {H, EXACT, "cookie", "Cookie: sid=s1", "Cookie: REDACTED"},
    {H, EXACT, "set-cookie", "Set-Cookie: sid=s1", "Set-Cookie: REDACTED"},
    {H, EXACT, "x-api-key", "X-Api-Key: s1", "X-Api-Key: REDACTED"},
    {H, EXACT, "api-key", "api-key: s1", "api-key: REDACTED"},
    {H, EXACT, "x-auth-token", "X-Auth-Token: s1", "X-Auth-Token: REDACTED"},
    {H, EXACT, "x-amz-security-token", "X-Amz-Security-Token: s1",
     "X-Amz-Security-Token: REDACTED"},
    {H, EXACT, "x-goog-api-key", "X-Goog-Api-Key: s1",
     "X-Goog-Api-Key: REDACTED"},
    {H, EXACT, "private-token", "PRIVATE-TOKEN: s1", "PRIVATE-TOKEN: REDACTED"},
    /* Credentials under any header name. */
    {V, PREFIX, "bearer ", "X-Upstream-Auth: Bearer sk-1",
     "X-Upstream-Auth: REDACTED"},
    {V, PREFIX, "basic ", "X-Forwarded-Auth: Basic dTpw",
     "X-Forwarded-Auth: REDACTED"},
    /* URL parameter names (query and ;path parameters). */
    {P, CONTAINS, "key", "https://h/?api_key=s1&page=2",
     "https://h/?api_key=REDACTED&page=2"},
    {P, CONTAINS, "token", "https://h/?access_token=s1",
     "https://h/?access_token=REDACTED"},
    {P, CONTAINS, "secret", "https://h/?client_secret=s1",
     "https://h/?client_secret=REDACTED"},
    {P, CONTAINS, "signature", "https://h/o?X-Goog-Signature=ab12",
     "https://h/o?X-Goog-Signature=REDACTED"},
    {P, CONTAINS, "sig", "https://h/b?sv=2022&sig=ab%2B1",
     "https://h/b?sv=2022&sig=REDACTED"},
    {P, CONTAINS, "password", "https://h/?password=s1",
     "https://h/?password=REDACTED"},
    {P, CONTAINS, "passwd", "https://h/?passwd=s1",
     "https://h/?passwd=REDACTED"},
    {P, CONTAINS, "pwd", "https://h/?pwd=s1", "https://h/?pwd=REDACTED"},
    {P, EXACT, "pass", "https://h/?user=u&pass=s1",
     "https://h/?user=u&pass=REDACTED"},
    {P, CONTAINS, "auth", "https://h/?oauth_verifier=s1",
     "https://h/?oauth_verifier=REDACTED"},
    {P, CONTAINS, "jwt", "https://h/?jwt=eyJ0", "https://h/?jwt=REDACTED"},
    {P, EXACT, "code", "https://h/cb?code=s1&state=x",
     "https://h/cb?code=REDACTED&state=x"},
    {P, CONTAINS, "session", "https://h/?session=s1",
     "https://h/?session=REDACTED"},
    {P, CONTAINS, "assertion", "https://h/t?client_assertion=eyJ0",
     "https://h/t?client_assertion=REDACTED"},
    {P, CONTAINS, "credential",
     "https://h/o?X-Amz-Credential=AKIA1%2F20260101%2Fus-east-1",
     "https://h/o?X-Amz-Credential=REDACTED"},
    /* URL shapes the parser handles. */
    {S, CODE, "userinfo password", "https://user:pw@h/x",
     "https://user:REDACTED@h/x"},
    {S, CODE, "userinfo without a password (a token as the user name)",
     "https://ghp_abc@h/x", "https://REDACTED@h/x"},
    {S, CODE, "password containing @ (up to the last @)", "https://u:p@ss@h/x",
     "https://u:REDACTED@h/x"},
    {S, CODE, "password containing /", "https://u:pa/ss@h/x",
     "https://u:REDACTED@h/x"},
    {S, CODE, "password containing @ and then /", "https://u:p@ss/w@h/x",
     "https://u:REDACTED@h/x"},
    {S, CODE, "password containing ?", "https://u:pa?ss@h/x?page=2",
     "https://u:REDACTED@h/x?page=2"},
    {S, CODE, "password containing #", "https://u:pa#ss@h/x",
     "https://u:REDACTED@h/x"},
    {S, CODE, "redis URI with userinfo", "redis://u:SECRET/x@h:6379/0",
     "redis://u:REDACTED@h:6379/0"},
    {S, CODE, "fragment (dropped)", "https://h/cb#access_token=s1",
     "https://h/cb"},
    {S, CODE, "percent-encoded name", "https://h/?%74oken=s1",
     "https://h/?%74oken=REDACTED"},
    {S, CODE, "path parameter", "https://h/p;api_key=s1/x?page=2",
     "https://h/p;api_key=REDACTED/x?page=2"},
    {S, CODE, "nested URL, percent-encoded",
     "https://h/login?next=https%3A%2F%2Fa%2Fcb%3Ftoken%3Ds1%26page%3D2",
     "https://h/login?next=https%3A%2F%2Fa%2Fcb%3Ftoken%3DREDACTED%26page%3D2"},
    {S, CODE, "nested URL, plain", "https://h/login?next=https://a/cb?token=s1",
     "https://h/login?next=https://a/cb?token=REDACTED"},
    {S, CODE, "nested relative URL", "https://h/login?next=%2Fcb%3Fcode%3Ds1",
     "https://h/login?next=%2Fcb%3Fcode%3DREDACTED"},
};

#undef H
#undef V
#undef P
#undef S
#undef EXACT
#undef CONTAINS
#undef PREFIX
#undef CODE

const polite__redact_rule *polite__redact_rules(size_t *n) {
  *n = sizeof rules / sizeof *rules;
  return rules;
}

/* ASCII lower case, inline: rule_hit asks once per byte of every query
 * parameter name of every proxied request. */
static unsigned char fold(unsigned char c) {
  return c >= 'A' && c <= 'Z' ? (unsigned char)(c | 32u) : c;
}

/* 1 when s[0..n) starts with t, a lower-case NUL-terminated rule text,
 * ignoring ASCII case. One walk, no strlen: most calls differ at the first
 * byte. */
static int starts_with(const char *s, size_t n, const char *t) {
  size_t i = 0;
  for (; t[i] != '\0'; i++)
    if (i >= n || fold((unsigned char)s[i]) != (unsigned char)t[i])
      return 0;
  return 1;
}

/* The ASCII letters of s[0..n), case folded, as bits ('a' is bit 0). */
static uint32_t letters_of(const char *s, size_t n) {
  uint32_t m = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned c = fold((unsigned char)s[i]) - (unsigned)'a';
    if (c < 26)
      m |= UINT32_C(1) << c;
  }
  return m;
}

/* 1 when s[0..n) matches one rule of kind `where`. A CONTAINS rule whose
 * first letter s does not hold is passed over without a walk. */
static int rule_hit(polite__rule_where where, const char *s, size_t n) {
  uint32_t has = letters_of(s, n);
  for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
    const polite__redact_rule *r = &rules[i];
    if (r->where != where)
      continue;
    if (r->match == POLITE__MATCH_EXACT && polite__ci_eq(s, n, r->text))
      return 1;
    if (r->match == POLITE__MATCH_PREFIX && starts_with(s, n, r->text))
      return 1;
    unsigned first = (unsigned char)r->text[0] - (unsigned)'a';
    if (r->match == POLITE__MATCH_CONTAINS &&
        (first >= 26 || (has >> first & 1)))
      for (size_t at = 0; at < n; at++)
        if (starts_with(s + at, n - at, r->text))
          return 1;
  }
  return 0;
}

int polite_header_is_secret(const char *name, size_t len) {
  if (name == NULL)
    return 0;
  while (len > 0 && isspace((unsigned char)name[len - 1]))
    len--;
  return rule_hit(POLITE__RULE_HEADER, name, len);
}

/* ---- A growing output string ---------------------------------------- */

typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} sbuf;

/* Appends s[0..n) and keeps the string NUL-terminated. A length whose sum
 * with what is there (and the NUL) does not fit in a size_t is out of memory
 * as well: the sum would wrap to a small size, skip the growth and write
 * past the buffer (GCC's -Wstringop-overflow saw that path in a Release
 * build). The capacity doubles, and is the exact need when doubling would
 * wrap. */
static void put(sbuf *b, const char *s, size_t n) {
  if (b->oom)
    return;
  if (n >= SIZE_MAX - b->n) {
    b->oom = 1;
    return;
  }
  size_t need = b->n + n + 1;
  if (need > b->cap) {
    size_t nc = b->cap ? b->cap : 64;
    while (nc < need)
      nc = nc > SIZE_MAX / 2 ? need : nc * 2;
    char *np = realloc(b->p, nc);
    if (np == NULL) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static char *finish(sbuf *b) {
  if (!b->oom)
    put(b, "", 0); /* an empty result still gets its NUL */
  if (b->oom) {
    free(b->p);
    return NULL;
  }
  return b->p;
}

/* First byte of [s, e) that is in `set` (one to three bytes) or is a NUL
 * (a decoded %00 ends a piece, as strchr's terminator did), or e. Compared
 * inline, not with strchr per byte: every URL of every proxied request is
 * walked this way. */
static const char *find_any(const char *s, const char *e, const char *set) {
  char a = set[0], b = set[1] ? set[1] : a, c = set[1] && set[2] ? set[2] : b;
  while (s < e && *s != a && *s != b && *s != c && *s != '\0')
    s++;
  return s;
}

/* The first "://" in s[0..n), or NULL: memmem's answer, found by the ':'
 * (memmem's general search was a tenth of redacting a short URL). */
static const char *find_sep(const char *s, size_t n) {
  const char *end = s + n;
  for (const char *p = memchr(s, ':', n); p != NULL;
       p = memchr(p + 1, ':', (size_t)(end - p - 1)))
    if (end - p >= 3 && p[1] == '/' && p[2] == '/')
      return p;
  return NULL;
}

/* Last c in [s, e), or NULL. */
static const char *find_last(const char *s, const char *e, char c) {
  const char *r = NULL;
  for (; s < e; s++)
    if (*s == c)
      r = s;
  return r;
}

/* ---- Percent-encoding -------------------------------------------------- */

/* s[0..n) with %XX decoded (malformed escapes kept as they are, '+' kept),
 * NUL-terminated and malloc'ed; *out_n gets the length. */
static char *pct_decode(const char *s, size_t n, size_t *out_n) {
  char *d = malloc(n + 1);
  if (d == NULL)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < n && (hi = polite__hexval(s[i + 1])) >= 0 &&
        (lo = polite__hexval(s[i + 2])) >= 0) {
      d[o++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      d[o++] = s[i];
    }
  }
  d[o] = '\0';
  *out_n = o;
  return d;
}

/* Appends s[0..n) percent-encoded: everything but RFC 3986 unreserved
 * characters and '+' (which a form decoder reads as a space). */
static void put_encoded(sbuf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        c == '+') {
      put(b, (const char *)&s[i], 1);
    } else {
      char e[3] = {'%', hex[c >> 4], hex[c & 15]};
      put(b, e, 3);
    }
  }
}

int polite_param_is_secret(const char *name, size_t len) {
  if (name == NULL)
    return 0;
  if (rule_hit(POLITE__RULE_PARAM, name, len))
    return 1;
  /* "%74oken" is "token" to the server; "%2574oken" is after two decodes.
   * Each round must shrink the name, and there are at most MAX_DEPTH. */
  char *d = NULL;
  const char *cur = name;
  size_t n = len;
  int hit = 0;
  for (int round = 0; round < MAX_DEPTH && !hit; round++) {
    if (memchr(cur, '%', n) == NULL)
      break;
    size_t dn = 0;
    char *next = pct_decode(cur, n, &dn);
    if (next == NULL) {
      hit = 1; /* out of memory: hiding is the safe answer */
      break;
    }
    free(d);
    d = next;
    if (dn == n)
      break; /* nothing decoded (malformed escapes only) */
    cur = d;
    n = dn;
    hit = rule_hit(POLITE__RULE_PARAM, cur, n);
  }
  free(d);
  return hit;
}

/* ---- URLs ------------------------------------------------------------ */

static void redact_url_into(sbuf *b, const char *s, size_t len, int depth);
static void redact_text_into(sbuf *b, const char *s, size_t len, int depth);

/* 1 when the authority part [s, e) reads as "user:password" rather than
 * "host:port": something after the colon that is not a port number. Only
 * asked when no '@' came before the first '/', '?' or '#', i.e. when the
 * password itself may hold one of them. */
static int password_like(const char *s, const char *e) {
  if (s < e && *s == '[') { /* an IPv6 literal: its colons are no sign */
    const char *rb = memchr(s, ']', (size_t)(e - s));
    if (rb == NULL)
      return 0;
    s = rb + 1;
  }
  const char *c = memchr(s, ':', (size_t)(e - s));
  if (c == NULL)
    return 0;
  for (const char *p = c + 1; p < e; p++)
    if (!isdigit((unsigned char)*p))
      return 1;
  return c + 1 == e; /* "u:" then '/': a password starting with '/' */
}

/* The '@' that ends the userinfo of the authority starting at `auth`, or
 * NULL. The userinfo runs to the LAST '@' of the authority, so a password
 * with '@' is hidden whole; a password with '/', '?' or '#' (which ends an
 * authority by RFC 3986, but people write them) is recognised by
 * password_like, and then runs to the first '@' after it; one with both
 * '@' and then '/' runs into the next path segment if it holds an '@'. */
static const char *userinfo_end(const char *auth, const char *end) {
  const char *e = find_any(auth, end, "/?#");
  const char *at = find_last(auth, e, '@');
  if (at != NULL) {
    /* "u:p@ss/w@h": a password with '@' and then '/' runs on into the
     * next path segment when that segment holds an '@' past its first byte
     * ("/@alice" is a path). Hiding a host by mistake is the cheaper
     * error. */
    if (e < end && *e == '/' && password_like(auth, at)) {
      const char *seg = e + 1;
      const char *a2 = find_last(seg, find_any(seg, end, "/?#"), '@');
      if (a2 != NULL && a2 > seg)
        at = a2;
    }
    return at;
  }
  if (!password_like(auth, e))
    return NULL;
  const char *a1 = memchr(e, '@', (size_t)(end - e));
  if (a1 == NULL)
    return NULL;
  return find_last(a1, find_any(a1 + 1, end, "/?#"), '@');
}

/* A parameter value that is not itself secret may hold a URL or a query
 * (next=https%3A%2F%2F...%3Ftoken%3D...): it is decoded, redacted, and
 * re-encoded when anything in it was hidden. */
static void redact_value(sbuf *b, const char *v, const char *e, int depth) {
  size_t n = (size_t)(e - v), dn = 0;
  /* Without '%', '?' or "://" nothing below could hide a byte: shown as
   * given, without the decoded copy (most values: "10", "desc"). */
  if (depth >= MAX_DEPTH || n == 0 ||
      (memchr(v, '%', n) == NULL && memchr(v, '?', n) == NULL &&
       find_sep(v, n) == NULL)) {
    put(b, v, n);
    return;
  }
  char *d = pct_decode(v, n, &dn);
  if (d == NULL) {
    b->oom = 1;
    return;
  }
  sbuf inner = {0};
  if (find_sep(d, dn) != NULL)
    redact_text_into(&inner, d, dn, depth + 1);
  else if (memchr(d, '?', dn) != NULL)
    redact_url_into(&inner, d, dn, depth + 1);
  else if (dn != n && memchr(d, '=', dn) != NULL) {
    /* An encoded query ("a%3D1%26token%3Dx"): redacted as one. */
    char *url = malloc(dn + 2);
    if (url != NULL) {
      url[0] = '?';
      memcpy(url + 1, d, dn);
      redact_url_into(&inner, url, dn + 1, depth + 1);
      if (!inner.oom && inner.n > 0) /* drop the '?' again */
        memmove(inner.p, inner.p + 1, inner.n--);
      free(url);
    } else
      inner.oom = 1;
  }
  if (inner.oom)
    b->oom = 1;
  else if (inner.p == NULL || (inner.n == dn && memcmp(inner.p, d, dn) == 0))
    put(b, v, n); /* nothing hidden: shown exactly as given */
  else if (memchr(v, '%', n) != NULL)
    put_encoded(b, inner.p, inner.n);
  else
    put(b, inner.p, inner.n);
  free(inner.p);
  free(d);
}

/* One "name=value" of a query or path: a secret name hides the value. */
static void redact_param(sbuf *b, const char *s, const char *e, int depth,
                         int nested) {
  const char *eq = memchr(s, '=', (size_t)(e - s));
  if (eq == NULL) {
    put(b, s, (size_t)(e - s));
    return;
  }
  put(b, s, (size_t)(eq + 1 - s));
  if (polite_param_is_secret(s, (size_t)(eq - s)))
    put(b, REDACTED, REDACTED_LEN);
  else if (nested)
    redact_value(b, eq + 1, e, depth);
  else
    put(b, eq + 1, (size_t)(e - eq - 1));
}

/* Copies [s, e), splitting at each separator in `seps` and redacting the
 * pieces after the first (path: ";name=value") or all of them (query). */
static void redact_params(sbuf *b, const char *s, const char *e,
                          const char *seps, int first_too, int depth) {
  int first = 1;
  for (;;) {
    const char *pe = find_any(s, e, seps);
    if (first && !first_too)
      put(b, s, (size_t)(pe - s));
    else
      redact_param(b, s, pe, depth, first_too);
    if (pe >= e)
      return;
    /* In a path a '/' ends a parameter and starts a plain segment. */
    first = (*pe == '/');
    put(b, pe, 1);
    s = pe + 1;
  }
}

static void redact_url_into(sbuf *b, const char *url, size_t len, int depth) {
  const char *end = url + len, *p = url;
  const char *sep = find_sep(url, len);
  if (sep != NULL) {
    const char *auth = sep + 3;
    const char *at = userinfo_end(auth, end);
    if (at != NULL) {
      /* "user:password@" keeps the user; a lone "token@" (GitHub-style
       * tokens as user names) is all secret. */
      const char *colon = memchr(auth, ':', (size_t)(at - auth));
      put(b, url, (size_t)((colon ? colon + 1 : auth) - url));
      put(b, REDACTED, REDACTED_LEN);
      p = at;
    }
  }
  /* A fragment never reaches a server, and it is where OAuth's implicit
   * flow puts access tokens: it is dropped, not shown. */
  const char *frag = memchr(p, '#', (size_t)(end - p));
  if (frag != NULL)
    end = frag;
  const char *q = memchr(p, '?', (size_t)(end - p));
  /* A path without ';' (or a decoded NUL) has no parameters: one copy. */
  const char *pe = q ? q : end;
  if (memchr(p, ';', (size_t)(pe - p)) == NULL &&
      memchr(p, '\0', (size_t)(pe - p)) == NULL)
    put(b, p, (size_t)(pe - p));
  else
    redact_params(b, p, pe, ";/", 0, depth);
  if (q != NULL) {
    put(b, "?", 1);
    redact_params(b, q + 1, end, "&;", 1, depth);
  }
}

char *polite_redact_url(const char *url) {
  if (url == NULL)
    return NULL;
  sbuf b = {0};
  redact_url_into(&b, url, strlen(url), 0);
  return finish(&b);
}

/* Every URL in free text ("scheme://" up to a space, quote or angle
 * bracket) goes through redact_url_into; the rest is copied. */
static void redact_text_into(sbuf *b, const char *text, size_t len, int depth) {
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *s = find_sep(p, (size_t)(end - p));
    if (s == NULL) {
      put(b, p, (size_t)(end - p));
      return;
    }
    /* Back up to the scheme's start, forward to the URL's end. */
    const char *u = s;
    while (u > p && (isalnum((unsigned char)u[-1]) || u[-1] == '+' ||
                     u[-1] == '-' || u[-1] == '.'))
      u--;
    const char *e = s + 3;
    while (e < end && !isspace((unsigned char)*e) && *e != '"' && *e != '\'' &&
           *e != '<' && *e != '>')
      e++;
    put(b, p, (size_t)(u - p));
    redact_url_into(b, u, (size_t)(e - u), depth);
    p = e;
  }
}

char *polite_redact_text(const char *text) {
  if (text == NULL)
    return NULL;
  sbuf b = {0};
  redact_text_into(&b, text, strlen(text), 0);
  return finish(&b);
}

char *polite_redact_header(const char *line) {
  if (line == NULL)
    return NULL;
  const char *colon = strchr(line, ':');
  /* No colon: not a header but maybe a bare credential (-H 'Bearer sk-'). */
  if (colon == NULL)
    return strdup(REDACTED);
  const char *v = colon + 1;
  while (*v == ' ' || *v == '\t')
    v++;
  if (!polite_header_is_secret(line, (size_t)(colon - line)) &&
      !rule_hit(POLITE__RULE_VALUE, v, strlen(v)))
    return strdup(line);
  sbuf b = {0};
  put(&b, line, (size_t)(colon - line));
  put(&b, ": ", 2);
  put(&b, REDACTED, REDACTED_LEN);
  return finish(&b);
}
