/* Unit tests of the proxy's decision for a watched request (proxy/px_decide.c)
 * on a fake clock: the verdict of a pure function of the request, the state
 * and one `now` (px_decide.h), with no server, socket or libevent. One table
 * of cases, each a configuration and the requests made in turn (client, URL,
 * time) with the verdict each must get: the judge (an early retry caught, a
 * retry on time let through, --penalty, a throttle on a key told to wait),
 * concurrency (a slot held and given back), the rate limit (its headers on a
 * request that goes on), tokens, the quota and injected failures, each with
 * the status, Retry-After, kind and body it must have. Time moves by passing
 * another `now`. */
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

/* What a step does: decide a request, give back the slot a request kept,
 * or count an answer's tokens. 0 ends a case's steps. */
enum { OP_ASK = 1, OP_RELEASE, OP_CHARGE };

/* V(x): the verdict's field must be x. A number left out of a row (0) is
 * not checked, as a string left NULL is not. */
#define V(x) ((x) + 1000000)

/* One step of a case and the verdict it must get. */
typedef struct {
  int op;          /* OP_* */
  const char *who; /* ASK: NULL is 10.0.0.1 (on 10.0.0.1:5000), else
                      ADDR (on ADDR:6000) */
  const char *url; /* ASK: the URL; CHARGE: the answer body (its usage) */
  int64_t t_ms;    /* the fake clock */
  int keep;        /* ASK: keep its slot for a later RELEASE step */
  px_kind kind;    /* ASK: always checked; PX_KIND_PASSED: it goes on */
  int status, body, retry_after_s, tell_flags;
  int ra_at_least; /* V(n): a Retry-After of n s or more */
  int slot;        /* V(1): it holds a concurrency slot; V(0): none */
  int has_lim, lim_admitted, lim_quota; /* --rate-limit's headers */
  int has_tok, charge_tokens;           /* the token limits' */
  const char *code, *note;
  const char *text; /* found in the answer's text */
} step;

typedef struct {
  const char *name;
  const char *opts[8]; /* name, value pairs (NULL-terminated) */
  step steps[8];
} decide_case;

/* A request of 10.0.0.1 (on 10.0.0.1:5000), or of ADDR (on ADDR:6000),
 * decided at T ms that must get a verdict of KIND and the fields after. */
#define ASK(URL, T, KIND, ...)                                                 \
  { .op = OP_ASK, .url = URL, .t_ms = T, .kind = KIND, __VA_ARGS__ }
#define ASK_AS(ADDR, URL, T, KIND, ...)                                        \
  {                                                                            \
    .op = OP_ASK, .who = ADDR, .url = URL, .t_ms = T, .kind = KIND,            \
    __VA_ARGS__                                                                \
  }

#define X "http://api.test/x"

static const decide_case cases[] = {
    {"an early retry on a fake clock",
     {"failure-rate", "100", "retry-after", "2"},
     {ASK(X, 0, PX_KIND_FAILURE, .status = V(429), .body = V(PX_BODY_ERROR),
          .code = "too_many_requests", .retry_after_s = V(2),
          .tell_flags = V(PX_TELL_THROTTLE)),
      /* 1 ms before the 2 s have passed: early, told the 1 s left
       * (rounded up, never 0), and the log line says by how much. */
      ASK(X, 1999, PX_KIND_EARLY, .code = "early_retry", .retry_after_s = V(1),
          .tell_flags = V(0), .note = "early_by=1ms"),
      /* On time: the judge lets it through (the failure rate answers
       * again). */
      ASK(X, 2000, PX_KIND_FAILURE),
      /* Another URL (the default scope is method + URL) was never told. */
      ASK("http://api.test/other", 2001, PX_KIND_FAILURE)}},
    {"--penalty restarts the wait",
     {"failure-rate", "100", "retry-after", "3", "penalty", "true"},
     {ASK(X, 0, PX_KIND_FAILURE, .retry_after_s = V(3)),
      /* Early by 1 s: told the whole wait again. */
      ASK(X, 2000, PX_KIND_EARLY, .retry_after_s = V(3),
          .tell_flags = V(PX_TELL_RESTART)),
      /* 3 s from 2 s: still early at 4.5 s. */
      ASK(X, 4500, PX_KIND_EARLY)}},
    /* Another client on a key that was told to wait is throttled (never
     * told, so not early), for the rest of the wait only. */
    {"a throttle binds the key",
     {"failure-rate", "100", "retry-after", "5"},
     {ASK(X, 0, PX_KIND_FAILURE),
      ASK_AS("10.0.0.2", X, 3000, PX_KIND_THROTTLED, .retry_after_s = V(2),
             .note = "throttled_for=2000ms")}},
    {"the rate limit on a fake clock",
     {"rate-limit", "10/s"},
     /* It goes on, carrying the limiter's state for its headers. */
     {ASK("http://api.test/a", 0, PX_KIND_PASSED, .has_lim = V(1),
          .lim_admitted = V(1), .lim_quota = V(10)),
      /* Refused: 100 ms to wait, rounded up. */
      ASK("http://api.test/b", 0, PX_KIND_RATE, .status = V(429),
          .retry_after_s = V(1), .has_lim = V(1), .lim_admitted = V(0)),
      /* One start per 100 ms, and a retry of /b after the second it was
       * told is on time. */
      ASK("http://api.test/c", 100, PX_KIND_PASSED),
      ASK("http://api.test/d", 150, PX_KIND_RATE),
      ASK("http://api.test/b", 1000, PX_KIND_PASSED)}},
    /* A slot is held by the verdict until it is given back. */
    {"concurrency holds a slot",
     {"concurrency-limit", "1"},
     {ASK(X, 0, PX_KIND_PASSED, .keep = 1, .slot = V(1)),
      ASK(X, 1, PX_KIND_CONCURRENCY, .slot = V(0), .ra_at_least = V(0)),
      {.op = OP_RELEASE},
      /* Given back: the next one goes on (past the Retry-After it was
       * told). */
      ASK(X, 60000, PX_KIND_PASSED, .slot = V(1))}},
    {"the quota has no Retry-After",
     {"quota", "2"},
     {ASK(X, 0, PX_KIND_PASSED), ASK(X, 1, PX_KIND_PASSED),
      ASK(X, 2, PX_KIND_QUOTA, .status = V(429), .body = V(PX_BODY_JSON),
          .text = "\"insufficient_quota\"", .retry_after_s = V(-1))}},
    /* Tokens are charged after the answer: the request that overshoots
     * goes on, the next is refused until the window ends. */
    {"tokens are charged after the answer",
     {"prompt-token-limit", "100"},
     {ASK("http://api.test/chat", 0, PX_KIND_PASSED, .charge_tokens = V(1),
          .has_tok = V(1)),
      {.op = OP_CHARGE,
       .url = "{\"usage\":{\"prompt_tokens\":150,\"completion_tokens\":5}}",
       .t_ms = 10},
      ASK("http://api.test/chat", 20000, PX_KIND_TOKENS, .charge_tokens = V(0),
          .text = "tokens per window", .ra_at_least = V(1))}},
};

