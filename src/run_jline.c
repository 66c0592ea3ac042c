/* The line writer of the attempt log and the results file: one JSON object
 * per line, written by hand exactly as jansson would dump it. */
#include "run_output.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The first line's allocation; lines longer than it double it once and
 * keep it. */
#define JLINE_FIRST_CAP 1024

/* room's slow path: grows the buffer. */
static int grow(run_jline *j, size_t more) {
  size_t cap = j->cap ? j->cap : JLINE_FIRST_CAP;
  while (cap - 1 < j->n || cap - 1 - j->n < more) {
    if (cap > SIZE_MAX / 2) {
      j->oom = 1;
      return -1;
    }
    cap *= 2;
  }
  char *p = realloc(j->p, cap);
  if (p == NULL) {
    j->oom = 1;
    return -1;
  }
  j->p = p;
  j->cap = cap;
  return 0;
}

/* Makes room for `more` bytes and the final NUL. 0, or -1 (oom set).
 * Inline: it is called for every piece of every line, and the buffer is
 * almost always big enough already. */
static inline int room(run_jline *j, size_t more) {
  if (j->oom)
    return -1;
  if (more < j->cap && j->n < j->cap - more)
    return 0;
  return grow(j, more);
}

static void put(run_jline *j, const char *s, size_t n) {
  if (room(j, n) == 0) {
    memcpy(j->p + j->n, s, n);
    j->n += n;
  }
}

/* The separator a new member needs (none right after an opening brace or
 * bracket), then `"key":` unless key is NULL (an array element). */
static void key_of(run_jline *j, const char *key) {
  if (j->oom || j->n == 0)
    return;
  /* One room for all of it: a line has some twenty keys. */
  size_t n = key ? strlen(key) : 0;
  if (room(j, n + 4) != 0)
    return;
  char last = j->p[j->n - 1];
  if (last != '{' && last != '[')
    j->p[j->n++] = ',';
  if (key == NULL)
    return;
  j->p[j->n++] = '"';
  memcpy(j->p + j->n, key, n);
  j->n += n;
  j->p[j->n++] = '"';
  j->p[j->n++] = ':';
}

void run_jline_begin(run_jline *j) {
  j->n = 0;
  j->oom = 0;
  put(j, "{", 1);
}

const char *run_jline_end(run_jline *j) {
  put(j, "}", 1);
  if (j->oom)
    return NULL;
  j->p[j->n] = '\0';
  return j->p;
}

void run_jline_free(run_jline *j) {
  free(j->p);
  j->p = NULL;
  j->n = j->cap = 0;
  j->date[0] = '\0';
}

/* Length of the valid UTF-8 sequence at p[0..n), or 0: jansson's rules
 * (no overlong form, no surrogate, nothing above U+10FFFF), so that text
 * jansson would refuse is mended byte for byte as run_text_json does. */
static size_t utf8_seq(const unsigned char *p, size_t n) {
  unsigned c = p[0], v;
  size_t len;
  if (c < 0x80)
    return 1;
  if (c < 0xc2)
    return 0; /* a continuation byte, or an overlong 2-byte lead */
  if (c < 0xe0) {
    len = 2;
    v = c & 0x1f;
  } else if (c < 0xf0) {
    len = 3;
    v = c & 0x0f;
  } else if (c < 0xf5) {
    len = 4;
    v = c & 0x07;
  } else {
    return 0;
  }
  if (len > n)
    return 0;
  for (size_t k = 1; k < len; k++) {
    if ((p[k] & 0xc0) != 0x80)
      return 0;
    v = (v << 6) | (p[k] & 0x3f);
  }
  if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10ffff ||
      (v >= 0xd800 && v <= 0xdfff))
    return 0;
  return len;
}

/* The escape of an ASCII byte jansson escapes, into out (2 or 6 bytes). */
static size_t escape(unsigned char c, char *out) {
  static const char hex[] = "0123456789ABCDEF";
  static const char short_form[][2] = {{'"', '"'},  {'\\', '\\'}, {'\b', 'b'},
                                       {'\f', 'f'}, {'\n', 'n'},  {'\r', 'r'},
                                       {'\t', 't'}};
  out[0] = '\\';
  for (size_t i = 0; i < sizeof short_form / sizeof short_form[0]; i++)
    if (short_form[i][0] == (char)c) {
      out[1] = short_form[i][1];
      return 2;
    }
  memcpy(out + 1, "u00", 3);
  out[4] = hex[c >> 4];
  out[5] = hex[c & 15];
  return 6;
}

/* 1 when none of the 8 bytes at p needs a second look: each is printable
 * ASCII other than '"' and '\\' (the bit tricks of "Bit Twiddling Hacks":
 * hasless and haszero, exact for the whole word). */
static int plain8(const unsigned char *p) {
  const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
  uint64_t v;
  memcpy(&v, p, 8);
  uint64_t q = v ^ (ones * '"'), b = v ^ (ones * '\\');
  uint64_t bad = (v & highs) | ((v - ones * 0x20) & ~v & highs) |
                 ((q - ones) & ~q & highs) | ((b - ones) & ~b & highs);
  return bad == 0;
}

/* The quoted string: the worst case (every byte \u00XX) is reserved once,
 * so the loop writes without checking for room. Runs of plain bytes (most
 * of a log line) are copied 8 at a time. */
