/* The limiter zoo's models (see zoo.h): each a few lines of the algorithm
 * the real software runs, on times passed in. */
#include "zoo.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SEC 1000000.0

double zoo_uniform(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0;
}

void zoo_init(zoo *z, const zoo_params *p, int64_t t0_us, uint64_t seed) {
  memset(z, 0, sizeof *z);
  z->p = *p;
  z->t0_us = t0_us;
  z->rng = seed;
  z->tat_us = (double)t0_us;
  z->win_start_us = t0_us;
}

/* The limit's factor at t (relative to t0): the change's steps. */
static double factor(const zoo_params *p, int64_t t) {
  double f = 1;
  if (p->change.t1_us > 0 && t >= p->change.t1_us)
    f *= p->change.f1;
  if (p->change.t2_us > 0 && t >= p->change.t2_us)
    f *= p->change.f2;
  return f;
}

static unsigned quota_at(const zoo *z, int64_t now) {
  double q = z->p.quota * factor(&z->p, now - z->t0_us);
  return q < 1 ? 1 : (unsigned)q;
}

/* GCRA (nginx limit_req with burst=B-1 nodelay, a token bucket of B):
 * admits when the theoretical arrival time is at most B-1 intervals
 * ahead; a refused request does not count. */
static int gcra(zoo *z, int64_t now) {
  double t = SEC / (z->p.rate * factor(&z->p, now - z->t0_us));
  double tau = (z->p.burst > 0 ? z->p.burst - 1 : 0) * t;
  double tat = z->tat_us > (double)now ? z->tat_us : (double)now;
  if (tat - (double)now > tau + 1e-6)
    return 0;
  z->tat_us = tat + t;
  return 1;
}

/* Rolls the fixed windows (aligned at t0 + k w) forward to now. */
static void roll(zoo *z, int64_t now) {
  int64_t w = z->p.window_us;
  if (now < z->win_start_us + w)
    return;
  if (z->p.anchored) {
    z->prev_count = 0;
    z->win_count = 0;
    z->win_start_us = now;
    return;
  }
  int64_t k = (now - z->win_start_us) / w;
  z->prev_count = k == 1 ? z->win_count : 0;
  z->win_count = 0;
  z->win_start_us += k * w;
}

/* A fixed window counts every request, refused ones too
 * (express-rate-limit increments before it compares). */
static int fixed(zoo *z, int64_t now) {
  roll(z, now);
  z->win_count++;
  return z->win_count <= quota_at(z, now);
}

/* Cloudflare's sliding-window counter: the previous window's count
 * weighted by how much of it still overlaps, plus this one's; every
 * request counts, refused ones too. */
static int counter(zoo *z, int64_t now) {
  roll(z, now);
  double x = (double)(now - z->win_start_us) / (double)z->p.window_us;
  double est = z->prev_count * (1 - x) + z->win_count;
  z->win_count++;
  return est < quota_at(z, now);
}

/* The sliding log: at most quota admitted in any window. */
static int sliding_log(zoo *z, int64_t now) {
  while (z->log_n > 0) {
    unsigned first = (z->log_head + ZOO_LOG_MAX - z->log_n) % ZOO_LOG_MAX;
    if (z->log_us[first] > now - z->p.window_us)
      break;
    z->log_n--;
  }
  unsigned q = quota_at(z, now);
  if (q > ZOO_LOG_MAX)
    q = ZOO_LOG_MAX;
  if (z->log_n >= q)
    return 0;
  z->log_us[z->log_head] = now;
  z->log_head = (z->log_head + 1) % ZOO_LOG_MAX;
  z->log_n++;
  return 1;
}

static int concurrency(zoo *z, int64_t now) {
  double m = z->p.max_inflight * factor(&z->p, now - z->t0_us);
  if (z->inflight >= (m < 1 ? 1 : (unsigned)m))
    return 0;
  z->inflight++;
  return 1;
}

/* The seconds left in the current window, rounded up (at least 1). */
static int window_left_s(const zoo *z, int64_t now) {
  int64_t left = z->win_start_us + z->p.window_us - now;
  int s = (int)((left + 999999) / 1000000);
  return s < 1 ? 1 : s;
}

