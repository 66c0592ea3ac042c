/* Unit tests of a damaged budget file (lib/budget_file.c and
 * lib/budget_file_store.c) on a fake clock: the file truncated, zeroed,
 * overwritten with random bytes anywhere, replaced, or its lock held by a
 * stopped participant, under participants that hold slots. No call may
 * crash or hang; each damage is reported, repaired when the file is
 * provably polite's, and the slots held survive the repair. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <polite/clock.h>

#include "budget_backends.h"
#include "budget_file_store.h"

#include "budget_file_fixture.h"

static int acq(polite_budget *b, int64_t now, int64_t *w) {
  return polite_budget_acquire(b, NULL, now, 1, 1, w);
}

/* Damage the file the way a test case asks. */
static void cut_to(off_t size) {
  assert_int_equal(truncate(path, size), 0);
}

static void overwrite(off_t at, size_t len, unsigned char fill, int random) {
  unsigned char *buf = malloc(len);
  assert_non_null(buf);
  uint64_t x = 0x12345678u + (uint64_t)at;
  for (size_t i = 0; i < len; i++)
    buf[i] = random ? (unsigned char)(polite_rand_next(&x) >> 56) : fill;
  int fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, buf, len, at), (ssize_t)len);
  close(fd);
  free(buf);
}

/* a holds 2 of 4 slots when the damage comes; b then asks for slots. After
 * the repair and the settling, b gets exactly the 2 that a does not hold:
 * a's slots were re-registered, none was lost or doubled. */
