/* Unit tests of the run journal (lib/journal.c): open modes, records and
 * queries, redaction, crash recovery of the WAL (killed writer, torn and
 * garbage tails), exclusivity, write errors, and SHA-256. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <polite/journal.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_env.h"
#include "journal_tmp.h"

static polite_journal *open_mode(int mode) {
  polite_journal *j = NULL;
  char err[600];
  int rc = polite_journal_open(path, mode, &j, err, sizeof err);
  if (rc != 0)
    print_error("open: %s\n", err);
  assert_int_equal(rc, 0);
  return j;
}

static void begin(polite_journal *j, const char *kind, const char *fp) {
  polite_journal_session s = {kind, fp, "in.txt", "out.jsonl", "", 0};
  assert_true(polite_journal_begin(j, &s) >= 1);
}

/* Collects each_result output as "id=outcome;" in id order of the rows. */
static void collect(void *ud, const char *id, const char *outcome) {
  char *buf = ud;
  size_t n = strlen(buf);
  snprintf(buf + n, 512 - n, "%s=%s;", id, outcome);
}

static char *read_all(const char *p, size_t *len) {
  FILE *f = fopen(p, "rb");
  if (f == NULL)
    return NULL;
  char *buf = malloc(1 << 22);
  *len = fread(buf, 1, 1 << 22, f);
  fclose(f);
  return buf;
}

static int contains(const char *hay, size_t n, const char *needle) {
  return memmem(hay, n, needle, strlen(needle)) != NULL;
}

static void open_modes_refuse_wrong_state(void **state) {
  (void)state;
  polite_journal *j = NULL;
  char err[600];
  assert_int_equal(
      polite_journal_open(path, POLITE_JOURNAL_RESUME, &j, err, sizeof err),
      POLITE_EINVAL);
  assert_non_null(strstr(err, "does not exist"));
  assert_non_null(strstr(err, path));
  j = open_mode(POLITE_JOURNAL_CREATE);
  begin(j, "run", "fp1");
  polite_journal_close(j);
  j = NULL;
  assert_int_equal(
      polite_journal_open(path, POLITE_JOURNAL_CREATE, &j, err, sizeof err),
      POLITE_EINVAL);
  assert_non_null(strstr(err, "already exists"));
  assert_null(j);
  /* Not a journal at all. */
  char other[160];
  snprintf(other, sizeof other, "%s/text.db", dir);
  FILE *f = fopen(other, "w");
  fputs("this is not a database, just some text that is long enough\n", f);
  fclose(f);
  assert_int_not_equal(
      polite_journal_open(other, POLITE_JOURNAL_RESUME, &j, err, sizeof err),
      0);
  assert_non_null(strstr(err, "not a polite journal"));
}

static void second_opener_is_refused(void **state) {
  (void)state;
  polite_journal *j = open_mode(POLITE_JOURNAL_CREATE);
  begin(j, "run", "fp1");
  polite_journal *k = NULL;
  char err[600];
  assert_int_equal(
      polite_journal_open(path, POLITE_JOURNAL_RESUME, &k, err, sizeof err),
      POLITE_EINVAL);
  assert_non_null(strstr(err, "in use"));
  polite_journal_close(j);
  k = open_mode(POLITE_JOURNAL_RESUME);
  polite_journal_close(k);
}

static void keys_are_found_latest_non_null(void **state) {
  (void)state;
  polite_journal *j = open_mode(POLITE_JOURNAL_CREATE);
  begin(j, "run", "fp1");
  char *key = (char *)1;
  assert_int_equal(polite_journal_key(j, "a", &key), 0);
  assert_null(key);
  assert_int_equal(
      polite_journal_request(j, "a", 1, "POST", "http://h/x", "k1"), 0);
  assert_int_equal(polite_journal_request(j, "b", 2, "GET", "http://h/y", NULL),
                   0);
  assert_int_equal(polite_journal_key(j, "a", &key), 1);
  assert_string_equal(key, "k1");
  free(key);
  assert_int_equal(polite_journal_key(j, "b", &key), 1);
  assert_null(key);
  /* A later record without a key does not hide the key that was sent. */
  assert_int_equal(
      polite_journal_request(j, "a", 1, "POST", "http://h/x", NULL), 0);
  assert_int_equal(polite_journal_key(j, "a", &key), 1);
  assert_string_equal(key, "k1");
  free(key);
  assert_int_equal(
      polite_journal_request(j, "a", 1, "POST", "http://h/x", "k2"), 0);
  assert_int_equal(polite_journal_key(j, "a", &key), 1);
  assert_string_equal(key, "k2");
  free(key);
  polite_journal_counts c;
  assert_int_equal(polite_journal_count(j, &c), 0);
  assert_int_equal(c.sessions, 1);
  assert_int_equal(c.requests, 4);
  polite_journal_close(j);
}

