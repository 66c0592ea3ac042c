/* polite scheduler: the pure half of the batch engine. Jobs, the waiting
 * set, budget admission, decisions, deadlines, pauses, cancel and grace,
 * quota stop and heartbeat, all on a `now` passed in (see scheduler.h). */
#include "scheduler.h"

#include "sched_internal.h"

#include "http_syntax.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How often on_tick runs at least, and the longest sleep between turns (a
 * cancel from a signal handler is seen within it) while on_tick or o.next
 * is set or a waiting request has no due time of its own (needs_tick). */
#define TICK_US 100000
/* The longest sleep between turns otherwise: a cancel from a signal
 * handler is still seen within it, and the wake is never "no time". */
#define IDLE_US 1000000
/* Lookahead past blocked requests with one account per host, so one busy
 * host does not hold up the others. */
#define HOST_LOOKAHEAD 64

/* ---- life cycle ---------------------------------------------------------- */

/* The jitter seed: o->seed when given, else 64 bits from o->env's random
 * source (clock.c supplies the real one when o->env has none). Should that
 * source fail, the seed is made from where s lives (different per process
 * under address randomization; not secret, and jitter needs no secret), so
 * that the scheduler reads neither a clock nor a random source of its own. */
static uint64_t jitter_seed(const polite_batch_options *o, const void *s) {
  uint64_t seed = o->seed;
  if (seed == 0 &&
      polite_env_random_bytes(o->env, &seed, sizeof seed) != POLITE_OK)
    seed = polite__fnv1a(&s, sizeof s);
  return seed;
}

polite__sched *polite__sched_new(const polite_batch_options *o,
                                 const polite__sched_io *io, char *err,
                                 size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (o == NULL || o->on_result == NULL || o->max_attempts < 1 || io == NULL ||
      io->start == NULL) {
    if (err)
      snprintf(err, errlen,
               "batch options need on_result and max_attempts >= 1");
    return NULL;
  }
  if (o->max_host_rates > POLITE_BATCH_MAX_HOST_RATES_LIMIT) {
    if (err)
      snprintf(err, errlen, "max_host_rates %u is above the limit of %u",
               o->max_host_rates, POLITE_BATCH_MAX_HOST_RATES_LIMIT);
    return NULL;
  }
  polite__sched *s = calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  s->o = *o;
  s->io = *io;
  if (s->o.max_pending == 0) {
    unsigned c = o->budget ? o->budget->cfg.concurrency : 0;
    s->o.max_pending = (c ? 2 * c : 64) + 64;
  }
  s->intervals = malloc(POLITE_BATCH_MAX_INTERVALS * sizeof(int64_t));
  if (s->intervals == NULL) {
    if (err)
      snprintf(err, errlen, "out of memory");
    free(s);
    return NULL;
  }
  s->rng = jitter_seed(o, s);
  s->st.first_start_us = -1;
  s->st.last_start_us = -1;
  s->st.intervals_us = s->intervals;
  s->st.throttled = s->throttled;
  s->last_start_abs_us = -1;
  s->planned_us = NO_TIME;
  s->outage_since_us = NO_TIME;
  return s;
}

static void job_free(job *j) {
  if (j == NULL)
    return;
  polite_request_free(j->req);
  free(j->key);
  free(j->final_loc);
  free(j);
}

void polite__sched_free(polite__sched *s) {
  if (s == NULL)
    return;
  for (job *j = s->inflight, *n; j; j = n) {
    n = j->next;
    if (s->io.abort)
      s->io.abort(s->io.ud, j);
    job_free(j);
  }
  job *j;
  while ((j = polite__heap_pop(&s->waiting)) != NULL)
    job_free(j);
  polite__heap_free(&s->waiting);
  for (refusal *r = s->refused, *n; r; r = n) {
    n = r->next;
    free(r->key);
    free(r);
  }
  polite__sched_rate_free(s);
  polite__sched_acct_free(s);
  free(s->intervals);
  free(s);
}

