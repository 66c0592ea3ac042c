/* polite queue, a worker's thread: each turn sends, in one pipelined round
 * trip, the results to record, the entries to give back, the renewal of
 * every lease it holds (every third of the lease) and a take when it holds
 * half its window or less; it reconnects with backoff while Redis is away
 * and gives up after the outage bound. */
#define _GNU_SOURCE
#include "queue_worker.h"

#include <polite/clock.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Entries recorded or given back per script call. */
#define OUT_BATCH 256
/* While the queue has nothing for this worker, it looks again after 50 ms,
 * doubling up to 250 ms: it ends (or takes a claimable entry) at most that
 * long after it could, for one cheap script call per look. */
#define POLL_MIN_US INT64_C(50000)
#define POLL_MAX_US INT64_C(250000)
/* Reconnects are spaced by a backoff doubling from 100 ms to 2 s: a fleet
 * does not hammer a server that is coming back, and finds it within 2 s. */
#define BACKOFF_MIN_US INT64_C(100000)
#define BACKOFF_MAX_US INT64_C(2000000)
/* One take in this many also removes consumers that hold nothing and were
 * idle a long time (workers that died with nothing in hand). */
#define SWEEP_EVERY 64

/* The parts of a turn, in the order they are pipelined. */
enum { P_REC, P_GB, P_RENEW, P_TAKE, P_COUNT };

/* One turn's work, built under the mutex and sent without it. */
typedef struct {
  qentry *rec[OUT_BATCH], *gb[OUT_BATCH];
  size_t nrec, ngb;
  qentry **renew;
  size_t nrenew;
  unsigned take; /* entries asked for; 0: no take */
  polite__qargs a[4];
  int ia[4]; /* each part's index in a[] (P_REC, ...), -1: not sent */
  size_t na;
  int64_t sent_us;
} turn;

static void errcopy(polite_queue_run *r) {
  snprintf(r->error, sizeof r->error, "%s", polite_queue_errstr(r->q));
}

/* Marks Redis unreachable at now (mu held): the next connect waits for the
 * backoff. */
static void went_down(polite_queue_run *r, int64_t now) {
  r->connected = 0;
  if (r->down_since_us < 0) {
    r->down_since_us = now;
    r->st.outages++;
  }
  r->backoff_us = r->backoff_us ? r->backoff_us * 2 : BACKOFF_MIN_US;
  if (r->backoff_us > BACKOFF_MAX_US)
    r->backoff_us = BACKOFF_MAX_US;
  r->next_connect_us = now + r->backoff_us;
  errcopy(r);
}

/* Connects (mu held; released while connecting). After an outage the
 * leases this worker holds are renewed at once, and nothing is claimed
 * from other workers for half a lease: live workers renew theirs first. */
static void try_connect(polite_queue_run *r, int64_t now) {
  if (now < r->next_connect_us)
    return;
  pthread_mutex_unlock(&r->mu);
  int rc = polite__rconn_connect(r->q->c);
  pthread_mutex_lock(&r->mu);
  if (rc != 0) {
    snprintf(r->q->errstr, sizeof r->q->errstr, "queue %s",
             polite__rconn_errstr(r->q->c));
    went_down(r, polite_env_mono_us(r->inner.env));
    return;
  }
  r->connected = 1;
  if (r->down_since_us >= 0)
    r->st.down_ms += (now - r->down_since_us) / 1000;
  r->down_since_us = -1;
  r->backoff_us = 0;
  r->next_renew_us = now;
  r->claim_after_us = now + r->lease_us / 2;
  r->error[0] = '\0';
}

/* Detaches up to OUT_BATCH entries of each kind from the outbox. */
static void take_outbox(polite_queue_run *r, turn *t) {
  qentry **pp = &r->out_head, *last = NULL;
  while (*pp) {
    qentry *e = *pp;
    int rec = e->kind == OUT_RECORD;
    if ((rec && t->nrec == OUT_BATCH) || (!rec && t->ngb == OUT_BATCH)) {
      last = e;
      pp = &e->fnext;
      continue;
    }
    *pp = e->fnext;
    e->fnext = NULL;
    e->where = E_BUSY;
    if (rec)
      t->rec[t->nrec++] = e;
    else
      t->gb[t->ngb++] = e;
  }
  r->out_tail = last;
}

