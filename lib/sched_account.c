/* polite scheduler: the queues of submitted requests, one per account (the
 * gateway's rules, docs/gateway.md): a bounded queue, and a request that
 * cannot afford its wait (the account's pause, then the queue ahead of it
 * at the planned rate, against max-wait and its deadline) ended at once
 * with the time the account opens again, never by sending early; and the
 * plan of each account's next start, which keeps a late wake-up on the
 * limiter's schedule. Pure, like the rest of the scheduler. */
#include "sched_internal.h"

#include "http_syntax.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef polite__acct acct;

/* First bucket count; the table doubles when it holds twice as many. */
#define FIRST_BUCKETS 64

/* ---- the table --------------------------------------------------------- */

static size_t bucket_of(const polite__acct_table *t, const char *key) {
  return (size_t)(polite__fnv1a(key, strlen(key)) & (t->nb - 1));
}

/* Doubles the bucket array (nothing happens when out of memory: the
 * chains only get longer). */
static void grow(polite__acct_table *t) {
  size_t nb = t->nb ? 2 * t->nb : FIRST_BUCKETS;
  acct **b = calloc(nb, sizeof(acct *));
  if (b == NULL)
    return;
  for (size_t i = 0; i < t->nb; i++)
    for (acct *a = t->b[i], *n; a; a = n) {
      n = a->next;
      size_t k = (size_t)(polite__fnv1a(a->key, strlen(a->key)) & (nb - 1));
      a->next = b[k];
      b[k] = a;
    }
  free(t->b);
  t->b = b;
  t->nb = nb;
}

polite__acct *polite__sched_acct_find(const polite__sched *s, const char *key) {
  const polite__acct_table *t = &s->accts;
  if (key == NULL)
    return t->def;
  if (t->nb == 0)
    return NULL;
  for (acct *a = t->b[bucket_of(t, key)]; a; a = a->next)
    if (strcmp(a->key, key) == 0)
      return a;
  return NULL;
}

polite__acct *polite__sched_acct_get(polite__sched *s, const char *key) {
  acct *a = polite__sched_acct_find(s, key);
  if (a == NULL) {
    polite__acct_table *t = &s->accts;
    if (key && t->n >= 2 * t->nb)
      grow(t);
    if (key && t->nb == 0)
      return NULL;
    a = calloc(1, sizeof *a);
    if (a == NULL || (key && (a->key = strdup(key)) == NULL)) {
      free(a);
      return NULL;
    }
    a->planned_us = NO_TIME;
    if (key == NULL) {
      t->def = a;
    } else {
      size_t k = bucket_of(t, key);
      a->next = t->b[k];
      t->b[k] = a;
      t->n++;
    }
  }
  a->jobs++;
  return a;
}

/* Drops one reference to a (a job, or a sweep's pin); frees it with the
 * last. */
static void release(polite__sched *s, acct *a) {
  if (--a->jobs > 0)
    return;
  polite__acct_table *t = &s->accts;
  if (a->key == NULL) {
    t->def = NULL;
  } else {
    acct **p = &t->b[bucket_of(t, a->key)];
    while (*p != a)
      p = &(*p)->next;
    *p = a->next;
    t->n--;
  }
  free(a->key);
  free(a);
}

void polite__sched_acct_put(polite__sched *s, job *j) {
  if (j->acct == NULL)
    return;
  release(s, j->acct);
  j->acct = NULL;
}

void polite__sched_acct_free(polite__sched *s) {
  polite__acct_table *t = &s->accts;
  for (size_t i = 0; i < t->nb; i++)
    for (acct *a = t->b[i], *n; a; a = n) {
      n = a->next;
      free(a->key);
      free(a);
    }
  free(t->b);
  free(t->def);
  memset(t, 0, sizeof *t);
}

/* ---- what a wait costs -------------------------------------------------- */

/* The planned start interval of a's requests costing `cost` units, in us;
 * 0 when no rate paces them (a concurrency limit alone says nothing about
 * when a slot frees). */
static double interval_us(const polite__sched *s, const acct *a,
                          unsigned cost) {
  job probe;
  memset(&probe, 0, sizeof probe);
  probe.rate = a->rate;
  double rate = polite__sched_rate_now(s, &probe);
  return rate > 0 ? 1e6 * (cost ? cost : 1) / rate : 0;
}

/* When a's next request can start at the earliest: the end of its known
 * pause, and the start the budget planned next for it (with one account,
 * the run's plan). */
static int64_t opens_at(const polite__sched *s, const acct *a, int64_t now) {
  int64_t t = now;
  if (a->pause_until_us > t)
    t = a->pause_until_us;
  int64_t plan = a->planned_us != NO_TIME ? a->planned_us
                 : !s->o.scope_host       ? s->planned_us
                                          : NO_TIME;
  if (plan != NO_TIME && plan > t)
    t = plan;
  return t;
}

