/* Unit tests of the engine's public face (polite/engine.h, lib/engine.c)
 * through the public API alone, as the gateway's event loop drives it: a
 * fake transport that records what it is asked to start, answers given by
 * hand (head, body, end), and a fake clock. Covers the verdicts (RELAY,
 * READ_BODY, DROP), the slot held while an answer is relayed, the result's
 * relayed and retry_after_ms, the engine's own idempotency keys, withdraw,
 * drain, free and the account listing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polite/engine.h>

#define MS INT64_C(1000)
#define SEC INT64_C(1000000)
#define T0 (INT64_C(1000) * SEC)
#define WALL0 INT64_C(1795996800000)
#define MAXN 64

typedef struct {
  polite_engine_attempt *a;
  char id[16];
  unsigned attempt;
  int64_t at;
  char key[40]; /* add_idempotency_key, "" for none */
  int aborted;
} started;

typedef struct {
  char id[16];
  polite_outcome outcome;
  int status, relayed;
  unsigned attempts;
  int64_t retry_after_ms, at;
  char error[200];
} ended;

typedef struct {
  polite_engine *e;
  polite_budget *budget;
  polite_batch_options o;
  int64_t now;
  started st[MAXN];
  unsigned n_st;
  ended res[MAXN];
  unsigned n_res;
  unsigned aborts;
  unsigned nreq;
} eng;

static polite_engine_now now_of(const eng *x) {
  polite_engine_now n = {x->now, WALL0 + (x->now - T0) / 1000};
  return n;
}

static int io_start(void *ud, polite_engine_attempt *a,
                    const polite_engine_send *s, char *err, size_t errlen) {
  eng *x = ud;
  (void)err, (void)errlen;
  assert_true(x->n_st < MAXN);
  started *t = &x->st[x->n_st++];
  memset(t, 0, sizeof *t);
  t->a = a;
  snprintf(t->id, sizeof t->id, "%s", s->req->id);
  t->attempt = s->attempt;
  t->at = x->now;
  snprintf(t->key, sizeof t->key, "%s",
           s->add_idempotency_key ? s->add_idempotency_key : "");
  assert_ptr_equal(polite_engine_attempt_request(a), s->req);
  polite_engine_attempt_set_private(a, t);
  return 0;
}

static void io_abort(void *ud, polite_engine_attempt *a) {
  eng *x = ud;
  started *t = polite_engine_attempt_private(a);
  assert_non_null(t);
  t->aborted = 1;
  x->aborts++;
}

static void on_result(void *ud, const polite_result *r) {
  eng *x = ud;
  assert_true(x->n_res < MAXN);
  ended *o = &x->res[x->n_res++];
  snprintf(o->id, sizeof o->id, "%s", r->req->id);
  o->outcome = r->outcome;
  o->status = r->status;
  o->relayed = r->relayed;
  o->attempts = r->attempts;
  o->retry_after_ms = r->retry_after_ms;
  o->at = x->now;
  snprintf(o->error, sizeof o->error, "%s", r->error ? r->error : "");
}

/* An engine over the real local budget (rate per s, concurrency), no
 * spread, seed 42; the test adjusts x->o before the first call. */
static void eng_init(eng *x, double rate, unsigned conc) {
  memset(x, 0, sizeof *x);
  polite_budget_config c = {rate, 1, conc};
  assert_int_equal(polite_budget_local_new(&c, &x->budget), 0);
  polite_batch_options_init(&x->o);
  x->o.budget = x->budget;
  x->o.seed = 42;
  x->o.spread_ms = 0;
  x->o.heartbeat_ms = 0;
  x->o.on_result = on_result;
  x->o.ud = x;
  x->now = T0;
}

static void eng_open(eng *x) {
  polite_engine_io io = {io_start, io_abort, x};
  char err[200];
  x->e = polite_engine_new(&x->o, &io, err, sizeof err);
  assert_non_null(x->e);
}

static void eng_free(eng *x) {
  polite_engine_free(x->e);
  polite_budget_close(x->budget);
}

/* Submits a request (method, url, optional "Name: value" header). */
static polite_request *submit(eng *x, const char *method, const char *url,
                              const char *header) {
  if (x->e == NULL)
    eng_open(x);
  polite_request *r = polite_request_new();
  assert_non_null(r);
  char id[16];
  snprintf(id, sizeof id, "q%u", x->nreq++);
  r->id = strdup(id);
  r->url = strdup(url);
  r->method = method ? strdup(method) : NULL;
  if (header) {
    const char *c = strchr(header, ':');
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(c - header), header);
    assert_int_equal(polite_request_add_header(r, name, c + 2), 0);
  }
  polite_engine_now n = now_of(x);
  assert_int_equal(polite_engine_submit(x->e, r, &n), 0);
  return r;
}