void polite__sched_begin(polite__sched *s, const polite__now *now) {
  s->t0_us = now->mono_us;
  s->last_now_us = now->mono_us;
  s->last_heartbeat_us = now->mono_us;
  s->last_tick_us = now->mono_us - TICK_US; /* the first turn ticks */
  /* The pauses this engine writes are bounded by its own max-wait (a wait
   * longer than that is refused, never written), so the budget's clamp
   * must not cut one it does write. */
  if (s->o.budget)
    polite_budget_set_max_wait(s->o.budget,
                               s->o.max_wait_ms > 0 ? s->o.max_wait_ms : -1);
  polite__sched_rate_begin(s, now);
  s->run_deadline_us = s->o.run_deadline_ms >= 0
                           ? now->mono_us + s->o.run_deadline_ms * 1000
                           : NO_TIME;
}

void polite__sched_cancel(polite__sched *s) {
  s->cancel_flag = 1;
}

const polite_batch_stats *polite__sched_stats(const polite__sched *s) {
  return &s->st;
}

const char *polite__sched_errstr(const polite__sched *s) {
  return s->errstr;
}

unsigned polite__sched_in_flight(const polite__sched *s) {
  return s->st.in_flight;
}

/* ---- bookkeeping --------------------------------------------------------- */

int polite__sched_same_key(const char *a, const char *c) {
  return a == NULL || c == NULL ? a == c : strcmp(a, c) == 0;
}

/* Puts j in the waiting set at due; out of memory is fatal for the run. */
int polite__sched_wait_push(polite__sched *s, job *j, int64_t due) {
  if (polite__heap_push(&s->waiting, due, j->seq, j) == 0)
    return 0;
  s->fatal = POLITE_ENOMEM;
  snprintf(s->errstr, sizeof s->errstr, "out of memory");
  return -1;
}

static void inflight_add(polite__sched *s, job *j) {
  j->prev = NULL;
  j->next = s->inflight;
  if (s->inflight)
    s->inflight->prev = j;
  s->inflight = j;
  if (++s->st.in_flight > s->st.peak_in_flight)
    s->st.peak_in_flight = s->st.in_flight;
  if (j->acct)
    j->acct->inflight++;
}

void polite__sched_inflight_remove(polite__sched *s, job *j) {
  if (j->prev)
    j->prev->next = j->next;
  else
    s->inflight = j->next;
  if (j->next)
    j->next->prev = j->prev;
  j->prev = j->next = NULL;
  s->st.in_flight--;
  if (j->acct)
    j->acct->inflight--;
}

/* Time left before the request's or the run's deadline, or NO_TIME. */
int64_t polite__sched_time_left(const polite__sched *s, const job *j,
                                int64_t now) {
  int64_t end = j->deadline_us;
  if (s->run_deadline_us < end)
    end = s->run_deadline_us;
  return end == NO_TIME ? NO_TIME : end - now;
}

/* Emits the final result of j and frees it. r is the last response (its
 * body goes in the result) or NULL; location is already redacted. */
void polite__sched_finish(polite__sched *s, job *j, polite_outcome out,
                          int status, const char *error, int64_t now,
                          const polite__response *r, const char *location) {
  polite_result res;
  memset(&res, 0, sizeof res);
  res.req = j->req;
  res.method = j->method;
  res.outcome = out;
  res.status = status;
  res.attempts = j->attempts;
  res.elapsed_ms =
      j->first_start_us >= 0 ? (now - j->first_start_us) / 1000 : 0;
  if (r) {
    res.body = r->body;
    res.body_len = r->body_len;
    res.body_truncated = r->body_truncated;
  }
  res.error = error;
  res.idempotency_key = j->idem_sent;
  res.location = location;
  res.retry_after_ms =
      j->retry_after_us >= 0 ? (j->retry_after_us + 999) / 1000 : -1;
  res.pause_status = j->pause_status;
  res.relayed = j->relaying;
  if (out == POLITE_OUT_QUOTA_EXHAUSTED && !s->o.quota_per_account)
    s->st.quota_stop = 1;
  s->st.results++;
  s->st.by_outcome[out]++;
  s->o.on_result(s->o.ud, &res);
  polite__sched_acct_put(s, j);
  job_free(j);
}

