/* polite queue, a worker: the queue as a batch engine's request source. The
 * engine's callbacks never wait for Redis: they hand out entries the
 * queue's thread (lib/queue_cycle.c) took ahead, and leave results and
 * give-backs for it to send. */
#define _GNU_SOURCE
#include "queue_worker.h"

#include <polite/clock.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* How long finish waits for Redis when there is no outage bound. */
#define FINISH_WAIT_DEFAULT_US INT64_C(10000000)
#define FINISH_WAIT_STOPPED_US INT64_C(5000000)

/* ---- the request hash (mu held) ------------------------------------------ */

static size_t slot_of(const polite_queue_run *r, const polite_request *q) {
  uintptr_t p = (uintptr_t)q;
  return (size_t)((p >> 4) * UINT64_C(0x9E3779B97F4A7C15) >> 7) % r->hcap;
}

static void hash_put(polite_queue_run *r, qentry *e) {
  size_t s = slot_of(r, e->req);
  e->hnext = r->hash[s];
  r->hash[s] = e;
}

/* The entry of request q, taken out of the hash when `take`. */
static qentry *hash_get(polite_queue_run *r, const polite_request *q,
                        int take) {
  qentry **pp = &r->hash[slot_of(r, q)];
  while (*pp && (*pp)->req != q)
    pp = &(*pp)->hnext;
  qentry *e = *pp;
  if (e && take) {
    *pp = e->hnext;
    e->hnext = NULL;
    e->req = NULL;
  }
  return e;
}

void polite__queue_entry_free(polite_queue_run *r, qentry *e) {
  if (e->req)
    (void)hash_get(r, e->req, 1);
  if (e->prev)
    e->prev->next = e->next;
  else if (r->held == e)
    r->held = e->next;
  if (e->next)
    e->next->prev = e->prev;
  r->nheld--;
  free(e->sid);
  free(e->id);
  free(e->line);
  free(e->key);
  free(e->rline);
  free(e);
}

void polite__queue_outbox(polite_queue_run *r, qentry *e, int kind) {
  e->kind = kind;
  e->where = E_OUTBOX;
  e->fnext = NULL;
  if (r->out_tail)
    r->out_tail->fnext = e;
  else
    r->out_head = e;
  r->out_tail = e;
  pthread_cond_broadcast(&r->cv);
}

/* ---- the engine's callbacks ---------------------------------------------- */

/* The value of an Idempotency-Key header the request carries, or NULL. */
static int has_key_header(const polite_request *q) {
  static const char name[] = "Idempotency-Key:";
  for (size_t i = 0; i < q->nheaders; i++)
    if (strncasecmp(q->headers[i], name, sizeof name - 1) == 0)
      return 1;
  return 0;
}

/* The entry's request, parsed with this worker's -X, -H and -d, with the
 * entry's id and (a write, with idempotency keys on) the entry's key:
 * every worker sends the same key for the same logical request. NULL when
 * out of memory. */
static polite_request *make_request(polite_queue_run *r, const qentry *e) {
  polite_request *q = NULL;
  int rc = polite_request_parse_line(e->line, e->line_len, e->lineno,
                                     r->wo.defaults, &q);
  if (rc == 0 && (q = polite_request_new()) != NULL) {
    q->line = e->lineno;
    q->error = strdup("the entry's line holds no request");
  }
  if (q == NULL)
    return NULL;
  free(q->id);
  q->id = strdup(e->id);
  if (q->error == NULL && q->idempotency_key == NULL && r->idempotency_auto &&
      e->key[0] && !polite_method_idempotent(polite_request_method(q)) &&
      !has_key_header(q))
    q->idempotency_key = strdup(e->key);
  if (q->id == NULL) {
    polite_request_free(q);
    return NULL;
  }
  return q;
}