/* The outcome of a wait of w us that j cannot afford, or OK when it can:
 * wait_too_long past max-wait, deadline past its deadline (or the run's). */
static polite_outcome unaffordable(const polite__sched *s, const job *j,
                                   int64_t w, int64_t now) {
  if (s->o.max_wait_ms > 0 && w > s->o.max_wait_ms * 1000)
    return POLITE_OUT_WAIT_TOO_LONG;
  int64_t left = polite__sched_time_left(s, j, now);
  /* An attempt needs a millisecond before the deadline (see admit). */
  if (left != NO_TIME && w > left - 1000)
    return POLITE_OUT_DEADLINE;
  return POLITE_OUT_OK;
}

/* Ends j with `out` at now: its account's pause and the `ahead` requests
 * queued before it need w us. */
static void end_unaffordable(polite__sched *s, job *j, polite_outcome out,
                             int64_t w, unsigned ahead, int64_t now) {
  const acct *a = j->acct;
  int64_t pause = a->pause_until_us > now ? a->pause_until_us - now : 0;
  char limit[64];
  if (out == POLITE_OUT_WAIT_TOO_LONG)
    snprintf(limit, sizeof limit, "longer than max-wait (%lld ms)",
             (long long)s->o.max_wait_ms);
  else
    snprintf(limit, sizeof limit, "past its deadline");
  char msg[256];
  snprintf(msg, sizeof msg,
           "the account's pause (%lld ms) and the %u requests queued ahead "
           "of it need %lld ms before it could start, %s; not waiting",
           (long long)(pause / 1000), ahead, (long long)(w / 1000), limit);
  j->retry_after_us = w;
  j->pause_status = pause > 0 ? a->pause_status : 0;
  polite__sched_finish(s, j, out, j->status, msg, now, NULL, NULL);
}

int polite__sched_gate(polite__sched *s, job *j, int64_t now) {
  const refusal *rf = polite__sched_refused(s, j->key, now);
  if (rf) {
    polite__sched_end_refused(s, j, rf, now);
    return 1;
  }
  const acct *a = j->acct;
  unsigned ahead = a->jobs - a->inflight - 1; /* j itself is counted */
  unsigned cost = j->req->cost;
  int64_t w = opens_at(s, a, now) - now +
              (int64_t)(interval_us(s, a, cost) * (double)ahead);
  unsigned max =
      s->o.queue_max ? s->o.queue_max : POLITE_ENGINE_QUEUE_MAX_DEFAULT;
  if (ahead >= max) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "the account's queue is full (%u requests waiting, queue-max "
             "%u); not queued",
             ahead, max);
    j->retry_after_us = w;
    polite__sched_finish(s, j, POLITE_OUT_QUEUE_FULL, 0, msg, now, NULL, NULL);
    return 1;
  }
  polite_outcome out = unaffordable(s, j, w, now);
  if (out == POLITE_OUT_OK)
    return 0;
  end_unaffordable(s, j, out, w, ahead, now);
  return 1;
}

/* ---- sweeping a queue --------------------------------------------------- */

