/* libFuzzer target: the engine (polite/engine.h) driven by any sequence of
 * events a gateway's loop can produce: clients submitting and giving up,
 * answers of any status and wait arriving in pieces, attempts failing,
 * time passing, drain and cancel, under options drawn from the input. The
 * invariants: every request submitted ends exactly once; no attempt of an
 * account starts before a pause the engine was told of ends; the engine
 * never asks to be called back in the past, nor again and again at the
 * same time; everything is freed (ASan). */
#include <polite/engine.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 256 /* requests */
#define MAXA 256 /* attempts alive at once */
#define SEC INT64_C(1000000)

enum { SENT, READING, RELAYING };

typedef struct {
  polite_engine_attempt *a;
  int state;
  unsigned req;
  int pauses; /* its head was a 429/503 asking for 3 s: the pause comes
                 with its body or its end */
} att;

typedef struct {
  polite_engine *e;
  polite_budget *budget;
  polite_engine_now now;
  polite_request *req[MAXR]; /* NULL once ended */
  unsigned ended[MAXR];
  unsigned n_req;
  att at[MAXA];
  unsigned n_at;
  int64_t paused_until; /* latest pause the fuzzer's 429s asked for */
  int scope_host;
} fz;

static unsigned index_of(const fz *x, const polite_request *r) {
  for (unsigned i = 0; i < x->n_req; i++)
    if (x->req[i] == r)
      return i;
  abort(); /* a request the fuzzer never submitted */
}

static int io_start(void *ud, polite_engine_attempt *a,
                    const polite_engine_send *s, char *err, size_t errlen) {
  fz *x = ud;
  (void)err, (void)errlen;
  if (x->n_at == MAXA)
    return -1; /* the transport is full: the request ends network_error */
  /* With one account, nothing starts before a pause it was told of. */
  if (!x->scope_host && x->now.mono_us < x->paused_until)
    abort();
  x->at[x->n_at++] = (att){a, SENT, index_of(x, s->req), 0};
  return 0;
}

static void drop_attempt(fz *x, const polite_engine_attempt *a) {
  for (unsigned i = 0; i < x->n_at; i++)
    if (x->at[i].a == a) {
      x->at[i] = x->at[--x->n_at];
      return;
    }
  abort(); /* an attempt the transport does not have */
}

static void io_abort(void *ud, polite_engine_attempt *a) {
  drop_attempt(ud, a);
}

static void on_result(void *ud, const polite_result *r) {
  fz *x = ud;
  unsigned i = index_of(x, r->req);
  if (x->ended[i]++)
    abort(); /* a second result */
  if (r->retry_after_ms < -1)
    abort();
  x->req[i] = NULL;
}

static const char *const methods[] = {"GET", "POST", "PUT", "PATCH"};
static const int statuses[] = {200, 429, 503, 500, 403, 302, 404, 204};
static const char *const waits[] = {
    NULL, "0", "1", "3", "99999999", "Sun, 06 Nov 1994 08:49:37 GMT"};

static void submit(fz *x, uint8_t b) {
  if (x->n_req == MAXR)
    return;
  polite_request *r = polite_request_new();
  char url[64];
  snprintf(url, sizeof url, "http://h%u.test/x%u", b % 3u, b);
  r->url = strdup(url);
  r->id = strdup("f");
  r->method = strdup(methods[(b >> 2) % 4]);
  if (b & 0x40)
    polite_request_add_header(r, "Idempotency-Key", "k");
  if (b & 0x80)
    r->max_attempts = 1;
  x->req[x->n_req] = r;
  x->ended[x->n_req] = 0;
  x->n_req++;
  if (polite_engine_submit(x->e, r, &x->now) != 0) {
    x->n_req--; /* refused: still ours */
    x->req[x->n_req] = NULL;
    polite_request_free(r);
  }
}

/* The answer of t decided now: its pause, if it asked for one, holds. */
static void decided(fz *x, const att *t) {
  if (t->pauses && x->now.mono_us + 3 * SEC > x->paused_until)
    x->paused_until = x->now.mono_us + 3 * SEC;
}

static void answer(fz *x, uint8_t b, uint8_t c) {
  if (x->n_at == 0)
    return;
  att *t = &x->at[b % x->n_at];
  polite_engine_attempt *a = t->a;
  polite_engine_verdict v;
  if (t->state == SENT) {
    int status = statuses[c % 8];
    const char *w = waits[(c >> 3) % 6];
    polite_header_field f = {"Retry-After", 11, w, w ? strlen(w) : 0};
    t->pauses = (status == 429 || status == 503) && w && strcmp(w, "3") == 0;
    v = polite_engine_head(x->e, a, status, &f, w ? 1 : 0, &x->now);
  } else if (t->state == READING) {
    const char *body =
        c & 1 ? "{\"error\":{\"code\":\"insufficient_quota\"}}" : "slow down";
    decided(x, t);
    v = polite_engine_body(x->e, a, body, strlen(body), (c >> 1) & 1, &x->now);
  } else {
    drop_attempt(x, a);
    polite_engine_end(x->e, a, c & 1 ? "broke off" : NULL, 0, &x->now);
    return;
  }
  if (v == POLITE_ENGINE_DROP)
    drop_attempt(x, a);
  else
    t->state = v == POLITE_ENGINE_RELAY ? RELAYING : READING;
}

