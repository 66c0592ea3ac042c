/* The peers' retry logic, modelled on the same fake clock as polite: each
 * process runs `concurrency` threads that take the next request and send
 * it, the way a thread pool of blocking clients does.
 *  - aws-adaptive: botocore's adaptive retry mode, read from its source
 *    (retries/adaptive.py, throttling.py, bucket.py, standard.py): a token
 *    bucket, off until the first throttle, at a CUBIC rate (beta 0.7,
 *    C 0.4, w_max the measured rate) capped at 2 x the rate measured over
 *    0.5 s buckets (smoothing 0.8); retries after a full-jitter backoff
 *    (random x 2^(attempt-1) s, at most 20 s) while the retry quota (500,
 *    5 a retry, refunded by successes) lasts; Retry-After is not read.
 *  - urllib3: Retry(total, backoff_factor=0.5, status_forcelist=[429],
 *    respect_retry_after_header=True): waits the Retry-After when there is
 *    one, else 0 s after the first error and 0.5 x 2^(n-1) s after the
 *    n-th (urllib3 2), each thread on its own.
 *  - fixed-backoff: waits 1 s after every 429, whatever the server said. */
#include "world.h"

#include <math.h>
#include <string.h>

#define AWS_BETA 0.7
#define AWS_C 0.4
#define AWS_MIN_RATE 0.5
#define AWS_SMOOTHING 0.8
#define AWS_BUCKET_S 0.5
#define AWS_QUOTA 500.0
#define AWS_RETRY_COST 5.0
#define AWS_MAX_BACKOFF_S 20.0
#define URLLIB3_FACTOR_S 0.5
#define URLLIB3_MAX_S 120.0
#define FIXED_S 1.0

static double secs(int64_t us) {
  return (double)(us - SIM_T0) / 1e6;
}

void peer_begin(sim_world *w, sim_proc *p) {
  p->nth = w->sc->concurrency < SIM_MAX_THREADS ? w->sc->concurrency
                                                : SIM_MAX_THREADS;
  for (unsigned k = 0; k < p->nth; k++)
    p->th[k].state = TH_NEED;
  aws_state *a = &p->aws;
  memset(a, 0, sizeof *a);
  a->fill = 1; /* TokenBucket(max_rate=1) */
  a->cap_max = 1;
  a->bucket_last_us = -1;
  a->last_fail_s = secs(w->now); /* CubicCalculator(0, start_time) */
  a->last_bucket_s = floor(secs(w->now));
  a->quota = AWS_QUOTA;
}

/* ---- botocore's pieces -------------------------------------------------- */

static void aws_refill(aws_state *a, int64_t now) {
  if (a->bucket_last_us < 0) {
    a->bucket_last_us = now;
    return;
  }
  a->cap += (double)(now - a->bucket_last_us) / 1e6 * a->fill;
  if (a->cap > a->cap_max)
    a->cap = a->cap_max;
  a->bucket_last_us = now;
}

static void aws_set_rate(aws_state *a, int64_t now, double v) {
  aws_refill(a, now);
  a->fill = v > AWS_MIN_RATE ? v : AWS_MIN_RATE;
  a->cap_max = v >= 1 ? v : 1;
  if (a->cap > a->cap_max)
    a->cap = a->cap_max;
}

static double aws_clock(aws_state *a, double t) {
  double bucket = floor(t / AWS_BUCKET_S) * AWS_BUCKET_S;
  a->clock_count += 1;
  if (bucket > a->last_bucket_s) {
    double cur = a->clock_count / (bucket - a->last_bucket_s);
    a->measured = cur * AWS_SMOOTHING + a->measured * (1 - AWS_SMOOTHING);
    a->clock_count = 0;
    a->last_bucket_s = bucket;
  }
  return a->measured;
}

/* ClientRateLimiter.on_receiving_response. */
static void aws_response(aws_state *a, int64_t now, int throttled) {
  double t = secs(now);
  double measured = aws_clock(a, t), rate;
  if (!throttled) {
    double dt = t - a->last_fail_s - a->k;
    rate = AWS_C * dt * dt * dt + a->w_max;
  } else {
    double use = a->enabled && a->fill < measured ? a->fill : measured;
    a->w_max = use;
    a->k = cbrt(use * (1 - AWS_BETA) / AWS_C);
    a->last_fail_s = t;
    rate = use * AWS_BETA;
    a->enabled = 1;
  }
  aws_set_rate(a, now, rate < 2 * measured ? rate : 2 * measured);
}

/* ---- the threads ----------------------------------------------------------
 */

static void take_next(sim_world *w, sim_proc *p, peer_thread *t) {
  if (p->next >= p->hi) {
    t->state = TH_DONE;
    return;
  }
  t->req = p->next++;
  t->attempts = 0;
  t->state = TH_SEND;
  t->wake_us = w->now;
}

void peer_wake(sim_world *w, sim_proc *p, peer_thread *t) {
  if (t->state == TH_NEED)
    take_next(w, p, t);
  if (t->state != TH_SEND || t->wake_us > w->now)
    return;
  if (w->client == CL_AWS && p->aws.enabled) {
    aws_state *a = &p->aws;
    aws_refill(a, w->now);
    if (a->cap < 1) {
      double wait_s = (1 - a->cap) / a->fill;
      t->wake_us = w->now + (int64_t)ceil(wait_s * 1e6);
      return;
    }
    a->cap -= 1;
  }
  t->attempts++;
  t->state = TH_FLIGHT;
  if (sim_send(w, p, (int)(t - p->th), NULL) == NULL)
    t->state = TH_DONE;
}

/* The wait before the next attempt after a 429, in seconds; < 0: give up. */
static double retry_wait(sim_world *w, sim_proc *p, peer_thread *t,
                         const sim_flight *f) {
  if (t->attempts >= SIM_MAX_ATTEMPTS)
    return -1;
  if (w->client == CL_AWS) {
    if (p->aws.quota < AWS_RETRY_COST)
      return -1;
    p->aws.quota -= AWS_RETRY_COST;
    double win = pow(2, t->attempts - 1);
    win = win < AWS_MAX_BACKOFF_S ? win : AWS_MAX_BACKOFF_S;
    return zoo_uniform(&p->rng) * win;
  }
  if (w->client == CL_URLLIB3) {
    if (f->retry_after_s >= 0)
      return f->retry_after_s;
    if (t->attempts <= 1)
      return 0;
    double b = URLLIB3_FACTOR_S * pow(2, t->attempts - 1);
    return b < URLLIB3_MAX_S ? b : URLLIB3_MAX_S;
  }
  return FIXED_S;
}

void peer_answer(sim_world *w, sim_proc *p, peer_thread *t,
                 const sim_flight *f) {
  int throttled = f->status == 429;
  if (w->client == CL_AWS) {
    aws_response(&p->aws, w->now, throttled);
    if (!throttled) /* standard.py: a success refunds the quota */
      p->aws.quota += t->attempts > 1 ? AWS_RETRY_COST : 1;
    if (p->aws.quota > AWS_QUOTA)
      p->aws.quota = AWS_QUOTA;
  }
  if (!throttled) {
    sim_request_done(w, 1);
    t->state = TH_NEED;
    take_next(w, p, t);
    return;
  }
  double wait = retry_wait(w, p, t, f);
  if (wait < 0) {
    sim_request_done(w, 0);
    t->state = TH_NEED;
    take_next(w, p, t);
    return;
  }
  t->state = TH_SEND;
  t->wake_us = w->now + (int64_t)(wait * 1e6);
}
