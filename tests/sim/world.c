/* The simulation's driver: one fake clock, one limiter of the zoo, and
 * 1-4 processes of one client. polite's processes are the real scheduler
 * (lib/scheduler.c with the learned rate of lib/ratectl.c), each over the
 * same local budget, as `polite run --budget file:` processes share one;
 * the clock jumps from one event to the next. */
#include "world.h"

#include "sched_internal.h"

#include <polite/batch.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WALL0 INT64_C(1795996800000) /* 2026-11-30, for HTTP-dates */

/* The world the scheduler's callbacks report to (one run at a time). */
static sim_world *current;

const char *sim_client_name(sim_client c) {
  static const char *const names[] = {"polite", "aws-adaptive", "urllib3",
                                      "fixed-backoff"};
  return (unsigned)c < CL_N ? names[c] : "?";
}

static unsigned bucket_of(int64_t t) {
  int64_t b = (t - SIM_T0) / SIM_BUCKET_US;
  return b < 0 ? 0 : b >= SIM_MAX_BUCKETS ? SIM_MAX_BUCKETS - 1 : (unsigned)b;
}

/* Flight f reaches the limiter now: its answer, counted for its process,
 * judged early or not. */
static void arrive(sim_world *w, sim_flight *f) {
  zoo_answer a = zoo_arrive(&w->z, w->now);
  f->arrive_us = SIM_NEVER;
  f->answered_us = w->now + a.latency_us;
  f->status = a.status;
  f->retry_after_s = a.retry_after_s;
  for (int k = 0; k < 2 && a.hdr[k]; k++)
    snprintf(f->hdr[f->nhdr++], sizeof f->hdr[0], "%s", a.hdr[k]);
  if (f->thread == -2) { /* the other caller: only its admitted ones count */
    f->done_us = f->answered_us;
    w->other_ok += a.status != 429;
    return;
  }
  sim_proc *p = &w->procs[f->proc];
  f->done_us = f->answered_us + sim_net_delay(&sim_net_model, &w->net_rng);
  sim_result *r = w->res;
  r->attempts++;
  /* Early: sent after its process was told of a Retry-After, arrived
   * before it ended (by the limiter's clock). */
  if (w->now < p->ra_until_us && f->sent_us >= p->ra_told_us)
    r->early++;
  unsigned b = bucket_of(w->now);
  if (a.status == 429) {
    r->n429++;
    r->ref[b]++;
  } else {
    r->ok[b]++;
  }
  if (b + 1 > r->buckets)
    r->buckets = b + 1;
}

sim_flight *sim_send(sim_world *w, sim_proc *p, int thread, polite__job *j) {
  if (w->nflights >= SIM_MAX_FLIGHTS)
    return NULL;
  sim_flight *f = &w->flights[w->nflights++];
  memset(f, 0, sizeof *f);
  f->proc = p ? p->idx : 0;
  f->thread = thread;
  f->job = j;
  f->sent_us = w->now;
  f->freed = 0;
  int64_t d = p ? sim_net_delay(&sim_net_model, &w->net_rng) : 0;
  if (d > 0)
    f->arrive_us = w->now + d;
  else
    arrive(w, f);
  return f;
}

void sim_request_done(sim_world *w, int ok) {
  if (!ok)
    w->res->lost++;
  if (w->outstanding > 0)
    w->outstanding--;
}

/* ---- polite: the real scheduler per process ---------------------------- */

static int pol_next(void *ud, polite_request **out) {
  sim_proc *p = ud;
  if (p->next >= p->hi)
    return 0;
  polite_request *r = polite_request_new();
  if (r == NULL)
    return -1;
  char id[24];
  snprintf(id, sizeof id, "r%u", p->next);
  r->id = strdup(id);
  r->url = strdup("http://api.test/x");
  r->line = (long)p->next + 1;
  p->next++;
  *out = r;
  return 1;
}

static void pol_result(void *ud, const polite_result *r) {
  (void)ud;
  sim_request_done(current, r->outcome == POLITE_OUT_OK);
}

static int pol_start(void *ud, polite__job *j, char *err, size_t errlen) {
  sim_proc *p = ud;
  (void)err, (void)errlen;
  j->io = p;
  return sim_send(current, p, -1, j) ? 0 : -1;
}