static void secrets_never_reach_the_file(void **state) {
  (void)state;
  polite_journal *j = open_mode(POLITE_JOURNAL_CREATE);
  begin(j, "run", "fp1");
  assert_int_equal(polite_journal_request(
                       j, "s", 1, "GET",
                       "http://user:hunter2pass@h/x?api_key=SEKRETVALUE&page=2",
                       NULL),
                   0);
  polite_journal_close(j);
  size_t n = 0;
  char *all = read_all(path, &n);
  assert_non_null(all);
  assert_true(n > 0);
  assert_false(contains(all, n, "SEKRETVALUE"));
  assert_false(contains(all, n, "hunter2pass"));
  assert_true(contains(all, n, "page=2"));
  free(all);
}

static void results_and_requeues(void **state) {
  (void)state;
  polite_journal *j = open_mode(POLITE_JOURNAL_CREATE);
  begin(j, "run", "fp1");
  assert_int_equal(polite_journal_attempt(j, "a", 1, 1000, 1100, 200), 0);
  assert_int_equal(polite_journal_result(j, "a", "ok", 200, 1, 0), 0);
  assert_int_equal(polite_journal_result(j, "b", "deadline", 0, 2, 0), 0);
  assert_int_equal(polite_journal_result(j, "c", "cancelled", 0, 0, 0), 0);
  polite_journal_close(j);

  j = open_mode(POLITE_JOURNAL_RESUME);
  char buf[160];
  assert_int_equal(polite_journal_last_fingerprint(j, buf, sizeof buf), 1);
  assert_string_equal(buf, "fp1");
  assert_int_equal(polite_journal_last_out(j, buf, sizeof buf), 1);
  assert_string_equal(buf, "out.jsonl");
  begin(j, "resume", "fp2");
  /* "last" means the session before the current one. */
  assert_int_equal(polite_journal_last_fingerprint(j, buf, sizeof buf), 1);
  assert_string_equal(buf, "fp1");
  assert_int_equal(polite_journal_requeue(j, "b", "deadline"), 0);
  char got[512] = "";
  assert_int_equal(polite_journal_each_result(j, collect, got), 0);
  assert_string_equal(got, "a=ok;c=cancelled;");
  /* The requeued id finishes again in this session: visible again. */
  assert_int_equal(polite_journal_result(j, "b", "ok", 200, 1, 0), 0);
  got[0] = '\0';
  assert_int_equal(polite_journal_each_result(j, collect, got), 0);
  assert_string_equal(got, "a=ok;c=cancelled;b=ok;");
  polite_journal_counts c;
  assert_int_equal(polite_journal_count(j, &c), 0);
  assert_int_equal(c.sessions, 2);
  assert_int_equal(c.attempts, 1);
  assert_int_equal(c.results, 4);
  assert_int_equal(c.requeues, 1);
  polite_journal_close(j);
}

/* A child records N requests and is killed without closing the journal:
 * every record that returned 0 must be there after reopening. */
