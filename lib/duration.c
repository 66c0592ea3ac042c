/* Durations in both dialects polite reads, on one reader: the command line's
 * ("1h30m", "250ms", "1.5", "2d"; polite_duration_parse) and Go's
 * time.Duration text that OpenAI sends in x-ratelimit-reset-* ("6m0s",
 * "20ms", "1.5µs"; polite_go_duration_ms). Pure and locale independent. */
#include <polite/core.h>

#include "http_syntax.h"

#include <string.h>

#define NS_MS INT64_C(1000000)
#define NS_S INT64_C(1000000000)
#define NS_MIN INT64_C(60000000000)
#define NS_H INT64_C(3600000000000)
#define NS_D INT64_C(86400000000000)

/* One unit a dialect knows: its spelling and its length in nanoseconds. */
typedef struct {
  const char *name;
  int64_t ns;
} unit_row;

/* The command line's units, compared ignoring case ("2S" is "2s"). */
static const unit_row k_cli_units[] = {
    {"ms", NS_MS}, {"s", NS_S}, {"m", NS_MIN}, {"min", NS_MIN},
    {"h", NS_H},   {"d", NS_D}, {NULL, 0},
};

/* Go's units, case-sensitive as time.ParseDuration has them; micro is "us"
 * or µ as U+00B5 or U+03BC in UTF-8. */
static const unit_row k_go_units[] = {
    {"ns", 1},           {"us", 1000},  {"\xC2\xB5s", 1000},
    {"\xCE\xBCs", 1000}, {"ms", NS_MS}, {"s", NS_S},
    {"m", NS_MIN},       {"h", NS_H},   {NULL, 0},
};

/* What tells the two dialects apart. */
typedef struct {
  const unit_row *units;
  int fold_case;     /* units compare ignoring ASCII case */
  int64_t bare_ns;   /* a lone unit-less number means this unit; 0: refused */
  __int128 limit_ns; /* a sum above this sets *over (and stops growing) */
} dialect;

/* The unit d spells as u[0..n) in nanoseconds, or 0 when it has none. */
static int64_t unit_ns(const dialect *d, const char *u, size_t n) {
  for (const unit_row *r = d->units; r->name != NULL; r++) {
    if (strlen(r->name) != n)
      continue;
    if (d->fold_case ? polite__ci_eq(u, n, r->name)
                     : memcmp(u, r->name, n) == 0)
      return r->ns;
  }
  return 0;
}

/* ceil(0.DIGITS * per) for the fraction digits f[0..n): 18 digits are kept
 * exactly; a non-zero digit beyond them still makes the value longer when
 * the rounding up was otherwise exact, so a wait is never cut short. */
static __int128 fraction_ns(const char *f, size_t n, int64_t per) {
  __int128 num = 0, den = 1;
  for (size_t i = 0; i < n && i < 18; i++) {
    num = num * 10 + (f[i] - '0');
    den *= 10;
  }
  __int128 v = (num * per + den - 1) / den;
  for (size_t i = 18; i < n; i++)
    if (f[i] != '0') {
      if (v * den == num * per)
        v += 1;
      break;
    }
  return v;
}

/* Reads s[0..len) as one or more NUMBER UNIT parts (NUMBER is DIGITS, with
 * an optional "." and fraction digits, at least one digit in all; UNIT is
 * the run of bytes up to the next digit or "." and must be one of d's) and
 * adds them up in *ns, rounding fractions up to whole nanoseconds. A sum
 * above d->limit_ns sets *over and *ns to the limit; the rest is still read
 * so that garbage is told from a long duration. Returns 0, or POLITE_EINVAL
 * for anything else (empty, signs, spaces, unknown or missing units). */
static int sum_parts(const dialect *d, const char *s, size_t len, __int128 *ns,
                     int *over) {
  __int128 total = 0;
  size_t i = 0;
  *over = 0;
  if (len == 0)
    return POLITE_EINVAL;
  while (i < len) {
    __int128 ip = 0;
    size_t start = i, digits = 0, f = 0, fl = 0;
    for (; i < len && polite__is_digit(s[i]); i++, digits++)
      if (ip <= d->limit_ns) /* saturate: past the limit is all the same */
        ip = ip * 10 + (s[i] - '0');
    if (i < len && s[i] == '.')
      for (f = ++i; i < len && polite__is_digit(s[i]); i++)
        fl++;
    if (digits + fl == 0)
      return POLITE_EINVAL;
    size_t u = i;
    while (i < len && !polite__is_digit(s[i]) && s[i] != '.')
      i++;
    int64_t per = unit_ns(d, s + u, i - u);
    if (u == i && start == 0 && i == len)
      per = d->bare_ns; /* the whole string is one unit-less number */
    if (per == 0)
      return POLITE_EINVAL;
    if (*over)
      continue;
    if (ip > d->limit_ns / per) {
      *over = 1;
      continue;
    }
    total += ip * per + fraction_ns(s + f, fl, per);
    if (total > d->limit_ns)
      *over = 1;
  }
  *ns = *over ? d->limit_ns : total;
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
  if (s == NULL || ms == NULL)
    return POLITE_EINVAL;
  const dialect cli = {k_cli_units, 1, NS_S, (__int128)INT64_MAX * NS_MS};
  __int128 ns;
  int over;
  int rc = sum_parts(&cli, s, strlen(s), &ns, &over);
  if (rc != 0)
    return rc;
  if (over)
    return POLITE_ERANGE;
  *ms = (int64_t)((ns + NS_MS - 1) / NS_MS);
  return POLITE_OK;
}

/* Go's grammar (time.ParseDuration) without the sign: OWS around it is
 * ignored, "0" is the only unit-less duration, and the result saturates at
 * the cap every header wait has (POLITE_RA_MAX_SECONDS), so that a hostile
 * "99999999h" is a long wait, not an error and not an overflow. */
int polite_go_duration_ms(const char *s, size_t len, int64_t *out_ms) {
  if (s == NULL || out_ms == NULL)
    return POLITE_EINVAL;
  polite__trim_ows(&s, &len);
  if (len == 1 && s[0] == '0') {
    *out_ms = 0;
    return 0;
  }
  const dialect go = {k_go_units, 0, 0,
                      (__int128)POLITE_RA_MAX_SECONDS * 1000 * NS_MS};
  __int128 ns;
  int over;
  int rc = sum_parts(&go, s, len, &ns, &over);
  if (rc != 0)
    return rc;
  *out_ms = (int64_t)((ns + NS_MS - 1) / NS_MS);
  return 0;
}