static void pol_abort(void *ud, polite__job *j) {
  (void)ud;
  sim_world *w = current;
  for (unsigned i = 0; i < w->nflights; i++)
    if (w->flights[i].job == j) {
      w->flights[i] = w->flights[--w->nflights];
      return;
    }
}

int sim_trace; /* --trace: print polite's rate changes */

static void pol_rate(void *ud, const polite_rate_change *c) {
  const sim_proc *p = ud;
  if (sim_trace)
    fprintf(stderr, "  [%u] %8.3f s  rate %7.2f (was %7.2f) %-9s %s\n", p->idx,
            (double)(c->wall_ms - WALL0) / 1e3, c->rate_per_s,
            c->previous_per_s, c->reason, c->detail ? c->detail : "");
  if (sim_trace > 1 && p->s != NULL && strcmp(c->reason, "probe") != 0) {
    /* --trace twice: the controller's state behind the change. */
    const polite_ratectl *rc = &p->s->rate.rc;
    fprintf(stderr,
            "        limit %.2f plateau %.2f upper %.2f hold %.1f s "
            "relapse %d ss %d steady %u cap %u others %d ceiling %.2f "
            "budget's %.2f (aimed %.2f)\n",
            rc->limit, rc->plateau, rc->upper, (double)rc->hold_us / 1e6,
            rc->relapse, rc->cut_in_ss, rc->steady, rc->cap, rc->others,
            rc->probe_ceiling, rc->shared_ceiling, rc->recall_shared);
  }
}

static int pol_begin(sim_world *w, sim_proc *p, uint64_t seed) {
  polite_batch_options o;
  polite_batch_options_init(&o);
  o.budget = w->budget;
  o.seed = seed;
  o.heartbeat_ms = 0;
  o.max_attempts = SIM_MAX_ATTEMPTS;
  o.rate_mode = POLITE_RATE_AUTO;
  o.next = pol_next;
  o.on_result = pol_result;
  o.on_rate = pol_rate;
  o.ud = p;
  polite__sched_io io = {pol_start, pol_abort, p};
  char err[200];
  p->s = polite__sched_new(&o, &io, err, sizeof err);
  if (p->s == NULL) {
    fprintf(stderr, "polite_sim: %s\n", err);
    return -1;
  }
  polite__now now = {w->now, WALL0};
  polite__sched_begin(p->s, &now);
  p->wake_us = w->now;
  return 0;
}

/* Hands flight f's answer to its polite scheduler. */
static void pol_answer(sim_world *w, sim_proc *p, const sim_flight *f) {
  polite__now now = {w->now, WALL0 + (w->now - SIM_T0) / 1000};
  polite_headers ph;
  polite_headers_init(&ph, now.wall_ms);
  char ra[40];
  for (int k = 0; k < f->nhdr; k++)
    polite_headers_feed_line(&ph, f->hdr[k], strlen(f->hdr[k]));
  if (f->retry_after_s >= 0) {
    snprintf(ra, sizeof ra, "Retry-After: %d", f->retry_after_s);
    polite_headers_feed_line(&ph, ra, strlen(ra));
  }
  polite__response r;
  memset(&r, 0, sizeof r);
  r.status = f->status;
  r.headers = &ph;
  r.body = "ok";
  r.body_len = 2;
  f->job->io = NULL;
  polite__sched_response(p->s, f->job, &r, &now);
  p->poke = 1;
}

static void pol_step(sim_world *w, sim_proc *p) {
  if (p->finished || (!p->poke && p->wake_us > w->now))
    return;
  if (sim_trace > 2 && w->now >= p->trace_us) {
    /* --trace three times: the controller's rate every 250 ms. */
    const polite_ratectl *rc = &p->s->rate.rc;
    fprintf(stderr, "  [%u] %8.3f s  . %7.2f plateau %.2f limit %.2f\n", p->idx,
            (double)(w->now - SIM_T0) / 1e6, polite_ratectl_rate(rc, w->now),
            rc->plateau, rc->limit);
    p->trace_us = w->now + 250000;
  }
  p->poke = 0;
  polite__now now = {w->now, WALL0 + (w->now - SIM_T0) / 1000};
  int64_t wake = SIM_NEVER;
  int rc = polite__sched_step(p->s, &now, &wake);
  if (rc != 0) {
    p->finished = 1;
    return;
  }
  p->wake_us = wake > w->now ? wake : w->now + 1;
}

/* ---- the event loop ---------------------------------------------------- */

