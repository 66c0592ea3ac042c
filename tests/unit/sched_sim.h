/* A fake clock and a fake server for the scheduler's unit tests
 * (tests/unit/test_scheduler*.c): the scheduler (lib/scheduler.c) runs as
 * in the engine, over the real local budget, but its transport is a table
 * of answers and time jumps from one event to the next, so a minute of a
 * run takes microseconds. Header-only: each test file includes it once. */
#ifndef SCHED_SIM_H
#define SCHED_SIM_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polite/batch.h>

#include "scheduler.h"

#define MS INT64_C(1000)
#define SEC INT64_C(1000000)
#define T0 (INT64_C(1000) * SEC)
#define WALL0 INT64_C(1795996800000) /* 2026-11-30, for HTTP-dates */
#define SIM_MAX 4096

/* One answer of the fake server. */
typedef struct {
  int status;             /* 0: a network error */
  const char *headers[4]; /* "Name: value" lines */
  const char *body;
  int64_t latency_us; /* 0: the sim's default latency */
} sim_answer;

typedef struct sim sim;
/* Picks the answer to attempt `attempt` of request number `req` (0-based,
 * in input order). */
typedef sim_answer (*sim_server)(sim *x, unsigned req, unsigned attempt);

typedef struct {
  unsigned req, attempt;
  int64_t at_us; /* monotonic start */
} sim_start;

typedef struct {
  char id[32];
  polite_outcome outcome;
  int status;
  unsigned attempts;
  char error[256];
  char location[256];
  int64_t at_us;
  int64_t retry_after_ms;
  int pause_status;
} sim_result;

typedef struct {
  polite__job *job;
  unsigned req;
  int64_t done_us;
  sim_answer answer;
} sim_flight;

struct sim {
  polite_batch_options o;
  polite_budget *budget;
  polite__sched *s;
  sim_server server;
  int64_t latency_us; /* default answer latency */
  int64_t late_us;    /* every wake-up comes this much after the asked time */
  int64_t now;
  unsigned n_input, read;
  unsigned cost; /* of every request, 0 = 1 */
  /* The URL of request i is url(x, i); NULL: http://api.test/x. */
  const char *(*url)(const sim *x, unsigned req);
  sim_start starts[SIM_MAX];
  unsigned n_starts;
  sim_result results[SIM_MAX];
  unsigned n_results;
  sim_flight flights[SIM_MAX];
  unsigned n_flights;
  unsigned aborts;
  int64_t cancel_at; /* cancel when the clock reaches it (0: never) */
  /* Submitted requests (the gateway's way in): when arrive_us is set,
   * request i is handed in with polite__sched_submit at T0 + arrive_us[i]
   * (in order) instead of being read from a source, and the input closes
   * after the last one; submit_rc[i] is what the call returned. */
  const int64_t *arrive_us;
  int submit_rc[SIM_MAX];
  /* Called on each new request (method, headers, body); may be NULL. */
  void (*setup)(sim *x, unsigned req, polite_request *r);
  polite_failure failure; /* the kind of every network error (status 0) */
};

/* Request number i of the run: id "rI", line I + 1, the sim's URL and
 * cost, then the test's setup. */
static polite_request *sim_request(sim *x, unsigned i) {
  polite_request *r = polite_request_new();
  assert_non_null(r);
  char buf[32];
  snprintf(buf, sizeof buf, "r%u", i);
  r->id = strdup(buf);
  r->url = strdup(x->url ? x->url(x, i) : "http://api.test/x");
  r->line = (long)i + 1;
  r->cost = x->cost;
  if (x->setup)
    x->setup(x, i, r);
  return r;
}

static int sim_next(void *ud, polite_request **out) {
  sim *x = ud;
  if (x->read >= x->n_input)
    return 0;
  *out = sim_request(x, x->read++);
  return 1;
}

static unsigned sim_req_index(const polite_request *r) {
  return (unsigned)r->line - 1;
}

static void sim_on_result(void *ud, const polite_result *r) {
  sim *x = ud;
  assert_true(x->n_results < SIM_MAX);
  sim_result *o = &x->results[x->n_results++];
  snprintf(o->id, sizeof o->id, "%s", r->req->id);
  o->outcome = r->outcome;
  o->status = r->status;
  o->attempts = r->attempts;
  snprintf(o->error, sizeof o->error, "%s", r->error ? r->error : "");
  snprintf(o->location, sizeof o->location, "%s",
           r->location ? r->location : "");
  o->at_us = x->now;
  o->retry_after_ms = r->retry_after_ms;
  o->pause_status = r->pause_status;
}

static int sim_start_io(void *ud, polite__job *j, char *err, size_t errlen) {
  sim *x = ud;
  (void)err, (void)errlen;
  unsigned req = sim_req_index(j->req);
  assert_true(x->n_starts < SIM_MAX && x->n_flights < SIM_MAX);
  x->starts[x->n_starts++] = (sim_start){req, j->attempts, x->now};
  sim_answer a = x->server(x, req, j->attempts);
  int64_t lat = a.latency_us ? a.latency_us : x->latency_us;
  if (j->timeout_ms > 0 && lat > j->timeout_ms * MS)
    lat = j->timeout_ms * MS; /* the transfer's timeout fires */
  x->flights[x->n_flights++] = (sim_flight){j, req, x->now + lat, a};
  j->io = x;
  return 0;
}

static void sim_abort(void *ud, polite__job *j) {
  sim *x = ud;
  for (unsigned i = 0; i < x->n_flights; i++)
    if (x->flights[i].job == j) {
      x->flights[i] = x->flights[--x->n_flights];
      x->aborts++;
      return;
    }
  fail_msg("abort of a job not in flight");
}