static void quoted(run_jline *j, const char *s, size_t n) {
  if (n > (SIZE_MAX - 2) / 6 || room(j, n * 6 + 2) != 0) {
    j->oom = 1;
    return;
  }
  const unsigned char *p = (const unsigned char *)s;
  char *o = j->p + j->n;
  *o++ = '"';
  for (size_t i = 0; i < n;) {
    if (n - i >= 8 && plain8(p + i)) {
      memcpy(o, p + i, 8);
      o += 8;
      i += 8;
      continue;
    }
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      *o++ = (char)c;
      i++;
    } else if (c < 0x80) {
      o += escape(c, o);
      i++;
    } else {
      size_t len = utf8_seq(p + i, n - i);
      if (len == 0) {
        memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD, as run_text_json mends */
        o += 3;
        i++;
      } else {
        memcpy(o, p + i, len);
        o += len;
        i += len;
      }
    }
  }
  *o++ = '"';
  j->n = (size_t)(o - j->p);
}

void run_jline_text(run_jline *j, const char *key, const char *s, size_t n) {
  key_of(j, key);
  quoted(j, s, n);
}

void run_jline_cstr(run_jline *j, const char *key, const char *s) {
  if (s == NULL)
    run_jline_null(j, key);
  else
    run_jline_text(j, key, s, strlen(s));
}

void run_jline_int(run_jline *j, const char *key, long long v) {
  /* By hand: snprintf's format machinery was the writer's largest cost. */
  char buf[24];
  char *p = buf + sizeof buf;
  unsigned long long u =
      v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
  do {
    *--p = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (v < 0)
    *--p = '-';
  key_of(j, key);
  size_t n = (size_t)(buf + sizeof buf - p);
  if (room(j, sizeof buf) == 0) { /* copied by bytes: at most 20 */
    for (size_t i = 0; i < n; i++)
      j->p[j->n + i] = p[i];
    j->n += n;
  }
}

/* jansson's form of a real (jsonp_dtostr): %.17g, then ".0" when neither a
 * point nor an exponent shows, and the exponent without '+' or leading
 * zeros. Not finite: null (jansson refuses such a real). */
void run_jline_real(run_jline *j, const char *key, double v) {
  if (!isfinite(v)) {
    run_jline_null(j, key);
    return;
  }
  char buf[48];
  int n = snprintf(buf, sizeof buf - 2, "%.17g", v);
  if (strchr(buf, '.') == NULL && strchr(buf, 'e') == NULL) {
    memcpy(buf + n, ".0", 3);
    n += 2;
  }
  char *e = strchr(buf, 'e');
  if (e != NULL) {
    char *start = e + 1, *end = e + 2;
    if (*start == '-')
      start++;
    while (*end == '0')
      end++;
    if (end != start) {
      memmove(start, end, (size_t)(buf + n - end) + 1);
      n -= (int)(end - start);
    }
  }
  key_of(j, key);
  put(j, buf, (size_t)n);
}

void run_jline_bool(run_jline *j, const char *key, int v) {
  key_of(j, key);
  put(j, v ? "true" : "false", v ? 4 : 5);
}

void run_jline_null(run_jline *j, const char *key) {
  key_of(j, key);
  put(j, "null", 4);
}

/* s through one of the redactions (NULL: null; out of memory: ""). */
static void redacted(run_jline *j, const char *key, const char *s,
                     char *(*redact)(const char *)) {
  if (s == NULL) {
    run_jline_null(j, key);
    return;
  }
  char *r = redact(s);
  run_jline_text(j, key, r ? r : "", r ? strlen(r) : 0);
  free(r);
}

void run_jline_url(run_jline *j, const char *key, const char *url) {
  redacted(j, key, url, polite_redact_url);
}

void run_jline_redacted(run_jline *j, const char *key, const char *text) {
  redacted(j, key, text, polite_redact_text);
}

void run_jline_time(run_jline *j, const char *key, long long ms) {
  long long sec = ms / 1000;
  /* An attempt's start and end, and the next attempt's, mostly fall in
   * the same second: its date text is made once. */
  if (j->date[0] == '\0' || j->sec != sec) {
    time_t t = (time_t)sec;
    struct tm tm;
    j->date[0] = '\0';
    if (gmtime_r(&t, &tm) != NULL &&
        strftime(j->date, sizeof j->date, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
      j->date[0] = '\0';
    j->sec = sec;
  }
  /* The same 40 bytes as the jansson writer had, cut the same way. */
  char buf[sizeof j->date];
  size_t n = strlen(j->date);
  memcpy(buf, j->date, n + 1);
  int frac = (int)(ms % 1000);
  if (frac >= 0 && n + 6 <= sizeof buf) {
    /* ".mmmZ" by hand: snprintf was two of the gateway's four format
     * calls per request. */
    buf[n] = '.';
    buf[n + 1] = (char)('0' + frac / 100);
    buf[n + 2] = (char)('0' + frac / 10 % 10);
    buf[n + 3] = (char)('0' + frac % 10);
    buf[n + 4] = 'Z';
    buf[n + 5] = '\0';
  } else {
    snprintf(buf + n, sizeof buf - n, ".%03dZ", frac);
  }
  run_jline_text(j, key, buf, strlen(buf));
}

void run_jline_open(run_jline *j, const char *key, char kind) {
  key_of(j, key);
  put(j, kind == '[' ? "[" : "{", 1);
}

void run_jline_close(run_jline *j, char kind) {
  put(j, kind == ']' ? "]" : "}", 1);
}
