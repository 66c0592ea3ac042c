/* Unit tests of the proxy's decision for a watched request (proxy/px_decide.c)
 * on a fake clock: the verdict of a pure function of the request, the state
 * and one `now` (px_decide.h), with no server, socket or libevent. The
 * judge (an early retry caught, a retry on time let through, --penalty, a
 * throttle on a key told to wait), concurrency (a slot held and given
 * back), the rate limit (its headers on a request that goes on), tokens,
 * the quota and injected failures, each with the status, Retry-After, kind
 * and body it must have. Time moves by passing another `now`. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px_decide.h"

typedef struct {
  px_config cfg;
  px_state *st;
  uint64_t rng;
  px_decider d;
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
  w->st = polite__px_state_new();
  assert_non_null(w->st);
  w->rng = 42;
  w->d = (px_decider){&w->cfg, w->st, &w->rng, 7};
}

static void world_free(world *w) {
  polite__px_state_free(w->st);
  polite__px_config_free(&w->cfg);
}

/* Decides GET url of client `who` (on connection `conn`) at t_ms of the
 * fake clock into *v. When the verdict answers with a Retry-After, its wait
 * is told at once (what the answer's leaving does in px_answer.c). The
 * caller gives back v->conc_key (polite__px_release). */
static void decide_as(world *w, const char *who, const char *conn,
                      const char *url, int64_t t_ms, px_decision *v) {
  px_ask a = {.method = "GET",
              .url = url,
              .raw_url = url,
              .path = "/x",
              .client = who,
              .conn_id = conn,
              .conn_handle = -1,
              .host = "api.test"};
  char *key = polite__px_scope_key(w->d.salt, &a, w->cfg.scope);
  assert_non_null(key);
  a.key = key;
  px_now now = {t_ms * 1000, 1700000000000 + t_ms};
  polite__px_decide(&w->d, &a, &now, v);
  if (v->answer && v->retry_after_s >= 0)
    polite__px_tell(w->st, key, a.conn_id, a.client, t_ms,
                    v->retry_after_s * 1000, v->tell_flags);
  free(key);
}

/* The same for client 10.0.0.1 on connection 10.0.0.1:5000. */
static void decide_at(world *w, const char *url, int64_t t_ms, px_decision *v) {
  decide_as(w, "10.0.0.1", "10.0.0.1:5000", url, t_ms, v);
}

/* The kind of the verdict at t_ms (PX_KIND_PASSED: it goes on). */
static px_kind kind_at(world *w, const char *url, int64_t t_ms) {
  px_decision v;
  decide_at(w, url, t_ms, &v);
  polite__px_release(w->st, v.conc_key);
  return v.answer ? v.kind : PX_KIND_PASSED;
}

static void early_retry_on_a_fake_clock(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"failure-rate", "100", "retry-after", "2", NULL};
  world_init(&w, opts);
  px_decision v;
  decide_at(&w, "http://api.test/x", 0, &v);
  assert_int_equal(v.answer, 1);
  assert_int_equal(v.kind, PX_KIND_FAILURE);
  assert_int_equal(v.status, 429);
  assert_int_equal(v.body, PX_BODY_ERROR);
  assert_string_equal(v.code, "too_many_requests");
  assert_int_equal(v.retry_after_s, 2);
  assert_int_equal(v.tell_flags, PX_TELL_THROTTLE);
  /* 1 ms before the 2 s have passed: early, told the 1 s left (rounded
   * up, never 0), and the log line says by how much. */
  decide_at(&w, "http://api.test/x", 1999, &v);
  assert_int_equal(v.kind, PX_KIND_EARLY);
  assert_string_equal(v.code, "early_retry");
  assert_int_equal(v.retry_after_s, 1);
  assert_int_equal(v.tell_flags, 0);
  assert_string_equal(v.note, "early_by=1ms");
  /* On time: the judge lets it through (the failure rate answers again). */
  assert_int_equal(kind_at(&w, "http://api.test/x", 2000), PX_KIND_FAILURE);
  /* Another URL (the default scope is method + URL) was never told. */
  assert_int_equal(kind_at(&w, "http://api.test/other", 2001), PX_KIND_FAILURE);
  world_free(&w);
}

static void penalty_restarts_the_wait(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"failure-rate", "100",  "retry-after", "3",
                              "penalty",      "true", NULL};
  world_init(&w, opts);
  px_decision v;
  decide_at(&w, "http://api.test/p", 0, &v);
  decide_at(&w, "http://api.test/p", 2000, &v); /* early by 1 s */
  assert_int_equal(v.kind, PX_KIND_EARLY);
  assert_int_equal(v.retry_after_s, 3); /* the whole wait again */
  assert_int_equal(v.tell_flags, PX_TELL_RESTART);
  /* 3 s from 2 s: still early at 4.5 s. */
  assert_int_equal(kind_at(&w, "http://api.test/p", 4500), PX_KIND_EARLY);
  world_free(&w);
}