/* Ends every waiting request with `out` (cancel, quota stop, run deadline). */
static void flush_waiting(polite__sched *s, polite_outcome out, const char *why,
                          int64_t now) {
  job *j;
  while ((j = polite__heap_pop(&s->waiting)) != NULL)
    polite__sched_finish(s, j, out, j->status, why, now, NULL, NULL);
}

/* Aborts the transfers still running (cancel grace over, fatal error).
 * Each was a network attempt that started, so each is reported (on_attempt:
 * no status, reason "cancelled", cut at now) like every other attempt
 * before its request ends: the attempt log and the journal then count
 * every attempt the summary counts. */
static void abort_inflight(polite__sched *s, const polite__now *now) {
  job *list = s->inflight; /* detached first: finish frees each job */
  s->inflight = NULL;
  for (job *j = list, *n; j; j = n) {
    n = j->next;
    j->prev = j->next = NULL;
    s->st.in_flight--;
    if (s->io.abort)
      s->io.abort(s->io.ud, j);
    if (j->acct)
      j->acct->inflight--;
    polite_budget_release(s->o.budget, j->key, 1);
    polite__response r;
    memset(&r, 0, sizeof r);
    r.error = "cut in flight: the run was stopped before the answer came";
    polite_decision d;
    memset(&d, 0, sizeof d);
    d.action = POLITE_STOP;
    d.reason = POLITE_R_CANCELLED;
    d.server_wait_ms = -1;
    d.why = "the run was stopped while the attempt was in flight";
    polite__sched_report_attempt(s, j, &r, &d, NULL, now->wall_ms);
    s->st.latency_sum_us += now->mono_us - j->attempt_start_us;
    polite__sched_finish(s, j, POLITE_OUT_CANCELLED, 0,
                         "interrupted while the attempt was in flight",
                         now->mono_us, NULL, NULL);
  }
}

/* The account key of a URL: its host (lower-cased), for host scope. */
static char *host_key(const char *url) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  size_t n = strcspn(p, "/?#");
  const char *at = memchr(p, '@', n);
  if (at) {
    n -= (size_t)(at + 1 - p);
    p = at + 1;
  }
  char *k = strndup(p, n);
  if (k)
    for (char *c = k; *c; c++)
      if (*c >= 'A' && *c <= 'Z')
        *c = (char)(*c - 'A' + 'a');
  return k;
}

/* ---- starting an attempt ---------------------------------------------------
 */

/* Counts a start at now in the interval statistics. Gaps that contain a
 * server pause say nothing about the planned spacing; they are left out. */
static void count_start(polite__sched *s, const job *j, int64_t now) {
  if (j->attempts == 1)
    s->st.first_attempts++;
  else
    s->st.retries++;
  s->st.attempts++;
  s->st.units += j->req->cost ? j->req->cost : 1;
  if (s->last_start_abs_us >= 0) {
    int64_t gap = now - s->last_start_abs_us;
    if (s->pause_end_us > s->last_start_abs_us) {
      s->st.paused_gaps++;
    } else {
      s->st.unpaused_gap_sum_us += gap;
      s->st.unpaused_gaps++;
      if (s->st.n_intervals < POLITE_BATCH_MAX_INTERVALS)
        s->intervals[s->st.n_intervals++] = gap;
    }
  }
  s->last_start_abs_us = now;
  if (s->st.first_start_us < 0)
    s->st.first_start_us = now - s->t0_us;
  s->st.last_start_us = now - s->t0_us;
}

/* The transfer timeout of j's next attempt: timeout_ms, cut so the attempt
 * never outlives the deadline (a transfer still running when the deadline
 * passes ends with outcome `deadline`). Rounded up: a timeout that fires
 * before the deadline would let the next request start in the last
 * sub-millisecond of the run. */
static void set_timeout(const polite__sched *s, job *j, int64_t now) {
  int64_t tmo = s->o.timeout_ms > 0 ? s->o.timeout_ms : 0;
  int64_t left = polite__sched_time_left(s, j, now);
  j->deadline_clamped = 0;
  if (left != NO_TIME) {
    int64_t lm = left > 0 ? (left + 999) / 1000 : 1;
    if (tmo == 0 || lm <= tmo) {
      tmo = lm;
      j->deadline_clamped = 1;
    }
  }
  j->timeout_ms = tmo;
}

