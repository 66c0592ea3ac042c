/* Parsing of rates ("90/min") and durations ("1h30m", "250ms") for the
 * command line and configuration files (pure, locale independent). */
#include <polite/core.h>

#include "http_syntax.h"

#include <math.h>
#include <string.h>

static int is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* ASCII case-insensitive comparison of s[0..n) with the NUL-terminated w. */
static int word_is(const char *s, size_t n, const char *w) {
  if (strlen(w) != n)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != w[i])
      return 0;
  }
  return 1;
}

/* Scans "DIGITS[.DIGITS]" (at least one digit, no sign, no exponent) at *p.
 * Returns the number of characters used, or 0 when there is no number (any
 * length is scanned; the callers bound the arithmetic). ip, il locate the
 * integer digits and fp, fl the fraction digits. */
static size_t scan_number(const char *p, const char **ip, size_t *il,
                          const char **fp, size_t *fl) {
  size_t n = 0;
  *ip = p;
  while (polite__is_digit(p[n]))
    n++;
  *il = n;
  *fp = p + n;
  *fl = 0;
  if (p[n] == '.') {
    size_t m = 0;
    *fp = p + n + 1;
    while (polite__is_digit(p[n + 1 + m]))
      m++;
    *fl = m;
    n += 1 + m;
  }
  if (*il + *fl == 0)
    return 0;
  return n;
}

/* Decimal digits to a double; exact enough for rates. Very long inputs
 * become huge (rejected by the caller) or lose digits below 1e-300. */
static double digits_value(const char *ip, size_t il, const char *fp,
                           size_t fl) {
  double v = 0;
  for (size_t i = 0; i < il; i++)
    v = v * 10 + (ip[i] - '0');
  double scale = 0.1;
  for (size_t i = 0; i < fl; i++, scale /= 10)
    v += (fp[i] - '0') * scale;
  return v;
}

/* "N/UNIT": N is a positive decimal ("90", "1.5", ".5"); UNIT is one of
 * s sec secs second seconds, m min mins minute minutes, h hr hour hours,
 * d day days (case-insensitive). No spaces, no signs, no exponents, no
 * multiples such as "/2s". Zero, non-finite rates and rates outside
 * [1e-9, 1e9] per second (one per 31 years .. a billion per second, what
 * polite_gcra_init accepts) are POLITE_EINVAL. *per_s is only set on
 * success. */
int polite_rate_parse(const char *s, double *per_s) {
  if (s == NULL || per_s == NULL)
    return POLITE_EINVAL;
  const char *ip, *fp;
  size_t il, fl;
  size_t n = scan_number(s, &ip, &il, &fp, &fl);
  if (n == 0 || s[n] != '/')
    return POLITE_EINVAL;
  const char *u = s + n + 1;
  size_t ul = strlen(u);
  double secs;
  if (word_is(u, ul, "s") || word_is(u, ul, "sec") || word_is(u, ul, "secs") ||
      word_is(u, ul, "second") || word_is(u, ul, "seconds"))
    secs = 1;
  else if (word_is(u, ul, "m") || word_is(u, ul, "min") ||
           word_is(u, ul, "mins") || word_is(u, ul, "minute") ||
           word_is(u, ul, "minutes"))
    secs = 60;
  else if (word_is(u, ul, "h") || word_is(u, ul, "hr") ||
           word_is(u, ul, "hour") || word_is(u, ul, "hours"))
    secs = 3600;
  else if (word_is(u, ul, "d") || word_is(u, ul, "day") ||
           word_is(u, ul, "days"))
    secs = 86400;
  else
    return POLITE_EINVAL;
  double v = digits_value(ip, il, fp, fl) / secs;
  if (!isfinite(v) || v < 1e-9 || v > 1e9)
    return POLITE_EINVAL;
  *per_s = v;
  return POLITE_OK;
}

/* Nanoseconds per unit for durations; 0 for an unknown unit. */
static int64_t unit_ns(const char *u, size_t n) {
  if (word_is(u, n, "ms"))
    return INT64_C(1000000);
  if (word_is(u, n, "s"))
    return INT64_C(1000000000);
  if (word_is(u, n, "m") || word_is(u, n, "min"))
    return INT64_C(60000000000);
  if (word_is(u, n, "h"))
    return INT64_C(3600000000000);
  if (word_is(u, n, "d"))
    return INT64_C(86400000000000);
  return 0;
}

/* A duration is either a bare decimal number of seconds ("500", "1.5") or a
 * sequence of NUMBER UNIT parts ("1h30m", "2s", "250ms", "1.5s", "2d") with
 * units ms, s, m/min, h, d (case-insensitive); the parts are added. The
 * result is rounded up to whole milliseconds ("1.0001s" is 1001 ms): a wait
 * is never made shorter than asked. Empty strings, signs, spaces, unknown
 * units and garbage are POLITE_EINVAL (checked first, so "1e999x" is
 * EINVAL); a syntactically valid duration longer than INT64_MAX ms is
 * POLITE_ERANGE. *ms is only set on success. */
int polite_duration_parse(const char *s, int64_t *ms) {
  if (s == NULL || ms == NULL || s[0] == '\0')
    return POLITE_EINVAL;
  /* Sum in nanoseconds with 128-bit integers; once the sum passes the
   * limit we only keep parsing to tell garbage (EINVAL) from overflow. */
  const __int128 limit = (__int128)INT64_MAX * 1000000;
  __int128 total_ns = 0;
  int overflow = 0;
  const char *p = s;
  int parts = 0;
  while (*p != '\0') {
    const char *ip, *fp;
    size_t il, fl;
    size_t n = scan_number(p, &ip, &il, &fp, &fl);
    if (n == 0)
      return POLITE_EINVAL;
    p += n;
    size_t ul = 0;
    while (is_alpha(p[ul]))
      ul++;
    int64_t per;
    if (ul == 0) {
      /* A bare number is seconds, and only as the whole string. */
      if (parts != 0 || *p != '\0')
        return POLITE_EINVAL;
      per = INT64_C(1000000000);
    } else {
      per = unit_ns(p, ul);
      if (per == 0)
        return POLITE_EINVAL;
      p += ul;
    }
    parts++;
    if (overflow)
      continue;
    /* value = int part * per + ceil(fraction * per); per <= 8.64e13 and
     * fraction digits beyond what per can resolve only round up. */
    __int128 v = 0;
    for (size_t i = 0; i < il && !overflow; i++) {
      v = v * 10 + (ip[i] - '0');
      if (v > limit / per)
        overflow = 1;
    }
    if (overflow)
      continue;
    v *= per;
    __int128 num = 0, den = 1;
    for (size_t i = 0; i < fl && i < 18; i++) {
      num = num * 10 + (fp[i] - '0');
      den *= 10;
    }
    __int128 frac = (num * per + den - 1) / den;
    /* Digits past the 18th are below a nanosecond; a non-zero one still
     * makes the value longer, which matters only when the rounding up
     * above was exact. */
    for (size_t i = 18; i < fl; i++)
      if (fp[i] != '0') {
        if (frac * den == num * per)
          frac += 1;
        break;
      }
    total_ns += v + frac;
    if (total_ns > limit)
      overflow = 1;
  }
  if (overflow)
    return POLITE_ERANGE;
  __int128 r = (total_ns + 999999) / 1000000;
  if (r > INT64_MAX)
    return POLITE_ERANGE;
  *ms = (int64_t)r;
  return POLITE_OK;
}
