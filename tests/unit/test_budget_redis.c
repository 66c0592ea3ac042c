/* Unit tests of the Redis budget backend (lib/budget_redis.c) on a fake env
 * (polite_budget_open_env): the lease ids and the clock of the calls given
 * no now_us come from it. Against a redis-server of the test's own on a
 * free port of 127.0.0.1 (CI installs it; without it the test fails). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <hiredis/hiredis.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "budget_backends.h"

#define MS INT64_C(1000)
/* A fake monotonic "now" no real uptime reaches (31 years), so that a read
 * of the real clock instead of the env's is always far from it. */
#define T0 INT64_C(1000000000000000)

/* The env: a monotonic clock that says what the test sets, and a random
 * source that fills each call's bytes with one value, the next call's with
 * the next (so two participants get different ids the test knows). */
typedef struct {
  int64_t now_us;
  unsigned char next_byte;
} fake;

static int64_t fake_mono(void *ud) {
  return ((const fake *)ud)->now_us;
}

static int fake_bytes(void *ud, void *buf, size_t n) {
  fake *f = ud;
  memset(buf, f->next_byte++, n);
  return 0;
}

static pid_t redis_pid = -1;
static int redis_port;
static char dir[64] = "/tmp/polite-br-XXXXXX";

/* A port free on 127.0.0.1 right now. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

/* 1 when redis-server answers PING on redis_port. */
static int redis_up(void) {
  struct timeval tv = {0, 200000};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", redis_port, tv);
  int up = 0;
  if (c != NULL && c->err == 0) {
    redisReply *r = redisCommand(c, "PING");
    up = r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
  }
  redisFree(c);
  return up;
}

/* Starts redis-server (no persistence) on a free port; a few tries, as
 * the port may be taken between free_port and the server's bind. */
static int spawn_redis(int same_port) {
  for (int attempt = 0; attempt < 5; attempt++) {
    char port[16];
    if (!same_port)
      redis_port = free_port();
    snprintf(port, sizeof port, "%d", redis_port);
    redis_pid = fork();
    if (redis_pid == 0) {
      if (freopen("/dev/null", "w", stdout) == NULL)
        _exit(126);
      execlp("redis-server", "redis-server", "--port", port, "--bind",
             "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
             (char *)NULL);
      _exit(127);
    }
    for (int i = 0; i < 200 && redis_pid > 0; i++) {
      if (redis_up())
        return 0;
      if (waitpid(redis_pid, NULL, WNOHANG) == redis_pid)
        break; /* it exited: the port was taken, or no redis-server */
      struct timespec ts = {0, 25000000};
      nanosleep(&ts, NULL);
    }
    if (redis_pid > 0) {
      kill(redis_pid, SIGKILL);
      waitpid(redis_pid, NULL, 0);
    }
    redis_pid = -1;
  }
  fprintf(stderr, "could not start redis-server (is it installed?)\n");
  return -1;
}

static int start_redis(void **state) {
  (void)state;
  if (mkdtemp(dir) == NULL)
    return -1;
  return spawn_redis(0);
}

static void kill_redis(void) {
  if (redis_pid > 0) {
    kill(redis_pid, SIGKILL);
    waitpid(redis_pid, NULL, 0);
  }
  redis_pid = -1;
}

static int stop_redis(void **state) {
  (void)state;
  kill_redis();
  rmdir(dir);
  return 0;
}

/* A participant of budget NAME at concurrency 4, opened with env. */
static polite_budget *open_env(const char *name, const polite_env *env) {
  char uri[96], err[256];
  snprintf(uri, sizeof uri, "redis://127.0.0.1:%d/%s", redis_port, name);
  polite_budget_config c = {0, 1, 4};
  polite_budget *b = NULL;
  int rc = polite_budget_open_env(uri, &c, env, &b, err, sizeof err);
  if (rc != 0)
    fail_msg("open %s: %d %s", uri, rc, err);
  assert_string_equal(b->vt->scheme, "redis");
  return b;
}

/* Reads S, a number Redis sent, into *out: the whole of S must be the
 * number (an optional '-', then digits, or for a decimal number what
 * strtod reads, finite), else the reply is not what the test expects.
 * Returns 0, or -1 with *out unchanged. */
static int reply_i64(const char *s, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!(isdigit((unsigned char)s[0]) ||
        (s[0] == '-' && isdigit((unsigned char)s[1]))) ||
      *end != '\0' || errno != 0)
    return -1;
  *out = v;
  return 0;
}

static int reply_double(const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !isfinite(v) ||
      isspace((unsigned char)s[0]))
    return -1;
  *out = v;
  return 0;
}