/* Starts j's next attempt; the caller holds a budget slot for it. Ends j
 * (and gives the slot back) when the start is vetoed or fails. */
static void start_attempt(polite__sched *s, job *j, const polite__now *now) {
  /* Reported before anything of the attempt exists, so a journal can make
   * its start durable before the first byte goes out, and a veto leaves no
   * trace in the counters. */
  if (s->o.on_attempt_start) {
    polite_attempt_start as = {j->req, j->method, j->attempts + 1, now->wall_ms,
                               j->idem_sent};
    if (s->o.on_attempt_start(s->o.ud, &as) != 0) {
      polite_budget_release(s->o.budget, j->key, 1);
      polite__sched_finish(s, j, POLITE_OUT_CANCELLED, j->status,
                           "not started: the attempt could not be recorded",
                           now->mono_us, NULL, NULL);
      return;
    }
  }
  if (j->attempts == 0) {
    j->first_start_us = now->mono_us;
    /* A submitted request's deadline already runs from its arrival. */
    if (s->o.deadline_ms >= 0 && j->deadline_us == NO_TIME)
      j->deadline_us = now->mono_us + s->o.deadline_ms * 1000;
  }
  j->attempts++;
  j->attempt_start_us = now->mono_us;
  j->attempt_start_wall = now->wall_ms;
  set_timeout(s, j, now->mono_us);
  count_start(s, j, now->mono_us);
  char err[256] = "";
  if (s->io.start(s->io.ud, j, err, sizeof err) != 0) {
    polite_budget_release(s->o.budget, j->key, 1);
    polite__sched_finish(s, j, POLITE_OUT_NETWORK_ERROR, 0,
                         err[0] ? err : "the transfer could not be started",
                         now->mono_us, NULL, NULL);
    return;
  }
  inflight_add(s, j);
  polite__sched_observe_start(s, j, now);
}

/* ---- reading the input ------------------------------------------------------
 */

static int reading_over(const polite__sched *s) {
  return s->input_done || s->cancelling || s->st.quota_stop ||
         s->run_deadline_hit || s->fatal ||
         (s->o.max_requests && s->st.read >= s->o.max_requests);
}

static int can_read(const polite__sched *s) {
  return s->o.next != NULL && !reading_over(s) && !s->fatal && !s->source_dry &&
         s->st.in_flight + s->waiting.n < s->o.max_pending;
}

job *polite__sched_job_new(polite__sched *s, polite_request *r) {
  job *j = calloc(1, sizeof *j);
  if (j == NULL)
    return NULL;
  j->req = r;
  j->method = polite_request_method(r);
  j->seq = ++s->seq;
  j->first_start_us = -1;
  j->deadline_us = NO_TIME;
  j->retry_after_us = -1;
  return j;
}

job *polite__sched_job_begin(polite__sched *s, job *j, int64_t now) {
  polite_request *r = j->req;
  if (r->error) {
    polite__sched_finish(s, j, POLITE_OUT_INVALID_INPUT, 0, r->error, now, NULL,
                         NULL);
    return NULL;
  }
  if (s->run_deadline_hit) {
    polite__sched_finish(s, j, POLITE_OUT_DEADLINE, 0,
                         "the run deadline passed", now, NULL, NULL);
    return NULL;
  }
  if (s->o.scope_host)
    j->key = host_key(r->url);
  if (r->idempotency_key) {
    j->idem_sent = r->idempotency_key;
  } else if (s->o.idempotency_auto && !polite_method_idempotent(j->method) &&
             !polite_request_has_header(r, "Idempotency-Key")) {
    if (polite_idempotency_key(s->o.env, j->idem) == 0)
      j->idem_sent = j->idem;
  }
  j->has_key =
      j->idem_sent != NULL || polite_request_has_header(r, "Idempotency-Key");
  return j;
}