/* Puts detached entries back at the head of the outbox (a failed turn). */
static void untake(polite_queue_run *r, qentry **v, size_t n) {
  for (size_t i = n; i-- > 0;) {
    v[i]->where = E_OUTBOX;
    v[i]->fnext = r->out_head;
    r->out_head = v[i];
    if (r->out_tail == NULL)
      r->out_tail = v[i];
  }
}

/* What this turn sends (mu held). Returns 1 when there is something. */
static int plan(polite_queue_run *r, turn *t, int64_t now) {
  take_outbox(r, t);
  if (r->nheld > 0 && now >= r->next_renew_us) {
    t->renew = malloc(r->nheld * sizeof(qentry *));
    for (qentry *e = r->held; e && t->renew; e = e->next)
      if (!e->lost && e->where != E_BUSY)
        t->renew[t->nrenew++] = e;
    r->next_renew_us = now + r->renew_us;
  }
  unsigned w = r->wo.window;
  if (!r->finishing && !r->stop_taking && !r->ended && now >= r->next_poll_us &&
      r->nheld <= w / 2)
    t->take = w - (unsigned)r->nheld;
  r->busy = t->nrec + t->ngb > 0;
  return t->nrec || t->ngb || t->nrenew || t->take;
}

/* The pipeline's script calls, from the plan (mu not needed: detached
 * entries and the sids of held ones are this thread's to read). */
static void build(polite_queue_run *r, turn *t) {
  polite_queue *q = r->q;
  for (int p = 0; p < P_COUNT; p++)
    t->ia[p] = -1;
  if (t->nrec) {
    polite__qargs *a = &t->a[t->ia[P_REC] = (int)t->na++];
    polite__qargs_init(a, q, "record", r->worker);
    for (size_t i = 0; i < t->nrec; i++) {
      qentry *e = t->rec[i];
      polite__qargs_add(a, e->sid, strlen(e->sid));
      polite__qargs_add(a, e->id, strlen(e->id));
      polite__qargs_add(a, e->outcome, strlen(e->outcome));
      polite__qargs_add(a, e->rline, e->rlen);
    }
  }
  if (t->ngb) {
    polite__qargs *a = &t->a[t->ia[P_GB] = (int)t->na++];
    polite__qargs_init(a, q, "giveback", r->worker);
    for (size_t i = 0; i < t->ngb; i++)
      polite__qargs_add(a, t->gb[i]->sid, strlen(t->gb[i]->sid));
  }
  if (t->nrenew) {
    polite__qargs *a = &t->a[t->ia[P_RENEW] = (int)t->na++];
    polite__qargs_init(a, q, "renew", r->worker);
    for (size_t i = 0; i < t->nrenew; i++)
      polite__qargs_add(a, t->renew[i]->sid, strlen(t->renew[i]->sid));
  }
  if (t->take) {
    polite__qargs *a = &t->a[t->ia[P_TAKE] = (int)t->na++];
    polite__qargs_init(a, q, "take", r->worker);
    polite__qargs_addf(a, "%lld", (long long)r->wo.lease_ms);
    polite__qargs_addf(a, "%u", t->take);
    polite__qargs_addf(a, "%u", r->wo.max_deliveries);
    polite__qargs_addf(a, "%d", t->sent_us >= r->claim_after_us);
    polite__qargs_add(a, r->cursor, strlen(r->cursor));
    polite__qargs_addf(a, "%d", ++r->takes % SWEEP_EVERY == 0);
  }
}

/* The record reply: who recorded each id. on_recorded is called without the
 * mutex, in the order the results came. */