static void write_and_die(int n) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    polite_journal *j = NULL;
    char err[600], id[32], key[32];
    if (polite_journal_open(path, POLITE_JOURNAL_CREATE, &j, err, sizeof err) !=
        0)
      _exit(3);
    polite_journal_session s = {"run", "fp", "in", "out", "", 0};
    if (polite_journal_begin(j, &s) < 1)
      _exit(4);
    for (int i = 0; i < n; i++) {
      snprintf(id, sizeof id, "id%d", i);
      snprintf(key, sizeof key, "key%d", i);
      if (polite_journal_request(j, id, i + 1, "POST", "http://h/", key) != 0)
        _exit(5);
    }
    kill(getpid(), SIGKILL);
    _exit(6);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

static int count_keys(polite_journal *j, int n) {
  int found = 0;
  for (int i = 0; i < n; i++) {
    char id[32], want[32], *key = NULL;
    snprintf(id, sizeof id, "id%d", i);
    snprintf(want, sizeof want, "key%d", i);
    if (polite_journal_key(j, id, &key) == 1 && key && strcmp(key, want) == 0)
      found++;
    free(key);
  }
  return found;
}

static void killed_writer_loses_nothing(void **state) {
  (void)state;
  write_and_die(50);
  struct stat st;
  assert_int_equal(stat(wal, &st), 0); /* the WAL was not checkpointed */
  assert_true(st.st_size > 0);
  polite_journal *j = open_mode(POLITE_JOURNAL_RESUME);
  assert_int_equal(count_keys(j, 50), 50);
  polite_journal_close(j);
}

static void garbage_wal_tail_is_ignored(void **state) {
  (void)state;
  write_and_die(20);
  FILE *f = fopen(wal, "ab");
  assert_non_null(f);
  for (int i = 0; i < 3000; i++)
    fputc((i * 7919) & 0xff, f);
  fclose(f);
  polite_journal *j = open_mode(POLITE_JOURNAL_RESUME);
  assert_int_equal(count_keys(j, 20), 20);
  /* And it is still writable. */
  begin(j, "resume", "fp");
  assert_int_equal(
      polite_journal_request(j, "new", 99, "GET", "http://h/", NULL), 0);
  polite_journal_close(j);
}

static void torn_wal_tail_loses_only_the_last_commit(void **state) {
  (void)state;
  write_and_die(20);
  struct stat st;
  assert_int_equal(stat(wal, &st), 0);
  /* Cut into the last frame: that transaction was torn, the others stay. */
  assert_int_equal(truncate(wal, st.st_size - 100), 0);
  polite_journal *j = open_mode(POLITE_JOURNAL_RESUME);
  int found = count_keys(j, 20);
  assert_int_equal(found, 19);
  char *key = NULL;
  assert_int_equal(polite_journal_key(j, "id19", &key), 0);
  polite_journal_close(j);
}

/* Attempt starts are recorded before anything is sent (writes fsync'd,
 * reads not): a writer killed while both attempts are in flight leaves
 * both start records and no end record. */
static void attempt_starts_survive_a_kill(void **state) {
  (void)state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    polite_journal *j = NULL;
    char err[600];
    if (polite_journal_open(path, POLITE_JOURNAL_CREATE, &j, err, sizeof err) !=
        0)
      _exit(3);
    polite_journal_session s = {"run", "fp", "in", "out", "", 0};
    if (polite_journal_begin(j, &s) < 1 ||
        polite_journal_request(j, "w", 1, "POST", "http://h/", "k1") != 0 ||
        polite_journal_attempt_start(j, "w", 1, 1000, 1) != 0 ||
        polite_journal_request(j, "r", 2, "GET", "http://h/", NULL) != 0 ||
        polite_journal_attempt_start(j, "r", 1, 1001, 0) != 0)
      _exit(4);
    kill(getpid(), SIGKILL);
    _exit(6);
  }
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  polite_journal *j = open_mode(POLITE_JOURNAL_RESUME);
  polite_journal_counts c;
  assert_int_equal(polite_journal_count(j, &c), 0);
  assert_int_equal(c.requests, 2);
  assert_int_equal(c.attempt_starts, 2);
  assert_int_equal(c.attempts, 0);
  /* Both commit modes leave the connection writable and FULL again. */
  begin(j, "resume", "fp");
  assert_int_equal(polite_journal_attempt_start(j, "r", 2, 2000, 0), 0);
  assert_int_equal(polite_journal_attempt(j, "r", 2, 2000, 2100, 200), 0);
  assert_int_equal(polite_journal_count(j, &c), 0);
  assert_int_equal(c.attempt_starts, 3);
  assert_int_equal(c.attempts, 1);
  polite_journal_close(j);
}

