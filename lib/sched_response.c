/* polite scheduler: what happens after a response (the decision, account
 * pauses, the attempt report, the final result) and max-wait's refused
 * accounts. Pure, like the rest of the scheduler. */
#include "sched_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Refused accounts kept at once (one entry each): a hostile upstream can
 * name any number of hosts, and each admission looks through them. Beyond
 * it each request ends on its own answer instead. */
#define MAX_REFUSALS 4096

/* ---- max-wait: accounts not waited for ------------------------------------
 */

const refusal *polite__sched_refused(const polite__sched *s, const char *key,
                                     int64_t now) {
  for (const refusal *r = s->refused; r; r = r->next)
    if (polite__sched_same_key(r->key, key) && now < r->until_us)
      return r;
  return NULL;
}

/* Ends j, whose account is refused by r. */
void polite__sched_end_refused(polite__sched *s, job *j, const refusal *r,
                               int64_t now) {
  char msg[200];
  if (r->out == POLITE_OUT_QUOTA_EXHAUSTED)
    snprintf(msg, sizeof msg,
             "the server said this account's quota is spent; not sending "
             "to it for %lld s",
             (long long)((r->until_us - now + 999999) / 1000000));
  else
    snprintf(msg, sizeof msg,
             "the server asked this account to wait %lld s, longer than "
             "max-wait (%lld s); not waiting and not sending early",
             (long long)(r->wait_ms / 1000),
             (long long)(s->o.max_wait_ms / 1000));
  j->retry_after_us = r->until_us - now;
  j->pause_status = r->status;
  polite__sched_finish(s, j, r->out, j->status, msg, now, NULL, NULL);
}

/* Drops the refusals that are over at now. */
static void prune_refusals(polite__sched *s, int64_t now) {
  for (refusal **p = &s->refused; *p;) {
    refusal *r = *p;
    if (now < r->until_us) {
      p = &r->next;
      continue;
    }
    *p = r->next;
    free(r->key);
    free(r);
    s->n_refused--;
  }
}

/* The refusal of key's account (a live one, or a new one), or NULL when
 * out of memory or at MAX_REFUSALS. */
static refusal *refusal_for(polite__sched *s, const char *key, int64_t now) {
  prune_refusals(s, now);
  for (refusal *r = s->refused; r; r = r->next)
    if (polite__sched_same_key(r->key, key))
      return r;
  if (s->n_refused >= MAX_REFUSALS)
    return NULL;
  refusal *r = calloc(1, sizeof *r);
  if (r == NULL || (key && (r->key = strdup(key)) == NULL)) {
    free(r);
    return NULL;
  }
  r->next = s->refused;
  s->refused = r;
  s->n_refused++;
  return r;
}

/* The server asked key's account to wait wait_ms, longer than max_wait
 * (out WAIT_TOO_LONG), or said its quota is spent (QUOTA_EXHAUSTED, for
 * wait_ms): the pause is not taken, and every request of the account
 * (waiting now or read later, until then) ends with `out` at once. A
 * later refusal of the same account never shortens an earlier one. */
static void refuse_account(polite__sched *s, const char *key, int64_t wait_ms,
                           polite_outcome out, int status, int64_t now) {
  refusal *r = refusal_for(s, key, now);
  if (r == NULL)
    return; /* each request then ends on its own answer */
  int64_t w =
      wait_ms > (INT64_MAX - now) / 1000 ? (INT64_MAX - now) / 1000 : wait_ms;
  if (r->until_us != 0 && now + w * 1000 <= r->until_us)
    return;
  r->until_us = now + w * 1000;
  r->wait_ms = wait_ms;
  r->out = out;
  r->status = status;
  /* Take the account's waiting requests out (O(n), once per refusal);
   * the others keep their places. */
  polite__heap all = s->waiting;
  memset(&s->waiting, 0, sizeof s->waiting);
  for (size_t i = 0; i < all.n; i++) {
    const polite__heap_entry *e = &all.v[i];
    job *j = e->item;
    if (!polite__sched_same_key(j->key, key) &&
        polite__heap_push(&s->waiting, e->due, e->seq, j) == 0)
      continue;
    polite__sched_end_refused(s, j, r, now);
  }
  polite__heap_free(&all);
}