/* One step at the current time; returns its code and the wake time. */
static int step(eng *x, int64_t *wake) {
  int64_t w = 0;
  polite_engine_now n = now_of(x);
  int rc = polite_engine_step(x->e, &n, &w);
  if (rc == 0)
    assert_true(w > x->now);
  if (wake)
    *wake = w;
  return rc;
}

static polite_engine_verdict head(eng *x, unsigned i, int status,
                                  const char *name, const char *value) {
  polite_header_field f = {name, name ? strlen(name) : 0, value,
                           value ? strlen(value) : 0};
  polite_engine_now n = now_of(x);
  return polite_engine_head(x->e, x->st[i].a, status, &f, name ? 1 : 0, &n);
}

static polite_engine_verdict body(eng *x, unsigned i, const char *b) {
  polite_engine_now n = now_of(x);
  return polite_engine_body(x->e, x->st[i].a, b, strlen(b), 0, &n);
}

static void end(eng *x, unsigned i, const char *error) {
  polite_engine_now n = now_of(x);
  polite_engine_end(x->e, x->st[i].a, error, 0, &n);
}

static const ended *result(const eng *x, const char *id) {
  for (unsigned i = 0; i < x->n_res; i++)
    if (strcmp(x->res[i].id, id) == 0)
      return &x->res[i];
  return NULL;
}

/* ---- the verdicts -------------------------------------------------------- */

/* A 200 is relayed at its head: the decision is final there, the
 * concurrency slot stays held while the body streams (the next request
 * does not start), and the result comes at the end, relayed. */
static void relay_holds_the_slot_until_the_end(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 1);
  submit(&x, NULL, "http://api.test/a", NULL);
  submit(&x, NULL, "http://api.test/b", NULL);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 1);
  x.now += 5 * MS;
  assert_int_equal(head(&x, 0, 200, "Content-Type", "text/event-stream"),
                   POLITE_ENGINE_RELAY);
  x.now += 5 * SEC; /* a long stream */
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 1);
  assert_int_equal(x.n_res, 0);
  end(&x, 0, NULL);
  const ended *r = result(&x, "q0");
  assert_non_null(r);
  assert_int_equal(r->outcome, POLITE_OUT_OK);
  assert_int_equal(r->relayed, 1);
  assert_int_equal(r->status, 200);
  assert_int_equal(r->retry_after_ms, -1);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 2);
  eng_free(&x);
}

/* A 429 needs its body before the decision; with Retry-After: 1 it is
 * dropped and the request sent again, not before the server's second. */
static void throttled_answer_is_read_then_retried(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 0);
  submit(&x, NULL, "http://api.test/a", NULL);
  assert_int_equal(step(&x, NULL), 0);
  x.now += 10 * MS;
  assert_int_equal(head(&x, 0, 429, "Retry-After", "1"),
                   POLITE_ENGINE_READ_BODY);
  assert_int_equal(body(&x, 0, "{\"error\":\"rate_limited\"}"),
                   POLITE_ENGINE_DROP);
  /* Stepped at every wake-up it asks for, the engine starts nothing
   * before the server's second. */
  int64_t wake;
  while (x.n_st == 1) {
    assert_int_equal(step(&x, &wake), 0);
    if (x.n_st == 1)
      x.now = wake;
  }
  assert_int_equal(x.n_st, 2);
  assert_int_equal(x.st[1].attempt, 2);
  assert_true(x.st[1].at >= T0 + 10 * MS + 1 * SEC);
  assert_int_equal(head(&x, 1, 200, NULL, NULL), POLITE_ENGINE_RELAY);
  end(&x, 1, NULL);
  assert_int_equal(result(&x, "q0")->attempts, 2);
  assert_int_equal(polite_engine_stats(x.e)->n429, 1);
  eng_free(&x);
}

/* A 5xx other than 503 is decided at its head (no body needed): a retry
 * drops it, the last attempt's is relayed as the final answer. */
static void server_error_is_decided_at_the_head(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 0);
  x.o.max_attempts = 2;
  x.o.backoff.base_ms = 1;
  submit(&x, NULL, "http://api.test/a", NULL);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(head(&x, 0, 500, NULL, NULL), POLITE_ENGINE_DROP);
  x.now += 2 * MS;
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 2);
  assert_int_equal(head(&x, 1, 500, NULL, NULL), POLITE_ENGINE_RELAY);
  end(&x, 1, NULL);
  const ended *r = result(&x, "q0");
  assert_int_equal(r->outcome, POLITE_OUT_RETRIES_EXHAUSTED);
  assert_int_equal(r->relayed, 1);
  assert_int_equal(r->status, 500);
  eng_free(&x);
}