/* The IETF draft-8 fields express-rate-limit sends (standardHeaders). */
static void headers(zoo *z, int64_t now, zoo_answer *a) {
  unsigned q = quota_at(z, now);
  unsigned r = z->win_count >= q ? 0 : q - z->win_count;
  snprintf(z->hdr[0], sizeof z->hdr[0], "RateLimit: \"p\"; r=%u; t=%d", r,
           window_left_s(z, now));
  snprintf(z->hdr[1], sizeof z->hdr[1], "RateLimit-Policy: \"p\"; q=%u; w=%lld",
           q, (long long)(z->p.window_us / 1000000));
  a->hdr[0] = z->hdr[0];
  a->hdr[1] = z->hdr[1];
}

zoo_answer zoo_arrive(zoo *z, int64_t now) {
  zoo_answer a = {200, 0, -1, {NULL, NULL}};
  int ok = 0;
  switch (z->p.kind) {
  case ZOO_GCRA: ok = gcra(z, now); break;
  case ZOO_FIXED: ok = fixed(z, now); break;
  case ZOO_SLIDING_LOG: ok = sliding_log(z, now); break;
  case ZOO_SLIDING_COUNTER: ok = counter(z, now); break;
  case ZOO_CONCURRENCY: ok = concurrency(z, now); break;
  }
  if (z->p.headers)
    headers(z, now, &a);
  if (ok) {
    double j = z->p.jitter_us * (2 * zoo_uniform(&z->rng) - 1);
    a.latency_us = z->p.latency_us + (int64_t)j;
    /* Drawn only when asked, so that rows without it keep their draws. */
    if (z->p.slow_share > 0 && zoo_uniform(&z->rng) < z->p.slow_share)
      a.latency_us += z->p.slow_us;
    if (a.latency_us < 1000)
      a.latency_us = 1000;
    return a;
  }
  /* A limiter answers before the handler runs. */
  a.status = 429;
  a.latency_us = 1000;
  a.retry_after_s = z->p.retry_after == ZOO_RA_WINDOW ? window_left_s(z, now)
                                                      : z->p.retry_after;
  return a;
}

void zoo_done(zoo *z, int64_t now) {
  (void)now;
  if (z->p.kind == ZOO_CONCURRENCY && z->inflight > 0)
    z->inflight--;
}

static double other_rate(const zoo_params *p) {
  return p->other.burst > 0 ? p->other.burst * SEC / (double)p->other.period_us
                            : 0;
}

double zoo_rate_at(const zoo_params *p, int64_t t) {
  double f = factor(p, t), r = 0;
  switch (p->kind) {
  case ZOO_GCRA: r = p->rate * f; break;
  case ZOO_CONCURRENCY:
    r = floor(p->max_inflight * f) * SEC / (double)p->latency_us;
    break;
  default: r = floor(p->quota * f) * SEC / (double)p->window_us; break;
  }
  return r - other_rate(p);
}

int64_t zoo_other_next(const zoo_params *p, int64_t after) {
  if (p->other.burst == 0 || p->other.period_us <= 0)
    return INT64_MAX;
  if (after < p->other.offset_us)
    return p->other.offset_us;
  int64_t k = (after - p->other.offset_us) / p->other.period_us + 1;
  return p->other.offset_us + k * p->other.period_us;
}

/* The ideal client of a window limiter sends a whole quota at each
 * window's start; of a rate limiter, its burst at once and then one per
 * interval of what the other caller leaves; of the concurrency limit,
 * max_inflight at a time. The integral is walked in 1 ms steps so that a
 * change of the limit mid-run is followed. */
int64_t zoo_floor_us(const zoo_params *p, unsigned n) {
  if (p->kind == ZOO_FIXED || p->kind == ZOO_SLIDING_LOG) {
    unsigned q = p->quota;
    int64_t windows = (n + q - 1) / q - 1;
    return windows * p->window_us + p->latency_us;
  }
  double got = p->kind == ZOO_GCRA ? p->burst : 0;
  int64_t t = 0;
  const int64_t step = 1000;
  while (got < n && t < INT64_C(100000) * 1000000) {
    got += zoo_rate_at(p, t) * step / SEC;
    t += step;
  }
  return t + (p->kind == ZOO_CONCURRENCY ? 0 : p->latency_us);
}
