/* polite scheduler: the seam for a rate controller, and the learned rate
 * wired through it. Every attempt start and every response of the run pass
 * through polite__sched_observe_start / _response; with rate_mode AUTO they
 * feed the pure controller of polite/ratectl.h of the request's account.
 * Its rate lives in the budget (polite_budget_publish_rate under the
 * account's key), which paces every participant at it and hands each one
 * the others' cuts (polite_budget_shared_rate), so a throttle seen by one
 * worker slows all. With one account per host (scope_host) each host has a
 * controller of its own, created at its first admission; beyond
 * max_host_rates hosts the rest share the default account's controller,
 * which has no one key to share it under, so the engine paces them at it
 * with its own GCRA, as it does every account without a budget. */
#include "sched_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A probe is reported once the rate grew this much since the last report
 * (so the log gets a few lines per doubling, not one per admission). */
#define PROBE_REPORT_STEP 1.10
#define REFINE_STEP 1.02 /* a refine lower by more than 2% is reported */
/* The host reported for the hosts beyond max_host_rates. */
#define OTHER_HOSTS "*"

typedef polite__rate_acct acct;

/* One series of rates (the run's or a host's): first, final, lowest and
 * highest. */
static void track(double *first, double *final, double *lowest, double *highest,
                  double rate) {
  if (*first == 0)
    *first = *lowest = *highest = rate;
  *final = rate;
  if (rate < *lowest)
    *lowest = rate;
  if (rate > *highest)
    *highest = rate;
}

/* Counts a cut by its cause in the run's stats and in h (may be NULL). */
static void count_cut(polite_batch_stats *st, polite_host_rate *h,
                      polite_ratectl_cause cause) {
  uint64_t *run[] = {NULL, &st->rate_cuts_throttle, &st->rate_cuts_headers,
                     &st->rate_cuts_budget};
  uint64_t *host[] = {NULL, h ? &h->cuts_throttle : NULL,
                      h ? &h->cuts_headers : NULL, h ? &h->cuts_budget : NULL};
  if ((unsigned)cause >= sizeof run / sizeof run[0] || run[cause] == NULL)
    return;
  (*run[cause])++;
  if (host[cause])
    (*host[cause])++;
}

/* Reports a rate change of a to on_rate and keeps the stats (cut: the cut
 * it is, POLITE_CUT_NONE for other changes). */
static void report(polite__sched *s, acct *a, double rate,
                   polite_ratectl_cause cut, const char *reason,
                   const char *detail, int64_t wall_ms) {
  polite_batch_stats *st = &s->st;
  track(&st->rate_first_per_s, &st->rate_final_per_s, &st->rate_lowest_per_s,
        &st->rate_highest_per_s, rate);
  polite_host_rate *h = a->stat >= 0 ? &s->host_stats[a->stat] : NULL;
  if (h)
    track(&h->first_per_s, &h->final_per_s, &h->lowest_per_s, &h->highest_per_s,
          rate);
  count_cut(st, h, cut);
  double prev = a->reported_rate;
  a->reported_rate = rate;
  if (s->o.on_rate) {
    polite_rate_change c = {wall_ms, rate,   prev,
                            reason,  detail, h ? h->host : NULL};
    s->o.on_rate(s->o.ud, &c);
  }
}

/* Publishes a's rate to the budget when it is due (a cut at once, a raise
 * at most every 100 ms). */
/* Shares a's window quota through the budget (ratectl_window.c). */
static void sync_window(polite__sched *s, acct *a) {
  if (!a->shared || a->rc.acct_starts == 0)
    return;
  polite_shared_window w;
  polite_ratectl_take_window(&a->rc, &w);
  if (polite_budget_window(s->o.budget, a->key, &w) == 0)
    polite_ratectl_on_window(&a->rc, &w);
}

static void publish(polite__sched *s, acct *a, int64_t now) {
  polite_shared_rate r;
  int is_cut = 0;
  if (!a->shared || !polite_ratectl_take_publish(&a->rc, now, &r, &is_cut))
    return;
  if (polite_budget_publish_rate(s->o.budget, a->key, now, &r, is_cut) >= 0) {
    polite_ratectl_published(&a->rc, now, &r);
    a->shared_rate = r;
  }
}

/* Follows the budget's shared rate of a's key (another participant's cut
 * or raise), then publishes a's when due. */