/* Moves every flight due now on: arrivals at the limiter, the
 * limiter's end of an admitted request (its slot frees before the answer
 * reaches the client), answers delivered to their process. */
static void deliver(sim_world *w) {
  for (unsigned i = 0; i < w->nflights; i++) {
    sim_flight *f = &w->flights[i];
    if (f->arrive_us <= w->now)
      arrive(w, f);
    if (f->arrive_us == SIM_NEVER && !f->freed && f->answered_us <= w->now) {
      f->freed = 1;
      if (f->status != 429)
        zoo_done(&w->z, w->now);
    }
  }
  for (unsigned i = 0; i < w->nflights;) {
    if (w->flights[i].arrive_us != SIM_NEVER ||
        w->flights[i].done_us > w->now) {
      i++;
      continue;
    }
    sim_flight f = w->flights[i];
    w->flights[i] = w->flights[--w->nflights];
    if (f.thread == -2)
      continue;
    sim_proc *p = &w->procs[f.proc];
    if (f.status == 429 && f.retry_after_s >= 0) {
      int64_t until = f.answered_us + f.retry_after_s * SIM_SEC;
      if (until > p->ra_until_us) {
        p->ra_until_us = until;
        p->ra_told_us = w->now;
      }
    }
    if (f.thread == -1)
      pol_answer(w, p, &f);
    else
      peer_answer(w, p, &p->th[f.thread], &f);
  }
}

/* The other caller's bursts due now. */
static void other_caller(sim_world *w) {
  while (w->other_next_us != SIM_NEVER && w->other_next_us <= w->now) {
    for (unsigned k = 0; k < w->sc->z.other.burst; k++)
      sim_send(w, NULL, -2, NULL);
    int64_t next = zoo_other_next(&w->sc->z, w->other_next_us - SIM_T0);
    w->other_next_us = next == INT64_MAX ? SIM_NEVER : SIM_T0 + next;
  }
}

/* Flight f's next event: its arrival at the limiter, the limiter's end of
 * it (the slot freed), or its answer at the client. */
static int64_t flight_next(const sim_flight *f) {
  if (f->arrive_us != SIM_NEVER)
    return f->arrive_us;
  if (!f->freed && f->answered_us < f->done_us)
    return f->answered_us;
  return f->done_us;
}

static int64_t next_event(const sim_world *w) {
  int64_t t = w->other_next_us;
  for (unsigned i = 0; i < w->nflights; i++) {
    const sim_flight *f = &w->flights[i];
    int64_t e = flight_next(f);
    if (e < t)
      t = e;
  }
  for (unsigned i = 0; i < w->nprocs; i++) {
    const sim_proc *p = &w->procs[i];
    if (!p->begun) {
      t = p->begin_us < t ? p->begin_us : t;
      continue;
    }
    if (w->client == CL_POLITE && !p->finished && p->wake_us < t)
      t = p->wake_us;
    for (unsigned k = 0; w->client != CL_POLITE && k < p->nth; k++)
      if (p->th[k].state == TH_SEND && p->th[k].wake_us < t)
        t = p->th[k].wake_us;
  }
  return t;
}

static int proc_begin(sim_world *w, sim_proc *p);

static void turn(sim_world *w) {
  deliver(w);
  other_caller(w);
  for (unsigned i = 0; i < w->nprocs; i++) {
    sim_proc *p = &w->procs[i];
    if (!p->begun && (p->begin_us > w->now || proc_begin(w, p) != 0))
      continue;
    if (w->client == CL_POLITE) {
      pol_step(w, p);
      continue;
    }
    for (unsigned k = 0; k < p->nth; k++)
      if (p->th[k].state == TH_NEED ||
          (p->th[k].state == TH_SEND && p->th[k].wake_us <= w->now))
        peer_wake(w, p, &p->th[k]);
  }
}

/* The time after which the client keeps at 85% of what the limiter
 * sustains and draws at most 1% 429s, over 2 s windows to the end (after
 * the limit's last change); -1 when it never does. */