/* ---- responses
 * ---------------------------------------------------------------- */

static polite_outcome outcome_of(polite_reason r) {
  static const struct {
    polite_reason reason;
    polite_outcome outcome;
  } map[] = {
      {POLITE_R_OK, POLITE_OUT_OK},
      {POLITE_R_HTTP_ERROR, POLITE_OUT_HTTP_ERROR},
      {POLITE_R_RETRIES_EXHAUSTED, POLITE_OUT_RETRIES_EXHAUSTED},
      {POLITE_R_DEADLINE, POLITE_OUT_DEADLINE},
      {POLITE_R_QUOTA_EXHAUSTED, POLITE_OUT_QUOTA_EXHAUSTED},
      {POLITE_R_NOT_RETRIED_UNSAFE, POLITE_OUT_NOT_RETRIED_UNSAFE},
      {POLITE_R_WAIT_TOO_LONG, POLITE_OUT_WAIT_TOO_LONG},
      {POLITE_R_TLS_ERROR, POLITE_OUT_TLS_ERROR},
  };
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (map[i].reason == r)
      return map[i].outcome;
  return POLITE_OUT_NETWORK_ERROR;
}

/* Records an account pause (for the summary and the progress line). */
static void note_pause(polite__sched *s, int64_t now, int64_t until) {
  int64_t from = s->pause_end_us > now ? s->pause_end_us : now;
  if (until > from) {
    s->st.paused_ms += (until - from) / 1000;
    s->pause_end_us = until;
  }
}

/* Counts one 429/503 answer under its sender and limit kind (d NULL: the
 * diagnosis could not be made, counted as unknown). Distinct pairs beyond
 * the table's size are counted together as "other". */
static void count_throttled(polite__sched *s, const polite_diagnosis *d) {
  const char *comp = d ? polite_diagnosis_component(d) : "unknown";
  polite_limit_kind lim = d ? d->limit : POLITE_LIMIT_UNKNOWN;
  size_t n = s->st.n_throttled;
  for (size_t i = 0; i < n; i++)
    if (s->throttled[i].limit == lim &&
        strcmp(s->throttled[i].component, comp) == 0) {
      s->throttled[i].count++;
      return;
    }
  if (n == POLITE_BATCH_MAX_THROTTLED) { /* the last entry is "other" */
    s->throttled[n - 1].count++;
    return;
  }
  if (n == POLITE_BATCH_MAX_THROTTLED - 1) {
    comp = "other";
    lim = POLITE_LIMIT_UNKNOWN;
  }
  polite_throttle_count *t = &s->throttled[n];
  snprintf(t->component, sizeof t->component, "%s", comp);
  t->limit = lim;
  t->count = 1;
  s->st.n_throttled = n + 1;
}

/* The largest random spread after a server wait for j: spread_ms, but for
 * a gateway's request (submitted, j->acct) at most one start interval of
 * its account when a rate paces its starts (given or learned). The spread
 * keeps workers that were throttled together from resuming at the same
 * instant; a paced account's starts after a pause are admitted one
 * interval apart however many wait (the budget's TAT is set to the
 * pause's end, in every backend), so a longer spread only kept the whole
 * account idle: 125 ms on average per 429 at 250 ms, about 1% of a 15 s
 * run at 40/s for each pause. `polite run` keeps the whole spread: on the
 * simulated zoo the same cap moved rows both ways (69 better, 44 worse
 * by more than 0.01 x, one new miss), a change of the learned rate's
 * results to be made with its owner (docs/decisions.md, Waiting). */