static int qw_next(void *ud, polite_request **out) {
  polite_queue_run *r = ud;
  pthread_mutex_lock(&r->mu);
  qentry *e = r->stop_taking ? NULL : r->in_head;
  if (e == NULL) {
    int rc = r->ended || r->stop_taking ? 0 : POLITE_EAGAIN;
    pthread_cond_broadcast(&r->cv); /* the thread may take more */
    pthread_mutex_unlock(&r->mu);
    return rc;
  }
  r->in_head = e->fnext;
  if (r->in_head == NULL)
    r->in_tail = NULL;
  e->fnext = NULL;
  e->where = E_ENGINE;
  pthread_mutex_unlock(&r->mu);
  polite_request *q = make_request(r, e);
  pthread_mutex_lock(&r->mu);
  if (q == NULL) {
    polite__queue_outbox(r, e, OUT_GIVEBACK);
    pthread_mutex_unlock(&r->mu);
    return POLITE_ENOMEM;
  }
  e->req = q;
  hash_put(r, e);
  pthread_mutex_unlock(&r->mu);
  *out = q;
  return 1;
}

/* An attempt starts only while its lease is surely this worker's: not
 * found lost by a renewal, and confirmed recently enough that no other
 * worker can have claimed it (the lease runs from the last confirmed take
 * or renewal; safe_us leaves a third of it). Otherwise it is vetoed and
 * its entry goes back to the queue (if it is still this worker's there). */
static int qw_attempt_start(void *ud, const polite_attempt_start *s) {
  polite_queue_run *r = ud;
  if (r->inner.on_attempt_start &&
      r->inner.on_attempt_start(r->inner.ud, s) != 0)
    return 1;
  int64_t now = polite_env_mono_us(r->inner.env);
  pthread_mutex_lock(&r->mu);
  qentry *e = hash_get(r, s->req, 0);
  int veto = e && (e->lost || now - e->confirmed_us > r->safe_us);
  if (e && veto)
    e->vetoed = 1;
  else if (e)
    e->started = 1;
  pthread_mutex_unlock(&r->mu);
  return veto;
}

/* Whether a result means "this worker stopped", not "this is the id's
 * result": the engine was cancelled (SIGTERM, a budget that failed), a
 * quota is spent (waiting will not help this worker; the queue keeps the
 * work) or --run-deadline passed. The entry then goes back to the queue
 * for another worker, and this one takes no more. */
static int is_stop(const polite_queue_run *r, const polite_result *res) {
  if (res->outcome == POLITE_OUT_CANCELLED ||
      res->outcome == POLITE_OUT_QUOTA_EXHAUSTED)
    return 1;
  if (res->outcome != POLITE_OUT_DEADLINE || r->inner.run_deadline_ms < 0 ||
      r->batch == NULL)
    return 0;
  const polite_batch_stats *st = polite_batch_stats_get(r->batch);
  return st->run_us >= r->inner.run_deadline_ms * 1000;
}

static void qw_result(void *ud, const polite_result *res) {
  polite_queue_run *r = ud;
  pthread_mutex_lock(&r->mu);
  qentry *e = hash_get(r, res->req, 1);
  /* A vetoed attempt (its lease was lost, or could not be renewed in
   * time) ends its request only: its entry goes back (if it is still this
   * worker's), and the worker goes on. */
  int vetoed = e && e->vetoed, stop = e && !vetoed && is_stop(r, res);
  if (stop)
    r->stop_taking = 1;
  pthread_mutex_unlock(&r->mu);
  if (e == NULL)
    return; /* not an entry of this queue: cannot happen */
  char *line = stop || vetoed ? NULL : r->wo.render(r->wo.ud, res);
  pthread_mutex_lock(&r->mu);
  if (line != NULL) {
    e->rline = line;
    e->rlen = strlen(line);
    e->outcome = polite_outcome_name(res->outcome);
  }
  /* Out of memory for the line: the entry goes back, to run again. */
  polite__queue_outbox(r, e, line ? OUT_RECORD : OUT_GIVEBACK);
  pthread_mutex_unlock(&r->mu);
}

/* The engine has one ud for all callbacks, so the others are wrapped. */
static void qw_attempt(void *ud, const polite_attempt *a) {
  polite_queue_run *r = ud;
  if (r->inner.on_attempt)
    r->inner.on_attempt(r->inner.ud, a);
}

