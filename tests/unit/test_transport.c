/* Unit tests of the transport error table (lib/transport.c,
 * polite_transport_failure): which libcurl results end a request at once
 * (tls_error) and which are retried, and that docs/decisions.md's table
 * says the same as the code, in both directions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ctype.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polite/transport.h>

/* The results a retry cannot fix, written out here once more on purpose:
 * a row dropped from the code's table fails this test. */
static const int tls_codes[] = {53, 54, 58, 59, 60, 66, 77, 82, 83, 90, 91, 98};

static int expected_tls(int code) {
  for (size_t i = 0; i < sizeof tls_codes / sizeof tls_codes[0]; i++)
    if (tls_codes[i] == code)
      return 1;
  return 0;
}

static void every_result_has_its_kind(void **state) {
  (void)state;
  assert_int_equal(CURLE_PEER_FAILED_VERIFICATION, 60);
  assert_int_equal(CURLE_SSL_CACERT_BADFILE, 77);
  for (int code = 0; code < CURL_LAST; code++) {
    polite_failure want =
        expected_tls(code) ? POLITE_FAILURE_TLS : POLITE_FAILURE_TRANSIENT;
    if (polite_transport_failure(code) != want)
      fail_msg("curl result %d: got kind %d, want %d", code,
               polite_transport_failure(code), want);
  }
  /* Outside libcurl's range: transient, never a crash. */
  assert_int_equal(polite_transport_failure(-1), POLITE_FAILURE_TRANSIENT);
  assert_int_equal(polite_transport_failure(100000), POLITE_FAILURE_TRANSIENT);
}

/* Reads docs/decisions.md's "Transport errors" table: for every row, the
 * numbers in its first cell and whether it says "no" (tls_error). */
static void docs_table_matches_the_code(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/decisions.md", POLITE_SOURCE_DIR);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    fail_msg("cannot open %s", path);
  char line[2048];
  int in_section = 0, rows = 0, listed[CURL_LAST + 1] = {0};
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "## ", 3) == 0)
      in_section = strstr(line, "Transport errors") != NULL;
    if (!in_section || line[0] != '|' || !isdigit((unsigned char)line[2]))
      continue;
    char *cell2 = strchr(line + 1, '|');
    assert_non_null(cell2);
    int no = strncmp(cell2, "| no", 4) == 0;
    int yes = strncmp(cell2, "| yes", 5) == 0;
    if (no == yes)
      fail_msg("%s: row without yes/no: %s", path, line);
    rows++;
    /* Every number before the first "`CURLE" word and after each comma of
     * the first cell. */
    for (char *p = line + 1; p < cell2; p++) {
      if (!isdigit((unsigned char)*p) || isalnum((unsigned char)p[-1]) ||
          p[-1] == '_')
        continue;
      int code = (int)strtol(p, &p, 10);
      if (code < 0 || code > CURL_LAST)
        fail_msg("%s: result %d out of range", path, code);
      listed[code] = no ? 2 : 1;
      polite_failure k = polite_transport_failure(code);
      if ((k == POLITE_FAILURE_TLS) != no)
        fail_msg("%s says result %d is %s; the code says %s", path, code,
                 no ? "not transient" : "transient",
                 k == POLITE_FAILURE_TLS ? "tls_error" : "transient");
    }
  }
  fclose(f);
  assert_true(rows >= 10);
  for (int code = 0; code < CURL_LAST; code++)
    if (polite_transport_failure(code) == POLITE_FAILURE_TLS &&
        listed[code] != 2)
      fail_msg("result %d ends a request (tls_error) but %s does not list "
               "it",
               code, path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_result_has_its_kind),
      cmocka_unit_test(docs_table_matches_the_code),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