static int64_t spread_of(const polite__sched *s, const job *j) {
  int64_t spread = s->o.spread_ms > 0 ? s->o.spread_ms : 0;
  double rate = j->acct ? polite__sched_rate_now(s, j) : 0;
  if (rate > 0 && 1000.0 / rate < (double)spread)
    spread = (int64_t)ceil(1000.0 / rate);
  return spread;
}

/* Asks polite_decide about j's response r at now. */
static void decide(polite__sched *s, const job *j, const polite__response *r,
                   int64_t now, polite_decision *d) {
  int64_t left = polite__sched_time_left(s, j, now);
  polite_decide_in in;
  memset(&in, 0, sizeof in);
  in.method = j->method;
  in.has_idempotency_key = j->has_key;
  in.retry_unsafe = s->o.retry_unsafe;
  in.retry_writes = s->o.retry_writes;
  in.status = r->status;
  in.headers = r->status ? r->headers : NULL;
  in.body_quota = r->status >= 400 && r->body
                      ? polite_body_quota_hint(r->body, r->body_len)
                      : 0;
  in.attempt = j->attempts;
  in.max_attempts = s->o.max_attempts;
  if (j->req->max_attempts && j->req->max_attempts < in.max_attempts)
    in.max_attempts = j->req->max_attempts; /* e.g. a body not kept */
  in.time_left_ms = left == NO_TIME ? -1 : (left > 0 ? left / 1000 : 0);
  in.prompt_retry_used = j->prompt_used;
  in.backoff = s->o.backoff;
  in.spread_ms = spread_of(s, j);
  in.rnd = polite_rand_next(&s->rng);
  in.max_wait_ms = s->o.max_wait_ms;
  in.failure = r->failure;
  polite_decide(&in, d);
  /* A transfer ended by the timeout that was cut to the deadline, or any
   * failure once the deadline has passed, is the deadline; a TLS failure
   * stays one (it says what to fix). */
  if (d->action != POLITE_DONE && d->reason != POLITE_R_TLS_ERROR &&
      ((r->timed_out && j->deadline_clamped) ||
       (left != NO_TIME && left <= 0))) {
    d->action = POLITE_STOP;
    d->reason = POLITE_R_DEADLINE;
    d->why = "the deadline passed during the attempt";
  }
}

void polite__sched_report_attempt(polite__sched *s, const job *j,
                                  const polite__response *r,
                                  const polite_decision *d,
                                  const polite_diagnosis *diag, int64_t wall) {
  if (s->o.on_attempt == NULL)
    return;
  polite_attempt a;
  memset(&a, 0, sizeof a);
  a.req = j->req;
  a.method = j->method;
  a.attempt = j->attempts;
  a.start_wall_ms = j->attempt_start_wall;
  a.end_wall_ms = wall;
  a.status = r->status;
  a.retry_after = r->retry_after;
  a.request_id = r->request_id;
  a.request_id_header = r->request_id_header;
  a.error = r->error;
  a.decision = *d;
  a.diagnosis = diag;
  s->o.on_attempt(s->o.ud, &a);
}

/* The account is throttled: pause the whole budget, even when this request
 * gives up (STOP), so the others hold off too. A retry's wait already
 * carries the spread; otherwise draw one. A wait longer than max_wait is
 * not written to the budget: the account is refused instead. Returns the
 * submitted requests' account to sweep (pinned), or NULL. */
static polite__acct *account_pause(polite__sched *s, const job *j,
                                   const polite_decision *d, int64_t now) {
  if (!d->account_pause || d->server_wait_ms <= 0)
    return NULL;
  if (s->o.max_wait_ms > 0 && d->server_wait_ms > s->o.max_wait_ms) {
    refuse_account(s, j->key, d->server_wait_ms, POLITE_OUT_WAIT_TOO_LONG,
                   j->status, now);
    return NULL;
  }
  int64_t spread = spread_of(s, j);
  int64_t pause_ms =
      d->action == POLITE_RETRY
          ? d->wait_ms
          : d->server_wait_ms +
                polite_rand_uniform(polite_rand_next(&s->rng), spread);
  if (pause_ms < d->server_wait_ms)
    pause_ms = d->server_wait_ms;
  int64_t until = now + pause_ms * 1000;
  polite_budget_pause_until(s->o.budget, j->key, now, until);
  note_pause(s, now, until);
  return polite__sched_acct_paused(s, j->key, until, j->status);
}

