/* Retry-After (RFC 9110 §10.2.3) and HTTP-date (RFC 9110 §5.6.7) parsing. */
#include <polite/core.h>

#include "http_syntax.h"

#include <string.h>

/* Years outside this range are rejected: the grammar has exactly four year
 * digits, and year 0 would format as a non-date. */
#define MIN_YEAR 1
#define MAX_YEAR 9999

static const char *const k_short_days[7] = {"Sun", "Mon", "Tue", "Wed",
                                            "Thu", "Fri", "Sat"};
static const char *const k_long_days[7] = {"Sunday",    "Monday",   "Tuesday",
                                           "Wednesday", "Thursday", "Friday",
                                           "Saturday"};
static const char *const k_months[12] = {"Jan", "Feb", "Mar", "Apr",
                                         "May", "Jun", "Jul", "Aug",
                                         "Sep", "Oct", "Nov", "Dec"};

static int is_leap(int64_t y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m) {
  static const int k_days[12] = {31, 28, 31, 30, 31, 30,
                                 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : k_days[m - 1];
}

/* Floor division, so negative Unix times map to the right day. */
static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0)))
    q--;
  return q;
}

/* A cursor over the date text; every reader returns 0 on a mismatch. */
typedef struct {
  const char *p;
  const char *end;
} cur;

/* Inline, so that the literals' lengths are known where it is called:
 * every response's Date header goes through here (the gateway's
 * profile: strlen and memcmp calls were most of its parse). */
static inline int eat_lit(cur *c, const char *lit) {
  size_t n = strlen(lit);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
    return 0;
  c->p += n;
  return 1;
}

/* The three bytes at c equal name[0..3) (a day's or a month's short
 * name); does not move c. */
static int at3(const cur *c, const char *name) {
  return c->end - c->p >= 3 && c->p[0] == name[0] && c->p[1] == name[1] &&
         c->p[2] == name[2];
}

/* Exactly n digits. */
static int eat_digits(cur *c, int n, int *out) {
  int v = 0;
  if (c->end - c->p < n)
    return 0;
  for (int i = 0; i < n; i++) {
    if (!polite__is_digit(c->p[i]))
      return 0;
    v = v * 10 + (c->p[i] - '0');
  }
  c->p += n;
  *out = v;
  return 1;
}

/* A month name, case-sensitive as RFC 9110 requires ("HTTP-date is case
 * sensitive"). Returns 1..12 or 0. */
static int eat_month(cur *c) {
  for (int i = 0; i < 12; i++)
    if (at3(c, k_months[i])) {
      c->p += 3;
      return i + 1;
    }
  return 0;
}

/* Which day-name table matched at the start; sets *is_long. Every long
 * name starts with its short name and the short names differ, so the one
 * short name that matches decides, and the long name wins when the rest
 * of it follows. */
static int eat_day_name(cur *c, int *is_long) {
  for (int i = 0; i < 7; i++) {
    if (!at3(c, k_short_days[i]))
      continue;
    c->p += 3;
    *is_long = eat_lit(c, k_long_days[i] + 3);
    return 1;
  }
  return 0;
}

/* "HH:MM:SS" with hour 0-23, minute 0-59, second 0-60. */
static int eat_time(cur *c, int *h, int *mi, int *s) {
  if (!eat_digits(c, 2, h) || !eat_lit(c, ":") || !eat_digits(c, 2, mi) ||
      !eat_lit(c, ":") || !eat_digits(c, 2, s))
    return 0;
  return *h <= 23 && *mi <= 59 && *s <= 60;
}

/* RFC 850's two-digit year: the year with those digits in the current
 * century, unless that is more than 50 years after now's year, in which
 * case the most recent past year with those digits (RFC 9110 §5.6.7). The
 * comparison is by year, not by instant. */