/* Pulls one request from the source. Returns the new job, due now, or NULL
 * when nothing was queued. */
static job *read_one(polite__sched *s, int64_t now) {
  polite_request *r = NULL;
  int rc = s->o.next(s->o.ud, &r);
  if (rc == POLITE_EAGAIN) {
    /* Nothing now, more may come (a queue, a gateway's clients): the run
     * is not over, and the source is asked again at the next turn. */
    polite_request_free(r);
    s->source_dry = 1;
    return NULL;
  }
  if (rc <= 0 || r == NULL) {
    if (rc < 0)
      snprintf(s->errstr, sizeof s->errstr, "reading the input failed: %s",
               polite_strerror(rc));
    s->input_done = 1;
    s->st.input_done = 1;
    return NULL;
  }
  s->st.read++;
  job *j = polite__sched_job_new(s, r);
  if (j == NULL) {
    polite_request_free(r);
    s->fatal = POLITE_ENOMEM;
    snprintf(s->errstr, sizeof s->errstr, "out of memory");
    return NULL;
  }
  return polite__sched_job_begin(s, j, now);
}

/* ---- admission
 * --------------------------------------------------------------- */

/* Outcome of trying to admit one due job. */
enum { ADM_STARTED, ADM_ENDED, ADM_BLOCKED, ADM_FATAL };

static int beyond_max_wait(const polite__sched *s, int64_t w_us) {
  return s->o.max_wait_ms > 0 && w_us > s->o.max_wait_ms * 1000;
}

/* Ends j wait_too_long: `what` (followed by the wait in s) is longer than
 * max-wait. Returns ADM_ENDED. */
static int end_too_long(polite__sched *s, job *j, const char *what,
                        int64_t w_us, int64_t now) {
  char msg[200];
  snprintf(msg, sizeof msg,
           "%s %lld s, longer than max-wait (%lld s); not waiting", what,
           (long long)(w_us / 1000000), (long long)(s->o.max_wait_ms / 1000));
  j->retry_after_us = w_us;
  polite__sched_finish(s, j, POLITE_OUT_WAIT_TOO_LONG, j->status, msg, now,
                       NULL, NULL);
  return ADM_ENDED;
}

/* How often admit asks again when a wait asked for before now ends by
 * now. */
#define ASK_TRIES 8

/* Tries to start j (taken out of the waiting set) at now. BLOCKED: j is
 * not admitted yet and *wake is lowered to when to ask again (NO_TIME: a
 * release will tell); *due is set to that time when the wait is a rate or
 * a pause (it is known), and left alone for a slot. */
