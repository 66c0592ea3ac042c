/* polite engine: the scheduler behind a public face for a transport of the
 * caller's own (polite/engine.h). A thin adapter, like lib/batch.c is for
 * libcurl: it keeps each attempt's state between the answer's head, its
 * body and its end, and hands every decision to the scheduler. */
#include <polite/engine.h>

#include "resp_head.h"
#include "sched_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where an attempt is. */
enum { SENT, READING, RELAYING };

struct polite_engine_attempt {
  polite_engine *e;
  polite__job *j;
  int state;
  void *priv;        /* the transport's */
  polite__head head; /* the answer's, from polite_engine_head on */
};

struct polite_engine {
  polite__sched *s;
  polite_engine_io io;
  size_t body_max;
  int begun, ended;
};

static polite__now now_of(const polite_engine_now *n) {
  polite__now t = {n->mono_us, n->wall_ms};
  return t;
}

/* The engine's clock starts with the first call that passes a `now`. */
static void begin_once(polite_engine *e, const polite__now *now) {
  if (e->begun)
    return;
  e->begun = 1;
  polite__sched_begin(e->s, now);
}

static void attempt_free(polite_engine_attempt *a) {
  polite__head_free(&a->head);
  free(a);
}

/* polite__sched_io.start: a new attempt for j, started by the caller's
 * transport. */
