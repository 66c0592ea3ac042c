/* The limiter zoo of the learned-rate simulation (tests/sim): small pure
 * models of the rate limiters servers run, on a fake clock in
 * microseconds. A model is asked once per request when it arrives
 * (zoo_arrive) and told when an admitted one is done (zoo_done); it never
 * reads a clock and draws its jitter from its own seeded generator. */
#ifndef POLITE_SIM_ZOO_H
#define POLITE_SIM_ZOO_H

#include <stdint.h>

typedef enum {
  ZOO_GCRA = 0,            /* leaky bucket / token bucket: rate, burst */
  ZOO_FIXED = 1,           /* fixed window: quota per window */
  ZOO_SLIDING_LOG = 2,     /* at most quota admitted in any window */
  ZOO_SLIDING_COUNTER = 3, /* two-window estimate, refused ones counted */
  ZOO_CONCURRENCY = 4      /* at most max_inflight at once */
} zoo_kind;

/* Retry-After on a refusal: a number of seconds, none, or the seconds
 * left in the window (rounded up, as express-rate-limit sends it). */
#define ZOO_RA_NONE (-1)
#define ZOO_RA_WINDOW (-2)

/* How the limit changes during a run: the limit is multiplied by f1 from
 * t1 on, by f1 * f2 from t2 on (0: never). */
typedef struct {
  int64_t t1_us, t2_us;
  double f1, f2;
} zoo_change;

/* Another caller on the same account: `burst` requests every
 * period_us (1 every period: a steady rate), from offset_us on. */
typedef struct {
  unsigned burst;
  int64_t period_us;
  int64_t offset_us;
} zoo_other;

typedef struct {
  zoo_kind kind;
  double rate;           /* GCRA: per second */
  unsigned burst;        /* GCRA: requests admitted back to back */
  unsigned quota;        /* windows: per window */
  int64_t window_us;     /* windows */
  unsigned max_inflight; /* concurrency */
  int headers;           /* IETF RateLimit / RateLimit-Policy (windows) */
  int retry_after;       /* seconds, ZOO_RA_NONE or ZOO_RA_WINDOW */
  int64_t latency_us;    /* an admitted request's handler time */
  int64_t jitter_us;     /* ... uniform in [-jitter, +jitter] */
  zoo_change change;
  zoo_other other; /* burst 0: none */
  int anchored;    /* fixed window: opened by the first request after the last
                      one expired (express-rate-limit's memory store), not at
                      t0 + k w */
  /* A share slow_share of admitted answers comes slow_us later (0: none),
   * as a Nagle/delayed-ACK stall does: python's http.server writes the
   * headers and the body apart, and behind nginx's keepalive upstream 80%
   * of the bench's 100 ms answers took 140 ms
   * (until its upstream set TCP_NODELAY). Last, so that the tables'
   * positional initializers leave it 0. */
  int64_t slow_us;
  double slow_share;
} zoo_params;

#define ZOO_LOG_MAX 4096 /* the sliding log's largest quota */

typedef struct {
  zoo_params p;
  int64_t t0_us;
  uint64_t rng;
  double tat_us; /* GCRA */
  int64_t win_start_us;
  unsigned win_count, prev_count; /* windows */
  int64_t log_us[ZOO_LOG_MAX];    /* sliding log: admitted times */
  unsigned log_head, log_n;
  unsigned inflight;
  char hdr[2][96];
} zoo;

typedef struct {
  int status;         /* 200 or 429 */
  int64_t latency_us; /* when the answer comes, after the arrival */
  int retry_after_s;  /* -1: none */
  const char *hdr[2]; /* header lines (NULL: none); valid until the next
                         zoo_arrive */
} zoo_answer;

/* Starts model z at t0 with parameters p and seed. */
void zoo_init(zoo *z, const zoo_params *p, int64_t t0_us, uint64_t seed);
/* A request arrives at now: the answer the limiter gives it. */
zoo_answer zoo_arrive(zoo *z, int64_t now_us);
/* An admitted request's answer left at now (concurrency). */
void zoo_done(zoo *z, int64_t now_us);
/* The rate the limiter lets an ideal client sustain at now (starts per
 * second; for the concurrency limit max_inflight / latency), less the
 * other caller's average. */
double zoo_rate_at(const zoo_params *p, int64_t since_t0_us);
/* The floor: the least time in which an ideal client that knows the
 * limiter gets n requests through and their answers back, in us. */
int64_t zoo_floor_us(const zoo_params *p, unsigned n);
/* The next time the other caller sends after `after` (relative to t0), or
 * INT64_MAX when there is none. */
int64_t zoo_other_next(const zoo_params *p, int64_t after_us);
/* A uniform draw in [0, 1) from *state (splitmix64). */
double zoo_uniform(uint64_t *state);

#endif