static void fail(fz *x, uint8_t b) {
  if (x->n_at == 0)
    return;
  const att *t = &x->at[b % x->n_at];
  polite_engine_attempt *a = t->a;
  if (t->state == READING)
    decided(x, t);
  drop_attempt(x, a);
  polite_engine_end(x->e, a, "connection reset", b & 1, &x->now);
}

static void withdraw(fz *x, uint8_t b) {
  for (unsigned k = 0; k < x->n_req; k++) {
    unsigned i = (b + k) % x->n_req;
    if (x->req[i] == NULL)
      continue;
    if (polite_engine_withdraw(x->e, x->req[i], "gone", &x->now) != 0)
      abort(); /* the engine owns every request not ended */
    return;
  }
}

/* One step. A wake-up is never in the past; one at now (an admission the
 * budget will grant at this very time) must make progress: three in a row
 * at the same time would be a busy loop. */
static void step(fz *x) {
  for (int k = 0; k < 3; k++) {
    int64_t wake = 0;
    int rc = polite_engine_step(x->e, &x->now, &wake);
    if (rc != 0 || wake > x->now.mono_us)
      return;
    if (wake < x->now.mono_us)
      abort();
  }
  abort();
}

static void advance(fz *x, int64_t us) {
  x->now.mono_us += us;
  x->now.wall_ms += us / 1000;
}

static int setup(fz *x, const uint8_t *d) {
  polite_budget_config c = {d[0] & 1 ? 5 : 0, 1, d[0] & 2 ? 2 : 0};
  if (polite_budget_local_new(&c, &x->budget) != 0)
    return -1;
  polite_batch_options o;
  polite_batch_options_init(&o);
  o.budget = x->budget;
  o.seed = 1 + d[1];
  o.heartbeat_ms = 0;
  o.scope_host = x->scope_host = (d[0] >> 2) & 1;
  o.queue_max = 1 + (d[0] >> 3) % 4;
  o.max_wait_ms = d[0] & 0x20 ? 2000 : 0;
  o.deadline_ms = d[0] & 0x40 ? 3000 : -1;
  o.quota_per_account = d[0] >> 7;
  o.retry_writes = d[1] & 1;
  o.idempotency_auto = (d[1] >> 1) & 1;
  o.max_attempts = 1 + (d[1] >> 2) % 4;
  o.rate_mode = (d[1] >> 4) & 1 ? POLITE_RATE_AUTO : POLITE_RATE_FIXED;
  o.backoff.base_ms = 10;
  o.cancel_grace_ms = 100;
  o.on_result = on_result;
  o.ud = x;
  polite_engine_io io = {io_start, io_abort, x};
  char err[200];
  x->e = polite_engine_new(&o, &io, err, sizeof err);
  return x->e ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  fz *x = calloc(1, sizeof *x);
  x->now = (polite_engine_now){1000 * SEC, INT64_C(1795996800000)};
  if (setup(x, data) != 0)
    abort();
  for (size_t i = 2; i + 1 < size; i += 2) {
    uint8_t op = data[i], arg = data[i + 1];
    switch (op % 10) {
    case 0:
    case 1: submit(x, arg); break;
    case 2: step(x); break;
    case 3: advance(x, (int64_t)arg * 20 * 1000); break;
    case 4:
    case 5: answer(x, arg, op); break;
    case 6: fail(x, arg); break;
    case 7: withdraw(x, arg); break;
    case 8: polite_engine_drain(x->e, (int64_t)arg * 10, &x->now); break;
    default: polite_engine_cancel(x->e); break;
    }
  }
  /* The end: cancel, let the grace pass, end what is relayed. */
  polite_engine_cancel(x->e);
  for (int k = 0; k < 100; k++) {
    while (x->n_at > 0 && x->at[0].state == RELAYING) {
      polite_engine_attempt *a = x->at[0].a;
      drop_attempt(x, a);
      polite_engine_end(x->e, a, NULL, 0, &x->now);
    }
    step(x);
    advance(x, 50 * 1000);
  }
  /* Cancelled past its grace, every request submitted ended exactly once
   * and no attempt is left. */
  for (unsigned i = 0; i < x->n_req; i++)
    if (x->ended[i] != 1)
      abort();
  if (x->n_at != 0)
    abort();
  polite_engine_free(x->e);
  polite_budget_close(x->budget);
  free(x);
  return 0;
}