static int io_start(void *ud, polite__job *j, char *err, size_t errlen) {
  polite_engine *e = ud;
  polite_engine_attempt *a = calloc(1, sizeof *a);
  if (a == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  a->e = e;
  a->j = j;
  polite_engine_send send = {j->req, j->method, j->attempts, j->timeout_ms,
                             j->idem_sent == j->idem ? j->idem : NULL};
  j->io = a;
  if (e->io.start(e->io.ud, a, &send, err, errlen) != 0) {
    j->io = NULL;
    attempt_free(a);
    return -1;
  }
  return 0;
}

/* polite__sched_io.abort: the scheduler drops j's attempt. */
static void io_abort(void *ud, polite__job *j) {
  polite_engine *e = ud;
  polite_engine_attempt *a = j->io;
  j->io = NULL;
  if (a == NULL)
    return;
  if (e->io.abort)
    e->io.abort(e->io.ud, a);
  attempt_free(a);
}

polite_engine *polite_engine_new(const polite_batch_options *o,
                                 const polite_engine_io *io, char *err,
                                 size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (io == NULL || io->start == NULL) {
    if (err)
      snprintf(err, errlen, "the engine needs a transport (io.start)");
    return NULL;
  }
  polite_engine *e = calloc(1, sizeof *e);
  if (e == NULL) {
    if (err)
      snprintf(err, errlen, "out of memory");
    return NULL;
  }
  e->io = *io;
  polite__sched_io sio = {io_start, io_abort, e};
  if ((e->s = polite__sched_new(o, &sio, err, errlen)) == NULL) {
    free(e);
    return NULL;
  }
  e->body_max = o->max_body > 0 && o->max_body < POLITE_ENGINE_BODY_MAX
                    ? o->max_body
                    : POLITE_ENGINE_BODY_MAX;
  return e;
}

void polite_engine_free(polite_engine *e) {
  if (e == NULL)
    return;
  polite__sched_free(e->s);
  free(e);
}

int polite_engine_submit(polite_engine *e, polite_request *r,
                         const polite_engine_now *now) {
  polite__now t = now_of(now);
  begin_once(e, &t);
  return polite__sched_submit(e->s, r, &t);
}

int polite_engine_step(polite_engine *e, const polite_engine_now *now,
                       int64_t *wake_us) {
  polite__now t = now_of(now);
  begin_once(e, &t);
  if (e->ended)
    return 1;
  int rc = polite__sched_step(e->s, &t, wake_us);
  if (rc == 1) {
    e->ended = 1;
    polite__sched_end(e->s, &t);
  }
  return rc;
}

/* Hands a's answer r to the scheduler. relay: the answer can still be
 * relayed. Returns the verdict and frees a unless it stays to relay. */
static polite_engine_verdict answer(polite_engine_attempt *a,
                                    const polite__response *r, int relay,
                                    const polite__now *t) {
  polite__job *j = a->j;
  /* j may end (and be freed) in the call: it must not point at a then. */
  j->io = NULL;
  if (polite__sched_answer(a->e->s, j, r, relay, t)) {
    j->io = a;
    a->state = RELAYING;
    return POLITE_ENGINE_RELAY;
  }
  attempt_free(a);
  return POLITE_ENGINE_DROP;
}

/* The statuses whose decision reads the body: a quota spent (429, 403)
 * and the diagnosis of who throttled (429, 503). */
static int body_decides(int status) {
  return status == 429 || status == 503 || status == 403;
}

polite_engine_verdict polite_engine_head(polite_engine *e,
                                         polite_engine_attempt *a, int status,
                                         const polite_header_field *fields,
                                         size_t n,
                                         const polite_engine_now *now) {
  polite__now t = now_of(now);
  begin_once(e, &t);
  polite__head_begin(&a->head, status, t.wall_ms);
  for (size_t i = 0; i < n; i++)
    polite__head_field(&a->head, fields[i].name, fields[i].name_len,
                       fields[i].value, fields[i].value_len);
  if (body_decides(status)) {
    a->state = READING;
    return POLITE_ENGINE_READ_BODY;
  }
  polite__response r;
  memset(&r, 0, sizeof r);
  polite__head_response(&a->head, &r);
  return answer(a, &r, 1, &t);
}

polite_engine_verdict polite_engine_body(polite_engine *e,
                                         polite_engine_attempt *a,
                                         const char *body, size_t len, int more,
                                         const polite_engine_now *now) {
  polite__now t = now_of(now);
  begin_once(e, &t);
  polite__response r;
  memset(&r, 0, sizeof r);
  polite__head_response(&a->head, &r);
  r.body = body;
  r.body_len = len < e->body_max ? len : e->body_max;
  r.body_truncated = more || len > e->body_max;
  return answer(a, &r, 1, &t);
}

void polite_engine_end(polite_engine *e, polite_engine_attempt *a,
                       const char *error, int timed_out,
                       const polite_engine_now *now) {
  polite__now t = now_of(now);
  begin_once(e, &t);
  if (a->state == RELAYING) {
    polite__job *j = a->j;
    j->io = NULL;
    polite__sched_relayed(e->s, j, error, &t);
    attempt_free(a);
    return;
  }
  polite__response r;
  memset(&r, 0, sizeof r);
  if (a->state == READING)
    polite__head_response(&a->head, &r); /* the body never came */
  r.error = error ? error : "the attempt ended without an answer";
  r.timed_out = timed_out;
  (void)answer(a, &r, 0, &t);
}

int polite_engine_withdraw(polite_engine *e, const polite_request *r,
                           const char *why, const polite_engine_now *now) {
  polite__now t = now_of(now);
  begin_once(e, &t);
  return polite__sched_withdraw(e->s, r, why ? why : "the client gave up", &t);
}

void polite_engine_drain(polite_engine *e, int64_t timeout_ms,
                         const polite_engine_now *now) {
  polite__now t = now_of(now);
  begin_once(e, &t);
  polite__sched_close_input(e->s);
  int64_t ms = timeout_ms > 0 ? timeout_ms : 0;
  polite__sched_end_by(e->s, t.mono_us + ms * 1000, &t);
}

void polite_engine_cancel(polite_engine *e) {
  polite__sched_cancel(e->s);
}

void polite_engine_attempt_set_private(polite_engine_attempt *a, void *p) {
  a->priv = p;
}

void *polite_engine_attempt_private(const polite_engine_attempt *a) {
  return a->priv;
}

const polite_request *
polite_engine_attempt_request(const polite_engine_attempt *a) {
  return a->j->req;
}

size_t polite_engine_body_max(const polite_engine *e) {
  return e->body_max;
}

/* What out says of account a at now. */
static void describe(const polite__sched *s, const polite__acct *a,
                     polite_engine_account *out, int64_t now) {
  memset(out, 0, sizeof *out);
  out->key = a->key;
  out->in_flight = a->inflight;
  out->waiting = a->jobs - a->inflight;
  if (a->pause_until_us > now)
    out->pause_left_ms = (a->pause_until_us - now + 999) / 1000;
  const refusal *rf = polite__sched_refused(s, a->key, now);
  if (rf)
    out->refused_left_ms = (rf->until_us - now + 999) / 1000;
  out->rate_per_s = polite__sched_acct_rate(s, a);
}

size_t polite_engine_accounts(const polite_engine *e,
                              polite_engine_account *out, size_t max,
                              const polite_engine_now *now) {
  const polite__acct_table *t = &e->s->accts;
  size_t n = 0;
  if (t->def && n++ < max)
    describe(e->s, t->def, &out[n - 1], now->mono_us);
  for (size_t i = 0; i < t->nb; i++)
    for (const polite__acct *a = t->b[i]; a; a = a->next)
      if (n++ < max)
        describe(e->s, a, &out[n - 1], now->mono_us);
  return n;
}

const polite_batch_stats *polite_engine_stats(const polite_engine *e) {
  return polite__sched_stats(e->s);
}

const char *polite_engine_errstr(const polite_engine *e) {
  return polite__sched_errstr(e->s);
}
