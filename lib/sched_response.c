/* polite scheduler: what happens after a response (the decision, account
 * pauses, the attempt report, the final result) and max-wait's refused
 * accounts. Pure, like the rest of the scheduler. */
#include "sched_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  snprintf(msg, sizeof msg,
           "the server asked this account to wait %lld s, longer than "
           "max-wait (%lld s); not waiting and not sending early",
           (long long)(r->wait_ms / 1000),
           (long long)(s->o.max_wait_ms / 1000));
  polite__sched_finish(s, j, POLITE_OUT_WAIT_TOO_LONG, j->status, msg, now,
                       NULL, NULL);
}

/* The server asked j's account to wait wait_ms, longer than max_wait: the
 * pause is not taken, and every request of the account (waiting now or
 * read later, until the server's time) ends wait_too_long at once. */
static void refuse_account(polite__sched *s, const char *key, int64_t wait_ms,
                           int64_t now) {
  refusal *r = calloc(1, sizeof *r);
  if (r == NULL || (key && (r->key = strdup(key)) == NULL)) {
    free(r);
    return; /* each request then ends on its own answer */
  }
  int64_t w =
      wait_ms > (INT64_MAX - now) / 1000 ? (INT64_MAX - now) / 1000 : wait_ms;
  r->until_us = now + w * 1000;
  r->wait_ms = wait_ms;
  r->next = s->refused;
  s->refused = r;
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

/* Asks polite_decide about j's response r at now. */
static void decide(polite__sched *s, const job *j, const polite__response *r,
                   int64_t now, polite_decision *d) {
  int64_t left = polite__sched_time_left(s, j, now);
  polite_decide_in in;
  memset(&in, 0, sizeof in);
  in.method = j->method;
  in.has_idempotency_key = j->has_key;
  in.retry_unsafe = s->o.retry_unsafe;
  in.status = r->status;
  in.headers = r->status ? r->headers : NULL;
  in.body_quota = r->status >= 400 && r->body
                      ? polite_body_quota_hint(r->body, r->body_len)
                      : 0;
  in.attempt = j->attempts;
  in.max_attempts = s->o.max_attempts;
  in.time_left_ms = left == NO_TIME ? -1 : (left > 0 ? left / 1000 : 0);
  in.prompt_retry_used = j->prompt_used;
  in.backoff = s->o.backoff;
  in.spread_ms = s->o.spread_ms;
  in.rnd = polite_rand_next(&s->rng);
  in.max_wait_ms = s->o.max_wait_ms;
  polite_decide(&in, d);
  /* A transfer ended by the timeout that was cut to the deadline, or any
   * failure once the deadline has passed, is the deadline. */
  if (d->action != POLITE_DONE && ((r->timed_out && j->deadline_clamped) ||
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
 * not written to the budget: the account is refused instead. */
static void account_pause(polite__sched *s, const job *j,
                          const polite_decision *d, int64_t now) {
  if (!d->account_pause || d->server_wait_ms <= 0)
    return;
  if (s->o.max_wait_ms > 0 && d->server_wait_ms > s->o.max_wait_ms) {
    refuse_account(s, j->key, d->server_wait_ms, now);
    return;
  }
  int64_t spread = s->o.spread_ms > 0 ? s->o.spread_ms : 0;
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

void polite__sched_response(polite__sched *s, job *j, const polite__response *r,
                            const polite__now *now) {
  int64_t t = now->mono_us;
  /* Integrate in-flight time up to now while this transfer still counts:
   * responses arrive between steps. */
  polite__sched_update_stats(s, t);
  polite__sched_inflight_remove(s, j);
  polite_budget_release(s->o.budget, j->key, 1);
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
  polite_decision d;
  decide(s, j, r, t, &d);
  polite__sched_report_attempt(s, j, r, &d, diag, now->wall_ms);
  polite__sched_observe_response(s, j, r, &d, latency, now);
  account_pause(s, j, &d, t);

  if (d.action == POLITE_RETRY) {
    if (s->cancelling || s->st.quota_stop) {
      polite__sched_finish(s, j, POLITE_OUT_CANCELLED, r->status,
                           s->cancelling ? "interrupted before the retry"
                                         : "not retried: the quota is spent",
                           t, r, NULL);
      return;
    }
    if (d.reason == POLITE_R_RETRY_PROMPT)
      j->prompt_used = 1;
    s->st.retry_wait_ms += d.wait_ms;
    if (polite__sched_wait_push(s, j, t + d.wait_ms * 1000) != 0)
      polite__sched_finish(s, j, POLITE_OUT_CANCELLED, r->status, s->errstr, t,
                           r, NULL);
    return;
  }
  polite_outcome out = outcome_of(d.reason);
  char msg[512];
  const char *err = final_error(out, r, &d, msg, sizeof msg);
  /* Redirects are not followed; the result says where they pointed. */
  char *loc = r->status >= 300 && r->status < 400 && r->location
                  ? polite_redact_url(r->location)
                  : NULL;
  polite__sched_finish(s, j, out, r->status, err, t, r, loc);
  free(loc);
}