/* With quota_per_account, a spent quota stops j's account alone: until the
 * reset the answer states, else for quota_stop_ms, every request of it
 * ends quota_exhausted at once, never sent (the batch's default is the
 * run-wide stop in polite__sched_finish). */
static void account_quota(polite__sched *s, job *j, const polite_decision *d,
                          int64_t now) {
  if (d->reason != POLITE_R_QUOTA_EXHAUSTED || !s->o.quota_per_account)
    return;
  int64_t w = d->server_wait_ms > 0 ? d->server_wait_ms : s->o.quota_stop_ms;
  if (w <= 0)
    w = POLITE_ENGINE_QUOTA_STOP_DEFAULT_MS;
  j->retry_after_us = w * 1000;
  j->pause_status = j->status;
  refuse_account(s, j->key, w, POLITE_OUT_QUOTA_EXHAUSTED, j->status, now);
}

/* The final error message of a request that did not end ok. */
static const char *final_error(polite_outcome out, const polite__response *r,
                               const polite_decision *d, char *buf,
                               size_t len) {
  if (out == POLITE_OUT_OK)
    return NULL;
  if (out != POLITE_OUT_NETWORK_ERROR && r->status != 0)
    return d->why;
  if (r->error)
    snprintf(buf, len, "%s (%s)", r->error, d->why ? d->why : "");
  else
    snprintf(buf, len, "%s", d->why ? d->why : "");
  return buf;
}

/* Everything an answer does before the request goes on: the counters, the
 * diagnosis, the decision (in *d), the attempt report, the learned rate,
 * the account's pause and quota stop. j is still in flight. Returns the
 * account whose queue the pause sweeps (pinned; see conclude), or NULL. */
static polite__acct *respond(polite__sched *s, job *j,
                             const polite__response *r, const polite__now *now,
                             polite_decision *d) {
  int64_t t = now->mono_us;
  int64_t latency = t - j->attempt_start_us;
  s->st.latency_sum_us += latency;
  j->status = r->status;
  if (r->status == 429)
    s->st.n429++;
  else if (r->status == 503)
    s->st.n503++;
  const polite_diagnosis *diag = NULL;
  if (r->status == 429 || r->status == 503) {
    if (r->diag) {
      polite_diagnosis_finish(r->diag, r->body, r->body_len);
      diag = r->diag;
    }
    count_throttled(s, diag);
  }
  decide(s, j, r, t, d);
  polite__sched_report_attempt(s, j, r, d, diag, now->wall_ms);
  polite__sched_observe_response(s, j, r, d, latency, now);
  polite__acct *sweep = account_pause(s, j, d, t);
  account_quota(s, j, d, t);
  /* A server wait that ended the request is when to ask again. */
  if (d->action == POLITE_STOP && d->server_wait_ms > 0 &&
      j->retry_after_us < 0 &&
      (d->reason == POLITE_R_WAIT_TOO_LONG || d->reason == POLITE_R_DEADLINE)) {
    j->retry_after_us = d->server_wait_ms * 1000;
    j->pause_status = d->account_pause ? r->status : 0;
  }
  return sweep;
}

/* With j out of flight: waits for its retry, or ends with the decision's
 * outcome. */