/* With quota_per_account, a 429 saying the quota is spent is relayed as
 * the final answer and stops its account: the next client is answered at
 * once, never sent, with the documented 60 s. */
static void spent_quota_is_relayed_and_stops_the_account(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 0);
  x.o.quota_per_account = 1;
  submit(&x, "POST", "http://api.test/v1/chat", NULL);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(head(&x, 0, 429, NULL, NULL), POLITE_ENGINE_READ_BODY);
  assert_int_equal(body(&x, 0, "{\"error\":{\"code\":\"insufficient_quota\"}}"),
                   POLITE_ENGINE_RELAY);
  end(&x, 0, NULL);
  assert_int_equal(result(&x, "q0")->outcome, POLITE_OUT_QUOTA_EXHAUSTED);
  assert_int_equal(result(&x, "q0")->relayed, 1);
  x.now += 1 * SEC;
  submit(&x, NULL, "http://api.test/v1/models", NULL);
  const ended *r = result(&x, "q1");
  assert_non_null(r); /* before the submit returned */
  assert_int_equal(r->outcome, POLITE_OUT_QUOTA_EXHAUSTED);
  assert_int_equal(r->relayed, 0);
  assert_int_equal(r->retry_after_ms, 59000);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 1);
  eng_free(&x);
}

/* An attempt that fails before any answer is retried when the rules allow
 * (a GET), and ends network_error (not relayed) when they do not. A write
 * whose 429 body broke off cannot be relayed: network_error, status 429. */
static void failed_attempts(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 0);
  x.o.backoff.base_ms = 1;
  submit(&x, NULL, "http://api.test/a", NULL);
  submit(&x, "POST", "http://api.test/b", NULL);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 2);
  end(&x, 0, "connection refused");
  x.now += 2 * MS;
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 3);
  assert_string_equal(x.st[2].id, "q0");
  assert_int_equal(head(&x, 1, 429, "Retry-After", "1"),
                   POLITE_ENGINE_READ_BODY);
  end(&x, 1, "connection reset");
  const ended *r = result(&x, "q1");
  assert_int_equal(r->outcome, POLITE_OUT_NETWORK_ERROR);
  assert_int_equal(r->status, 429);
  assert_int_equal(r->relayed, 0);
  assert_non_null(strstr(r->error, "connection reset"));
  /* A relay that breaks off ends network_error, relayed. */
  assert_int_equal(head(&x, 2, 200, NULL, NULL), POLITE_ENGINE_RELAY);
  end(&x, 2, "client went away");
  r = result(&x, "q0");
  assert_int_equal(r->outcome, POLITE_OUT_NETWORK_ERROR);
  assert_int_equal(r->relayed, 1);
  eng_free(&x);
}

/* --idempotency-key auto: a write without a key gets one made by the
 * engine, the same on every attempt; a read, and a write with its own key,
 * get none to add. */
static void engine_made_keys(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 0);
  x.o.idempotency_auto = 1;
  x.o.backoff.base_ms = 1;
  submit(&x, "POST", "http://api.test/a", NULL);
  submit(&x, NULL, "http://api.test/b", NULL);
  submit(&x, "POST", "http://api.test/c", "Idempotency-Key: mine");
  /* A key the caller found in another header (PayPal-Request-Id) and
   * handed over: the request is keyed, and nothing is to be added. */
  polite_request *pp = polite_request_new();
  pp->id = strdup("pp");
  pp->url = strdup("http://api.test/d");
  pp->method = strdup("POST");
  pp->idempotency_key = strdup("pp-1");
  assert_int_equal(polite_request_add_header(pp, "PayPal-Request-Id", "pp-1"),
                   0);
  polite_engine_now n = now_of(&x);
  assert_int_equal(polite_engine_submit(x.e, pp, &n), 0);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 4);
  assert_int_equal(strlen(x.st[0].key), 36);
  assert_string_equal(x.st[1].key, "");
  assert_string_equal(x.st[2].key, "");
  assert_string_equal(x.st[3].key, "");
  assert_int_equal(head(&x, 0, 503, NULL, NULL), POLITE_ENGINE_READ_BODY);
  assert_int_equal(body(&x, 0, "busy"), POLITE_ENGINE_DROP);
  x.now += 2 * SEC;
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(x.n_st, 5);
  assert_string_equal(x.st[4].id, "q0");
  assert_string_equal(x.st[4].key, x.st[0].key);
  eng_free(&x);
}

/* ---- the client's side --------------------------------------------------- */

/* A client that gives up while its attempt is in flight: the transport is
 * told to drop it (abort), the request ends cancelled at once. Freeing the
 * engine drops the attempts still in flight the same way. */
