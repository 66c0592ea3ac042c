/* polite HTTP syntax helpers shared inside libpolite (private: `polite__`
 * names, not exported): RFC 9110 token characters and OWS, ASCII case-
 * insensitive comparison, hex digits, FNV-1a hashing, civil dates, and
 * reading a whole file with a size limit. Locale-independent throughout:
 * HTTP is ASCII, whatever LC_CTYPE says. */
#ifndef POLITE_HTTP_SYNTAX_H
#define POLITE_HTTP_SYNTAX_H

#include <stddef.h>
#include <stdint.h>

/* ---- Characters ------------------------------------------------------- */

/* RFC 9110 tchar: what methods and field names are made of. Inline, as a
 * bit per ASCII byte (ALPHA, DIGIT and "!#$%&'*+-.^_`|~"): the parsers ask
 * once per byte of every field name of every proxied message. */
static inline int polite__is_tchar(unsigned char c) {
  const uint64_t lo = 0x03ff6cfa00000000u; /* bytes 0-63 */
  const uint64_t hi = 0x57ffffffc7fffffeu; /* bytes 64-127 */
  return c < 64 ? (int)(lo >> c & 1) : c < 128 ? (int)(hi >> (c - 64) & 1) : 0;
}
/* 1 when s[0..n) is a non-empty RFC 9110 token. */
int polite__is_token(const char *s, size_t n);
/* SP or HTAB (RFC 9110 OWS). */
int polite__is_ows(char c);
/* Strips OWS on both ends of the counted string in place. */
void polite__trim_ows(const char **s, size_t *n);
/* 1 for an ASCII decimal digit (isdigit() without the locale). */
int polite__is_digit(char c);
/* ASCII lower case of c (other bytes unchanged). */
char polite__lower(char c);
/* 0..15 for a hex digit, else -1. */
int polite__hexval(char c);

/* ---- Case-insensitive comparison (ASCII) ------------------------------ */

/* 1 when a[0..an) equals b[0..bn) ignoring ASCII case. */
int polite__ci_eqn(const char *a, size_t an, const char *b, size_t bn);
/* 1 when s[0..n) equals the NUL-terminated lit ignoring case. Inline, in
 * one walk without strlen: every field name of every proxied message is
 * compared with a dozen names, and most differ at the first byte. */
static inline int polite__ci_eq(const char *s, size_t n, const char *lit) {
  for (size_t i = 0; i < n; i++) {
    unsigned char x = (unsigned char)s[i], y = (unsigned char)lit[i];
    if (y == '\0' || (x != y && ((x | 32u) != (y | 32u) ||
                                 (unsigned)((x | 32u) - 'a') > 25u)))
      return 0;
  }
  return lit[n] == '\0';
}
/* 1 when s[0..n) starts with lit ignoring case. */
int polite__ci_prefix(const char *s, size_t n, const char *lit);
/* First occurrence of needle in hay[0..n) ignoring case, or NULL (an empty
 * needle is found at hay). */
const char *polite__ci_find(const char *hay, size_t n, const char *needle);

/* ---- Hashing ---------------------------------------------------------- */

/* 64-bit FNV-1a of s[0..n): fast, good spread for short keys, not
 * collision-resistant (never hash attacker keys into a table without a
 * size bound). */
uint64_t polite__fnv1a(const void *s, size_t n);
/* A 64-bit hash of s[0..n) from seed, eight bytes a step, then murmur3's
 * finalizer (every output bit depends on every byte): for per-request keys,
 * where FNV-1a's byte a step shows. Same caveat as FNV-1a: bound tables. */
uint64_t polite__hash_words(uint64_t seed, const void *s, size_t n);
/* Goes on hashing s[0..n) from the state h that an earlier
 * polite__fnv1a(_more) returned: fnv1a(a + b) == fnv1a_more(fnv1a(a), b).
 * For salted keys without copying them. */
uint64_t polite__fnv1a_more(uint64_t h, const void *s, size_t n);

/* ---- Civil dates (proleptic Gregorian, Howard Hinnant's algorithms) ---- */

/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31); checks nothing. */
int64_t polite__days_from_civil(int64_t y, int m, int d);
/* The inverse: the date of day z since 1970-01-01. */
void polite__civil_from_days(int64_t z, int64_t *y, int *m, int *d);

/* ---- Files ------------------------------------------------------------ */

/* Reads the whole file at path into *out (malloc'ed, NUL-terminated; the
 * caller frees it) and its length into *len. A file larger than max bytes
 * is refused without reading it all (/dev/zero stops at max + 1 bytes).
 * Returns 0, or -1 with errno set (EFBIG when over max). */
int polite__read_file(const char *path, size_t max, char **out, size_t *len);

/* 1 when path itself (its last component) is a symbolic link, with its
 * target in buf (cut to len, "" when unreadable); else 0. */
int polite__symlink_at(const char *path, char *buf, size_t len);

#endif