static int admit(polite__sched *s, job *j, const polite__now *now,
                 int64_t *wake, int64_t *due_out) {
  int64_t t = now->mono_us;
  /* Less than a millisecond before the deadline, an attempt cannot finish
   * in time: end it without spending the budget. */
  int64_t jl = polite__sched_time_left(s, j, t);
  if (jl != NO_TIME && jl < 1000) {
    polite__sched_finish(s, j, POLITE_OUT_DEADLINE, j->status,
                         "the deadline passed before the attempt could start",
                         t, NULL, NULL);
    return ADM_ENDED;
  }
  const refusal *rf = polite__sched_refused(s, j->key, t);
  if (rf) {
    polite__sched_end_refused(s, j, rf, t);
    return ADM_ENDED;
  }
  /* `cost` rate units and ONE slot, both or neither: the concurrency limit
   * counts requests, also when the rate counts tokens. Every attempt,
   * retries included, pays its cost. */
  unsigned cost = j->req->cost ? j->req->cost : 1;
  polite_gcra next;
  int64_t at = polite__sched_admission_time(s, j, t), w;
  int rc, got = polite__sched_ask(s, j, at, cost, &next, now, &w, &rc);
  /* Asked for a moment before now (admission_time's slack), a wait may end
   * by now: then ask again at its end, so that no wait ends at or before
   * now (the wake would be now: a busy loop). Each try moves `at` forward
   * and a limiter admits at the end of the wait it named, so this ends in
   * a try or two (a hold, then a rate, then a pause, each at its end). */
  for (int k = 0;
       k < ASK_TRIES &&
       (rc == POLITE_BUDGET_WAIT_RATE || rc == POLITE_BUDGET_WAIT_PAUSE) &&
       w > 0 && at + w <= t;
       k++) {
    at += w;
    got = polite__sched_ask(s, j, at, cost, &next, now, &w, &rc);
  }
  if (got == POLITE__ASK_FULL)
    return ADM_BLOCKED;
  /* The learned rate holds for what the server's headers asked (r = 0
   * until a reset): max-wait bounds that wait too. */
  if (got == POLITE__ASK_LEARNED && beyond_max_wait(s, w))
    return end_too_long(s, j, "the server's rate-limit headers ask to wait", w,
                        t);
  if (rc < 0) { /* an outage: j waits for the next try (or the stop) */
    polite__sched_outage_fail(s, rc, t, wake, due_out);
    return ADM_BLOCKED;
  }
  if (s->outage_since_us != NO_TIME)
    polite__sched_outage_over(s, t);
  if (rc == POLITE_BUDGET_ADMITTED) {
    polite__sched_rate_commit(s, j, &next);
    double rate = polite__sched_rate_now(s, j);
    if (rate > 0)
      polite__sched_plan_next(s, j, at + (int64_t)(1e6 * cost / rate));
    start_attempt(s, j, now);
    return ADM_STARTED;
  }
  if (rc == POLITE_BUDGET_WAIT_SLOT) {
    /* Shared backends give a poll hint: a release in another process wakes
     * nobody here. With no transfer of our own (polite_client threads
     * sharing a local budget), the release will come from another thread,
     * so look again soon. */
    if (w <= 0 && s->st.in_flight == 0)
      w = 5000;
    if (w > 0 && t + w < *wake)
      *wake = t + w;
    return ADM_BLOCKED;
  }
  int64_t due = at + w;
  if (due <= t) /* ASK_TRIES did not reach the end: never a wake at now */
    due = t + 1;
  if (rc == POLITE_BUDGET_WAIT_PAUSE && beyond_max_wait(s, w))
    return end_too_long(s, j, "the budget is paused for another", w, t);
  if (rc == POLITE_BUDGET_WAIT_PAUSE) {
    polite__sched_rate_paused(s, j, t, due);
    polite__sched_acct_sweep(s, polite__sched_acct_paused(s, j->key, due, 0),
                             t);
  }
  int64_t left = polite__sched_time_left(s, j, t);
  if (left != NO_TIME && due - t > left) {
    j->retry_after_us = due - t;
    polite__sched_finish(
        s, j, POLITE_OUT_DEADLINE, j->status,
        rc == POLITE_BUDGET_WAIT_PAUSE
            ? "the server's pause does not end before the deadline"
            : "the planned start rate cannot start it before the deadline",
        t, NULL, NULL);
    return ADM_ENDED;
  }
  polite__sched_plan_next(s, j, due);
  *due_out = due;
  if (due < *wake)
    *wake = due;
  return ADM_BLOCKED;
}

/* Starts every due request the budget admits, reading new ones while the
 * waiting set has nothing due; lowers *wake to the next time something
 * becomes due. With one account, the first blocked request blocks all
 * (they share the same budget); with one per host, up to HOST_LOOKAHEAD
 * blocked requests are skipped and put back: those waiting for a rate or a
 * pause at the time it ends, so that a slow host's backlog leaves the top
 * of the waiting set to the other hosts (put back at now, more than
 * HOST_LOOKAHEAD of them hid every other host's requests), the others in
 * their places. */
