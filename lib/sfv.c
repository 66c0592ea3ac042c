/* RFC 8941 structured fields, the subset the RateLimit headers use (see
 * sfv.h), and the saturating decimal reader behind every number in them. */
#include "sfv.h"

#include "http_syntax.h"

#include <string.h>

/* Parses a non-negative decimal "123" or "12.345" (no sign, no exponent) and
 * returns ceil(value * mult) in *out, saturated at POLITE__NUM_SAT * mult.
 * Returns 1, or 0 when the text is not such a number. mult is 1 or 1000. */
int polite__decimal_scaled(const char *s, size_t len, int64_t mult,
                           int64_t *out) {
  size_t i = 0;
  int64_t ip = 0;
  int sat = 0;
  if (len == 0)
    return 0;
  while (i < len && polite__is_digit(s[i])) {
    if (!sat) {
      ip = ip * 10 + (s[i] - '0');
      if (ip > POLITE__NUM_SAT) {
        ip = POLITE__NUM_SAT;
        sat = 1;
      }
    }
    i++;
  }
  if (i == 0)
    return 0; /* ".5" or "-1": a digit must come first */
  int64_t frac_num = 0, frac_den = 1;
  int sticky = 0;
  if (i < len && s[i] == '.') {
    i++;
    size_t start = i;
    while (i < len && polite__is_digit(s[i])) {
      if (frac_den < INT64_C(1000000000000000000)) {
        frac_num = frac_num * 10 + (s[i] - '0');
        frac_den *= 10;
      } else if (s[i] != '0') {
        sticky = 1; /* a digit too deep to keep still rounds up */
      }
      i++;
    }
    if (i == start)
      return 0; /* "1." */
  }
  if (i != len)
    return 0;
  __int128 scaled = (__int128)frac_num * mult;
  int64_t frac_part = (int64_t)(scaled / frac_den);
  if (scaled % frac_den != 0 || sticky)
    frac_part++;
  *out = ip * mult + frac_part;
  return 1;
}

static int is_key_char(char c) {
  return (c >= 'a' && c <= 'z') || polite__is_digit(c) || c == '_' ||
         c == '-' || c == '.' || c == '*';
}

/* RFC 8941 token characters after the first: tchar plus ':' and '/'. */
static int is_token_char(char c) {
  return polite__is_tchar((unsigned char)c) || c == ':' || c == '/';
}

/* Reads one bare item at *p; sets *iv when it is a non-negative integer
 * (decimals are accepted and rounded up, since a quota of "9.5" is still a
 * number). Returns 0 on a syntax error. */
static int sf_item(const char **p, const char *end, int64_t *iv) {
  const char *s = *p;
  *iv = -1;
  if (s >= end)
    return 0;
  if (*s == '"') {
    s++;
    while (s < end && *s != '"') {
      if (*s == '\\') {
        s++;
        if (s >= end)
          return 0;
      }
      s++;
    }
    if (s >= end)
      return 0;
    *p = s + 1;
    return 1;
  }
  if (*s == '-' || polite__is_digit(*s)) {
    const char *b = s;
    if (*s == '-')
      s++;
    while (s < end && (polite__is_digit(*s) || *s == '.'))
      s++;
    int64_t v;
    if (*b != '-' && polite__decimal_scaled(b, (size_t)(s - b), 1, &v))
      *iv = v;
    *p = s;
    return s > b;
  }
  if (*s == ':') { /* byte sequence: base64 between colons */
    s++;
    while (s < end && *s != ':') {
      if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
            polite__is_digit(*s) || *s == '+' || *s == '/' || *s == '='))
        return 0;
      s++;
    }
    if (s >= end)
      return 0;
    *p = s + 1;
    return 1;
  }
  if (*s == '?') { /* boolean */
    if (s + 1 >= end || (s[1] != '0' && s[1] != '1'))
      return 0;
    *p = s + 2;
    return 1;
  }
  if ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '*') {
    while (s < end && is_token_char(*s))
      s++;
    *p = s;
    return 1;
  }
  return 0;
}

/* Reads one member ("item;params" or "key=item;params" or a bare "key")
 * and the comma after it. Returns 1 with *m filled, 0 at the end, -1 on a
 * syntax error (the rest of the field is then ignored). */
int polite__sf_next(const char **p, const char *end, polite__sf_member *m) {
  const char *s = *p;
  memset(m, 0, sizeof *m);
  m->int_item = m->q = m->w = m->r = m->t = -1;
  while (s < end && polite__is_ows(*s))
    s++;
  if (s >= end)
    return 0;
  /* A dictionary key is a lowercase key followed by '=' or by ';', ',' or
   * the end (a bare key means true). */
  const char *k = s;
  if ((*s >= 'a' && *s <= 'z') || *s == '*') {
    while (s < end && is_key_char(*s))
      s++;
    if (s < end && *s == '=') {
      m->key = k;
      m->key_len = (size_t)(s - k);
      s++;
    } else {
      s = k; /* a token item, not a key */
    }
  }
  if (!sf_item(&s, end, &m->int_item))
    return -1;
  while (s < end && *s == ';') {
    s++;
    while (s < end && *s == ' ')
      s++;
    const char *pk = s;
    while (s < end && is_key_char(*s))
      s++;
    size_t pk_len = (size_t)(s - pk);
    if (pk_len == 0)
      return -1;
    int64_t pv = -1;
    const char *pv_at = s;
    if (s < end && *s == '=') {
      s++;
      pv_at = s;
      if (!sf_item(&s, end, &pv))
        return -1;
    }
    /* qu names the quota unit; only "requests" (the default; "request"
     * in some examples) counts starts, not "content-bytes" and others. */
    if (pk_len == 2 && pk[0] == 'q' && pk[1] == 'u') {
      size_t n = (size_t)(s - pv_at);
      m->qu_other = !((n == 10 && memcmp(pv_at, "\"requests\"", 10) == 0) ||
                      (n == 9 && memcmp(pv_at, "\"request\"", 9) == 0));
    }
    if (pk_len == 1) {
      switch (*pk) {
      case 'q': m->q = pv; break;
      case 'l': /* "l" in some draft revisions' examples */
        if (m->q < 0)
          m->q = pv;
        break;
      case 'w': m->w = pv; break;
      case 'r': m->r = pv; break;
      case 't': m->t = pv; break;
      default: break;
      }
    }
  }
  while (s < end && polite__is_ows(*s))
    s++;
  if (s < end) {
    if (*s != ',')
      return -1;
    s++;
  }
  *p = s;
  return 1;
}

/* 1 when the whole field parses: the draft says malformed RateLimit fields
 * MUST be ignored, so nothing is taken from a field with a bad member. */
int polite__sf_valid(const char *v, size_t len) {
  const char *p = v, *end = v + len;
  polite__sf_member m;
  int rc, n = 0;
  while ((rc = polite__sf_next(&p, end, &m)) == 1)
    n++;
  while (len > 0 && polite__is_ows(v[len - 1]))
    len--;
  /* polite__sf_next takes "a," as a member and then the end; a list may not end
   * with a comma. */
  return rc == 0 && n > 0 && v[len - 1] != ',';
}