/* Another client on a key that was told to wait is throttled (never told,
 * so not early), for the rest of the wait only. */
static void throttle_binds_the_key(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"failure-rate", "100", "retry-after", "5", NULL};
  world_init(&w, opts);
  px_decision v;
  decide_at(&w, "http://api.test/t", 0, &v);
  decide_as(&w, "10.0.0.2", "10.0.0.2:6000", "http://api.test/t", 3000, &v);
  assert_int_equal(v.kind, PX_KIND_THROTTLED);
  assert_int_equal(v.retry_after_s, 2);
  assert_string_equal(v.note, "throttled_for=2000ms");
  world_free(&w);
}

static void rate_limit_on_a_fake_clock(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"rate-limit", "10/s", NULL};
  world_init(&w, opts);
  px_decision v;
  decide_at(&w, "http://api.test/a", 0, &v);
  /* It goes on, carrying the limiter's state for its headers. */
  assert_int_equal(v.answer, 0);
  assert_int_equal(v.has_lim, 1);
  assert_int_equal(v.lim.admitted, 1);
  assert_int_equal(v.lim.quota, 10);
  decide_at(&w, "http://api.test/b", 0, &v);
  assert_int_equal(v.kind, PX_KIND_RATE);
  assert_int_equal(v.status, 429);
  assert_int_equal(v.retry_after_s, 1); /* 100 ms, rounded up */
  assert_int_equal(v.has_lim, 1);
  assert_int_equal(v.lim.admitted, 0);
  /* One start per 100 ms, and a retry of /b after the second it was told
   * is on time. */
  assert_int_equal(kind_at(&w, "http://api.test/c", 100), PX_KIND_PASSED);
  assert_int_equal(kind_at(&w, "http://api.test/d", 150), PX_KIND_RATE);
  assert_int_equal(kind_at(&w, "http://api.test/b", 1000), PX_KIND_PASSED);
  world_free(&w);
}

/* A slot is held by the verdict until it is given back. */
static void concurrency_holds_a_slot(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"concurrency-limit", "1", NULL};
  world_init(&w, opts);
  px_decision first, v;
  decide_at(&w, "http://api.test/c", 0, &first);
  assert_int_equal(first.answer, 0);
  assert_non_null(first.conc_key);
  decide_at(&w, "http://api.test/c", 1, &v);
  assert_int_equal(v.kind, PX_KIND_CONCURRENCY);
  assert_null(v.conc_key);
  assert_true(v.retry_after_s >= 0);
  polite__px_release(w.st, first.conc_key);
  /* Given back: the next one goes on (past the Retry-After it was told). */
  decide_at(&w, "http://api.test/c", 60000, &v);
  assert_int_equal(v.answer, 0);
  polite__px_release(w.st, v.conc_key);
  world_free(&w);
}

static void quota_has_no_retry_after(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"quota", "2", NULL};
  world_init(&w, opts);
  assert_int_equal(kind_at(&w, "http://api.test/q", 0), PX_KIND_PASSED);
  assert_int_equal(kind_at(&w, "http://api.test/q", 1), PX_KIND_PASSED);
  px_decision v;
  decide_at(&w, "http://api.test/q", 2, &v);
  assert_int_equal(v.kind, PX_KIND_QUOTA);
  assert_int_equal(v.status, 429);
  assert_int_equal(v.body, PX_BODY_JSON);
  assert_non_null(strstr(v.text, "\"insufficient_quota\""));
  assert_int_equal(v.retry_after_s, -1);
  world_free(&w);
}

/* Tokens are charged after the answer: the request that overshoots goes
 * on, the next is refused until the window ends. */
static void tokens_charged_after_the_answer(void **state) {
  (void)state;
  world w;
  const char *const opts[] = {"prompt-token-limit", "100", NULL};
  world_init(&w, opts);
  px_decision v;
  decide_at(&w, "http://api.test/chat", 0, &v);
  assert_int_equal(v.answer, 0);
  assert_int_equal(v.charge_tokens, 1);
  assert_int_equal(v.has_tok, 1);
  const char usage[] = "{\"usage\":{\"prompt_tokens\":150,"
                       "\"completion_tokens\":5}}";
  polite__px_charge_tokens(&w.cfg, w.st, 10000, usage, sizeof usage - 1);
  decide_at(&w, "http://api.test/chat", 20000, &v);
  assert_int_equal(v.kind, PX_KIND_TOKENS);
  assert_int_equal(v.charge_tokens, 0);
  assert_non_null(strstr(v.text, "tokens per window"));
  assert_true(v.retry_after_s >= 1);
  world_free(&w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(early_retry_on_a_fake_clock),
      cmocka_unit_test(penalty_restarts_the_wait),
      cmocka_unit_test(throttle_binds_the_key),
      cmocka_unit_test(rate_limit_on_a_fake_clock),
      cmocka_unit_test(concurrency_holds_a_slot),
      cmocka_unit_test(quota_has_no_retry_after),
      cmocka_unit_test(tokens_charged_after_the_answer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