static void schedule(polite__sched *s, const polite__now *now, int64_t *wake) {
  job *blocked[HOST_LOOKAHEAD + 1];
  int64_t bdue[HOST_LOOKAHEAD + 1];
  unsigned nb = 0;
  unsigned lookahead = s->o.scope_host ? HOST_LOOKAHEAD : 0;
  int64_t t = now->mono_us;
  if (polite__sched_outage_wait(s, t, wake))
    return; /* the budget is out: nothing is admitted before the next try */
  while (!s->fatal) {
    const polite__heap_entry *top = polite__heap_top(&s->waiting);
    job *j;
    if (top == NULL || top->due > t) {
      if (!can_read(s) || nb > lookahead)
        break;
      if ((j = read_one(s, t)) == NULL)
        continue;
    } else {
      j = polite__heap_pop(&s->waiting);
    }
    int64_t due = t;
    int a = admit(s, j, now, wake, &due);
    if (a != ADM_BLOCKED)
      continue;
    bdue[nb] =
        (s->o.scope_host || s->outage_since_us != NO_TIME) && due > t ? due : t;
    blocked[nb++] = j;
    if (nb > lookahead)
      break;
  }
  for (unsigned i = 0; i < nb; i++)
    if (polite__sched_wait_push(s, blocked[i], bdue[i]) != 0)
      polite__sched_finish(s, blocked[i], POLITE_OUT_CANCELLED,
                           blocked[i]->status, s->errstr, t, NULL, NULL);
  const polite__heap_entry *top = polite__heap_top(&s->waiting);
  if (top && top->due > t && top->due < *wake)
    *wake = top->due;
}

/* ---- one turn
 * ------------------------------------------------------------------- */

/* Renews the budget leases of every account with a transfer in flight,
 * once per heartbeat_ms: a shared budget keeps a participant's slots only
 * for its lease after its last call, so one request longer than the lease,
 * with no other start in between, would otherwise lose its slot while it
 * still runs and let another participant exceed the concurrency limit. An
 * acquire of 0 units and 0 slots takes nothing (see budget.h). A failure
 * is not fatal here: the next admission reports a broken budget, and a
 * missed renewal at worst lets the lease run out as without a heartbeat. */
static void heartbeat(polite__sched *s, int64_t now) {
  if (s->o.heartbeat_ms <= 0 || s->o.budget == NULL || s->inflight == NULL ||
      now - s->last_heartbeat_us < s->o.heartbeat_ms * 1000)
    return;
  s->last_heartbeat_us = now;
  for (job *j = s->inflight; j; j = j->next) {
    int seen = 0; /* one renewal per account */
    for (const job *k = s->inflight; k != j && !seen; k = k->next)
      seen = polite__sched_same_key(k->key, j->key);
    if (seen)
      continue;
    int64_t w = 0;
    (void)polite_budget_acquire(s->o.budget, j->key, now, 0, 0, &w);
  }
}

void polite__sched_update_stats(polite__sched *s, int64_t now) {
  if (now > s->last_now_us)
    s->st.in_flight_integral_s +=
        (double)s->st.in_flight * (double)(now - s->last_now_us) / 1e6;
  s->last_now_us = now;
  s->st.run_us = now - s->t0_us;
  s->st.waiting = (unsigned)s->waiting.n;
  s->st.cancelled = s->cancelling;
  int64_t p = s->o.scope_host
                  ? (s->pause_end_us > now ? s->pause_end_us - now : 0)
                  : polite_budget_paused_for(s->o.budget, NULL, now);
  s->st.paused_left_ms = p / 1000;
  int out = s->outage_since_us != NO_TIME;
  s->st.budget_outage_ms = out ? (now - s->outage_since_us) / 1000 : 0;
  s->st.budget_outage_total_ms = s->outage_done_ms + s->st.budget_outage_ms;
  s->st.budget_error = out ? s->outage_err : NULL;
}