static void qw_tick(void *ud, const polite_batch_stats *s) {
  polite_queue_run *r = ud;
  if (r->inner.on_tick)
    r->inner.on_tick(r->inner.ud, s);
}

static void qw_rate(void *ud, const polite_rate_change *c) {
  polite_queue_run *r = ud;
  if (r->inner.on_rate)
    r->inner.on_rate(r->inner.ud, c);
}

/* ---- attach, finish, free ------------------------------------------------ */

static int check_options(const polite_queue_worker_options *wo,
                         const polite_batch_options *bo, char *err,
                         size_t len) {
  const char *why = NULL;
  if (wo->render == NULL)
    why = "a worker needs a render function";
  else if (wo->lease_ms != 0 && wo->lease_ms < 1000)
    why = "the lease must be at least 1 s (it is renewed every third)";
  else if (wo->window > POLITE_QUEUE_WINDOW_MAX)
    why = "the window is larger than POLITE_QUEUE_WINDOW_MAX";
  else if (bo == NULL)
    why = "no batch options";
  if (why && err && len)
    snprintf(err, len, "%s", why);
  return why ? POLITE_EINVAL : 0;
}

int polite_queue_attach(polite_queue *q, polite_batch_options *bo,
                        const polite_queue_worker_options *wo,
                        polite_queue_run **out, char *err, size_t errlen) {
  *out = NULL;
  int rc = check_options(wo, bo, err, errlen);
  if (rc != 0 || q == NULL || q->attached)
    return rc ? rc : POLITE_EINVAL;
  polite_queue_run *r = calloc(1, sizeof *r);
  if (r == NULL)
    return POLITE_ENOMEM;
  r->q = q;
  r->wo = *wo;
  if (r->wo.lease_ms == 0)
    r->wo.lease_ms = POLITE_QUEUE_LEASE_DEFAULT_MS;
  if (r->wo.max_deliveries == 0)
    r->wo.max_deliveries = POLITE_QUEUE_MAX_DELIVERIES_DEFAULT;
  if (r->wo.window == 0)
    r->wo.window = 64;
  if (wo->worker)
    snprintf(r->worker, sizeof r->worker, "%s", wo->worker);
  else
    polite__participant_id(r->worker, sizeof r->worker, bo->env, 8);
  r->lease_us = r->wo.lease_ms * 1000;
  r->renew_us = r->lease_us / 3;
  r->safe_us = 2 * r->renew_us;
  r->hcap = 2 * (size_t)r->wo.window + 1;
  r->hash = calloc(r->hcap, sizeof(qentry *));
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, &ca);
  pthread_condattr_destroy(&ca);
  r->connected = polite__rconn_connected(q->c);
  r->down_since_us = -1;
  snprintf(r->cursor, sizeof r->cursor, "0-0");
  r->inner = *bo;
  r->idempotency_auto = bo->idempotency_auto;
  if (r->hash == NULL ||
      pthread_create(&r->th, NULL, polite__queue_thread, r) != 0) {
    polite_queue_run_free(r);
    return POLITE_ENOMEM;
  }
  r->th_started = 1;
  q->attached = 1;
  bo->next = qw_next;
  bo->on_result = qw_result;
  bo->on_attempt = qw_attempt;
  bo->on_attempt_start = qw_attempt_start;
  bo->on_tick = qw_tick;
  bo->on_rate = qw_rate;
  bo->ud = r;
  bo->idempotency_auto = 0; /* the entry's key, or none */
  if (bo->max_pending == 0 || bo->max_pending > r->wo.window)
    bo->max_pending = r->wo.window;
  *out = r;
  return 0;
}

void polite_queue_run_set_batch(polite_queue_run *r, polite_batch *b) {
  pthread_mutex_lock(&r->mu);
  r->batch = b;
  pthread_mutex_unlock(&r->mu);
}

