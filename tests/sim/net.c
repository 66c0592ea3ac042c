/* The simulated client machine (see sim_net in sim.h): the delays a real
 * `polite run` adds between a start and the limiter, and back, as named
 * profiles and one draw. */
#include "sim.h"

#include <string.h>

#define MS INT64_C(1000)

/* The profiles, by name. "loaded" is the machine the bench's real runs
 * were measured on (bench/adaptive/shapes.sh, 2 cores shared with other
 * builds): see docs/learned-rate.md, "The machine". */
static const struct {
  const char *name;
  sim_net net;
} k_nets[] = {
    {"exact", {0, 0, 0, 0}},
    {"quiet", {1 * MS, 0.01, 5 * MS, 10 * MS}},
    {"loaded", {2 * MS, 0.05, 30 * MS, 40 * MS}},
};

sim_net sim_net_model = {0, 0, 0, 0};

int sim_net_set(const char *name) {
  for (unsigned i = 0; i < sizeof k_nets / sizeof k_nets[0]; i++)
    if (strcmp(name, k_nets[i].name) == 0) {
      sim_net_model = k_nets[i].net;
      return 0;
    }
  return -1;
}

int64_t sim_net_delay(const sim_net *n, uint64_t *rng) {
  int64_t d = (int64_t)((double)n->jitter_us * zoo_uniform(rng));
  if (n->stall_p > 0 && zoo_uniform(rng) < n->stall_p)
    d += (int64_t)((double)n->stall_us * zoo_uniform(rng));
  return d;
}
