/* The fixture both file budget unit tests share (tests/unit/
 * test_budget_file*.c): a fresh file name per test in one temporary
 * directory, and a participant opened on it. Header-only: each test file
 * includes it once, after cmocka.h. */
#ifndef BUDGET_FILE_FIXTURE_H
#define BUDGET_FILE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget_backends.h"

#define SEC INT64_C(1000000)
#define MS INT64_C(1000)
#define T0 (INT64_C(5000) * SEC) /* a fake monotonic "now" */

static char dir[64];
static char uri[160];
static char path[128];
static int counter;

/* Each test gets a fresh file name in one temporary directory. */
static int setup(void **state) {
  (void)state;
  if (dir[0] == '\0') {
    snprintf(dir, sizeof dir, "/tmp/polite-bf-XXXXXX");
    if (mkdtemp(dir) == NULL)
      return -1;
  }
  snprintf(path, sizeof path, "%s/b%d", dir, ++counter);
  snprintf(uri, sizeof uri, "file:%s", path);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  return 0;
}

static polite_budget *open_ok(const char *u, double rate, unsigned burst,
                              unsigned conc) {
  polite_budget_config c = {rate, burst, conc};
  polite_budget *b = NULL;
  char err[256];
  int rc = polite__budget_file_new(u, &c, &b, err, sizeof err);
  if (rc != 0)
    fail_msg("open %s: %d %s", u, rc, err);
  assert_non_null(b);
  assert_string_equal(b->vt->scheme, "file");
  return b;
}

#endif
