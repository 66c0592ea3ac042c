/* Unit tests of reading a results file back (lib/results.c, what --resume
 * uses): NUL bytes in bodies, torn last lines, foreign lines. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polite/results.h>

typedef struct {
  int n;
  char ids[8][16];
  char outcomes[8][24];
  int stop_at; /* 1-based call that returns non-zero, 0 for none */
} seen;

static int note(void *ud, const char *id, const char *outcome, const char *line,
                size_t len) {
  seen *s = ud;
  assert_true(len > 0 && line[len - 1] == '\n');
  if (s->n < 8) {
    snprintf(s->ids[s->n], sizeof s->ids[0], "%s", id);
    snprintf(s->outcomes[s->n], sizeof s->outcomes[0], "%s", outcome);
  }
  s->n++;
  return s->stop_at && s->n == s->stop_at;
}

/* Scans the n bytes at text; returns the result, *end and what was seen. */
static long scan(const char *text, size_t n, long long *end, seen *s) {
  FILE *f = fmemopen((void *)text, n, "r");
  assert_non_null(f);
  long rc = polite_results_scan(f, note, s, end);
  fclose(f);
  return rc;
}

#define GOOD1 "{\"id\":\"a\",\"outcome\":\"ok\",\"body\":\"x\\u0000y\"}\n"
#define GOOD2 "{\"id\":\"b\",\"outcome\":\"http_error\"}\n"

static void nul_bytes_in_bodies(void **state) {
  (void)state;
  seen s = {0};
  long long end = -1;
  const char text[] = GOOD1 GOOD2;
  assert_int_equal(scan(text, sizeof text - 1, &end, &s), 0);
  assert_int_equal(s.n, 2);
  assert_string_equal(s.ids[0], "a");
  assert_string_equal(s.outcomes[1], "http_error");
  assert_int_equal(end, (long long)sizeof text - 1);
}

static void torn_last_lines(void **state) {
  (void)state;
  static const char *const tails[] = {
      "{\"id\":\"c\",\"outc",             /* no newline */
      "{\"id\":\"c\",\"outc\n",           /* cut short, then a newline */
      "{\"id\":\n",                       /* just the start */
      "{\"i\n",                           /* shorter than the start */
      "\n",                               /* an empty line */
      "\0\0\0\0\0\0\0\0\0\0\0\n",         /* blocks never written */
      "{\"id\":\"c\",\"outcome\":\"ok\"}" /* whole, but no newline */
  };
  static const size_t lens[] = {14, 15, 7, 4, 1, 12, 26};
  for (size_t i = 0; i < sizeof tails / sizeof *tails; i++) {
    char text[256];
    size_t n = strlen(GOOD1 GOOD2);
    memcpy(text, GOOD1 GOOD2, n);
    memcpy(text + n, tails[i], lens[i]);
    seen s = {0};
    long long end = -1;
    if (scan(text, n + lens[i], &end, &s) != 0)
      fail_msg("tail %zu refused", i);
    assert_int_equal(s.n, 2);
    assert_int_equal(end, (long long)n); /* truncate here */
  }
}

static void foreign_lines_refused(void **state) {
  (void)state;
  seen s = {0};
  long long end = -1;
  const char last[] = GOOD1 GOOD2 "my notes\n";
  assert_int_equal(scan(last, sizeof last - 1, &end, &s), 3);
  const char middle[] = GOOD1 "{\"id\":\"x\",\"outc\n" GOOD2;
  memset(&s, 0, sizeof s);
  assert_int_equal(scan(middle, sizeof middle - 1, &end, &s), 2);
  assert_int_equal(s.n, 1);
  const char not_string_id[] = GOOD1 "{\"id\":7}\n" GOOD2;
  memset(&s, 0, sizeof s);
  assert_int_equal(scan(not_string_id, sizeof not_string_id - 1, &end, &s), 2);
  /* A NUL-only line in the middle is not a torn tail either. */
  const char nul_middle[] = GOOD1 "\0\0\n" GOOD2;
  memset(&s, 0, sizeof s);
  assert_int_equal(scan(nul_middle, sizeof nul_middle - 1, &end, &s), 2);
}

static void callback_stops(void **state) {
  (void)state;
  seen s = {.stop_at = 1};
  long long end = -1;
  const char text[] = GOOD1 GOOD2;
  assert_int_equal(scan(text, sizeof text - 1, &end, &s), -1);
  assert_int_equal(s.n, 1);
  memset(&s, 0, sizeof s);
  assert_int_equal(scan("", 0, &end, &s), 0);
  assert_int_equal(end, 0);
  assert_int_equal(s.n, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nul_bytes_in_bodies),
      cmocka_unit_test(torn_last_lines),
      cmocka_unit_test(foreign_lines_refused),
      cmocka_unit_test(callback_stops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
