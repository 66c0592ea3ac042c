/* RFC 8941 structured-field reading for the RateLimit headers (internal;
 * not installed): the subset polite needs (lists and dictionaries of bare
 * items with parameters), plus the saturating decimal reader that headers.c
 * shares with it. Pure: bytes in, numbers out. */
#ifndef POLITE_SFV_H
#define POLITE_SFV_H

#include <stddef.h>
#include <stdint.h>

/* Numbers are parsed with saturation at this bound (far above any epoch in
 * milliseconds, far below overflow when scaled by 1000). */
#define POLITE__NUM_SAT (INT64_C(1) << 52)

/* One list or dictionary member with the parameters polite cares about.
 * Values that are absent or not non-negative integers stay -1. */
typedef struct {
  const char *key; /* dictionary key ("limit=..."), or NULL */
  size_t key_len;
  int64_t int_item; /* the member's value when it is an integer */
  int64_t q, w, r, t;
  int qu_other; /* a qu parameter other than "requests" (bytes, ...) */
} polite__sf_member;

/* Parses a non-negative decimal "123" or "12.345" (no sign, no exponent) and
 * returns ceil(value * mult) in *out, saturated at POLITE__NUM_SAT * mult.
 * Returns 1, or 0 when the text is not such a number. mult is 1 or 1000. */
int polite__decimal_scaled(const char *s, size_t len, int64_t mult,
                           int64_t *out);

/* Reads one member ("item;params" or "key=item;params" or a bare "key")
 * and the comma after it. Returns 1 with *m filled, 0 at the end, -1 on a
 * syntax error (the rest of the field is then ignored). */
int polite__sf_next(const char **p, const char *end, polite__sf_member *m);

/* 1 when the whole field v[0..len) parses: the draft says malformed
 * RateLimit fields MUST be ignored, so nothing is taken from a field with a
 * bad member. */
int polite__sf_valid(const char *v, size_t len);

#endif