static int done_records(polite_queue_run *r, turn *t, const redisReply *rep) {
  for (size_t i = 0; i < t->nrec; i++) {
    qentry *e = t->rec[i];
    const char *by =
        i < rep->elements ? polite__reply_str(rep->element[i], NULL, 0) : NULL;
    int mine = by == NULL || by[0] == '\0' || strcmp(by, r->worker) == 0;
    polite_queue_recorded rec = {
        e->id, e->rline, e->rlen,
        mine ? POLITE_QUEUE_RECORDED : POLITE_QUEUE_DUPLICATE, by};
    if (mine) {
      r->st.recorded++;
      r->st.recorded_ok += strcmp(e->outcome, "ok") == 0;
    } else {
      r->st.duplicates++;
    }
    pthread_mutex_unlock(&r->mu);
    if (r->wo.on_recorded)
      r->wo.on_recorded(r->wo.ud, &rec);
    pthread_mutex_lock(&r->mu);
    polite__queue_entry_free(r, e);
  }
  t->nrec = 0;
  return 0;
}

/* The renew reply: the sids no longer this worker's. The others' leases
 * run from when the renewal was sent. */
static int done_renew(polite_queue_run *r, turn *t, const redisReply *rep) {
  for (size_t i = 0; i < t->nrenew; i++) {
    qentry *e = t->renew[i];
    int lost = 0;
    for (size_t k = 0; k < rep->elements && !lost; k++) {
      const char *s = polite__reply_str(rep->element[k], NULL, 0);
      lost = s && strcmp(s, e->sid) == 0;
    }
    if (!lost) {
      e->confirmed_us = t->sent_us;
      continue;
    }
    e->lost = 1;
    r->st.lost++;
    if (e->where == E_INBOX) { /* never handed over: just forget it */
      qentry **pp = &r->in_head, *prev = NULL;
      while (*pp && *pp != e) {
        prev = *pp;
        pp = &(*pp)->fnext;
      }
      if (*pp)
        *pp = e->fnext;
      if (r->in_tail == e)
        r->in_tail = prev;
      polite__queue_entry_free(r, e);
    }
  }
  return 0;
}

/* One entry of a take reply: 7 elements from e[0]. */
static qentry *new_entry(const redisReply *const *e, int64_t sent_us) {
  const char *s[5];
  for (int i = 0; i < 5; i++)
    if ((s[i] = polite__reply_str(e[i], NULL, 0)) == NULL)
      return NULL;
  long long lineno = polite__reply_int(e[3]), dl = polite__reply_int(e[5]);
  qentry *q = calloc(1, sizeof *q);
  if (q == NULL)
    return NULL;
  q->sid = strdup(s[0]);
  q->id = strdup(s[1]);
  q->line = malloc(e[2]->len + 1);
  q->key = strdup(s[4]);
  if (q->sid == NULL || q->id == NULL || q->line == NULL || q->key == NULL) {
    free(q->sid);
    free(q->id);
    free(q->line);
    free(q->key);
    free(q);
    return NULL;
  }
  memcpy(q->line, e[2]->str, e[2]->len);
  q->line[e[2]->len] = '\0';
  q->line_len = e[2]->len;
  q->lineno = lineno > 0 ? (long)lineno : 0;
  q->deliveries = dl > 0 ? (unsigned)dl : 1;
  q->claimed = polite__reply_int(e[6]) == 1;
  q->confirmed_us = sent_us;
  q->where = E_INBOX;
  return q;
}

