/* The batch engine reads its clocks and its random source only through
 * polite_batch_options.env (lib/batch.c, lib/clock.c): a run over real
 * libcurl against a closed port, with a fake wall clock and a fake random
 * source, reports the fake times and makes the key from the fake bytes.
 * The blocking client does the same through polite_client_options.env. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <polite/polite.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_WALL INT64_C(1234567890123)

typedef struct {
  unsigned wall_reads, random_reads, mono_reads;
} fake;

/* A monotonic clock far from the real one (which counts from boot), that
 * moves 1 ms per reading. */
static int64_t fake_mono(void *ud) {
  fake *f = ud;
  f->mono_reads++;
  return INT64_C(900000000000000) + (int64_t)f->mono_reads * 1000;
}

static int64_t fake_wall(void *ud) {
  ((fake *)ud)->wall_reads++;
  return FAKE_WALL;
}

static int fake_random(void *ud, void *buf, size_t n) {
  ((fake *)ud)->random_reads++;
  memset(buf, 0xab, n);
  return 0;
}

typedef struct {
  int handed;
  int64_t start_wall, end_wall;
  char key[64];
  polite_outcome outcome;
} seen;

static int next(void *ud, polite_request **out) {
  seen *s = ud;
  if (s->handed++)
    return 0;
  const char line[] = "{\"id\":\"w\",\"method\":\"POST\","
                      "\"url\":\"http://127.0.0.1:1/closed\"}";
  assert_int_equal(polite_request_parse_line(line, strlen(line), 1, NULL, out),
                   1);
  return 1;
}

static void on_attempt(void *ud, const polite_attempt *a) {
  seen *s = ud;
  s->start_wall = a->start_wall_ms;
  s->end_wall = a->end_wall_ms;
}

static void on_result(void *ud, const polite_result *r) {
  seen *s = ud;
  s->outcome = r->outcome;
  snprintf(s->key, sizeof s->key, "%s",
           r->idempotency_key ? r->idempotency_key : "");
}

/* What both cases set on their options (a polite_batch_options or a
 * polite_client_options, which name these members alike): the env, one
 * attempt of a POST with an automatic key, a bounded connect. */
#define ONE_ATTEMPT_ON(o, e)                                                   \
  ((o).env = (e), (o).max_attempts = 1, (o).idempotency_auto = 1,              \
   (o).connect_timeout_ms = 2000)

static void env_is_the_only_clock_and_random_source(void **state) {
  (void)state;
  fake f = {0, 0, 0};
  polite_env env = {NULL, fake_wall, fake_random, &f}; /* real monotonic */
  seen s;
  memset(&s, 0, sizeof s);
  polite_batch_options o;
  polite_batch_options_init(&o);
  ONE_ATTEMPT_ON(o, &env);
  o.next = next;
  o.on_attempt = on_attempt;
  o.on_result = on_result;
  o.ud = &s;
  char err[128];
  polite_batch *b = polite_batch_new(&o, err, sizeof err);
  assert_non_null(b);
  assert_int_equal(polite_batch_run(b), 0);
  polite_batch_free(b);
  assert_int_equal(s.outcome, POLITE_OUT_NETWORK_ERROR);
  assert_int_equal(s.start_wall, FAKE_WALL);
  assert_int_equal(s.end_wall, FAKE_WALL);
  /* 16 bytes of 0xab, with the version and variant bits of a UUID v4. */
  assert_string_equal(s.key, "abababab-abab-4bab-abab-abababababab");
  assert_true(f.wall_reads >= 1);
  assert_true(f.random_reads >= 1); /* the seed and the key */
}

/* The client's learned rate keeps its time on the env's monotonic clock:
 * creating the client and asking for its rate read the fake clock, and one
 * call runs its batch on the same env (its key from the fake bytes). */
static void client_takes_time_from_its_env(void **state) {
  (void)state;
  fake f = {0, 0, 0};
  polite_env env = {fake_mono, fake_wall, fake_random, &f};
  polite_client_options o;
  polite_client_options_init(&o);
  ONE_ATTEMPT_ON(o, &env);
  polite_client *c = polite_client_new(&o);
  assert_non_null(c);
  assert_true(f.mono_reads >= 1);
  unsigned before = f.mono_reads;
  (void)polite_client_rate_per_s(c);
  assert_true(f.mono_reads > before);
  polite_request *req = NULL;
  const char line[] = "{\"method\":\"POST\",\"url\":\"http://127.0.0.1:1/\"}";
  assert_int_equal(polite_request_parse_line(line, strlen(line), 1, NULL, &req),
                   1);
  polite_response resp;
  before = f.random_reads;
  assert_int_equal(polite_client_request(c, req, &resp), 0);
  assert_int_equal(resp.outcome, POLITE_OUT_NETWORK_ERROR);
  assert_true(f.random_reads > before); /* the call's batch used the env */
  polite_response_free(&resp);
  polite_request_free(req);
  polite_client_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(env_is_the_only_clock_and_random_source),
      cmocka_unit_test(client_takes_time_from_its_env),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
