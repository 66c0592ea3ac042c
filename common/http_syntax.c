/* polite HTTP syntax helpers shared inside libpolite (see http_syntax.h). */
#include "http_syntax.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int polite__is_token(const char *s, size_t n) {
  if (s == NULL || n == 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!polite__is_tchar((unsigned char)s[i]))
      return 0;
  return 1;
}

int polite__is_ows(char c) {
  return c == ' ' || c == '\t';
}

void polite__trim_ows(const char **s, size_t *n) {
  while (*n > 0 && polite__is_ows((*s)[0])) {
    (*s)++;
    (*n)--;
  }
  while (*n > 0 && polite__is_ows((*s)[*n - 1]))
    (*n)--;
}

int polite__is_digit(char c) {
  return c >= '0' && c <= '9';
}

char polite__lower(char c) {
  return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

int polite__hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int polite__ci_eqn(const char *a, size_t an, const char *b, size_t bn) {
  if (an != bn)
    return 0;
  /* The ASCII fold inline, not polite__lower: this compares every field
   * name of every proxied message against a dozen names. */
  for (size_t i = 0; i < an; i++) {
    unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
    if (x != y && ((x | 32u) != (y | 32u) || (unsigned)((x | 32u) - 'a') > 25u))
      return 0;
  }
  return 1;
}

int polite__ci_prefix(const char *s, size_t n, const char *lit) {
  size_t m = strlen(lit);
  return n >= m && polite__ci_eqn(s, m, lit, m);
}

const char *polite__ci_find(const char *hay, size_t n, const char *needle) {
  size_t m = strlen(needle);
  if (m == 0)
    return hay;
  char first = polite__lower(needle[0]);
  for (size_t i = 0; i + m <= n; i++)
    if (polite__lower(hay[i]) == first && polite__ci_eqn(hay + i, m, needle, m))
      return hay + i;
  return NULL;
}

uint64_t polite__fnv1a(const void *s, size_t n) {
  return polite__fnv1a_more(UINT64_C(14695981039346656037), s, n);
}

uint64_t polite__fnv1a_more(uint64_t h, const void *s, size_t n) {
  const unsigned char *p = s;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= UINT64_C(1099511628211);
  }
  return h;
}

uint64_t polite__hash_words(uint64_t seed, const void *s, size_t n) {
  const unsigned char *p = s;
  uint64_t h = seed ^ UINT64_C(0x9e3779b97f4a7c15) ^ n, w;
  for (; n >= 8; p += 8, n -= 8) {
    memcpy(&w, p, 8);
    h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 29;
  }
  w = 0;
  memcpy(&w, p, n);
  h ^= w;
  h ^= h >> 33;
  h *= UINT64_C(0xff51afd7ed558ccd);
  h ^= h >> 33;
  h *= UINT64_C(0xc4ceb9fe1a85ec53);
  h ^= h >> 33;
  return h;
}

int64_t polite__days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void polite__civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

int polite__read_file(const char *path, size_t max, char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return -1;
  size_t cap = 0, n = 0;
  char *buf = NULL;
  for (;;) {
    if (n + 1 >= cap) {
      /* Grows by doubling up to max + 2, so an endless file stops at one
       * byte past the limit. */
      size_t nc = cap ? cap * 2 : 4096;
      if (nc > max + 2)
        nc = max + 2;
      if (nc <= n + 1) {
        free(buf);
        fclose(f);
        errno = EFBIG;
        return -1;
      }
      char *nb = realloc(buf, nc);
      if (nb == NULL) {
        free(buf);
        fclose(f);
        errno = ENOMEM;
        return -1;
      }
      buf = nb;
      cap = nc;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (n > max) {
      free(buf);
      fclose(f);
      errno = EFBIG;
      return -1;
    }
    if (got == 0)
      break;
  }
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err) {
    free(buf);
    errno = err;
    return -1;
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return 0;
}

int polite__symlink_at(const char *path, char *buf, size_t len) {
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
    return 0;
  ssize_t n = len > 0 ? readlink(path, buf, len - 1) : -1;
  if (len > 0)
    buf[n > 0 ? n : 0] = '\0';
  return 1;
}