size_t polite__queue_take_reply(polite_queue_run *r, const redisReply *rep,
                                int64_t sent_us) {
  if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 5)
    return 0;
  const char *cursor = polite__reply_str(rep->element[0], NULL, 0);
  long long pel = polite__reply_int(rep->element[1]);
  long long stored = polite__reply_int(rep->element[4]);
  if (cursor && strlen(cursor) < sizeof r->cursor)
    snprintf(r->cursor, sizeof r->cursor, "%s", cursor);
  r->st.dead_lettered += (uint64_t)polite__reply_int(rep->element[2]);
  /* Compared in ms: a hostile or damaged stored value must not overflow. */
  if (stored > 0 && stored < r->lease_us / 1000) {
    /* An earlier worker stored a shorter lease: others claim after the
     * longer of theirs and it, so renew in time for the shorter. */
    r->renew_us = stored * 1000 / 3;
    r->safe_us = 2 * r->renew_us;
  }
  size_t n = 0;
  for (size_t i = 5; i + 7 <= rep->elements; i += 7) {
    qentry *e = new_entry((const redisReply *const *)rep->element + i, sent_us);
    if (e == NULL)
      continue; /* its lease runs out; another worker will take it */
    e->next = r->held;
    if (r->held)
      r->held->prev = e;
    r->held = e;
    r->nheld++;
    if (r->in_tail)
      r->in_tail->fnext = e;
    else
      r->in_head = e;
    r->in_tail = e;
    r->st.taken++;
    r->st.claimed += (uint64_t)e->claimed;
    n++;
  }
  /* Nothing pushed yet (a --follow worker may see it appear). */
  r->st.missing = polite__reply_int(rep->element[3]) != 1;
  if (n == 0 && !r->wo.follow && (pel == 0 || r->st.missing))
    r->ended = 1; /* nothing pending, nothing in flight anywhere */
  r->poll_gap_us = n ? 0
                   : r->poll_gap_us
                       ? (r->poll_gap_us * 2 < POLL_MAX_US ? r->poll_gap_us * 2
                                                           : POLL_MAX_US)
                       : POLL_MIN_US;
  r->next_poll_us = sent_us + r->poll_gap_us;
  return n;
}

/* How a reply went: 0 as expected, 1 the node cannot serve now (a
 * failover, loading, out of memory: like a lost connection), 2 refused
 * for good (a script error: the queue cannot be used). */
static int judge(polite_queue_run *r, const redisReply *x, int type,
                 const char *what) {
  if (polite__queue_expect(r->q, x, type, what) == 0)
    return 0;
  return polite__rconn_transient(x) || (x && x->type == REDIS_REPLY_ERROR &&
                                        strncmp(x->str, "OOM", 3) == 0)
             ? 1
             : 2;
}

/* The give-back reply: how many went back (the others were not this
 * worker's any more, or had a result by now). */
static int done_giveback(polite_queue_run *r, turn *t, const redisReply *rep) {
  r->st.given_back += (uint64_t)(rep->integer > 0 ? rep->integer : 0);
  for (size_t i = 0; i < t->ngb; i++)
    polite__queue_entry_free(r, t->gb[i]);
  t->ngb = 0;
  return 0;
}

static int done_take(polite_queue_run *r, turn *t, const redisReply *rep) {
  if (rep->elements < 5)
    return -1;
  return polite__queue_take_reply(r, rep, t->sent_us) > 0 || r->ended;
}

/* What each part's good reply is and what is done with it (mu held):
 * 0, 1 to wake the engine, -1 a malformed reply. */
static const struct {
  const char *what;
  int type;
  int (*ok)(polite_queue_run *r, turn *t, const redisReply *rep);
} parts[P_COUNT] = {{"record", REDIS_REPLY_ARRAY, done_records},
                    {"giveback", REDIS_REPLY_INTEGER, done_giveback},
                    {"renew", REDIS_REPLY_ARRAY, done_renew},
                    {"take", REDIS_REPLY_ARRAY, done_take}};

/* The replies of one turn (mu held). Returns the worst judge() said (a
 * malformed reply counts as refused); the entries of a failed part stay
 * detached for the caller to put back. */
static int done(polite_queue_run *r, turn *t, redisReply **rep) {
  int worst = 0, wake = 0;
  for (int p = 0; p < P_COUNT; p++) {
    if (t->ia[p] < 0)
      continue;
    const redisReply *x = rep[t->ia[p]];
    int j = judge(r, x, parts[p].type, parts[p].what);
    int got = j == 0 ? parts[p].ok(r, t, x) : 0;
    if (got < 0)
      j = 2;
    wake |= got > 0;
    if (j > worst)
      worst = j;
  }
  if (wake && r->batch)
    polite_batch_wakeup(r->batch);
  if (worst)
    errcopy(r);
  return worst;
}

