/* The learned-rate simulation (tests/sim): clients on one fake clock
 * against one limiter of the zoo. polite is the real scheduler and
 * controller of libpolite (polite__sched over a shared local budget, one
 * scheduler per process); the peers are models of other clients' retry
 * logic. Internal to the sim tool. */
#ifndef POLITE_SIM_H
#define POLITE_SIM_H

#include "zoo.h"

#include <stddef.h>
#include <stdint.h>

typedef enum {
  CL_POLITE = 0,
  CL_AWS = 1,     /* botocore's adaptive retry mode */
  CL_URLLIB3 = 2, /* urllib3 Retry honouring Retry-After */
  CL_FIXED = 3,   /* a fixed 1 s backoff */
  CL_N
} sim_client;

#define SIM_SEC INT64_C(1000000)
#define SIM_T0 (INT64_C(1000) * SIM_SEC)
#define SIM_BUCKET_US (500 * INT64_C(1000)) /* the series' resolution */
#define SIM_MAX_BUCKETS 2400                /* 20 minutes of fake time */
#define SIM_MAX_PROCS 4
#define SIM_MAX_ATTEMPTS 10

/* One scenario: a row of the zoo's table. */
typedef struct {
  const char *shape; /* short name, the report's section */
  const char *what;  /* one sentence */
  zoo_params z;
  unsigned requests;
  unsigned concurrency; /* per process */
} sim_scenario;

/* What one client did in one scenario. */
typedef struct {
  sim_client client;
  unsigned procs;
  unsigned requests;
  int64_t wall_us, floor_us;
  uint64_t attempts, n429, early, lost;
  double converge_s; /* < 0: never */
  /* successful and refused arrivals per SIM_BUCKET_US, from t0 */
  unsigned ok[SIM_MAX_BUCKETS], ref[SIM_MAX_BUCKETS];
  unsigned buckets;
} sim_result;

/* The flights and per-process bookkeeping every client shares. */
typedef struct sim_world sim_world;

const char *sim_client_name(sim_client c);
/* Runs `client` with `procs` processes (requests split between them) on
 * scenario sc, seeded; fills *out. Returns 0, or -1 when the run did not
 * finish within SIM_MAX_BUCKETS of fake time. */
int sim_run(const sim_scenario *sc, sim_client client, unsigned procs,
            uint64_t seed, sim_result *out);

/* Set: sim_run prints polite's rate changes to stderr. */
extern int sim_trace;

/* One scenario from a --row SPEC (spec.c), or NULL with a message in err;
 * valid until the next call. */
const sim_scenario *sim_parse_row(const char *spec, char *err, size_t errlen);

/* The scenario table (scenarios.c). */
extern const sim_scenario sim_scenarios[];
extern const unsigned sim_n_scenarios;

#endif