static void admitted(polite__sched *s, acct *a, const polite__now *now) {
  if (!a->shared)
    return;
  polite_shared_rate r = {0, 0, 0, 0};
  int64_t t = now->mono_us;
  if (polite_budget_shared_rate(s->o.budget, a->key, &r) == 0) {
    unsigned cuts = a->rc.cuts[POLITE_CUT_SHARED];
    uint64_t gen = a->rc.generation;
    polite_ratectl_on_shared(&a->rc, t, &r);
    a->shared_rate = r;
    if (a->rc.cuts[POLITE_CUT_SHARED] != cuts)
      report(s, a, polite_ratectl_rate(&a->rc, t), POLITE_CUT_SHARED, "budget",
             "another participant of the budget cut the rate", now->wall_ms);
    else if (a->rc.generation != gen)
      report(s, a, polite_ratectl_rate(&a->rc, t), POLITE_CUT_NONE, "budget",
             "adopted the rate another participant of the budget learned",
             now->wall_ms);
  }
  publish(s, a, t);
}

/* Starts a's controller at now: its first estimate, its pacing, and what
 * the budget already holds under its key (another participant may have
 * learned the rate). The hosts beyond the bound (a is the default account
 * with scope_host) have no one key to share their rate under. */
static void acct_begin(polite__sched *s, acct *a, const polite__now *now,
                       const char *detail) {
  polite_ratectl_config cfg = {0, s->o.max_rate_per_s, 0,
                               s->o.budget ? s->o.budget->cfg.concurrency : 0};
  if (a == &s->rate && s->o.ratectl != NULL && !s->o.scope_host)
    a->rc = *s->o.ratectl; /* carries on from what an earlier run learned */
  else
    polite_ratectl_init(&a->rc, &cfg, now->mono_us);
  a->shared = s->o.budget != NULL && (a->key != NULL || !s->o.scope_host);
  double r = polite_ratectl_rate(&a->rc, now->mono_us);
  polite_gcra_init(&a->pace, r, 1);
  a->pace_rate = r;
  a->planned_us = NO_TIME;
  a->reported_rate = -1;
  a->begun = 1;
  report(s, a, r, POLITE_CUT_NONE, "start", detail, now->wall_ms);
  admitted(s, a, now);
}

void polite__sched_rate_begin(polite__sched *s, const polite__now *now) {
  s->rate_on = s->o.rate_mode == POLITE_RATE_AUTO;
  s->rate.stat = -1;
  if (!s->rate_on)
    return;
  s->st.rate_learned = 1;
  s->max_hosts =
      s->o.max_host_rates ? s->o.max_host_rates : POLITE_BATCH_MAX_HOST_RATES;
  if (!s->o.scope_host)
    acct_begin(s, &s->rate, now,
               s->o.ratectl ? "the rate an earlier run learned"
                            : "a first estimate, raised until the server "
                              "objects");
}

void polite__sched_rate_end(polite__sched *s) {
  if (s->rate_on && s->o.ratectl != NULL && !s->o.scope_host && s->rate.begun)
    *s->o.ratectl = s->rate.rc;
}

void polite__sched_rate_free(polite__sched *s) {
  for (unsigned i = 0; i < s->n_hosts; i++) {
    free(s->hosts[i]->key);
    free(s->hosts[i]);
  }
  free(s->hosts);
  free(s->host_stats);
}

/* Grows *arr (of *cap elements of size sz) to hold n + 1, doubling up to
 * max. Returns 0, or -1 when out of memory or at max. */
static int grow(void **arr, unsigned *cap, unsigned n, unsigned max,
                size_t sz) {
  if (n < *cap)
    return 0;
  if (n >= max)
    return -1;
  unsigned c = *cap ? 2 * *cap : 8;
  if (c > max)
    c = max;
  void *p = realloc(*arr, c * sz);
  if (p == NULL)
    return -1;
  *arr = p;
  *cap = c;
  return 0;
}

/* A new stats entry for host (borrowed; it outlives the stats): its index,
 * or -1 when out of memory. */
static int add_stat(polite__sched *s, const char *host) {
  void *arr = s->host_stats;
  if (grow(&arr, &s->cap_host_stats, s->n_host_stats, s->max_hosts + 1,
           sizeof *s->host_stats) != 0)
    return -1;
  s->host_stats = arr;
  polite_host_rate *h = &s->host_stats[s->n_host_stats];
  memset(h, 0, sizeof *h);
  h->host = host;
  s->st.host_rates = s->host_stats;
  s->st.n_host_rates = s->n_host_stats + 1;
  return (int)s->n_host_stats++;
}

/* The account of host key, created (and begun at now) at its first use:
 * NULL beyond max_hosts hosts or when out of memory. */
static acct *host_acct(polite__sched *s, const char *key,
                       const polite__now *now) {
  for (unsigned i = 0; i < s->n_hosts; i++)
    if (strcmp(s->hosts[i]->key, key) == 0)
      return s->hosts[i];
  void *arr = s->hosts;
  if (grow(&arr, &s->cap_hosts, s->n_hosts, s->max_hosts, sizeof(acct *)))
    return NULL;
  s->hosts = arr;
  acct *a = calloc(1, sizeof *a);
  if (a == NULL || (a->key = strdup(key)) == NULL) {
    free(a);
    return NULL;
  }
  s->hosts[s->n_hosts++] = a;
  a->stat = add_stat(s, a->key);
  acct_begin(s, a, now,
             "a first estimate for this host, raised until it objects");
  return a;
}