static void check_repaired(polite_budget *a, polite_budget *b, int64_t at) {
  int64_t w;
  /* The call that meets the damage fails and says so (repairing the file,
   * or rebuilding the account at once); the next one finds the account
   * rebuilt and settling. */
  assert_int_equal(acq(b, at, &w), POLITE_EBUDGET);
  assert_non_null(strstr(polite_budget_errstr(b), path));
  assert_int_equal(acq(b, at + 100 * MS, &w), POLITE_EBUDGET);
  assert_non_null(strstr(polite_budget_errstr(b), "nothing starts"));
  /* a's heartbeat re-registers its slots while the account settles. */
  polite_budget_acquire(a, NULL, at + 500 * MS, 0, 0, &w);
  assert_int_equal(acq(b, at + 1900 * MS, &w), POLITE_EBUDGET);
  int64_t t = at + 2200 * MS;
  assert_int_equal(acq(b, t, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(b, t, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(b, t, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_release(a, NULL, 2);
  assert_int_equal(acq(b, t, &w), POLITE_BUDGET_ADMITTED);
}

typedef struct {
  const char *what;
  off_t at;   /* -1: truncate to `len` */
  size_t len; /* bytes written (or the size cut to) */
  int random; /* random bytes; else zeros */
} damage_case;

/* Every damage that leaves the file provably polite's is repaired. */
static const damage_case repairable[] = {
    {"truncated to 0 bytes", -1, 0, 0},
    {"truncated to 4096 bytes (header only)", -1, PF_PAGE, 0},
    {"truncated inside the header", -1, 20, 0},
    {"truncated inside the account", -1, PF_PAGE + 100, 0},
    {"zeroed whole", 0, (size_t)PF_FILE_SIZE, 0},
    {"random bytes over the account record", PF_PAGE, PF_PAGE, 1},
    {"random bytes over the header only", 0, 200, 1},
    {"random bytes over the account's owners", PF_PAGE + 460, 40, 1},
    {"one byte of the key changed", PF_PAGE + 24, 1, 1},
};

static void damage_is_repaired(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof repairable / sizeof repairable[0]; i++) {
    const damage_case *c = &repairable[i];
    setup(NULL);
    polite_budget *a = open_ok(uri, 0, 1, 4), *b = open_ok(uri, 0, 1, 4);
    int64_t w, t = T0 + (int64_t)i * 100 * SEC;
    assert_int_equal(acq(a, t, &w), POLITE_BUDGET_ADMITTED);
    assert_int_equal(acq(a, t, &w), POLITE_BUDGET_ADMITTED);
    if (c->at < 0)
      cut_to((off_t)c->len);
    else
      overwrite(c->at, c->len, 0, c->random);
    if (c->at == 0 && c->random) {
      /* Only the header: the records prove the file is this one, so the
       * header is written again (the call that does it says so) and the
       * account was never touched. */
      assert_int_equal(acq(b, t + 200 * MS, &w), POLITE_EBUDGET);
      assert_non_null(strstr(polite_budget_errstr(b), "repaired"));
      assert_int_equal(acq(b, t + 200 * MS, &w), POLITE_BUDGET_ADMITTED);
      assert_int_equal(acq(b, t + 200 * MS, &w), POLITE_BUDGET_ADMITTED);
      assert_int_equal(acq(b, t + 200 * MS, &w), POLITE_BUDGET_WAIT_SLOT);
    } else {
      print_message("# %s\n", c->what);
      check_repaired(a, b, t + 200 * MS);
    }
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, PF_FILE_SIZE);
    polite_budget_close(a);
    polite_budget_close(b);
    teardown(NULL);
  }
}

/* Random bytes over the whole file leave nothing that proves it is
 * polite's: it is never written, every call fails with a message naming
 * it, and once it is removed the participants make a new one and go on. */
static void unprovable_file_waits_for_removal(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 4), *b = open_ok(uri, 0, 1, 4);
  int64_t w;
  assert_int_equal(acq(a, T0, &w), POLITE_BUDGET_ADMITTED);
  overwrite(0, (size_t)PF_FILE_SIZE, 0, 1);
  struct stat before;
  assert_int_equal(stat(path, &before), 0);
  for (int k = 1; k <= 5; k++) {
    assert_int_equal(acq(b, T0 + k * 200 * MS, &w), POLITE_EBUDGET);
    if (strstr(polite_budget_errstr(b), "remove it") == NULL)
      fail_msg("%s", polite_budget_errstr(b));
  }
  int fd = open(path, O_RDONLY);
  unsigned char head[8];
  assert_int_equal(pread(fd, head, 8, 0), 8);
  close(fd);
  uint64_t magic;
  memcpy(&magic, head, 8);
  assert_true(magic != PF_MAGIC); /* not written */
  assert_int_equal(unlink(path), 0);
  /* Both move to the new file: b makes it, a re-registers its slot. */
  assert_int_equal(acq(b, T0 + 2 * SEC, &w), POLITE_EBUDGET);
  assert_non_null(strstr(polite_budget_errstr(b), "removed or replaced"));
  polite_budget_acquire(a, NULL, T0 + 2200 * MS, 0, 0, &w);
  int64_t t = T0 + 4100 * MS;
  for (int k = 0; k < 3; k++)
    assert_int_equal(acq(b, t, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(b, t, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* Damage in records no account uses loses nothing: it is said once, by the
 * next check of the file, and the accounts in use go on untouched. */
static void damage_elsewhere_is_said_once(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 2);
  int64_t w;
  assert_int_equal(acq(a, T0, &w), POLITE_BUDGET_ADMITTED);
  overwrite((off_t)PF_PAGE * 40, 3 * PF_PAGE, 0, 1);
  assert_int_equal(acq(a, T0 + 200 * MS, &w), POLITE_EBUDGET);
  assert_non_null(strstr(polite_budget_errstr(a), "3 account record(s)"));
  assert_int_equal(acq(a, T0 + 201 * MS, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0 + 500 * MS, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_close(a);
}

/* A rebuilt account keeps the pause its participants saw and starts no
 * burst when it settles. */
static void rebuild_keeps_pause_and_spacing(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 10, 5, 0);
  int64_t w;
  assert_int_equal(polite_budget_pause_until(a, NULL, T0, T0 + 10 * SEC), 0);
  overwrite(PF_PAGE, 64, 0, 1);
  assert_int_equal(polite_budget_acquire(a, NULL, T0 + SEC, 1, 0, &w),
                   POLITE_EBUDGET);
  assert_int_equal(polite_budget_acquire(a, NULL, T0 + 4 * SEC, 1, 0, &w),
                   POLITE_BUDGET_WAIT_PAUSE);
  assert_int_equal(w, 6 * SEC);
  int64_t t = T0 + 10 * SEC;
  assert_int_equal(polite_budget_acquire(a, NULL, t, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(a, NULL, t, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE); /* spaced, not a burst of 5 */
  polite_budget_close(a);
}

/* A participant stopped while it holds the lock: the others give up
 * within the bound (an error, not a hang) and go on once it is gone. */
static void stopped_holder_bounds_the_wait(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 1);
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    polite_budget *c = open_ok(uri, 0, 1, 1);
    int ok = polite__budget_file_hold_lock(c) == 0;
    if (write(pipefd[1], ok ? "y" : "n", 1) != 1)
      _exit(1);
    raise(SIGSTOP);
    _exit(0);
  }
  char ch = 0;
  assert_int_equal(read(pipefd[0], &ch, 1), 1);
  assert_int_equal(ch, 'y');
  int64_t w, t0 = polite_mono_us();
  assert_int_equal(acq(a, T0, &w), POLITE_EBUDGET);
  int64_t took = polite_mono_us() - t0;
  assert_true(took >= PF_LOCK_WAIT_MS * 900 && took < 5 * SEC);
  assert_non_null(strstr(polite_budget_errstr(a), "held by another"));
  kill(pid, SIGKILL);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  close(pipefd[0]);
  close(pipefd[1]);
  assert_int_equal(acq(a, T0 + MS, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
}

/* polite budget show reports damage and never writes. */
static void inspect_reports_without_writing(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 2);
  int64_t w;
  assert_int_equal(acq(a, T0, &w), POLITE_BUDGET_ADMITTED);
  polite_budget *v = NULL;
  char err[256];
  if (polite_budget_open_inspect(uri, &v, err, sizeof err) != 0)
    fail_msg("%s", err);
  overwrite(PF_PAGE + 40, 8, 0, 1);
  struct stat before, after;
  assert_int_equal(stat(path, &before), 0);
  polite_budget_state s;
  assert_int_equal(polite_budget_inspect(v, NULL, polite_mono_us(), &s),
                   POLITE_EBUDGET);
  assert_non_null(strstr(polite_budget_errstr(v), "damaged"));
  polite_budget_close(v);
  assert_int_equal(stat(path, &after), 0);
  assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  polite_budget_close(a);
}

/* Random bytes at random places, again and again, under two participants
 * that keep calling every function: no call crashes or hangs, and every
 * answer is one the interface allows. */
static void random_damage_never_crashes(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 100, 2, 3), *b = open_ok(uri, 100, 2, 3);
  uint64_t x = 42;
  int64_t t = T0, w;
  for (int k = 0; k < 400; k++) {
    t += (int64_t)(polite_rand_next(&x) % (300 * MS));
    uint64_t r = polite_rand_next(&x);
    if (access(path, F_OK) != 0)
      ; /* removed: the participants make a new one */
    else if (r % 7 == 0)
      cut_to((off_t)(polite_rand_next(&x) % (uint64_t)PF_FILE_SIZE));
    else if (r % 3 == 0)
      overwrite((off_t)(polite_rand_next(&x) % (uint64_t)PF_FILE_SIZE),
                1 + polite_rand_next(&x) % 600, 0, r & 1);
    polite_budget *p = (r >> 8) & 1 ? a : b;
    int rc = polite_budget_acquire(p, NULL, t, 1, 1, &w);
    assert_true(rc == POLITE_EBUDGET || (rc >= 0 && rc <= 3));
    if (rc == POLITE_BUDGET_ADMITTED)
      polite_budget_release(p, NULL, 1);
    polite_budget_pause_until(p, NULL, t, t + (int64_t)(r % 3) * MS);
    (void)polite_budget_paused_for(p, NULL, t);
    polite_shared_rate sr = {5, 6, 1, 0};
    polite_budget_publish_rate(p, NULL, t, &sr, 1);
    polite_budget_shared_rate(p, NULL, &sr);
    if (r % 11 == 0) {
      unlink(path);
    }
  }
  polite_budget_close(a);
  polite_budget_close(b);
}

/* The learned window survives a rebuild (the participant that meets the
 * damage restores the window it read), and a window no polite could have
 * written (its next start years ahead) is a damaged record: rebuilt
 * without it, so it never holds the sharers. */
static void rebuild_keeps_the_window_and_drops_a_bad_one(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 0);
  polite_budget *b = open_ok(uri, 0, 1, 0);
  int64_t w;
  assert_int_equal(polite_budget_acquire(a, NULL, T0, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  polite_shared_window win = {T0, 0, 60 * SEC, T0 + 60 * SEC, 0, 1};
  assert_int_equal(polite_budget_window(a, NULL, &win), 0);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE);
  overwrite(PF_PAGE, 64, 0, 1);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + SEC, 1, 0, &w),
                   POLITE_EBUDGET);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 4 * SEC, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 56 * SEC);
  /* a says the repair once (nothing starts), then waits as b does. */
  assert_int_equal(polite_budget_acquire(a, NULL, T0 + 4 * SEC, 1, 0, &w),
                   POLITE_EBUDGET);
  assert_int_equal(polite_budget_acquire(a, NULL, T0 + 4 * SEC, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE);
  /* A window 10^9 s ahead: the next call rebuilds the record without it. */
  polite_shared_window bad = {T0 + 5 * SEC,     0, 60 * SEC,
                              INT64_C(1) << 60, 0, 1};
  assert_int_equal(polite_budget_window(a, NULL, &bad), 0);
  assert_int_equal(polite_budget_acquire(a, NULL, T0 + 5 * SEC, 1, 0, &w),
                   POLITE_EBUDGET);
  assert_non_null(strstr(polite_budget_errstr(a), "window"));
  int64_t t = T0 + 8 * SEC; /* settled */
  assert_int_equal(polite_budget_acquire(a, NULL, t, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, t, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* A ceiling no polite could have measured (above the file's bound on a
 * rate, or not a number) is never stored: the record stays sound, every
 * sharer keeps admitting, and a sound ceiling is kept beside it. */
static void a_foreign_ceiling_is_not_stored(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 0);
  polite_budget *b = open_ok(uri, 0, 1, 0);
  int64_t w;
  const double bad[] = {1e30, NAN, INFINITY, -1};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    polite_shared_rate r = {20, 25, 0, bad[i]};
    assert_true(polite_budget_publish_rate(a, NULL, T0, &r, 0) >= 0);
    assert_true(r.ceiling_per_s == 0);
  }
  polite_shared_rate ok = {20, 25, 0, 50};
  assert_true(polite_budget_publish_rate(a, NULL, T0, &ok, 0) >= 0);
  polite_shared_rate s = {0, 0, 0, 0};
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + SEC, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_shared_rate(b, NULL, &s), 0);
  assert_true(s.ceiling_per_s == 50);
  polite_budget_close(a);
  polite_budget_close(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(damage_is_repaired),
      cmocka_unit_test_setup_teardown(unprovable_file_waits_for_removal, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(damage_elsewhere_is_said_once, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(rebuild_keeps_pause_and_spacing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(stopped_holder_bounds_the_wait, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(inspect_reports_without_writing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(random_damage_never_crashes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          rebuild_keeps_the_window_and_drops_a_bad_one, setup, teardown),
      cmocka_unit_test_setup_teardown(a_foreign_ceiling_is_not_stored, setup,
                                      teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(dir);
  return rc;
}