static void withdraw_and_free(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 0);
  polite_request *r0 = submit(&x, NULL, "http://api.test/a", NULL);
  submit(&x, NULL, "http://api.test/b", NULL);
  assert_int_equal(step(&x, NULL), 0);
  polite_engine_now n = now_of(&x);
  assert_int_equal(polite_engine_withdraw(x.e, r0, NULL, &n), 0);
  assert_int_equal(x.aborts, 1);
  assert_int_equal(x.st[0].aborted, 1);
  assert_int_equal(result(&x, "q0")->outcome, POLITE_OUT_CANCELLED);
  assert_int_equal(polite_engine_stats(x.e)->in_flight, 1);
  polite_engine_free(x.e);
  assert_int_equal(x.aborts, 2);
  polite_budget_close(x.budget);
}

/* A drain takes no new client, and the run ends when the last relay does;
 * polite_engine_step keeps saying so. */
static void drain_ends_the_run(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 0, 0);
  submit(&x, NULL, "http://api.test/a", NULL);
  assert_int_equal(step(&x, NULL), 0);
  assert_int_equal(head(&x, 0, 200, NULL, NULL), POLITE_ENGINE_RELAY);
  polite_engine_now n = now_of(&x);
  polite_engine_drain(x.e, 1000, &n);
  polite_request *late = polite_request_new();
  assert_int_equal(polite_engine_submit(x.e, late, &n), POLITE_ECANCELED);
  polite_request_free(late);
  assert_int_equal(step(&x, NULL), 0);
  end(&x, 0, NULL);
  assert_int_equal(step(&x, NULL), 1);
  assert_int_equal(step(&x, NULL), 1);
  eng_free(&x);
}

/* The accounts with clients, for the metrics: per host with scope_host,
 * how many wait and are in flight, the pause known, and the rate. */
static void accounts_are_listed(void **state) {
  (void)state;
  eng x;
  eng_init(&x, 2, 0);
  x.o.scope_host = 1;
  for (int i = 0; i < 3; i++)
    submit(&x, NULL, "http://a.test/x", NULL);
  submit(&x, NULL, "http://B.test:8080/y", NULL);
  assert_int_equal(step(&x, NULL), 0);
  polite_engine_account acc[4];
  polite_engine_now n = now_of(&x);
  assert_int_equal(polite_engine_accounts(x.e, acc, 4, &n), 2);
  assert_int_equal(polite_engine_accounts(x.e, acc, 1, &n), 2);
  assert_int_equal(polite_engine_accounts(x.e, acc, 4, &n), 2);
  unsigned seen = 0;
  for (int i = 0; i < 2; i++) {
    if (strcmp(acc[i].key, "a.test") == 0) {
      assert_int_equal(acc[i].in_flight, 1);
      assert_int_equal(acc[i].waiting, 2);
      seen |= 1;
    } else {
      assert_string_equal(acc[i].key, "b.test:8080");
      assert_int_equal(acc[i].in_flight, 1);
      assert_int_equal(acc[i].waiting, 0);
      seen |= 2;
    }
    assert_true(acc[i].rate_per_s > 1.99 && acc[i].rate_per_s < 2.01);
  }
  assert_int_equal(seen, 3);
  eng_free(&x);
}

/* The batch engine still needs a source; the engine does not. */
static void sources(void **state) {
  (void)state;
  polite_batch_options o;
  polite_batch_options_init(&o);
  o.on_result = on_result;
  char err[200];
  assert_null(polite_batch_new(&o, err, sizeof err));
  assert_non_null(strstr(err, "next"));
  polite_engine_io io = {io_start, NULL, NULL};
  polite_engine *e = polite_engine_new(&o, &io, err, sizeof err);
  assert_non_null(e);
  assert_int_equal(polite_engine_body_max(e), POLITE_ENGINE_BODY_MAX);
  polite_engine_free(e);
  polite_engine_io none = {NULL, NULL, NULL};
  assert_null(polite_engine_new(&o, &none, err, sizeof err));
  assert_non_null(strstr(err, "io.start"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(relay_holds_the_slot_until_the_end),
      cmocka_unit_test(throttled_answer_is_read_then_retried),
      cmocka_unit_test(server_error_is_decided_at_the_head),
      cmocka_unit_test(spent_quota_is_relayed_and_stops_the_account),
      cmocka_unit_test(failed_attempts),
      cmocka_unit_test(engine_made_keys),
      cmocka_unit_test(withdraw_and_free),
      cmocka_unit_test(drain_ends_the_run),
      cmocka_unit_test(accounts_are_listed),
      cmocka_unit_test(sources),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