/* The readers refuse what is not a number rather than read it as 0. */
static void reply_numbers_are_checked(void **state) {
  (void)state;
  static const char *const i64_bad[] = {
      "", "x", "12x", " 1", "+1", "-", "1.5", "99999999999999999999"};
  static const char *const dbl_bad[] = {"",      "x",   "1.5x", " 1",
                                        "1e999", "nan", "inf"};
  int64_t i = 7;
  double d = 7;
  for (size_t k = 0; k < sizeof i64_bad / sizeof i64_bad[0]; k++) {
    if (reply_i64(i64_bad[k], &i) != -1 || i != 7)
      fail_msg("reply_i64 took '%s'", i64_bad[k]);
  }
  for (size_t k = 0; k < sizeof dbl_bad / sizeof dbl_bad[0]; k++) {
    if (reply_double(dbl_bad[k], &d) != -1 || d != 7)
      fail_msg("reply_double took '%s'", dbl_bad[k]);
  }
  assert_int_equal(reply_i64("1733300000", &i), 0);
  assert_int_equal(i, INT64_C(1733300000));
  assert_int_equal(reply_i64("-3", &i), 0);
  assert_int_equal(i, -3);
  assert_int_equal(reply_double("1733300000123456.5", &d), 0);
  assert_true(d == 1733300000123456.5);
}

/* Redis TIME in microseconds, and the account's TAT (key "" of `name`;
 * 0 when there is none). A reply that is not a number fails the test,
 * naming it. */
static int64_t redis_time_us(redisContext *c) {
  redisReply *r = redisCommand(c, "TIME");
  assert_non_null(r);
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
      r->element[0]->type != REDIS_REPLY_STRING ||
      r->element[1]->type != REDIS_REPLY_STRING)
    fail_msg("TIME: not an array of two strings (type %d)", r->type);
  int64_t sec = 0, usec = 0;
  if (reply_i64(r->element[0]->str, &sec) != 0 ||
      reply_i64(r->element[1]->str, &usec) != 0)
    fail_msg("TIME: '%s' '%s' are not whole numbers", r->element[0]->str,
             r->element[1]->str);
  freeReplyObject(r);
  return sec * 1000000 + usec;
}

static double redis_tat(redisContext *c, const char *name) {
  redisReply *r = redisCommand(c, "GET polite:{%s}::tat", name);
  assert_non_null(r);
  double t = 0;
  if (r->type == REDIS_REPLY_STRING && reply_double(r->str, &t) != 0)
    fail_msg("the TAT of %s: '%s' is not a number", name, r->str);
  freeReplyObject(r);
  return t;
}

/* At 10/s burst 1, an admission that comes a little after the start the
 * script planned (a wake-up's lateness and its round trip, under 1 ms)
 * keeps the schedule: the TAT moves by exactly one interval, as the
 * scheduler's own admission_time does for the local budget, where
 * restarting from the late start lost that lateness at every start (the
 * two gateways of bench/adaptive/gateway_ab.sh share one TAT). An
 * admission whose lateness the test cannot bound under 1 ms (a loaded
 * machine) is tried again. */
