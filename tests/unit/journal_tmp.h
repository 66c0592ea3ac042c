/* The journal tests' scratch directory: a fresh one per test (setup), its
 * journal path and WAL path, removed with everything in it (teardown).
 * Included by test_journal.c and test_resume.c after cmocka.h. */
#ifndef POLITE_TEST_JOURNAL_TMP_H
#define POLITE_TEST_JOURNAL_TMP_H

#include <stdio.h>
#include <stdlib.h>

static char dir[64];
static char path[128];
static char wal[140];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/polite-journal-test.XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/j.db", dir);
  snprintf(wal, sizeof wal, "%s-wal", path);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

#endif