static double converge(const sim_world *w, const sim_result *r) {
  const unsigned win = 4; /* buckets of 500 ms */
  int64_t change = w->sc->z.change.t2_us > 0   ? w->sc->z.change.t2_us
                   : w->sc->z.change.t1_us > 0 ? w->sc->z.change.t1_us
                                               : 0;
  unsigned from = bucket_of(SIM_T0 + change);
  unsigned last = r->buckets > win + 2 ? r->buckets - win - 2 : 0;
  unsigned good = last + 1;
  for (unsigned b = last + 1; b-- > from;) {
    double ok = 0, ref = 0;
    for (unsigned k = b; k < b + win; k++)
      ok += r->ok[k], ref += r->ref[k];
    double lim = zoo_rate_at(&w->sc->z, (int64_t)b * SIM_BUCKET_US) *
                 (double)(win * SIM_BUCKET_US) / 1e6;
    if (ok < 0.85 * lim || ref > 0.01 * (ok + ref) + 0.5)
      break;
    good = b;
  }
  if (good > last)
    return -1;
  return (double)((int64_t)good * SIM_BUCKET_US - change) / 1e6;
}

/* Starts process p now (its start offset came). */
static int proc_begin(sim_world *w, sim_proc *p) {
  p->begun = 1;
  if (w->client != CL_POLITE) {
    peer_begin(w, p);
    return 0;
  }
  if (pol_begin(w, p, p->seed) == 0)
    return 0;
  w->failed = 1;
  return -1;
}

/* Sets up the processes; the first starts now, the others after their
 * start offsets (the net's). */
static int world_begin(sim_world *w, uint64_t seed) {
  unsigned n = w->sc->requests, np = w->nprocs;
  polite_budget_config bc = {0, 1, w->sc->concurrency};
  if (w->client == CL_POLITE && polite_budget_local_new(&bc, &w->budget) != 0)
    return -1;
  w->net_rng = seed * 104729 + 17;
  uint64_t start_rng = seed * 15485863 + 3; /* the same for every client */
  for (unsigned i = 0; i < np; i++) {
    sim_proc *p = &w->procs[i];
    p->idx = i;
    p->lo = p->next = n * i / np;
    p->hi = n * (i + 1) / np;
    p->rng = seed * 7919 + i + 1;
    p->seed = seed * 31 + i + 1;
    double u = zoo_uniform(&start_rng);
    p->begin_us =
        w->now + (i > 0 ? (int64_t)(u * (double)sim_net_model.start_us) : 0);
    if (p->begin_us == w->now && proc_begin(w, p) != 0)
      return -1;
  }
  return 0;
}

int sim_run(const sim_scenario *sc, sim_client client, unsigned procs,
            uint64_t seed, sim_result *out) {
  static sim_world world; /* large: flights and the zoo's log */
  sim_world *w = &world;
  memset(w, 0, sizeof *w);
  memset(out, 0, sizeof *out);
  w->sc = sc;
  w->client = client;
  w->nprocs = procs < 1 ? 1 : procs > SIM_MAX_PROCS ? SIM_MAX_PROCS : procs;
  w->now = SIM_T0;
  w->res = out;
  w->outstanding = sc->requests;
  out->client = client;
  out->procs = w->nprocs;
  out->requests = sc->requests;
  out->floor_us = zoo_floor_us(&sc->z, sc->requests);
  current = w;
  zoo_init(&w->z, &sc->z, SIM_T0, seed);
  int64_t other = zoo_other_next(&sc->z, -1);
  w->other_next_us = other == INT64_MAX ? SIM_NEVER : SIM_T0 + other;
  int rc = world_begin(w, seed);
  const int64_t end = SIM_T0 + (int64_t)SIM_MAX_BUCKETS * SIM_BUCKET_US;
  while (rc == 0 && w->outstanding > 0) {
    turn(w);
    if (w->failed) {
      rc = -1;
      break;
    }
    if (w->outstanding == 0)
      break;
    int64_t t = next_event(w);
    if (t >= end) {
      rc = -1;
      break;
    }
    w->now = t > w->now ? t : w->now;
  }
  out->wall_us = w->now - SIM_T0;
  if (sc->z.other.burst > 0) {
    /* With another caller the floor is the time the limiter needs for all
     * it admitted, the other's too: a client that takes the other's share
     * gains nothing by it. */
    zoo_params alone = sc->z;
    alone.other.burst = 0;
    out->floor_us = zoo_floor_us(&alone, sc->requests + w->other_ok);
  }
  out->converge_s = rc == 0 ? converge(w, out) : -1;
  for (unsigned i = 0; i < w->nprocs; i++)
    polite__sched_free(w->procs[i].s);
  polite_budget_close(w->budget);
  return rc;
}
