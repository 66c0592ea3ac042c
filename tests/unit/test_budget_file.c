/* Unit tests of the file budget backend (lib/budget_file.c) on a fake clock:
 * several participants (handles, threads, forked children) on one file. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "budget_backends.h"
#include "budget_file_store.h"

#include "budget_file_fixture.h"
#include "fake_env.h"

/* One request of `units` rate units and one slot (what polite run asks). */
static int acq(polite_budget *b, int64_t now, unsigned units, int64_t *w) {
  return polite_budget_acquire(b, NULL, now, units, 1, w);
}

static int acq2(polite_budget *b, int64_t now, unsigned units, unsigned slots,
                int64_t *w) {
  return polite_budget_acquire(b, NULL, now, units, slots, w);
}

static void rate_is_shared_between_participants(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 10, 2, 0);
  polite_budget *b = open_ok(uri, 10, 2, 0);
  int64_t w;
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  /* The burst (2) is spent by the two together. */
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 100 * MS);
  assert_int_equal(acq(b, T0 + 50 * MS, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 50 * MS);
  assert_int_equal(acq(b, T0 + 100 * MS, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0 + 100 * MS, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 100 * MS);
  /* A 100-start run at 10/s, alternating participants, takes 9.8 s plus
   * the burst: no participant gets its own allowance. */
  int64_t t = T0 + 200 * MS;
  int n = 0;
  while (n < 100) {
    polite_budget *p = (n % 2) ? a : b;
    int rc = acq(p, t, 1, &w);
    if (rc == POLITE_BUDGET_ADMITTED)
      n++;
    else
      t += w;
  }
  assert_int_equal(t, T0 + 200 * MS + 99 * 100 * MS);
  polite_budget_close(a);
  polite_budget_close(b);
}

static void slots_are_shared_and_released(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 2);
  polite_budget *b = open_ok(uri, 0, 1, 2);
  int64_t w;
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_true(w > 0 && w <= POLITE__BUDGET_SLOT_POLL_US);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* A release by one participant frees a slot for the other. */
  polite_budget_release(a, NULL, 1);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* Releasing more than one holds never frees another's slots. */
  polite_budget_release(a, NULL, 5);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* Closing gives back what the participant held. */
  polite_budget_close(b);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_close(a);
}

