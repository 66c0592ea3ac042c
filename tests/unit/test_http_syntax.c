/* Unit tests of the shared HTTP syntax helpers (lib/http_syntax.c): token
 * characters, OWS, case-insensitive compare, FNV-1a, civil dates and the
 * bounded file reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_syntax.h"

static void tokens(void **state) {
  (void)state;
  const char *ok = "!#$%&'*+-.^_`|~09AZaz";
  for (const char *p = ok; *p; p++)
    assert_true(polite__is_tchar((unsigned char)*p));
  const char *bad = "\"(),/:;<=>?@[\\]{} \t";
  for (const char *p = bad; *p; p++)
    assert_false(polite__is_tchar((unsigned char)*p));
  assert_false(polite__is_tchar(0));
  assert_false(polite__is_tchar(0x7f));
  assert_false(polite__is_tchar(0xc3)); /* no UTF-8 in tokens */
  assert_true(polite__is_token("X-Api-Key", 9));
  assert_false(polite__is_token("", 0));
  assert_false(polite__is_token("A B", 3));
  assert_false(polite__is_token(NULL, 0));
}

static void ows_and_case(void **state) {
  (void)state;
  const char *s = " \t v 1 \t";
  size_t n = strlen(s);
  polite__trim_ows(&s, &n);
  assert_int_equal(n, 3);
  assert_memory_equal(s, "v 1", 3);
  s = " \t ";
  n = 3;
  polite__trim_ows(&s, &n);
  assert_int_equal(n, 0);
  assert_true(polite__ci_eq("Retry-After", 11, "retry-after"));
  assert_true(polite__ci_eq("RETRY-after", 11, "Retry-After"));
  assert_false(polite__ci_eq("Retry-After", 10, "retry-after"));
  assert_true(polite__ci_prefix("X-RateLimit-Reset", 17, "x-ratelimit-"));
  assert_false(polite__ci_prefix("X-Rate", 6, "x-ratelimit-"));
  const char *h = "abcXYZdef";
  assert_ptr_equal(polite__ci_find(h, 9, "xyz"), h + 3);
  assert_null(polite__ci_find(h, 5, "xyz")); /* never past n */
  assert_ptr_equal(polite__ci_find(h, 9, ""), h);
  /* ASCII only: a Turkish locale's dotless i cannot change the answer. */
  assert_int_equal(polite__lower('I'), 'i');
  assert_int_equal(polite__lower((char)0xC4), (char)0xC4);
  assert_int_equal(polite__hexval('f'), 15);
  assert_int_equal(polite__hexval('F'), 15);
  assert_int_equal(polite__hexval('g'), -1);
}

static void fnv(void **state) {
  (void)state;
  /* The published FNV-1a 64-bit test vectors. */
  assert_true(polite__fnv1a("", 0) == UINT64_C(0xcbf29ce484222325));
  assert_true(polite__fnv1a("a", 1) == UINT64_C(0xaf63dc4c8601ec8c));
  assert_true(polite__fnv1a("foobar", 6) == UINT64_C(0x85944171f73967e8));
  /* Going on from a state is hashing the concatenation (the proxy's salted
   * client hash). */
  assert_true(polite__fnv1a_more(polite__fnv1a("foo", 3), "bar", 3) ==
              UINT64_C(0x85944171f73967e8));
}

/* polite__hash_words: the same bytes and seed give the same hash; a byte
 * anywhere (in a whole word, in the tail, past the tail), the length or the
 * seed changes it; every low bit (what the tables' buckets use) moves. */
static void hash_words(void **state) {
  (void)state;
  const char *key = "GET http://127.0.0.1:8080/v1/items?limit=10";
  size_t n = strlen(key);
  uint64_t h = polite__hash_words(0, key, n);
  assert_true(h == polite__hash_words(0, key, n));
  assert_true(h != polite__hash_words(1, key, n));
  assert_true(h != polite__hash_words(0, key, n - 1));
  assert_true(polite__hash_words(0, "", 0) != polite__hash_words(0, "a", 1));
  char copy[64];
  uint64_t low = 0;
  for (size_t i = 0; i < n; i++) {
    memcpy(copy, key, n + 1);
    copy[i] ^= 1;
    uint64_t g = polite__hash_words(0, copy, n);
    assert_true(g != h);
    low |= (g ^ h) & 0xff;
  }
  assert_true(low == 0xff);
}

static void civil_dates(void **state) {
  (void)state;
  assert_int_equal(polite__days_from_civil(1970, 1, 1), 0);
  assert_int_equal(polite__days_from_civil(2000, 3, 1), 11017);
  assert_int_equal(polite__days_from_civil(1969, 12, 31), -1);
  /* Round trips over 1..9999, the years HTTP-dates may carry. */
  for (int64_t z = polite__days_from_civil(1, 1, 1);
       z <= polite__days_from_civil(9999, 12, 31); z += 97) {
    int64_t y;
    int m, d;
    polite__civil_from_days(z, &y, &m, &d);
    assert_int_equal(polite__days_from_civil(y, m, d), z);
  }
}

static void read_file(void **state) {
  (void)state;
  char path[] = "/tmp/polite-test-read-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "hello\0world", 11), 11);
  close(fd);
  char *buf = NULL;
  size_t len = 0;
  assert_int_equal(polite__read_file(path, 11, &buf, &len), 0);
  assert_int_equal(len, 11);
  assert_memory_equal(buf, "hello\0world", 12); /* NUL-terminated too */
  free(buf);
  errno = 0;
  assert_int_equal(polite__read_file(path, 10, &buf, &len), -1);
  assert_int_equal(errno, EFBIG);
  assert_null(buf);
  unlink(path);
  /* An endless file stops one byte past the limit. */
  assert_int_equal(polite__read_file("/dev/zero", 1 << 20, &buf, &len), -1);
  assert_int_equal(errno, EFBIG);
  assert_int_equal(polite__read_file("/nonexistent/x", 10, &buf, &len), -1);
  assert_int_equal(errno, ENOENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(tokens),      cmocka_unit_test(ows_and_case),
      cmocka_unit_test(fnv),         cmocka_unit_test(hash_words),
      cmocka_unit_test(civil_dates), cmocka_unit_test(read_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
