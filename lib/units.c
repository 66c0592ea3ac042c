/* Parsing of rates ("90/min") for the command line and configuration files
 * (pure, locale independent); durations are in duration.c. */
#include <polite/core.h>

#include "http_syntax.h"

#include <math.h>
#include <string.h>

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

/* The spellings of a rate's unit (compared ignoring case) in seconds. */
static const struct {
  const char *name;
  double secs;
} k_rate_units[] = {
    {"s", 1},        {"sec", 1},      {"secs", 1},  {"second", 1},
    {"seconds", 1},  {"m", 60},       {"min", 60},  {"mins", 60},
    {"minute", 60},  {"minutes", 60}, {"h", 3600},  {"hr", 3600},
    {"hour", 3600},  {"hours", 3600}, {"d", 86400}, {"day", 86400},
    {"days", 86400}, {NULL, 0},
};

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
  double secs = 0;
  for (size_t i = 0; k_rate_units[i].name != NULL && secs == 0; i++)
    if (polite__ci_eq(u, ul, k_rate_units[i].name))
      secs = k_rate_units[i].secs;
  if (secs == 0)
    return POLITE_EINVAL;
  double v = digits_value(ip, il, fp, fl) / secs;
  if (!isfinite(v) || v < 1e-9 || v > 1e9)
    return POLITE_EINVAL;
  *per_s = v;
  return POLITE_OK;
}