static void write_error_names_file_and_cause(void **state) {
  (void)state;
  polite_journal *j = open_mode(POLITE_JOURNAL_CREATE);
  begin(j, "run", "fp1");
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 64 * 1024;
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  int rc = 0, i;
  for (i = 0; i < 10000 && rc == 0; i++) {
    char id[32];
    snprintf(id, sizeof id, "id%d", i);
    rc = polite_journal_request(j, id, i, "POST", "http://h/", "k");
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  assert_int_not_equal(rc, 0);
  const char *e = polite_journal_errstr(j);
  print_message("after %d records: %s\n", i, e);
  assert_non_null(strstr(e, path));
  assert_non_null(strstr(e, "record a request"));
  assert_non_null(strstr(e, "File too large"));
  polite_journal_close(j);
  /* Everything committed before the failure is still there. */
  j = open_mode(POLITE_JOURNAL_RESUME);
  char *key = NULL;
  assert_int_equal(polite_journal_key(j, "id0", &key), 1);
  assert_string_equal(key, "k");
  free(key);
  polite_journal_close(j);
}

/* The number of rows of `sql` (a SELECT COUNT(*)) in the closed journal. */
static long long count_rows(const char *sql) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  long long n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

static void records_take_the_env_clock(void **state) {
  (void)state;
  polite_env env = {NULL, fake_env_wall, NULL, NULL};
  polite_journal *j = open_mode(POLITE_JOURNAL_CREATE);
  polite_journal_set_env(j, &env);
  begin(j, "run", "fp");
  assert_int_equal(polite_journal_request(j, "a", 1, "POST", "http://x/a", "k"),
                   0);
  assert_int_equal(polite_journal_result(j, "a", "ok", 200, 1, 0), 0);
  assert_int_equal(polite_journal_requeue(j, "a", "ok"), 0);
  polite_journal_close(j);
  static const char *const rows[] = {
      "SELECT COUNT(*) FROM session WHERE started_ms = 1234567890123",
      "SELECT COUNT(*) FROM request WHERE created_ms = 1234567890123",
      "SELECT COUNT(*) FROM result WHERE created_ms = 1234567890123",
      "SELECT COUNT(*) FROM requeue WHERE created_ms = 1234567890123",
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (count_rows(rows[i]) != 1)
      fail_msg("not on the env's clock: %s", rows[i]);
}

static void sha256_vectors(void **state) {
  (void)state;
  char hex[65];
  polite_sha256_hex("", 0, hex);
  assert_string_equal(
      hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  polite_sha256_hex("abc", 3, hex);
  assert_string_equal(
      hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *m =
      "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 */
  polite_sha256_hex(m, strlen(m), hex);
  assert_string_equal(
      hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  /* One million 'a' through the file reader (many 64 KiB reads). */
  char p[160];
  snprintf(p, sizeof p, "%s/a.txt", dir);
  FILE *f = fopen(p, "wb");
  for (int i = 0; i < 1000000; i++)
    fputc('a', f);
  fclose(f);
  assert_int_equal(polite_sha256_file(p, hex), 0);
  assert_string_equal(
      hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  snprintf(p, sizeof p, "%s/missing", dir);
  assert_int_equal(polite_sha256_file(p, hex), POLITE_EIO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(open_modes_refuse_wrong_state, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(second_opener_is_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(keys_are_found_latest_non_null, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(secrets_never_reach_the_file, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(results_and_requeues, setup, teardown),
      cmocka_unit_test_setup_teardown(killed_writer_loses_nothing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(garbage_wal_tail_is_ignored, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(torn_wal_tail_loses_only_the_last_commit,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(attempt_starts_survive_a_kill, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(write_error_names_file_and_cause, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(sha256_vectors, setup, teardown),
      cmocka_unit_test_setup_teardown(records_take_the_env_clock, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