static int by_due_then_seq(const void *x, const void *y) {
  const polite__heap_entry *a = x, *b = y;
  if (a->due != b->due)
    return a->due < b->due ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Ends at once the submitted requests of a waiting in the waiting set that
 * can no longer afford their wait: taken in their order, each starts at
 * the earliest when the account opens, at its own due time, and one
 * planned interval after the one before it that stays. O(n) in the
 * waiting set, once per pause. */
static void sweep(polite__sched *s, acct *a, int64_t now) {
  size_t n = 0;
  for (size_t i = 0; i < s->waiting.n; i++)
    n += ((const job *)s->waiting.v[i].item)->acct == a;
  if (n == 0)
    return;
  polite__heap_entry *mine = malloc(n * sizeof *mine);
  unsigned *ahead = malloc(n * sizeof *ahead);
  if (mine == NULL || ahead == NULL) {
    free(mine);
    free(ahead);
    return; /* each request is checked again when it comes up */
  }
  size_t k = 0;
  for (size_t i = 0; i < s->waiting.n; i++)
    if (((const job *)s->waiting.v[i].item)->acct == a)
      mine[k++] = s->waiting.v[i];
  qsort(mine, n, sizeof *mine, by_due_then_seq);
  int64_t open = opens_at(s, a, now), prev = INT64_MIN;
  size_t doomed = 0;
  unsigned stay = 0;
  for (size_t i = 0; i < n; i++) {
    job *j = mine[i].item;
    int64_t at = mine[i].due > open ? mine[i].due : open;
    int64_t per = (int64_t)interval_us(s, a, j->req->cost);
    if (prev != INT64_MIN && prev + per > at)
      at = prev + per;
    if (unaffordable(s, j, at - now, now) == POLITE_OUT_OK) {
      prev = at;
      stay++;
      continue;
    }
    j->retry_after_us = at - now;
    ahead[doomed] = stay;
    mine[doomed++] = mine[i]; /* in order, at the array's front */
  }
  /* Out of the waiting set first (ending one calls on_result), then each
   * ended with the count of those ahead of it that stay. */
  for (size_t i = 0; i < doomed; i++)
    (void)polite__heap_remove(&s->waiting, mine[i].item);
  for (size_t i = 0; i < doomed; i++) {
    job *j = mine[i].item;
    int64_t w = j->retry_after_us;
    end_unaffordable(s, j, unaffordable(s, j, w, now), w, ahead[i], now);
  }
  free(mine);
  free(ahead);
}

polite__acct *polite__sched_acct_paused(polite__sched *s, const char *key,
                                        int64_t until, int status) {
  acct *a = polite__sched_acct_find(s, key);
  if (a == NULL || until <= a->pause_until_us)
    return NULL;
  a->pause_until_us = until;
  a->pause_status = status;
  a->jobs++; /* pinned until the sweep: its requests may all end first */
  return a;
}

void polite__sched_acct_sweep(polite__sched *s, polite__acct *a, int64_t now) {
  if (a == NULL)
    return;
  sweep(s, a, now);
  release(s, a);
}

void polite__sched_sweep_all(polite__sched *s, int64_t now) {
  polite__acct_table *t = &s->accts;
  size_t n = t->n + (t->def != NULL);
  if (n == 0)
    return;
  acct **all = malloc(n * sizeof(acct *));
  if (all == NULL)
    return;
  size_t k = 0;
  if (t->def)
    all[k++] = t->def;
  for (size_t i = 0; i < t->nb; i++)
    for (acct *a = t->b[i]; a; a = a->next)
      all[k++] = a;
  for (size_t i = 0; i < k; i++)
    all[i]->jobs++; /* pinned while the others are swept */
  for (size_t i = 0; i < k; i++)
    sweep(s, all[i], now);
  for (size_t i = 0; i < k; i++)
    release(s, all[i]);
  free(all);
}

/* ---- the plan of the next start ----------------------------------------- */

/* Longest lateness of a wake-up that the schedule absorbs (see
 * polite__sched_admission_time). */
#define CATCHUP_MAX_US 1000

/* Where the budget's plan for j's next start is kept: its account's (the
 * gateway's queue of the account, else with one account per host its
 * learned rate's, known from its second admission), else with one account
 * the run's; NULL when there is none to keep (one account per host, no
 * learned rate). */
static int64_t *plan_of(polite__sched *s, const job *j) {
  if (j->acct)
    return &j->acct->planned_us;
  if (s->o.scope_host)
    return j->rate ? &j->rate->planned_us : NULL;
  return &s->planned_us;
}

/* The time an admission is asked for. A wake-up comes a little after the
 * moment the budget named; asking at the real `now` would restart the
 * limiter's schedule from the late start and lose that lateness for good
 * at every start (GCRA with burst 1). So when the budget's next start was
 * planned at P, the admission is asked at max(P, now - slack), slack =
 * min(T / 2, CATCHUP_MAX_US) (T the start interval): a wake-up at most
 * `slack` late keeps the schedule on the theoretical arrival time, and a
 * later one loses only what it is late beyond `slack` (at 10,000/s a
 * wake-up 80 us late loses 30 us, where it used to lose all 80). Either
 * way the next start is due at least T - slack >= T / 2 after this one:
 * no two starts are ever closer than T / 2 at burst 1, and there is no
 * catch-up burst. The plan is the account's (plan_of): with one account
 * per host, each host's starts keep their own schedule. */
int64_t polite__sched_admission_time(polite__sched *s, const job *j,
                                     int64_t now) {
  double rate = polite__sched_rate_now(s, j);
  const int64_t *plan = plan_of(s, j);
  if (plan == NULL || !(rate > 0) || *plan > now)
    return now;
  double half = 0.5e6 / rate;
  int64_t slack = half < CATCHUP_MAX_US ? (int64_t)half : CATCHUP_MAX_US;
  return now - *plan <= slack ? *plan : now - slack;
}

/* See sched_internal.h. */
void polite__sched_plan_next(polite__sched *s, const job *j, int64_t at) {
  int64_t *plan = plan_of(s, j);
  if (plan)
    *plan = at;
  if (plan != &s->planned_us && !s->o.scope_host)
    s->planned_us = at; /* the gateway's one account: the run's plan too */
}

/* ---- what the metrics show ---------------------------------------------- */

double polite__sched_acct_rate(const polite__sched *s, const polite__acct *a) {
  double per = interval_us(s, a, 1);
  return per > 0 ? 1e6 / per : 0;
}
