/* The simulation's world, shared by its driver (world.c) and the peer
 * models (peers.c): processes, their threads or scheduler, the flights.
 * Internal to the sim tool. */
#ifndef POLITE_SIM_WORLD_H
#define POLITE_SIM_WORLD_H

#include "sim.h"

#include "scheduler.h"

#define SIM_MAX_THREADS 32
#define SIM_MAX_FLIGHTS 4096
#define SIM_NEVER INT64_MAX

/* botocore's adaptive mode (retries/adaptive.py, throttling.py,
 * bucket.py, standard.py): a token bucket at a CUBIC rate, switched on by
 * the first throttle, and the standard mode's retry quota. */
typedef struct {
  int enabled;
  double fill, cap_max, cap; /* the token bucket */
  int64_t bucket_last_us;
  double w_max, k, last_fail_s;                /* CUBIC */
  double measured, clock_count, last_bucket_s; /* RateClocker */
  double quota; /* retry quota: 500, a retry costs 5 */
} aws_state;

typedef enum { TH_NEED, TH_SEND, TH_FLIGHT, TH_DONE } th_state;

typedef struct {
  th_state state;
  int64_t wake_us;
  unsigned req, attempts;
} peer_thread;

typedef struct {
  unsigned idx;
  unsigned lo, hi, next; /* this process's requests */
  int64_t ra_until_us;   /* the latest Retry-After it was told */
  /* polite */
  polite__sched *s;
  int64_t wake_us;
  int finished, poke;
  /* peers */
  peer_thread th[SIM_MAX_THREADS];
  unsigned nth;
  aws_state aws;
  uint64_t rng;
} sim_proc;

typedef struct {
  unsigned proc;
  int thread; /* peer thread; -1 polite (job); -2 the other caller */
  polite__job *job;
  int64_t done_us;
  int status, retry_after_s;
  char hdr[2][96];
  int nhdr;
} sim_flight;

struct sim_world {
  const sim_scenario *sc;
  sim_client client;
  zoo z;
  int64_t now;
  sim_proc procs[SIM_MAX_PROCS];
  unsigned nprocs;
  sim_flight flights[SIM_MAX_FLIGHTS];
  unsigned nflights;
  int64_t other_next_us;
  unsigned other_ok;    /* the other caller's admitted requests */
  unsigned outstanding; /* requests without a final answer */
  sim_result *res;
  polite_budget *budget;
};

/* A request of process p arrives at the limiter now: counted, judged
 * early or not, and put in flight; returns the flight. */
sim_flight *sim_send(sim_world *w, sim_proc *p, int thread, polite__job *j);
/* Process p's request got its final answer (ok or lost). */
void sim_request_done(sim_world *w, int ok);

/* peers.c */
void peer_begin(sim_world *w, sim_proc *p);
/* Runs thread t of p at now (its wake time came). */
void peer_wake(sim_world *w, sim_proc *p, peer_thread *t);
/* Thread t of p got the answer of flight f at now. */
void peer_answer(sim_world *w, sim_proc *p, peer_thread *t,
                 const sim_flight *f);

#endif