static void late_admission_keeps_the_schedule(void **state) {
  (void)state;
  char uri[96], err[256];
  snprintf(uri, sizeof uri, "redis://127.0.0.1:%d/late", redis_port);
  polite_budget_config cfg = {10, 1, 0};
  polite_budget *b = NULL;
  assert_int_equal(polite_budget_open(uri, &cfg, &b, err, sizeof err), 0);
  redisContext *c = redisConnect("127.0.0.1", redis_port);
  assert_true(c != NULL && c->err == 0);
  int64_t w;
  int kept = 0;
  assert_int_equal(polite_budget_acquire(b, NULL, 0, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  for (int k = 0; k < 20 && !kept; k++) {
    assert_int_equal(polite_budget_acquire(b, NULL, 0, 1, 0, &w),
                     POLITE_BUDGET_WAIT_RATE);
    double tat = redis_tat(c, "late");
    while (redis_time_us(c) < (int64_t)tat)
      ; /* spin on Redis's clock to the planned start */
    assert_int_equal(polite_budget_acquire(b, NULL, 0, 1, 0, &w),
                     POLITE_BUDGET_ADMITTED);
    int64_t after = redis_time_us(c);
    double moved = redis_tat(c, "late") - tat;
    if (after - (int64_t)tat >= 1000)
      continue; /* too late to tell */
    if (moved < 100000 - 1 || moved > 100000 + 1)
      fail_msg("the TAT moved %.3f us for one interval of 100000", moved);
    kept = 1;
  }
  assert_true(kept);
  redisFree(c);
  polite_budget_close(b);
}

/* Two participants opened with one env get the lease ids its random source
 * dictates (host:pid:random, the random part 16 hex digits of its bytes):
 * they were drawn from the real source, whatever the env said. */
static void lease_ids_come_from_the_env(void **state) {
  (void)state;
  fake f = {T0, 0x11};
  polite_env env = {fake_mono, NULL, fake_bytes, &f};
  polite_budget *a = open_env("ids", &env);
  polite_budget *b = open_env("ids", &env);
  int64_t w;
  assert_int_equal(polite_budget_acquire(a, NULL, T0, 0, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 0, 2, &w),
                   POLITE_BUDGET_ADMITTED);
  polite_budget_state st;
  memset(&st, 0, sizeof st);
  assert_int_equal(polite_budget_inspect(a, NULL, T0, &st), 0);
  assert_int_equal(st.n_holders, 2);
  char want_a[48], want_b[48];
  snprintf(want_a, sizeof want_a, ":%d:1111111111111111", (int)getpid());
  snprintf(want_b, sizeof want_b, ":%d:1212121212121212", (int)getpid());
  int seen_a = 0, seen_b = 0;
  for (unsigned i = 0; i < st.n_holders; i++) {
    const char *id = st.holders[i].id;
    size_t n = strlen(id);
    if (n > strlen(want_a) && strcmp(id + n - strlen(want_a), want_a) == 0)
      seen_a = st.holders[i].slots == 1;
    if (n > strlen(want_b) && strcmp(id + n - strlen(want_b), want_b) == 0)
      seen_b = st.holders[i].slots == 2;
  }
  if (!seen_a || !seen_b)
    fail_msg("holders %s, %s; expected ids ending %s (1 slot), %s (2)",
             st.holders[0].id, st.holders[1].id, want_a, want_b);
  polite_budget_close(a);
  polite_budget_close(b);
}

/* The URI before '?' is read as every Redis URI of libpolite
 * (lib/redis_uri.c): the password %-decoded (the server's is p@ss%, written
 * p%40ss%25), a bad escape refused without showing the password, an IPv6
 * host in brackets. */
static void uri_is_read_as_the_queue_reads_it(void **state) {
  (void)state;
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", redis_port, tv);
  assert_true(c != NULL && c->err == 0);
  freeReplyObject(redisCommand(c, "CONFIG SET requirepass %s", "p@ss%"));
  polite_budget_config cfg = {0, 1, 0};
  polite_budget *b = NULL;
  char uri[96], err[256];
  snprintf(uri, sizeof uri, "redis://:p%%40ss%%25@127.0.0.1:%d/auth",
           redis_port);
  int rc = polite_budget_open(uri, &cfg, &b, err, sizeof err);
  polite_budget_close(b);
  /* The server back without a password before any check can fail. */
  freeReplyObject(redisCommand(c, "AUTH %s", "p@ss%"));
  freeReplyObject(redisCommand(c, "CONFIG SET requirepass %s", ""));
  redisFree(c);
  if (rc != 0)
    fail_msg("%s: %d %s", uri, rc, err);
  snprintf(uri, sizeof uri, "redis://:p%%4@127.0.0.1:%d/auth", redis_port);
  assert_int_equal(polite_budget_open(uri, &cfg, &b, err, sizeof err),
                   POLITE_EINVAL);
  if (strstr(err, "%-escape") == NULL || strstr(err, "p%4") != NULL)
    fail_msg("bad escape: %s", err);
  /* Port 1 of ::1: the host is read, and nobody listens there. */
  assert_int_equal(
      polite_budget_open("redis://[::1]:1/n", &cfg, &b, err, sizeof err),
      POLITE_EBUDGET);
  if (strstr(err, "cannot connect") == NULL)
    fail_msg("[::1]:1: %s", err);
}

/* A release (which gets no now_us) that finds the server gone schedules the
 * reconnect on the env's clock: the next acquires on that clock wait the
 * first backoff step (100 ms) without a connection attempt, then one
 * attempt is made. On the real clock (as before) the backoff was decided
 * 31 years before T0, and the acquire 60 ms after the release tried to
 * connect at once. Kills the server: the last test of the file. */
static void release_backoff_is_on_the_env_clock(void **state) {
  (void)state;
  fake f = {T0, 0x21};
  polite_env env = {fake_mono, NULL, fake_bytes, &f};
  polite_budget *b = open_env("backoff", &env);
  int64_t w;
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 0, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  kill_redis();
  f.now_us = T0 + 10 * MS;
  polite_budget_release(b, NULL, 1); /* the server is gone: owed */
  uint64_t trips = polite__budget_redis_round_trips(b);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 60 * MS, 0, 1, &w),
                   POLITE_EBUDGET);
  if (strstr(polite_budget_errstr(b), "reconnecting with a backoff") == NULL)
    fail_msg("60 ms after the release: %s", polite_budget_errstr(b));
  assert_int_equal(polite__budget_redis_round_trips(b), trips);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 110 * MS, 0, 1, &w),
                   POLITE_EBUDGET);
  assert_int_equal(polite__budget_redis_round_trips(b), trips + 1);
  if (strstr(polite_budget_errstr(b), "cannot connect") == NULL)
    fail_msg("110 ms after the release: %s", polite_budget_errstr(b));
  polite_budget_close(b);
}