/* The account of j's learned rate, found at its first admission (now) and
 * kept in j: the default account with one account for the run; with
 * scope_host its host's, or the default one shared by the hosts beyond
 * max_hosts (begun at the first such host, with a note in the log). */
static acct *acct_of(polite__sched *s, job *j, const polite__now *now) {
  if (j->rate)
    return j->rate;
  acct *a = s->o.scope_host && j->key ? host_acct(s, j->key, now) : NULL;
  if (a == NULL) {
    a = &s->rate;
    if (!a->begun) {
      a->stat = add_stat(s, OTHER_HOSTS);
      char msg[120];
      snprintf(msg, sizeof msg,
               "more than %u hosts: the hosts beyond them share one learned "
               "rate",
               s->max_hosts);
      acct_begin(s, a, now, msg);
    }
  }
  j->rate = a;
  return a;
}

/* j's account once it was admitted (acct_of ran in its rate check). */
static acct *acct_seen(polite__sched *s, const job *j) {
  return j->rate ? j->rate : &s->rate;
}

void polite__sched_rate_admitted(polite__sched *s, const job *j,
                                 const polite__now *now) {
  if (s->rate_on)
    admitted(s, acct_seen(s, j), now);
}

/* Moves a's limiter to rate r, keeping the last start where it was: the
 * next start is due one new interval after it. */
static void retune(acct *a, double r) {
  polite_gcra g;
  if (polite_gcra_init(&g, r, 1) != 0)
    return;
  if (a->pace.tat_ns != 0) {
    g.tat_ns = a->pace.tat_ns - a->pace.interval_ns + g.interval_ns;
    g.tat_us = (g.tat_ns + 999) / 1000;
  }
  a->pace = g;
  a->pace_rate = r;
}

/* Keeps a's own limiter at rate r when the budget does not pace it. */
static void follow(acct *a, double r) {
  if (!a->shared && fabs(r - a->pace_rate) > a->pace_rate * 1e-3)
    retune(a, r);
}

int64_t polite__sched_rate_check(polite__sched *s, job *j, int64_t at,
                                 unsigned cost, polite_gcra *next,
                                 const polite__now *now) {
  if (!s->rate_on)
    return 0;
  acct *a = acct_of(s, j, now);
  int64_t hold = polite_ratectl_hold_until(&a->rc);
  if (hold > at)
    return hold - at;
  double r = polite_ratectl_rate(&a->rc, at);
  follow(a, r);
  double cap = s->o.max_rate_per_s;
  if (cap > 0 && r >= cap * 0.999) {
    if (!a->at_max)
      report(s, a, r, POLITE_CUT_NONE, "max_rate",
             "capped by the largest rate allowed", now->wall_ms);
    a->at_max = 1;
  } else {
    a->at_max = 0;
    if (r >= a->reported_rate * PROBE_REPORT_STEP)
      report(s, a, r, POLITE_CUT_NONE, "probe",
             "no throttling seen: probing a higher rate", now->wall_ms);
  }
  if (a->shared)
    return 0; /* the budget paces at the shared rate */
  *next = a->pace;
  return polite_gcra_admit(next, at, cost);
}

void polite__sched_rate_commit(polite__sched *s, const job *j,
                               const polite_gcra *next) {
  if (!s->rate_on)
    return;
  acct *a = acct_seen(s, j);
  if (!a->shared)
    a->pace = *next;
}

void polite__sched_rate_paused(polite__sched *s, const job *j, int64_t now,
                               int64_t until) {
  if (s->rate_on)
    polite_ratectl_on_pause(&acct_seen(s, j)->rc, now, until);
}

int polite__sched_rate_full(polite__sched *s, const job *j, int64_t now) {
  if (!s->rate_on)
    return 0;
  acct *a = acct_seen(s, j);
  unsigned cap = polite_ratectl_cap(&a->rc, now);
  if (a->rc.busy_account) {
    /* A cap on the account's count: the budget holds it against every
     * participant's slots (its acquire answers WAIT_SLOT). Given only when
     * this participant's cap changes, so that one that learned none does
     * not clear another's. */
    if (cap != a->cap_set) {
      polite_budget_set_slot_cap(s->o.budget, a->key, cap);
      a->cap_set = cap;
    }
    return 0;
  }
  return cap > 0 && a->inflight >= cap;
}