/* Cancel, grace, quota stop and the run deadline at now. */
static void stops(polite__sched *s, const polite__now *pn) {
  int64_t now = pn->mono_us;
  if (s->cancel_flag && !s->cancelling) {
    s->cancelling = 1;
    s->cancel_at_us = now;
    flush_waiting(s, POLITE_OUT_CANCELLED, "interrupted before the attempt",
                  now);
  }
  if (s->cancelling && now - s->cancel_at_us >= s->o.cancel_grace_ms * 1000)
    abort_inflight(s, pn);
  if (s->st.quota_stop)
    flush_waiting(s, POLITE_OUT_CANCELLED,
                  "not started: another request found the quota spent", now);
  if (!s->run_deadline_hit && now >= s->run_deadline_us) {
    s->run_deadline_hit = 1;
    flush_waiting(s, POLITE_OUT_DEADLINE, "the run deadline passed", now);
  }
  if (s->run_deadline_hit && !s->cancelling && !s->st.quota_stop &&
      s->o.next != NULL) {
    /* Every request read gets a result; drain the rest of the input
     * (bounded work per step so cancel stays responsive). */
    for (int k = 0; k < 4096 && !s->input_done && !s->source_dry; k++) {
      job *j;
      if (s->o.max_requests && s->st.read >= s->o.max_requests)
        s->input_done = 1;
      else if ((j = read_one(s, now)) != NULL) /* begun after the deadline,
                                                  a job has ended already */
        polite__sched_finish(s, j, POLITE_OUT_DEADLINE, 0,
                             "the run deadline passed", now, NULL, NULL);
    }
  }
}

/* 1 when a turn at the next tick could do something that no other wake
 * asks for: call on_tick, poll o.next, or look again at waiting requests
 * put back at now (blocked for a slot, behind one account's blocked
 * request, or past the lookahead; their deadlines and the order among them
 * are kept by these turns). Otherwise every waiting request has its due
 * time, which the wake already asks for, and everything else that happens
 * is an event the caller steps after (a submit, an answer, a cancel): a
 * paced gateway then sleeps until its next start (or IDLE_US) instead of
 * waking 10 times a second for nothing (issue #22: 0.5 of its 3.5 wake-ups
 * per request at 20/s, and nearly all of them at 1/s). */
static int needs_tick(const polite__sched *s, int64_t t) {
  if (s->o.on_tick != NULL || s->o.next != NULL)
    return 1;
  const polite__heap_entry *top = polite__heap_top(&s->waiting);
  return top != NULL && top->due <= t;
}

static void lower(int64_t *wake, int64_t t) {
  if (t < *wake)
    *wake = t;
}

int polite__sched_step(polite__sched *s, const polite__now *now,
                       int64_t *wake_us) {
  int64_t t = now->mono_us;
  s->source_dry = 0;
  polite__sched_update_stats(s, t);
  heartbeat(s, t);
  stops(s, now);
  int64_t wake = NO_TIME;
  if (!s->cancelling && !s->st.quota_stop && !s->run_deadline_hit && !s->fatal)
    schedule(s, now, &wake);
  if (s->fatal) {
    /* Nothing more starts. After a budget that could not be used, the
     * requests in flight finish and are recorded as what they were (their
     * answers have been paid for); after any other failure they are cut. */
    flush_waiting(s, POLITE_OUT_CANCELLED, s->errstr, t);
    if (s->fatal != POLITE_EBUDGET)
      abort_inflight(s, now);
    if (s->st.in_flight == 0)
      return s->fatal;
  }
  if (s->o.max_requests && s->st.read >= s->o.max_requests)
    s->st.input_done = 1;
  polite__sched_update_stats(s, t);
  if (t - s->last_tick_us >= TICK_US) {
    s->last_tick_us = t;
    if (s->o.on_tick)
      s->o.on_tick(s->o.ud, &s->st);
  }
  if (s->st.in_flight == 0 && s->waiting.n == 0 && reading_over(s))
    return 1;
  lower(&wake, needs_tick(s, t) ? s->last_tick_us + TICK_US : t + IDLE_US);
  if (!s->run_deadline_hit)
    lower(&wake, s->run_deadline_us);
  if (s->cancelling)
    lower(&wake, s->cancel_at_us + s->o.cancel_grace_ms * 1000);
  if (s->o.heartbeat_ms > 0 && s->inflight != NULL)
    lower(&wake, s->last_heartbeat_us + s->o.heartbeat_ms * 1000);
  *wake_us = wake;
  return 0;
}

void polite__sched_end(polite__sched *s, const polite__now *now) {
  polite__sched_update_stats(s, now->mono_us);
  polite__sched_rate_end(s);
  if (s->o.on_tick)
    s->o.on_tick(s->o.ud, &s->st);
}