/* The queue cannot be used (mu held): stop taking, end the run. */
static void give_up(polite_queue_run *r) {
  r->st.gave_up = 1;
  r->stop_taking = 1;
  r->ended = 1;
  if (r->batch) {
    polite_batch_cancel(r->batch);
    polite_batch_wakeup(r->batch);
  }
  pthread_cond_broadcast(&r->cv);
}

/* One turn (mu held; released during the round trip). Returns 1 when
 * something was sent. */
static int run_turn(polite_queue_run *r, int64_t now) {
  turn t;
  memset(&t, 0, sizeof t);
  t.sent_us = now;
  if (!plan(r, &t, now)) {
    free(t.renew);
    return 0;
  }
  pthread_mutex_unlock(&r->mu);
  build(r, &t);
  polite__rcmd cmds[4];
  redisReply *rep[4] = {NULL, NULL, NULL, NULL};
  int oom = 0;
  for (size_t i = 0; i < t.na; i++) {
    oom |= t.a[i].oom;
    cmds[i] = polite__qargs_cmd(&t.a[i]);
  }
  int rc = oom ? POLITE_ENOMEM : polite__queue_exec(r->q, t.na, cmds, rep);
  pthread_mutex_lock(&r->mu);
  int how = rc != 0 ? 1 : done(r, &t, rep), failed = how != 0;
  if (failed) {
    untake(r, t.gb, t.ngb);
    untake(r, t.rec, t.nrec);
  }
  if (how == 1) {
    polite__rconn_drop(r->q->c);
    went_down(r, polite_env_mono_us(r->inner.env));
  } else if (how == 2) {
    give_up(r);
  }
  r->busy = 0;
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  for (size_t i = 0; i < t.na; i++) {
    freeReplyObject(rep[i]);
    polite__qargs_free(&t.a[i]);
  }
  free(t.renew);
  pthread_mutex_lock(&r->mu);
  return !failed;
}

/* Gives up when Redis stayed unreachable past the outage bound: the run is
 * cancelled, and what could not be recorded is reported by finish. */
static void check_outage(polite_queue_run *r, int64_t now) {
  if (r->connected || r->st.gave_up || r->wo.outage_ms <= 0 ||
      r->down_since_us < 0 || now - r->down_since_us < r->wo.outage_ms * 1000)
    return;
  snprintf(r->error, sizeof r->error,
           "%s; unreachable for %lld s (the outage bound): gave up",
           polite_queue_errstr(r->q), (long long)(r->wo.outage_ms / 1000));
  give_up(r);
}

/* Sleeps (mu held) until the next thing to do or a signal. */
static void sleep_turn(polite_queue_run *r, int64_t now) {
  int64_t until = now + 1000000;
  if (!r->connected && r->next_connect_us < until)
    until = r->next_connect_us;
  if (r->connected && r->nheld > 0 && r->next_renew_us < until)
    until = r->next_renew_us;
  if (r->connected && !r->ended && !r->stop_taking &&
      r->nheld <= r->wo.window / 2 && r->next_poll_us < until)
    until = r->next_poll_us;
  if (until <= now)
    return;
  polite__cond_wait_us(&r->cv, &r->mu, until - now);
}

void *polite__queue_thread(void *arg) {
  polite_queue_run *r = arg;
  pthread_mutex_lock(&r->mu);
  while (!r->quit) {
    int64_t now = polite_env_mono_us(r->inner.env);
    if (!r->connected)
      try_connect(r, now);
    if (r->connected && run_turn(r, now))
      continue;
    check_outage(r, polite_env_mono_us(r->inner.env));
    if (!r->quit)
      sleep_turn(r, polite_env_mono_us(r->inner.env));
  }
  pthread_mutex_unlock(&r->mu);
  return NULL;
}