/* Waits (mu held) until the thread has sent the outbox, or until `until`. */
static void drain(polite_queue_run *r, int64_t until) {
  while ((r->out_head || r->busy) && !r->quit && !r->st.gave_up) {
    int64_t now = polite_env_mono_us(r->inner.env);
    if (now >= until)
      break;
    polite__cond_wait_us(&r->cv, &r->mu,
                         until - now < 100000 ? until - now : 100000);
  }
}

/* Hands what could not be sent to on_recorded as UNRECORDED (mu held). */
static void unrecorded(polite_queue_run *r) {
  while (r->out_head) {
    qentry *e = r->out_head;
    r->out_head = e->fnext;
    if (e->kind == OUT_RECORD) {
      r->st.unrecorded++;
      polite_queue_recorded rec = {e->id, e->rline, e->rlen,
                                   POLITE_QUEUE_UNRECORDED, NULL};
      pthread_mutex_unlock(&r->mu);
      if (r->wo.on_recorded)
        r->wo.on_recorded(r->wo.ud, &rec);
      pthread_mutex_lock(&r->mu);
    }
    polite__queue_entry_free(r, e);
  }
  r->out_tail = NULL;
}

/* Leaves the group when this worker holds nothing there any more, so that
 * `polite queue status` does not list it. */
static void leave(polite_queue_run *r) {
  polite__qargs a;
  polite__qargs_init(&a, r->q, "leave", r->worker);
  polite__rcmd cmd = polite__qargs_cmd(&a);
  redisReply *rep = NULL;
  if (!a.oom && polite__queue_exec(r->q, 1, &cmd, &rep) == 0)
    freeReplyObject(rep);
  polite__qargs_free(&a);
}

int polite_queue_run_finish(polite_queue_run *r) {
  if (!r->th_started)
    return 0;
  pthread_mutex_lock(&r->mu);
  r->finishing = 1;
  r->stop_taking = 1;
  /* Taken ahead and never handed to the engine: back to the queue. */
  while (r->in_head) {
    qentry *e = r->in_head;
    r->in_head = e->fnext;
    polite__queue_outbox(r, e, OUT_GIVEBACK);
  }
  r->in_tail = NULL;
  int64_t wait =
      r->wo.outage_ms > 0 ? r->wo.outage_ms * 1000 : FINISH_WAIT_DEFAULT_US;
  /* Stopped by a signal: a few seconds for Redis, not the outage bound
   * (what cannot be recorded is kept in the caller's results). */
  if (r->batch && polite_batch_stats_get(r->batch)->cancelled &&
      wait > FINISH_WAIT_STOPPED_US)
    wait = FINISH_WAIT_STOPPED_US;
  drain(r, polite_env_mono_us(r->inner.env) + wait);
  r->quit = 1;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  pthread_join(r->th, NULL);
  r->th_started = 0;
  pthread_mutex_lock(&r->mu);
  int left = r->out_head != NULL;
  unrecorded(r);
  int connected = r->connected;
  pthread_mutex_unlock(&r->mu);
  if (connected && r->nheld == 0)
    leave(r);
  r->st.round_trips = polite_queue_round_trips(r->q);
  r->st.commands = r->q->commands;
  return left ? POLITE_EIO : 0;
}

void polite_queue_run_status_get(const polite_queue_run *r,
                                 polite_queue_run_status *s) {
  pthread_mutex_lock((pthread_mutex_t *)&r->mu);
  *s = r->st;
  s->error = r->error;
  s->round_trips = polite_queue_round_trips(r->q);
  s->commands = r->q->commands;
  pthread_mutex_unlock((pthread_mutex_t *)&r->mu);
}

void polite_queue_run_free(polite_queue_run *r) {
  if (r == NULL)
    return;
  if (r->th_started)
    polite_queue_run_finish(r);
  while (r->held) {
    qentry *e = r->held;
    e->prev = NULL; /* the head: entry_free moves r->held on */
    polite__queue_entry_free(r, e);
  }
  free(r->hash);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  if (r->q)
    r->q->attached = 0;
  free(r);
}
