/* polite scheduler: the seam for a rate controller, and the learned rate
 * wired through it. Every attempt start and every response of the run pass
 * through polite__sched_observe_start / _response; with rate_mode AUTO they
 * feed the pure controller of polite/ratectl.h. Its rate lives in the
 * budget (polite_budget_publish_rate), which paces every participant at it
 * and hands each one the others' cuts (polite_budget_shared_rate), so a
 * throttle seen by one worker slows all. Without a budget, or with one
 * account per host, the engine paces at it with its own GCRA. */
#include "sched_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A probe is reported once the rate grew this much since the last report
 * (so the log gets a few lines per doubling, not one per admission). */
#define PROBE_REPORT_STEP 1.10

/* Reports a rate change to on_rate and keeps the stats. */
static void report(polite__sched *s, double rate, const char *reason,
                   const char *detail, int64_t wall_ms) {
  polite_batch_stats *st = &s->st;
  st->rate_final_per_s = rate;
  if (rate < st->rate_lowest_per_s)
    st->rate_lowest_per_s = rate;
  if (rate > st->rate_highest_per_s)
    st->rate_highest_per_s = rate;
  double prev = s->reported_rate;
  s->reported_rate = rate;
  if (s->o.on_rate) {
    polite_rate_change c = {wall_ms, rate, prev, reason, detail};
    s->o.on_rate(s->o.ud, &c);
  }
}

void polite__sched_rate_begin(polite__sched *s, const polite__now *now) {
  s->rate_on = s->o.rate_mode == POLITE_RATE_AUTO;
  if (!s->rate_on)
    return;
  polite_ratectl_config cfg = {0, s->o.max_rate_per_s, 0,
                               s->o.budget ? s->o.budget->cfg.concurrency : 0};
  if (s->o.ratectl != NULL && !s->o.scope_host)
    s->rc = *s->o.ratectl; /* carries on from what an earlier run learned */
  else
    polite_ratectl_init(&s->rc, &cfg, now->mono_us);
  s->rate_shared = s->o.budget != NULL && !s->o.scope_host;
  double r = polite_ratectl_rate(&s->rc, now->mono_us);
  polite_gcra_init(&s->pace, r, 1);
  s->pace_rate = r;
  s->st.rate_learned = 1;
  s->st.rate_first_per_s = s->st.rate_lowest_per_s = r;
  s->st.rate_highest_per_s = r;
  s->reported_rate = -1;
  report(s, r, "start",
         s->o.ratectl && !s->o.scope_host
             ? "the rate an earlier run learned"
             : "a first estimate, raised until the server objects",
         now->wall_ms);
  /* Another participant may have learned the rate already. */
  polite__sched_rate_admitted(s, now);
}

void polite__sched_rate_end(polite__sched *s) {
  if (s->rate_on && s->o.ratectl != NULL && !s->o.scope_host)
    *s->o.ratectl = s->rc;
}

/* Publishes the controller's rate to the budget when it is due (a cut at
 * once, a raise at most every 100 ms). */
static void publish(polite__sched *s, int64_t now) {
  polite_shared_rate r;
  int is_cut = 0;
  if (!s->rate_shared || !polite_ratectl_take_publish(&s->rc, now, &r, &is_cut))
    return;
  if (polite_budget_publish_rate(s->o.budget, NULL, now, &r, is_cut) >= 0) {
    polite_ratectl_published(&s->rc, now, &r);
    s->shared = r;
  }
}

void polite__sched_rate_admitted(polite__sched *s, const polite__now *now) {
  if (!s->rate_on || !s->rate_shared)
    return;
  polite_shared_rate r;
  int64_t t = now->mono_us;
  if (polite_budget_shared_rate(s->o.budget, NULL, &r) == 0) {
    unsigned cuts = s->rc.cuts[POLITE_CUT_SHARED];
    uint64_t gen = s->rc.generation;
    polite_ratectl_on_shared(&s->rc, t, &r);
    s->shared = r;
    if (s->rc.cuts[POLITE_CUT_SHARED] != cuts) {
      s->st.rate_cuts_budget++;
      report(s, polite_ratectl_rate(&s->rc, t), "budget",
             "another participant of the budget cut the rate", now->wall_ms);
    } else if (s->rc.generation != gen) {
      report(s, polite_ratectl_rate(&s->rc, t), "budget",
             "adopted the rate another participant of the budget learned",
             now->wall_ms);
    }
  }
  publish(s, t);
}