static void lease_expires_unless_renewed(void **state) {
  (void)state;
  char u[200];
  snprintf(u, sizeof u, "%s?lease=1s", uri);
  polite_budget *a = open_ok(u, 0, 1, 1);
  polite_budget *b = open_ok(u, 0, 1, 1);
  int64_t w;
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  /* a calls in at 0.8 s (refused, but the call renews its lease). */
  assert_int_equal(acq(a, T0 + 800 * MS, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(acq(b, T0 + 1500 * MS, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* The poll hint never goes past the lease's expiry. */
  assert_int_equal(acq(b, T0 + 1795 * MS, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(w, 5 * MS);
  /* a went silent: its slot is b's once the lease runs out at 1.8 s. */
  assert_int_equal(acq(b, T0 + 1800 * MS, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0 + 1800 * MS, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* a's late release does not free b's slot. */
  polite_budget_release(a, NULL, 1);
  assert_int_equal(acq(a, T0 + 1900 * MS, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_close(a);
  polite_budget_close(b);
}

static void pause_is_shared_without_catch_up(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 10, 3, 0);
  polite_budget *b = open_ok(uri, 10, 3, 0);
  int64_t w;
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_pause_until(a, NULL, T0, T0 + 5 * SEC), 0);
  /* A shorter pause later never shortens it. */
  assert_int_equal(polite_budget_pause_until(b, NULL, T0, T0 + 1 * SEC), 0);
  assert_int_equal(polite_budget_paused_for(b, NULL, T0 + 1 * SEC), 4 * SEC);
  assert_int_equal(acq(b, T0 + 1 * SEC, 1, &w), POLITE_BUDGET_WAIT_PAUSE);
  assert_int_equal(w, 4 * SEC);
  assert_int_equal(polite_budget_paused_for(a, NULL, T0 + 6 * SEC), 0);
  /* After the pause: one start at its end, then the planned spacing, no
   * burst of 3 although the limiter was idle for 5 s. */
  int64_t t = T0 + 5 * SEC;
  assert_int_equal(acq(b, t, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, t, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 100 * MS);
  /* Other accounts (keys) are not paused. */
  assert_int_equal(polite_budget_acquire(a, "other.example", t, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* Rate units and slots are separate: a request of cost 3 takes 3 units and
 * one slot; a slot wait charges no rate, a rate wait takes no slot. */
static void units_and_slots_are_separate(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 10, 1, 4);
  polite_budget *b = open_ok(uri, 10, 1, 4);
  int64_t w;
  /* Cost 3 above burst 1, on an idle account: admitted at once. */
  assert_int_equal(acq2(a, T0, 3, 1, &w), POLITE_BUDGET_ADMITTED);
  /* TAT advanced by 3 intervals, for the other participant too. */
  assert_int_equal(acq2(b, T0, 1, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 300 * MS);
  /* One slot of 4 was taken: 3 more fit (units 0: no rate), a 5th not. */
  assert_int_equal(acq2(b, T0, 0, 3, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq2(b, T0, 0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* The slot-only acquire spent no rate: the wait is still 300 ms, and a
   * start due by the rate is refused for the slot without charging it. */
  assert_int_equal(acq2(b, T0, 1, 0, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 300 * MS);
  assert_int_equal(acq2(a, T0 + 300 * MS, 1, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* Rate only (slots 0) never waits for a slot. 2 units above the burst
   * pass only on an idle account: the refused start above charged none. */
  assert_int_equal(acq2(b, T0 + 300 * MS, 2, 0, &w), POLITE_BUDGET_ADMITTED);
  /* A slot is free again, but the rate is not: the rate wait takes no
   * slot, which the slot-only acquire then gets. */
  polite_budget_release(b, NULL, 1);
  assert_int_equal(acq2(a, T0 + 300 * MS, 1, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 200 * MS);
  assert_int_equal(acq2(b, T0 + 300 * MS, 0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq2(b, T0 + 300 * MS, 0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* Slots above the concurrency never fit, whatever the units. */
  polite_budget_release(a, NULL, 1);
  polite_budget_release(b, NULL, 3);
  assert_int_equal(acq2(b, T0 + 10 * SEC, 1, 5, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(acq2(b, T0 + 10 * SEC, 1, 4, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* units 0 and slots 0 is the heartbeat: it takes nothing (no rate, no
 * slot) and renews the caller's lease, also while the account is paused. */
static void renew_takes_nothing_and_keeps_the_lease(void **state) {
  (void)state;
  char u[200];
  snprintf(u, sizeof u, "%s?lease=1s", uri);
  polite_budget *a = open_ok(u, 10, 1, 2);
  polite_budget *b = open_ok(u, 10, 1, 2);
  int64_t w;
  assert_int_equal(acq2(a, T0, 1, 1, &w), POLITE_BUDGET_ADMITTED);
  /* a renews at 0.8 s: its lease now ends at 1.8 s. */
  assert_int_equal(acq2(a, T0 + 800 * MS, 0, 0, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(w, 0);
  /* The renewal charged no rate (TAT still 0.1 s) and took no slot: b gets
   * one start at once, and exactly one more slot (2 in all). */
  assert_int_equal(acq2(b, T0 + 800 * MS, 1, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq2(b, T0 + 1500 * MS, 0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_release(b, NULL, 1);
  /* a's slot outlives its first lease (1 s) thanks to the renewal. */
  assert_int_equal(acq2(b, T0 + 1500 * MS, 0, 2, &w), POLITE_BUDGET_WAIT_SLOT);
  /* During a pause a renewal answers WAIT_PAUSE but still renews. */
  assert_int_equal(
      polite_budget_pause_until(b, NULL, T0 + 1500 * MS, T0 + 2500 * MS), 0);
  assert_int_equal(acq2(a, T0 + 1700 * MS, 0, 0, &w), POLITE_BUDGET_WAIT_PAUSE);
  assert_int_equal(w, 800 * MS);
  /* Renewed to 2.7 s: still held at 2.6 s, free at 2.7 s. */
  assert_int_equal(acq2(b, T0 + 2600 * MS, 0, 2, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(acq2(b, T0 + 2700 * MS, 0, 2, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  polite_budget_close(b);
}

static void bad_uris_and_files_are_refused(void **state) {
  (void)state;
  polite_budget_config c = {10, 1, 2};
  polite_budget *b = (polite_budget *)0x1;
  char err[256];
  assert_int_equal(polite__budget_file_new("file:", &c, &b, err, sizeof err),
                   POLITE_EINVAL);
  assert_null(b);
  assert_non_null(strstr(err, "path is empty"));
  char u[200];
  snprintf(u, sizeof u, "%s?lease=soon", uri);
  assert_int_equal(polite__budget_file_new(u, &c, &b, err, sizeof err),
                   POLITE_EINVAL);
  assert_non_null(strstr(err, "lease"));
  assert_non_null(strstr(err, "soon"));
  snprintf(u, sizeof u, "%s?colour=red", uri);
  assert_int_equal(polite__budget_file_new(u, &c, &b, err, sizeof err),
                   POLITE_EINVAL);
  assert_non_null(strstr(err, "colour=red"));
  assert_int_equal(polite__budget_file_new("file:/nonexistent-dir/x", &c, &b,
                                           err, sizeof err),
                   POLITE_EBUDGET);
  assert_non_null(strstr(err, "/nonexistent-dir/x"));
  /* A file that is not ours is refused and left untouched. */
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs("precious data\n", fp);
  fclose(fp);
  assert_int_equal(polite__budget_file_new(uri, &c, &b, err, sizeof err),
                   POLITE_EBUDGET);
  assert_non_null(strstr(err, "not a polite budget file"));
  assert_non_null(strstr(err, path));
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, 14);
}

static void config_mismatch_is_refused(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 10, 2, 3);
  polite_budget_config c = {20, 2, 3};
  polite_budget *b = NULL;
  char err[256];
  assert_int_equal(polite__budget_file_new(uri, &c, &b, err, sizeof err),
                   POLITE_EINVAL);
  assert_null(b);
  assert_non_null(strstr(err, path));
  assert_non_null(strstr(err, "rate 10/s, burst 2, concurrency 3"));
  assert_non_null(strstr(err, "rate 20/s"));
  /* The lease may differ per participant; the limits may not. */
  char u[200];
  snprintf(u, sizeof u, "%s?lease=2s", uri);
  polite_budget *d = open_ok(u, 10, 2, 3);
  polite_budget_close(d);
  /* The file outlives its users: a later joiner sees the same settings. */
  polite_budget_close(a);
  c.rate_per_s = 10;
  c.concurrency = 1;
  assert_int_equal(polite__budget_file_new(uri, &c, &b, err, sizeof err),
                   POLITE_EINVAL);
}

static void half_initialised_file_is_initialised(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 10, 1, 1);
  polite_budget_close(a);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  /* A creator that died before writing the header (it comes last) leaves
   * a first page of zeros. */
  int fd = open(path, O_WRONLY);
  assert_true(fd >= 0);
  char zero[PF_PAGE] = {0};
  assert_int_equal(pwrite(fd, zero, sizeof zero, 0), (ssize_t)sizeof zero);
  close(fd);
  polite_budget *b = open_ok(uri, 5, 1, 1); /* new creator, new settings */
  int64_t w;
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(b);
}

/* A participant killed by SIGKILL while holding the lock and a slot: the
 * lock is recovered at once, the slot when the lease runs out. */
static void killed_participant_is_recovered(void **state) {
  (void)state;
  char u[200];
  snprintf(u, sizeof u, "%s?lease=1s", uri);
  polite_budget *a = open_ok(u, 0, 1, 1);
  int pipefd[2];
  assert_int_equal(pipe(pipefd), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    polite_budget *c = open_ok(u, 0, 1, 1);
    int64_t w;
    int ok = acq(c, T0, 1, &w) == POLITE_BUDGET_ADMITTED &&
             polite__budget_file_hold_lock(c) == 0;
    if (write(pipefd[1], ok ? "y" : "n", 1) != 1)
      _exit(1);
    for (;;)
      pause();
  }
  char ch = 0;
  assert_int_equal(read(pipefd[0], &ch, 1), 1);
  assert_int_equal(ch, 'y');
  kill(pid, SIGKILL);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  close(pipefd[0]);
  close(pipefd[1]);
  int64_t w;
  assert_int_equal(acq(a, T0 + 999 * MS, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(acq(a, T0 + 1000 * MS, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
}

/* Threads on one fake clock: the slots are never over-committed and one
 * instant admits exactly the burst. */
typedef struct {
  polite_budget *b;
  int *in_flight;
  int *max_seen;
  int *admitted;
  int64_t *clock;
  int iters;
} worker_arg;

static void *thread_worker(void *p) {
  worker_arg *wa = p;
  for (int i = 0; i < wa->iters; i++) {
    int64_t now = __atomic_add_fetch(wa->clock, 1, __ATOMIC_SEQ_CST);
    int64_t w;
    int rc = polite_budget_acquire(wa->b, NULL, now, 1, 1, &w);
    if (rc < 0)
      return (void *)1;
    if (rc != POLITE_BUDGET_ADMITTED)
      continue;
    __atomic_add_fetch(wa->admitted, 1, __ATOMIC_SEQ_CST);
    int n = __atomic_add_fetch(wa->in_flight, 1, __ATOMIC_SEQ_CST);
    int m = __atomic_load_n(wa->max_seen, __ATOMIC_SEQ_CST);
    while (n > m &&
           !__atomic_compare_exchange_n(wa->max_seen, &m, n, 0,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
      ;
    sched_yield();
    __atomic_sub_fetch(wa->in_flight, 1, __ATOMIC_SEQ_CST);
    polite_budget_release(wa->b, NULL, 1);
  }
  return NULL;
}

static void threads_share_slots_and_burst(void **state) {
  (void)state;
  enum { N = 4 };
  polite_budget *shared = open_ok(uri, 0, 1, 3);
  polite_budget *own[N];
  int in_flight = 0, max_seen = 0, admitted = 0;
  int64_t clock = T0;
  pthread_t th[2 * N];
  worker_arg wa[2 * N];
  for (int i = 0; i < 2 * N; i++) {
    /* Half the threads share a handle, half have their own. */
    own[i % N] = i < N ? open_ok(uri, 0, 1, 3) : own[i % N];
    wa[i] = (worker_arg){i < N ? own[i] : shared,
                         &in_flight,
                         &max_seen,
                         &admitted,
                         &clock,
                         2000};
    assert_int_equal(pthread_create(&th[i], NULL, thread_worker, &wa[i]), 0);
  }
  for (int i = 0; i < 2 * N; i++) {
    void *r;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  assert_true(max_seen <= 3);
  assert_true(max_seen >= 1);
  assert_true(admitted > 0);
  for (int i = 0; i < N; i++)
    polite_budget_close(own[i]);
  polite_budget_close(shared);

  /* Rate only, all threads at one fixed instant: exactly `burst` pass. */
  unlink(path);
  polite_budget *r = open_ok(uri, 1, 5, 0);
  int64_t fixed = T0;
  admitted = 0;
  for (int i = 0; i < N; i++) {
    wa[i] = (worker_arg){r, &in_flight, &max_seen, &admitted, &fixed, 500};
    assert_int_equal(pthread_create(&th[i], NULL, thread_worker, &wa[i]), 0);
  }
  for (int i = 0; i < N; i++)
    pthread_join(th[i], NULL);
  /* The clock moved by 2000 us in all: still within the first interval. */
  assert_int_equal(admitted, 5);
  polite_budget_close(r);
}

/* A file written before a reboot holds monotonic times from another boot:
 * the first joiner after the reboot starts it fresh. */
static void file_from_another_boot_starts_fresh(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 1, 1, 1);
  int64_t w;
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  /* Same boot: the TAT is kept, the next start waits. */
  polite_budget *b = open_ok(uri, 1, 1, 1);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(polite_budget_pause_until(b, NULL, T0, T0 + 60 * SEC), 0);
  polite_budget_close(b);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  pf_header h;
  assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
  snprintf(h.boot_id, sizeof h.boot_id, "another-boot");
  polite__pf_header_seal(&h);
  assert_int_equal(pwrite(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
  close(fd);
  polite_budget *c = open_ok(uri, 1, 1, 1);
  assert_int_equal(polite_budget_paused_for(c, NULL, T0), 0);
  assert_int_equal(acq(c, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(c);
}

/* A stray write into a running participant's account (here: its own slot
 * count) is caught by the record's checksum: the next call says so, the
 * account is rebuilt from what the participants know (this one's slot is
 * re-registered), and nothing starts until it has settled. */
static void corrupted_file_fails_with_a_message(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 4);
  polite_budget *b = open_ok(uri, 0, 1, 4);
  int64_t w;
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  /* Find this process's owner entry (pid, then slots) and corrupt it. */
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  char *buf = malloc((size_t)st.st_size);
  assert_non_null(buf);
  assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
  int32_t pid = (int32_t)getpid();
  uint32_t one = 1, huge = 0xffffffffu;
  off_t at = -1;
  for (off_t i = PF_PAGE; i + 8 <= st.st_size; i += 4)
    if (memcmp(buf + i, &pid, 4) == 0 && memcmp(buf + i + 4, &one, 4) == 0) {
      at = i + 4;
      break;
    }
  free(buf);
  assert_true(at > PF_PAGE);
  assert_int_equal(pwrite(fd, &huge, 4, at), 4);
  close(fd);
  int rc = acq(b, T0 + MS, 1, &w);
  assert_int_equal(rc, POLITE_EBUDGET);
  const char *e = polite_budget_errstr(b);
  assert_non_null(strstr(e, "damaged"));
  assert_non_null(strstr(e, "rebuilt"));
  assert_non_null(strstr(e, path));
  /* The holder re-registers its slot while the account settles. */
  assert_int_equal(acq(a, T0 + 2 * MS, 0, &w), POLITE_EBUDGET);
  assert_int_equal(acq(b, T0 + 1500 * MS, 1, &w), POLITE_EBUDGET);
  /* Settled: 4 slots, one of them a's. */
  for (int i = 0; i < 3; i++)
    assert_int_equal(acq(b, T0 + 2100 * MS, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(b, T0 + 2100 * MS, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_release(a, NULL, 1);
  assert_int_equal(acq(b, T0 + 2100 * MS, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* The learned rate replaces the configured one (its ceiling): after a
 * publish the file paces at it, for every participant. */
static void learned_rate_paces_every_participant(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 100, 1, 0);
  polite_budget *b = open_ok(uri, 100, 1, 0);
  int64_t w;
  assert_int_equal(acq2(a, T0, 1, 0, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq2(b, T0 + 10 * MS, 1, 0, &w), POLITE_BUDGET_ADMITTED);
  polite_shared_rate r = {2, 3, 0, 0};
  assert_int_equal(polite_budget_publish_rate(a, NULL, T0 + 20 * MS, &r, 1), 1);
  assert_int_equal(r.generation, 1);
  /* The new spacing applies from the next admission: b starts at once,
   * then a waits 500 ms after it. */
  assert_int_equal(acq2(b, T0 + 20 * MS, 1, 0, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq2(a, T0 + 40 * MS, 1, 0, &w), POLITE_BUDGET_WAIT_RATE);
  assert_true(w > 470 * MS && w <= 480 * MS);
  polite_shared_rate s;
  assert_int_equal(polite_budget_shared_rate(b, NULL, &s), 0);
  assert_true(s.rate_per_s == 2 && s.generation == 1);
  /* A learned rate above the configured one is capped by it (100/s). */
  polite_shared_rate up = {1000, 0, 1, 0};
  assert_int_equal(polite_budget_publish_rate(a, NULL, T0, &up, 0), 1);
  assert_int_equal(acq2(a, T0 + 520 * MS, 1, 0, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq2(a, T0 + 521 * MS, 1, 0, &w), POLITE_BUDGET_WAIT_RATE);
  assert_true(w >= 8 * MS && w <= 9 * MS);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* A learned in-flight cap one participant gives the account holds every
 * participant's acquires (the account's slots, everyone's, counted), and
 * each one's count of the account's slots is the account's, not its own. */
static void slot_cap_holds_every_participant(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 8);
  polite_budget *b = open_ok(uri, 0, 1, 8);
  int64_t w;
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_in_use(a, NULL), 1);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_in_use(b, NULL), 2);
  polite_budget_set_slot_cap(a, NULL, 3);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_in_use(b, NULL), 3);
  /* Three in use: neither starts another, though 8 are configured. */
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_release(a, NULL, 1);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  /* Removed by the one that set it, or by a clear. */
  polite_budget_set_slot_cap(a, NULL, 0);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_set_slot_cap(b, NULL, 4);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(polite_budget_clear(b, NULL, T0), 0);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* set_slot_cap on an account nobody has acquired yet (it takes no clock)
 * makes the account with its cap, so the cap holds from the first acquire
 * of any participant: it was dropped, the account not being there. */
static void slot_cap_holds_before_any_acquire(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 8);
  polite_budget *b = open_ok(uri, 0, 1, 8);
  polite_budget_set_slot_cap(a, NULL, 2);
  int64_t w;
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_WAIT_SLOT);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* What no call passes a backend (the file's identity and creation time,
 * a participant's owner id) comes from polite_budget_open_env's env, so a
 * test on a fake clock and random source sees its own values in the
 * file. */
static void ids_and_creation_time_come_from_the_env(void **state) {
  (void)state;
  unsigned char fill = 0xa5;
  polite_env env = {NULL, fake_env_wall, fake_env_bytes, &fill};
  polite_budget_config c = {10, 1, 2};
  polite_budget *b = NULL;
  char err[256];
  assert_int_equal(polite_budget_open_env(uri, &c, &env, &b, err, sizeof err),
                   0);
  int64_t w;
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  int fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  pf_header h;
  assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
  static pf_record r;
  assert_int_equal(pread(fd, &r, sizeof r, PF_PAGE), (ssize_t)sizeof r);
  close(fd);
  uint64_t all_a5;
  memset(&all_a5, 0xa5, sizeof all_a5);
  assert_int_equal(h.created_wall_ms, FAKE_WALL_MS);
  assert_int_equal(h.file_id, all_a5);
  assert_int_equal(r.used, 1);
  assert_int_equal(r.owners[0].slots, 1);
  assert_int_equal(r.owners[0].id, all_a5);
  polite_budget_close(b);
}

/* Two participants of one file share the account's count of admissions
 * and one learned window: a window one of them learned (quota 4 from the
 * opening after the first admission) holds the other, and a third that
 * joins later, until the window's next start; the other reads it back. */
static void window_is_shared_between_participants(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 0);
  polite_budget *b = open_ok(uri, 0, 1, 0);
  int64_t w;
  for (int i = 0; i < 3; i++)
    assert_int_equal(acq(a, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 0, 0, &w),
                   POLITE_BUDGET_ADMITTED); /* no units: not counted */
  assert_int_equal(acq(b, T0, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_admissions(a, NULL), 3);
  assert_int_equal(polite_budget_admissions(b, NULL), 4);
  polite_shared_window win = {T0, 1, 5 * SEC, T0 + 5 * SEC, 0, 4};
  assert_int_equal(polite_budget_window(a, NULL, &win), 0);
  assert_int_equal(acq(b, T0 + SEC, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq(a, T0 + 2 * SEC, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 3 * SEC);
  assert_int_equal(acq(b, T0 + 2 * SEC, 1, &w), POLITE_BUDGET_WAIT_RATE);
  polite_budget *c = open_ok(uri, 0, 1, 0);
  assert_int_equal(acq(c, T0 + 3 * SEC, 1, &w), POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 2 * SEC);
  /* b learned nothing itself: offering no quota reads the stored one. */
  polite_shared_window got = {0, 0, 0, 0, 0, 0};
  assert_int_equal(polite_budget_window(b, NULL, &got), 0);
  assert_int_equal(got.quota, 4);
  assert_int_equal(got.next_us, T0 + 5 * SEC);
  /* An older opening offered by b changes nothing; the next start frees. */
  polite_shared_window old = {T0 - SEC, 0, 5 * SEC, T0 + 4 * SEC, 0, 9};
  assert_int_equal(polite_budget_window(b, NULL, &old), 0);
  assert_int_equal(old.open_us, T0);
  assert_int_equal(acq(c, T0 + 5 * SEC, 1, &w), POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_admissions(c, NULL), 6);
  /* polite budget clear forgets it. */
  assert_int_equal(polite_budget_window(a, NULL, &win), 0);
  assert_int_equal(polite_budget_clear(a, NULL, T0 + 2 * SEC), 0);
  assert_int_equal(acq(b, T0 + 2 * SEC, 1, &w), POLITE_BUDGET_ADMITTED);
  polite_budget_close(a);
  polite_budget_close(b);
  polite_budget_close(c);
}

/* A file of version 4 (before the rate's ceiling) is refused, never
 * rewritten, with a message naming the file and both versions. */
static void old_version_is_refused_by_name(void **state) {
  (void)state;
  polite_budget *a = open_ok(uri, 0, 1, 0);
  polite_budget_close(a);
  int fd = open(path, O_RDWR);
  assert_true(fd >= 0);
  pf_header h;
  assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
  h.version = 4;
  polite__pf_header_seal(&h);
  assert_int_equal(pwrite(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
  close(fd);
  polite_budget_config c = {0, 1, 0};
  polite_budget *b = NULL;
  char err[256];
  assert_int_equal(polite__budget_file_new(uri, &c, &b, err, sizeof err),
                   POLITE_EBUDGET);
  assert_null(b);
  assert_non_null(strstr(err, path));
  assert_non_null(strstr(err, "another version (4, this is 5)"));
  fd = open(path, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(pread(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
  close(fd);
  assert_int_equal(h.version, 4); /* left as it was */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(rate_is_shared_between_participants,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(slots_are_shared_and_released, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(lease_expires_unless_renewed, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(pause_is_shared_without_catch_up, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(units_and_slots_are_separate, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(renew_takes_nothing_and_keeps_the_lease,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(bad_uris_and_files_are_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(config_mismatch_is_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(half_initialised_file_is_initialised,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(killed_participant_is_recovered, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(threads_share_slots_and_burst, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(file_from_another_boot_starts_fresh,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(corrupted_file_fails_with_a_message,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(slot_cap_holds_before_any_acquire, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(ids_and_creation_time_come_from_the_env,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(slot_cap_holds_every_participant, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(learned_rate_paces_every_participant,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(window_is_shared_between_participants,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(old_version_is_refused_by_name, setup,
                                      teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(dir);
  return rc;
}