static void settle(polite__sched *s, job *j, const polite__response *r,
                   const polite_decision *d, int64_t t) {
  if (d->action == POLITE_RETRY) {
    if (s->cancelling || s->st.quota_stop) {
      polite__sched_finish(s, j, POLITE_OUT_CANCELLED, r->status,
                           s->cancelling ? "interrupted before the retry"
                                         : "not retried: the quota is spent",
                           t, r, NULL);
      return;
    }
    if (d->reason == POLITE_R_RETRY_PROMPT)
      j->prompt_used = 1;
    s->st.retry_wait_ms += d->wait_ms;
    if (polite__sched_wait_push(s, j, t + d->wait_ms * 1000) != 0)
      polite__sched_finish(s, j, POLITE_OUT_CANCELLED, r->status, s->errstr, t,
                           r, NULL);
    return;
  }
  polite_outcome out = outcome_of(d->reason);
  char msg[512];
  const char *err = final_error(out, r, d, msg, sizeof msg);
  /* Redirects are not followed; the result says where they pointed. */
  char *loc = r->status >= 300 && r->status < 400 && r->location
                  ? polite_redact_url(r->location)
                  : NULL;
  polite__sched_finish(s, j, out, r->status, err, t, r, loc);
  free(loc);
}

/* After respond: settles j, then the pause respond found sweeps the
 * account's queue, j's retry included. */
static void conclude(polite__sched *s, job *j, const polite__response *r,
                     const polite_decision *d, polite__acct *sweep, int64_t t) {
  settle(s, j, r, d, t);
  polite__sched_acct_sweep(s, sweep, t);
}

/* Takes j out of flight at t and gives its slot back. */
static void land(polite__sched *s, job *j, int64_t t) {
  /* Integrate in-flight time up to now while this transfer still counts:
   * responses arrive between steps. */
  polite__sched_update_stats(s, t);
  polite__sched_inflight_remove(s, j);
  polite_budget_release(s->o.budget, j->key, 1);
}

void polite__sched_response(polite__sched *s, job *j, const polite__response *r,
                            const polite__now *now) {
  land(s, j, now->mono_us);
  polite_decision d;
  polite__acct *sweep = respond(s, j, r, now, &d);
  conclude(s, j, r, &d, sweep, now->mono_us);
}

int polite__sched_answer(polite__sched *s, job *j, const polite__response *r,
                         int relay, const polite__now *now) {
  int64_t t = now->mono_us;
  polite__sched_update_stats(s, t);
  polite_decision d;
  polite__acct *sweep = respond(s, j, r, now, &d);
  if (d.action != POLITE_RETRY && r->status != 0 && relay) {
    j->relaying = 1;
    j->final_out = outcome_of(d.reason);
    j->final_why = j->final_out == POLITE_OUT_OK ? NULL : d.why;
    j->final_loc = r->status >= 300 && r->status < 400 && r->location
                       ? polite_redact_url(r->location)
                       : NULL;
    polite__sched_acct_sweep(s, sweep, t);
    return 1;
  }
  land(s, j, t);
  if (d.action != POLITE_RETRY && r->status != 0) {
    /* A final answer whose body broke off before it could be relayed. */
    char msg[512];
    snprintf(msg, sizeof msg,
             "the answer (%d) broke off before it could be "
             "relayed: %s",
             r->status, r->error ? r->error : "no body");
    polite__sched_finish(s, j, POLITE_OUT_NETWORK_ERROR, r->status, msg, t,
                         NULL, NULL);
    polite__sched_acct_sweep(s, sweep, t);
    return 0;
  }
  conclude(s, j, r, &d, sweep, t);
  return 0;
}

void polite__sched_relayed(polite__sched *s, job *j, const char *error,
                           const polite__now *now) {
  int64_t t = now->mono_us;
  land(s, j, t);
  char msg[512];
  polite_outcome out = j->final_out;
  const char *why = j->final_why;
  if (error) {
    snprintf(msg, sizeof msg, "the relay of the answer broke off: %s", error);
    out = POLITE_OUT_NETWORK_ERROR;
    why = msg;
  }
  polite__sched_finish(s, j, out, j->status, why, t, NULL, j->final_loc);
}