double polite__sched_rate_now(const polite__sched *s, const job *j) {
  const polite_budget *b = s->o.budget;
  double fixed = b && b->cfg.rate_per_s > 0 ? b->cfg.rate_per_s : 0;
  if (!s->rate_on)
    return fixed;
  const acct *a = j && j->rate ? j->rate : &s->rate;
  double learned = a->shared ? a->shared_rate.rate_per_s : a->pace_rate;
  if (!(learned > 0))
    return fixed;
  return fixed > 0 && fixed < learned ? fixed : learned;
}

void polite__sched_observe_start(polite__sched *s, const job *j,
                                 const polite__now *now) {
  if (!s->rate_on)
    return;
  acct *a = acct_seen(s, j);
  a->inflight++;
  if (a->shared) {
    polite_ratectl_account_starts(
        &a->rc, polite_budget_admissions(s->o.budget, a->key));
    sync_window(s, a);
  }
  polite_ratectl_on_start(&a->rc, now->mono_us);
  sync_window(s, a);
  /* The budget's count of the account's slots, this start's included,
   * when it keeps one: the cap is then the account's (0: unknown). */
  unsigned in_use = polite_budget_in_use(s->o.budget, a->key);
  if (in_use > 0)
    polite_ratectl_account_busy(&a->rc, in_use - 1);
  publish(s, a, now->mono_us);
}

void polite__sched_observe_response(polite__sched *s, const job *j,
                                    const polite__response *r,
                                    const polite_decision *d,
                                    int64_t latency_us,
                                    const polite__now *now) {
  (void)latency_us;
  if (!s->rate_on)
    return;
  acct *a = acct_seen(s, j);
  int64_t t = now->mono_us;
  if (a->inflight > 0)
    a->inflight--;
  polite_rate_plan plan;
  int has =
      r->status && r->headers &&
      polite_rate_plan_after(
          r->headers, t,
          polite_ratectl_started_after(&a->rc, j->attempt_start_us), &plan);
  polite_ratectl_response in = {
      t, j->attempt_start_us, r->status,
      d->server_wait_ms >= 0 ? d->server_wait_ms * 1000 : -1,
      has ? &plan : NULL};
  int64_t held = polite_ratectl_hold_until(&a->rc);
  polite_ratectl_cause cut = polite_ratectl_on_response(&a->rc, &in);
  int64_t hold = polite_ratectl_hold_until(&a->rc);
  if (a->shared && hold > held && hold > t &&
      (r->status == 429 || r->status == 503))
    /* A hold for refusals that named no wait is the account's, like a
     * server's pause: the other participants keep off too. */
    polite_budget_pause_until(s->o.budget, a->key, t, hold);
  double rate = polite_ratectl_rate(&a->rc, t);
  if (cut == POLITE_CUT_THROTTLE) {
    char msg[96];
    snprintf(msg, sizeof msg,
             "a %d answer: cut below the rate that got "
             "through",
             r->status);
    report(s, a, rate, cut, "throttle", msg, now->wall_ms);
  } else if (cut == POLITE_CUT_HEADERS) {
    report(s, a, rate, cut, "headers", has ? plan.why : "the server's headers",
           now->wall_ms);
  } else if (has && plan.rate_per_s > 0 &&
             fabs(rate - a->reported_rate) > a->reported_rate * 0.02) {
    report(s, a, rate, POLITE_CUT_NONE, "headers", plan.why, now->wall_ms);
  } else if (a->rc.phase == POLITE_RC_PROBE && a->rc.pending_cut &&
             a->reported_rate > 0 && rate < a->reported_rate / REFINE_STEP) {
    /* The last cut's estimate refined lower by the answers of requests in
     * flight at it: reported, or the log says a rate the run does not
     * keep (35/s said while the budget paced 25/s for 20 s). */
    report(s, a, rate, POLITE_CUT_NONE, "refine",
           "answers of requests in flight at the cut lowered the estimate",
           now->wall_ms);
  }
  follow(a, rate);
  sync_window(s, a);
  publish(s, a, t);
}

/* See sched_internal.h. */
int polite__sched_ask(polite__sched *s, job *j, int64_t at, unsigned cost,
                      polite_gcra *next, const polite__now *now, int64_t *w,
                      int *rc) {
  *w = polite__sched_rate_check(s, j, at, cost, next, now);
  *rc = POLITE_BUDGET_WAIT_RATE;
  if (j->acct && j->rate)
    j->acct->rate = j->rate; /* the queue's estimate paces by it */
  if (*w == 0 && polite__sched_rate_full(s, j, now->mono_us))
    return POLITE__ASK_FULL;
  if (*w != 0)
    return POLITE__ASK_LEARNED;
  *rc = polite_budget_acquire(s->o.budget, j->key, at, cost, 1, w);
  if (*rc >= 0)
    polite__sched_rate_admitted(s, j, now);
  return POLITE__ASK_BUDGET;
}