/* b's acquire at the fake clock's next step after f->now_us moved on, until
 * the server answers again (reconnects wait a backoff on the env's clock). */
static int acq_when_back(polite_budget *b, fake *f) {
  int64_t w;
  int rc = POLITE_EBUDGET;
  for (int i = 0; i < 20 && rc == POLITE_EBUDGET; i++) {
    f->now_us += 200 * MS;
    rc = polite_budget_acquire(b, NULL, f->now_us, 1, 0, &w);
  }
  return rc;
}

/* Two participants (two hosts: one Redis) share the account's count of
 * admissions and one learned window, merged inside the script: a window
 * one learned (quota 4 from the opening after the first admission) holds
 * the other until its next start, the other reads it back, and an
 * unchanged window costs no round trip. The window is kept in Redis TIME
 * (the fake clock here is 31 years from the real one: only durations
 * cross). A restarted Redis forgets it; the next offer of the participant
 * that learned it stores it again, and the count resumes from its
 * opening's. */
static void window_is_shared_and_offered_again_after_a_restart(void **st) {
  (void)st;
  fake f = {T0, 0x31};
  polite_env env = {fake_mono, NULL, fake_bytes, &f};
  polite_budget *a = open_env("win", &env);
  polite_budget *b = open_env("win", &env);
  int64_t w;
  for (int i = 0; i < 3; i++)
    assert_int_equal(polite_budget_acquire(a, NULL, T0, 1, 0, &w),
                     POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 0, 0, &w),
                   POLITE_BUDGET_ADMITTED); /* no units: not counted */
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_admissions(a, NULL), 3);
  assert_int_equal(polite_budget_admissions(b, NULL), 4);
  int64_t sec = 1000 * MS;
  polite_shared_window win = {T0, 1, 60 * sec, T0 + 60 * sec, 0, 4};
  assert_int_equal(polite_budget_window(a, NULL, &win), 0);
  assert_int_equal(win.quota, 4);
  assert_int_equal(win.open_us, T0); /* its own times come back exactly */
  assert_int_equal(win.next_us, T0 + 60 * sec);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(a, NULL, T0, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_true(w > 59 * sec && w <= 60 * sec);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE);
  polite_shared_window got = {0, 0, 0, 0, 0, 0};
  assert_int_equal(polite_budget_window(b, NULL, &got), 0);
  assert_int_equal(got.quota, 4);
  assert_int_equal(got.open_n, 1);
  assert_true(llabs(got.next_us - (T0 + 60 * sec)) < 100 * MS);
  uint64_t trips = polite__budget_redis_round_trips(a);
  assert_int_equal(polite_budget_window(a, NULL, &win), 0);
  assert_int_equal(polite__budget_redis_round_trips(a), trips);
  kill_redis();
  assert_int_equal(spawn_redis(1), 0);
  assert_int_equal(acq_when_back(b, &f), POLITE_BUDGET_ADMITTED);
  assert_int_equal(acq_when_back(a, &f), POLITE_BUDGET_ADMITTED);
  win = (polite_shared_window){T0, 1, 60 * sec, T0 + 60 * sec, 0, 4};
  trips = polite__budget_redis_round_trips(a);
  assert_int_equal(polite_budget_window(a, NULL, &win), 0);
  assert_int_equal(polite__budget_redis_round_trips(a), trips + 1);
  for (int i = 0; i < 3; i++)
    assert_int_equal(polite_budget_acquire(b, NULL, f.now_us, 1, 0, &w),
                     POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, f.now_us, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(polite_budget_admissions(b, NULL), 5);
  polite_budget_close(a);
  polite_budget_close(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reply_numbers_are_checked),
      cmocka_unit_test(lease_ids_come_from_the_env),
      cmocka_unit_test(uri_is_read_as_the_queue_reads_it),
      cmocka_unit_test(late_admission_keeps_the_schedule),
      cmocka_unit_test(window_is_shared_and_offered_again_after_a_restart),
      cmocka_unit_test(release_backoff_is_on_the_env_clock),
  };
  return cmocka_run_group_tests(tests, start_redis, stop_redis);
}