/* A sim with the real local budget (rate per s, burst, concurrency) and the
 * scheduler's defaults, n requests, answering with `server`. */
static void sim_init(sim *x, double rate, unsigned burst, unsigned conc,
                     unsigned n, sim_server server) {
  memset(x, 0, sizeof *x);
  polite_budget_config c = {rate, burst, conc};
  assert_int_equal(polite_budget_local_new(&c, &x->budget), 0);
  polite_batch_options_init(&x->o);
  x->o.budget = x->budget;
  x->o.seed = 42;
  x->o.spread_ms = 0;
  x->o.heartbeat_ms = 0;
  x->o.next = sim_next;
  x->o.on_result = sim_on_result;
  x->o.ud = x;
  x->n_input = n;
  x->server = server;
  x->latency_us = 10 * MS;
  x->now = T0;
}

/* Delivers the answer of flight i at its time. */
static void sim_deliver(sim *x, unsigned i) {
  sim_flight f = x->flights[i];
  x->flights[i] = x->flights[--x->n_flights];
  polite__job *j = f.job;
  sim_answer a = f.answer;
  polite__now now = {x->now, WALL0 + (x->now - T0) / 1000};
  polite_headers ph;
  polite_headers_init(&ph, now.wall_ms);
  const char *loc = NULL;
  for (int k = 0; k < 4 && a.headers[k]; k++) {
    polite_headers_feed_line(&ph, a.headers[k], strlen(a.headers[k]));
    if (strncmp(a.headers[k], "Location: ", 10) == 0)
      loc = a.headers[k] + 10;
  }
  int64_t lat = a.latency_us ? a.latency_us : x->latency_us;
  int timed_out = j->timeout_ms > 0 && lat > j->timeout_ms * MS;
  polite__response r;
  memset(&r, 0, sizeof r);
  r.status = timed_out ? 0 : a.status;
  r.error = r.status == 0 ? "fake transport error" : NULL;
  r.timed_out = timed_out;
  r.failure = a.status == 0 && !timed_out ? x->failure : 0;
  r.headers = &ph;
  r.location = loc;
  r.body = a.body;
  r.body_len = a.body ? strlen(a.body) : 0;
  j->io = NULL;
  polite__sched_response(x->s, j, &r, &now);
}

/* Hands in the requests that have arrived by now (arrive_us), closing the
 * input after the last; returns when the next one arrives (INT64_MAX: no
 * more). */
static int64_t sim_submit_due(sim *x) {
  if (x->arrive_us == NULL)
    return INT64_MAX;
  polite__now now = {x->now, WALL0 + (x->now - T0) / 1000};
  while (x->read < x->n_input && T0 + x->arrive_us[x->read] <= x->now) {
    unsigned i = x->read++;
    polite_request *r = sim_request(x, i);
    x->submit_rc[i] = polite__sched_submit(x->s, r, &now);
    if (x->submit_rc[i] != 0)
      polite_request_free(r);
    if (x->read == x->n_input)
      polite__sched_close_input(x->s);
  }
  return x->read < x->n_input ? T0 + x->arrive_us[x->read] : INT64_MAX;
}

/* Runs the scheduler to the end (or until the fake clock passes `until`),
 * jumping from event to event. Returns the step's last return value. */
static int sim_run_until(sim *x, int64_t until) {
  if (x->s == NULL) {
    if (x->arrive_us)
      x->o.next = NULL;
    polite__sched_io io = {sim_start_io, sim_abort, x};
    char err[200];
    x->s = polite__sched_new(&x->o, &io, err, sizeof err);
    assert_non_null(x->s);
    polite__now now = {x->now, WALL0};
    polite__sched_begin(x->s, &now);
  }
  for (int guard = 0; guard < 1000000; guard++) {
    for (unsigned i = 0; i < x->n_flights;)
      if (x->flights[i].done_us <= x->now)
        sim_deliver(x, i);
      else
        i++;
    if (x->cancel_at && x->now >= x->cancel_at) {
      polite__sched_cancel(x->s);
      x->cancel_at = 0;
    }
    int64_t arrival = sim_submit_due(x);
    polite__now now = {x->now, WALL0 + (x->now - T0) / 1000};
    int64_t wake = POLITE__NO_TIME;
    int rc = polite__sched_step(x->s, &now, &wake);
    if (rc != 0)
      return rc;
    assert_true(wake > x->now); /* never a busy loop */
    int64_t next = wake + x->late_us;
    if (arrival < next)
      next = arrival;
    for (unsigned i = 0; i < x->n_flights; i++)
      if (x->flights[i].done_us < next)
        next = x->flights[i].done_us;
    if (x->cancel_at && x->cancel_at < next)
      next = x->cancel_at;
    if (next > until)
      return 0;
    x->now = next;
  }
  fail_msg("the scheduler did not finish");
  return -1;
}

static int sim_run(sim *x) {
  return sim_run_until(x, INT64_MAX);
}

static void sim_free(sim *x) {
  polite__sched_free(x->s);
  polite_budget_close(x->budget);
}

static inline const sim_result *sim_find(const sim *x, const char *id) {
  for (unsigned i = 0; i < x->n_results; i++)
    if (strcmp(x->results[i].id, id) == 0)
      return &x->results[i];
  return NULL;
}

static unsigned sim_count(const sim *x, polite_outcome o) {
  unsigned n = 0;
  for (unsigned i = 0; i < x->n_results; i++)
    n += x->results[i].outcome == o;
  return n;
}

static inline sim_answer ok200(sim *x, unsigned req, unsigned attempt) {
  (void)x, (void)req, (void)attempt;
  return (sim_answer){200, {NULL}, "ok", 0};
}

#endif
