/* Unit tests of the proxy's decision for a watched request (proxy/px_decide.c)
 * on a fake clock: the judge (an early retry caught, a retry on time let
 * through, --penalty), the rate limit, the quota and injected failures, each
 * answered with the status, Retry-After and kind it must have. The request
 * has no connection: the decision reads only the request, the state and the
 * one time the request carries (px_req.now), so a test moves time by setting
 * it, in microseconds of real time. */
#include <sys/queue.h> /* before libevent: TAILQ_INIT */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px_engine.h"

typedef struct {
  px_config cfg;
  px_server s;
} world;

/* A proxy configured by name=value pairs (NULL-terminated). */
static void world_init(world *w, const char *const *opts) {
  memset(w, 0, sizeof *w);
  polite__px_config_init(&w->cfg);
  char err[512];
  for (const char *const *o = opts; o && o[0]; o += 2)
    if (polite__px_config_set(&w->cfg, o[0], o[1], NULL, err, sizeof err) != 0)
      fail_msg("%s %s: %s", o[0], o[1], err);
  assert_int_equal(polite__px_config_finish(&w->cfg, err, sizeof err), 0);
  w->s.cfg = &w->cfg;
  w->s.st = polite__px_state_new();
  w->s.rng = 42;
  assert_non_null(w->s.st);
}

static void world_free(world *w) {
  polite__px_state_free(w->s.st);
  polite__px_config_free(&w->cfg);
}

/* One request of client 10.0.0.1 on connection 10.0.0.1:5000, decided at
 * t_ms of the fake clock; the answer's head "leaves" at once (the judge then
 * remembers the wait it told). Returns the status (0: it goes on), and the
 * Retry-After and kind it got. */
typedef struct {
  int status;
  char retry_after[16];
  px_kind kind;
} answer;

static answer decide(world *w, const char *url, int64_t t_ms) {
  px_req *r = calloc(1, sizeof *r);
  struct evkeyvalq in, out;
  TAILQ_INIT(&in);
  TAILQ_INIT(&out);
  r->s = &w->s;
  r->in = &in;
  r->out = &out;
  r->now.mono_us = t_ms * 1000;
  r->now.wall_ms = 1700000000000 + t_ms;
  snprintf(r->method, sizeof r->method, "GET");
  r->url = strdup(url);
  r->raw_url = strdup(url);
  r->target = "/x";
  r->path = "/x";
  snprintf(r->client, sizeof r->client, "10.0.0.1");
  snprintf(r->conn_id, sizeof r->conn_id, "10.0.0.1:5000");
  r->key = polite__px_scope_key(&w->s, r, w->cfg.scope, r->in);
  answer a = {0, "", PX_KIND_PASSED};
  if (polite__px_decide(r, NULL, 0)) {
    polite__px_answer_left(r);
    a.status = r->status;
    a.kind = r->kind;
    const char *ra = evhttp_find_header(&out, "Retry-After");
    snprintf(a.retry_after, sizeof a.retry_after, "%s", ra ? ra : "");
  }
  polite__px_release(r);
  evhttp_clear_headers(&out);
  if (r->body)
    evbuffer_free(r->body);
  free(r->url);
  free(r->raw_url);
  free(r->key);
  free(r->conc_key);
  free(r);
  return a;
}

static void early_retry_on_a_fake_clock(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"failure-rate", "100", "retry-after", "2", NULL};
  world_init(&w, opts);
  answer a = decide(&w, "http://api.test/x", 0);
  assert_int_equal(a.status, 429);
  assert_string_equal(a.retry_after, "2");
  assert_int_equal(a.kind, PX_KIND_FAILURE);
  /* 1 ms before the 2 s have passed: early, told the 1 s left (rounded
   * up, never 0). */
  a = decide(&w, "http://api.test/x", 1999);
  assert_int_equal(a.kind, PX_KIND_EARLY);
  assert_string_equal(a.retry_after, "1");
  /* On time: the judge lets it through (the failure rate answers again). */
  a = decide(&w, "http://api.test/x", 2000);
  assert_int_equal(a.kind, PX_KIND_FAILURE);
  /* Another URL (the default scope is method + URL) was never told. */
  a = decide(&w, "http://api.test/other", 2001);
  assert_int_equal(a.kind, PX_KIND_FAILURE);
  world_free(&w);
}

static void penalty_restarts_the_wait(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"failure-rate", "100",  "retry-after", "3",
                              "penalty",      "true", NULL};
  world_init(&w, opts);
  decide(&w, "http://api.test/p", 0);
  answer a = decide(&w, "http://api.test/p", 2000); /* early by 1 s */
  assert_int_equal(a.kind, PX_KIND_EARLY);
  assert_string_equal(a.retry_after, "3");   /* the whole wait again */
  a = decide(&w, "http://api.test/p", 4500); /* 3 s from 2 s: still early */
  assert_int_equal(a.kind, PX_KIND_EARLY);
  world_free(&w);
}

static void rate_limit_on_a_fake_clock(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"rate-limit", "10/s", NULL};
  world_init(&w, opts);
  assert_int_equal(decide(&w, "http://api.test/a", 0).status, 0);
  answer a = decide(&w, "http://api.test/b", 0);
  assert_int_equal(a.status, 429);
  assert_int_equal(a.kind, PX_KIND_RATE);
  assert_string_equal(a.retry_after, "1"); /* 100 ms, rounded up */
  /* One start per 100 ms, and a retry of /b after the second it was told
   * is on time. */
  assert_int_equal(decide(&w, "http://api.test/c", 100).status, 0);
  assert_int_equal(decide(&w, "http://api.test/d", 150).status, 429);
  assert_int_equal(decide(&w, "http://api.test/b", 1000).status, 0);
  world_free(&w);
}

static void quota_has_no_retry_after(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"quota", "2", NULL};
  world_init(&w, opts);
  assert_int_equal(decide(&w, "http://api.test/q", 0).status, 0);
  assert_int_equal(decide(&w, "http://api.test/q", 1).status, 0);
  answer a = decide(&w, "http://api.test/q", 2);
  assert_int_equal(a.status, 429);
  assert_int_equal(a.kind, PX_KIND_QUOTA);
  assert_string_equal(a.retry_after, "");
  world_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(early_retry_on_a_fake_clock),
      cmocka_unit_test(penalty_restarts_the_wait),
      cmocka_unit_test(rate_limit_on_a_fake_clock),
      cmocka_unit_test(quota_has_no_retry_after),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