static int64_t rfc850_year(int yy, int64_t now_unix) {
  int64_t ny;
  int nm, nd;
  polite__civil_from_days(floor_div(now_unix, 86400), &ny, &nm, &nd);
  int64_t century = floor_div(ny, 100) * 100;
  int64_t y = century + yy;
  if (y > ny + 50)
    y -= 100;
  else if (y <= ny - 50) {
    /* now 2080, "10": 2010 is 70 years back but 2110 is only 30 ahead,
     * which is not "more than 50 years in the future", so it wins. */
    if (y + 100 <= ny + 50)
      y += 100;
  }
  return y;
}

/* Checks the fields and converts them. A second of 60 (a leap second, which
 * RFC 5322 allows in IMF dates) counts as the first second of the next
 * minute: POSIX time cannot name it, and rounding up never retries early. */
static int to_unix(int64_t y, int m, int d, int h, int mi, int s,
                   int64_t *out) {
  if (y < MIN_YEAR || y > MAX_YEAR || m < 1 || m > 12 || d < 1 ||
      d > days_in_month(y, m) || h > 23 || mi > 59 || s > 60)
    return 0;
  *out = polite__days_from_civil(y, m, d) * 86400 + h * 3600 + mi * 60 + s;
  return 1;
}

int polite_http_date_parse(const char *s, size_t len, int64_t now_unix,
                           int64_t *out_unix) {
  if (s == NULL || out_unix == NULL)
    return POLITE_EINVAL;
  polite__trim_ows(&s, &len);
  cur c = {s, s + len};
  int is_long = 0, d = 0, h = 0, mi = 0, sec = 0, m, yv;
  int64_t y, t;
  if (!eat_day_name(&c, &is_long))
    return POLITE_EINVAL;
  if (eat_lit(&c, ",")) {
    if (!eat_lit(&c, " ") || !eat_digits(&c, 2, &d))
      return POLITE_EINVAL;
    if (!is_long) {
      /* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT" */
      if (!eat_lit(&c, " ") || !(m = eat_month(&c)) || !eat_lit(&c, " ") ||
          !eat_digits(&c, 4, &yv))
        return POLITE_EINVAL;
      y = yv;
    } else {
      /* RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT" */
      if (!eat_lit(&c, "-") || !(m = eat_month(&c)) || !eat_lit(&c, "-") ||
          !eat_digits(&c, 2, &yv))
        return POLITE_EINVAL;
      y = rfc850_year(yv, now_unix);
    }
    if (!eat_lit(&c, " ") || !eat_time(&c, &h, &mi, &sec) ||
        !eat_lit(&c, " GMT"))
      return POLITE_EINVAL;
  } else {
    /* asctime: "Sun Nov  6 08:49:37 1994" (day is 2DIGIT or SP DIGIT). */
    if (is_long || !eat_lit(&c, " ") || !(m = eat_month(&c)) ||
        !eat_lit(&c, " "))
      return POLITE_EINVAL;
    if (eat_lit(&c, " ")) {
      if (!eat_digits(&c, 1, &d))
        return POLITE_EINVAL;
    } else if (!eat_digits(&c, 2, &d)) {
      return POLITE_EINVAL;
    }
    if (!eat_lit(&c, " ") || !eat_time(&c, &h, &mi, &sec) ||
        !eat_lit(&c, " ") || !eat_digits(&c, 4, &yv))
      return POLITE_EINVAL;
    y = yv;
  }
  if (c.p != c.end || !to_unix(y, m, d, h, mi, sec, &t))
    return POLITE_EINVAL;
  *out_unix = t;
  return 0;
}