/* Fails naming the case and the step when a checked field is not want. */
static void check_int(const decide_case *c, size_t i, const char *what,
                      int want, long long got) {
  if (want != 0 && got != (long long)want - V(0))
    fail_msg("%s, step %zu: %s %lld, not %d", c->name, i + 1, what, got,
             want - V(0));
}

static void check_str(const decide_case *c, size_t i, const char *what,
                      const char *want, const char *got, int substring) {
  if (want != NULL && (got == NULL || (substring ? strstr(got, want) == NULL
                                                 : strcmp(got, want) != 0)))
    fail_msg("%s, step %zu: %s '%s', not '%s'", c->name, i + 1, what,
             got ? got : "(null)", want);
}

/* The verdict v of step i against what the row says. */
static void check_verdict(const decide_case *c, size_t i,
                          const px_decision *v) {
  const step *s = &c->steps[i];
  px_kind kind = v->answer ? v->kind : PX_KIND_PASSED;
  if (kind != s->kind || v->answer != (s->kind != PX_KIND_PASSED))
    fail_msg("%s, step %zu: kind %d (answer %d), not %d", c->name, i + 1,
             (int)kind, v->answer, (int)s->kind);
  check_int(c, i, "status", s->status, v->status);
  check_int(c, i, "body", s->body, v->body);
  check_int(c, i, "Retry-After", s->retry_after_s, v->retry_after_s);
  check_int(c, i, "tell flags", s->tell_flags, v->tell_flags);
  if (s->ra_at_least != 0 && v->retry_after_s < s->ra_at_least - V(0))
    fail_msg("%s, step %zu: Retry-After %lld, under %d", c->name, i + 1,
             (long long)v->retry_after_s, s->ra_at_least - V(0));
  check_int(c, i, "slot", s->slot, v->conc_key != NULL);
  check_int(c, i, "has_lim", s->has_lim, v->has_lim);
  check_int(c, i, "lim.admitted", s->lim_admitted, v->lim.admitted);
  check_int(c, i, "lim.quota", s->lim_quota, v->lim.quota);
  check_int(c, i, "has_tok", s->has_tok, v->has_tok);
  check_int(c, i, "charge_tokens", s->charge_tokens, v->charge_tokens);
  check_str(c, i, "code", s->code, v->code, 0);
  check_str(c, i, "note", s->note, v->note, 0);
  check_str(c, i, "text", s->text, v->text, 1);
}

/* Every case from a fresh proxy, its steps in turn, each verdict checked. */
static void verdicts_as_the_table_says(void **state) {
  (void)state;
  size_t asked = 0;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const decide_case *c = &cases[k];
    world w;
    world_init(&w, c->opts);
    char *kept = NULL;
    for (size_t i = 0; i < 8 && c->steps[i].op != 0; i++) {
      const step *s = &c->steps[i];
      if (s->op == OP_RELEASE) {
        assert_non_null(kept);
        polite__px_release(w.st, kept);
        kept = NULL;
      } else if (s->op == OP_CHARGE) {
        polite__px_charge_tokens(&w.cfg, w.st, s->t_ms * 1000, s->url,
                                 strlen(s->url));
      } else {
        char conn[64];
        snprintf(conn, sizeof conn, "%s", s->who ? s->who : "10.0.0.1");
        snprintf(conn + strlen(conn), sizeof conn - strlen(conn), ":%s",
                 s->who ? "6000" : "5000");
        px_decision v;
        decide_as(&w, s->who ? s->who : "10.0.0.1", conn, s->url, s->t_ms, &v);
        check_verdict(c, i, &v);
        if (s->keep)
          kept = v.conc_key;
        else
          polite__px_release(w.st, v.conc_key);
        asked++;
      }
    }
    polite__px_release(w.st, kept);
    world_free(&w);
  }
  assert_int_equal(asked, 22);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(verdicts_as_the_table_says),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