/* Moves the engine's limiter to rate r, keeping the last start where it
 * was: the next start is due one new interval after it. */
static void retune(polite__sched *s, double r) {
  polite_gcra g;
  if (polite_gcra_init(&g, r, 1) != 0)
    return;
  if (s->pace.tat_ns != 0) {
    g.tat_ns = s->pace.tat_ns - s->pace.interval_ns + g.interval_ns;
    g.tat_us = (g.tat_ns + 999) / 1000;
  }
  s->pace = g;
  s->pace_rate = r;
}

int64_t polite__sched_rate_check(polite__sched *s, int64_t at, unsigned cost,
                                 polite_gcra *next, int64_t wall_ms) {
  if (!s->rate_on)
    return 0;
  int64_t hold = polite_ratectl_hold_until(&s->rc);
  if (hold > at)
    return hold - at;
  double r = polite_ratectl_rate(&s->rc, at);
  if (!s->rate_shared && fabs(r - s->pace_rate) > s->pace_rate * 1e-3)
    retune(s, r);
  double cap = s->o.max_rate_per_s;
  if (cap > 0 && r >= cap * 0.999) {
    if (!s->at_max)
      report(s, r, "max_rate", "capped by the largest rate allowed", wall_ms);
    s->at_max = 1;
  } else {
    s->at_max = 0;
    if (r >= s->reported_rate * PROBE_REPORT_STEP)
      report(s, r, "probe", "no throttling seen: probing a higher rate",
             wall_ms);
  }
  if (s->rate_shared)
    return 0; /* the budget paces at the shared rate */
  *next = s->pace;
  return polite_gcra_admit(next, at, cost);
}

void polite__sched_rate_commit(polite__sched *s, const polite_gcra *next) {
  if (s->rate_on && !s->rate_shared)
    s->pace = *next;
}

double polite__sched_rate_now(const polite__sched *s) {
  const polite_budget *b = s->o.budget;
  double fixed = b && b->cfg.rate_per_s > 0 ? b->cfg.rate_per_s : 0;
  if (!s->rate_on)
    return fixed;
  double learned = s->rate_shared ? s->shared.rate_per_s : s->pace_rate;
  if (!(learned > 0))
    return fixed;
  return fixed > 0 && fixed < learned ? fixed : learned;
}

void polite__sched_observe_start(polite__sched *s, const job *j,
                                 const polite__now *now) {
  (void)j;
  if (!s->rate_on)
    return;
  polite_ratectl_on_start(&s->rc, now->mono_us);
  publish(s, now->mono_us);
}

void polite__sched_observe_response(polite__sched *s, const job *j,
                                    const polite__response *r,
                                    const polite_decision *d,
                                    int64_t latency_us,
                                    const polite__now *now) {
  (void)latency_us;
  if (!s->rate_on)
    return;
  int64_t t = now->mono_us;
  polite_rate_plan plan;
  int has =
      r->status && r->headers && polite_rate_plan_headers(r->headers, t, &plan);
  polite_ratectl_response in = {
      t, j->attempt_start_us, r->status,
      d->server_wait_ms >= 0 ? d->server_wait_ms * 1000 : -1,
      has ? &plan : NULL};
  polite_ratectl_cause cut = polite_ratectl_on_response(&s->rc, &in);
  double rate = polite_ratectl_rate(&s->rc, t);
  if (cut == POLITE_CUT_THROTTLE) {
    s->st.rate_cuts_throttle++;
    char msg[96];
    snprintf(msg, sizeof msg,
             "a %d answer: cut below the rate that got "
             "through",
             r->status);
    report(s, rate, "throttle", msg, now->wall_ms);
  } else if (cut == POLITE_CUT_HEADERS) {
    s->st.rate_cuts_headers++;
    report(s, rate, "headers", has ? plan.why : "the server's headers",
           now->wall_ms);
  } else if (has && plan.rate_per_s > 0 &&
             fabs(rate - s->reported_rate) > s->reported_rate * 0.02) {
    report(s, rate, "headers", plan.why, now->wall_ms);
  }
  if (!s->rate_shared && fabs(rate - s->pace_rate) > s->pace_rate * 1e-3)
    retune(s, rate);
  publish(s, t);
}