int polite_http_date_format(int64_t unix_s, char *buf, size_t size) {
  if (buf == NULL || size < 30)
    return POLITE_EINVAL;
  /* Bounds first so the day arithmetic below cannot overflow. */
  if (unix_s < polite__days_from_civil(MIN_YEAR, 1, 1) * 86400 ||
      unix_s > polite__days_from_civil(MAX_YEAR, 12, 31) * 86400 + 86399)
    return POLITE_EINVAL;
  int64_t days = floor_div(unix_s, 86400);
  int64_t rem = unix_s - days * 86400;
  int64_t y;
  int m, d;
  polite__civil_from_days(days, &y, &m, &d);
  int wd = (int)(((days % 7) + 7 + 4) % 7); /* 1970-01-01 was a Thursday */
  int h = (int)(rem / 3600), mi = (int)(rem / 60 % 60), s = (int)(rem % 60);
  /* Written by hand rather than with snprintf so that the output is fixed
   * and locale-free. */
  char *p = buf;
  memcpy(p, k_short_days[wd], 3);
  p += 3;
  *p++ = ',';
  *p++ = ' ';
  *p++ = (char)('0' + d / 10);
  *p++ = (char)('0' + d % 10);
  *p++ = ' ';
  memcpy(p, k_months[m - 1], 3);
  p += 3;
  *p++ = ' ';
  *p++ = (char)('0' + y / 1000);
  *p++ = (char)('0' + y / 100 % 10);
  *p++ = (char)('0' + y / 10 % 10);
  *p++ = (char)('0' + y % 10);
  *p++ = ' ';
  *p++ = (char)('0' + h / 10);
  *p++ = (char)('0' + h % 10);
  *p++ = ':';
  *p++ = (char)('0' + mi / 10);
  *p++ = (char)('0' + mi % 10);
  *p++ = ':';
  *p++ = (char)('0' + s / 10);
  *p++ = (char)('0' + s % 10);
  memcpy(p, " GMT", 4);
  p += 4;
  *p = '\0';
  return (int)(p - buf);
}

void polite_retry_after_parse(const char *s, size_t len, int64_t now_unix,
                              polite_retry_after *out) {
  if (out == NULL)
    return;
  memset(out, 0, sizeof *out);
  out->kind = POLITE_RA_NONE;
  if (s == NULL)
    return;
  polite__trim_ows(&s, &len);
  if (len == 0)
    return;
  if (polite__is_digit(s[0])) {
    /* delay-seconds = 1*DIGIT. Keep scanning after saturating so that
     * "99999999999999999999x" is still rejected as a whole. */
    int64_t v = 0;
    int sat = 0;
    for (size_t i = 0; i < len; i++) {
      if (!polite__is_digit(s[i])) {
        out->kind = POLITE_RA_INVALID;
        return;
      }
      if (!sat) {
        v = v * 10 + (s[i] - '0');
        if (v > POLITE_RA_MAX_SECONDS) {
          v = POLITE_RA_MAX_SECONDS;
          sat = 1;
        }
      }
    }
    out->kind = POLITE_RA_SECONDS;
    out->seconds = v;
    out->saturated = sat;
    return;
  }
  int64_t t;
  if (polite_http_date_parse(s, len, now_unix, &t) == 0) {
    out->kind = POLITE_RA_DATE;
    out->date_unix = t;
    return;
  }
  out->kind = POLITE_RA_INVALID;
}

int64_t polite_retry_after_delay_ms(const polite_retry_after *ra,
                                    int64_t now_ms, int64_t server_date_unix) {
  /* Every wait is capped here, the same cap delay-seconds saturates at, so
   * callers can add jitter without overflow. */
  const int64_t cap_ms = POLITE_RA_MAX_SECONDS * 1000;
  if (ra == NULL)
    return -1;
  switch (ra->kind) {
  case POLITE_RA_SECONDS: {
    int64_t s = ra->seconds;
    if (s < 0)
      return 0;
    return s >= POLITE_RA_MAX_SECONDS ? cap_ms : s * 1000;
  }
  case POLITE_RA_DATE: {
    /* 128-bit arithmetic: the caller's clocks are arbitrary int64 values. */
    __int128 base = server_date_unix >= 0 ? (__int128)server_date_unix * 1000
                                          : (__int128)now_ms;
    __int128 diff = (__int128)ra->date_unix * 1000 - base;
    if (diff <= 0)
      return 0;
    return diff > cap_ms ? cap_ms : (int64_t)diff;
  }
  default: return -1;
  }
}
