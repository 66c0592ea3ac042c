/* Unit tests of the header planner and the learned-rate controller
 * (lib/rateplan.c, lib/ratectl.c) on a fake clock, the controller against a
 * simulated server limiter (polite_gcra) with latency. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polite/ratectl.h>

#define SEC INT64_C(1000000)
#define MS INT64_C(1000)
/* 2023-11-14 22:13:20 UTC on the fake wall clock; the monotonic clock is
 * an arbitrary 5 s. */
#define NOW_MS INT64_C(1700000000000)
#define MONO (5 * SEC)

/* ---- The planner ------------------------------------------------------- */

/* Plans from header lines "Name: value" (NULL-terminated). */
static polite_rate_plan plan_of(const char *const *lines) {
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  for (; *lines != NULL; lines++)
    polite_headers_feed_line(&h, *lines, strlen(*lines));
  polite_rate_plan p;
  polite_rate_plan_headers(&h, MONO, &p);
  return p;
}

/* The interval the contract gives for r starts over t seconds. */
static int64_t contract_iv(double t_s, double r) {
  return (int64_t)(t_s * 1e6 / r * 1.01) + 1 + 1000;
}

static void assert_spread(polite_rate_plan p, double t_s, double r) {
  assert_int_equal(p.reason, POLITE_PLAN_SPREAD);
  assert_int_equal(p.interval_us, contract_iv(t_s, r));
  assert_int_equal(p.wait_us, p.interval_us); /* first start t/r later */
  assert_int_equal(p.not_before_us, MONO + p.wait_us);
  assert_true(fabs(p.rate_per_s - 1e6 / (double)p.interval_us) < 1e-9);
}

static void test_plan_none(void **state) {
  (void)state;
  const char *none[] = {"Content-Type: text/plain", NULL};
  polite_rate_plan p = plan_of(none);
  assert_int_equal(p.reason, POLITE_PLAN_NONE);
  assert_true(p.rate_per_s == 0);
  assert_int_equal(p.wait_us, 0);
  assert_int_equal(polite_rate_plan_headers(NULL, MONO, &p), 0);
  assert_int_equal(polite_rate_plan_headers(NULL, MONO, NULL), 0);
  /* Remaining without any reset plans nothing. */
  const char *no_reset[] = {"X-RateLimit-Remaining: 5", NULL};
  assert_int_equal(plan_of(no_reset).reason, POLITE_PLAN_NONE);
}

static void test_plan_ietf(void **state) {
  (void)state;
  /* Quoted names and the whitespace after ';' real servers send. */
  const char *a[] = {"RateLimit: \"200-in-5sec\"; r=199; t=5", NULL};
  assert_spread(plan_of(a), 5, 199);
  /* The average q/w caps a generous spread: 99 left over 1 s of a
   * 100-per-minute policy is still 100/60. */
  const char *b[] = {"RateLimit-Policy: \"default\";q=100;w=60",
                     "RateLimit: \"default\";r=99;t=1", NULL};
  polite_rate_plan p = plan_of(b);
  assert_int_equal(p.reason, POLITE_PLAN_AVERAGE);
  assert_int_equal(p.interval_us, contract_iv(60, 100));
  /* Under the average, source still names the pair whose remaining it
   * reports (Kong's minute here, not the IETF policy). */
  const char *b2[] = {"RateLimit-Policy: \"p\";q=10;w=60",
                      "X-RateLimit-Remaining-Minute: 50", NULL};
  p = plan_of(b2);
  assert_int_equal(p.reason, POLITE_PLAN_AVERAGE);
  assert_int_equal(p.source, POLITE_RL_KONG_MINUTE);
  assert_int_equal(p.remaining, 50);
  /* Several policies in one field: the one allowing least wins, whatever
   * its r. */
  const char *c[] = {"RateLimit: \"hour\";r=100;t=3600, \"sec\";r=9;t=1", NULL};
  assert_spread(plan_of(c), 3600, 100);
  /* qu, pk and w are understood or skipped; a byte-quota policy does not
   * cap the request rate. */
  const char *d[] = {
      "RateLimit-Policy: \"r\";q=10;qu=\"requests\";w=1;pk=:dXNlcjE=:, "
      "\"bytes\";q=1;qu=\"content-bytes\";w=3600",
      "RateLimit: \"r\";r=10;t=1;pk=:dXNlcjE=:", NULL};
  assert_spread(plan_of(d), 1, 10);
  /* r = 0: wait t (with the margin), then the policy's average. */
  const char *e[] = {"RateLimit-Policy: \"p\";q=10;w=1",
                     "RateLimit: \"p\";r=0;t=2", NULL};
  p = plan_of(e);
  assert_int_equal(p.reason, POLITE_PLAN_WAIT_RESET);
  assert_int_equal(p.wait_us, contract_iv(2, 1));
  assert_int_equal(p.interval_us, contract_iv(1, 10));
  assert_int_equal(p.source, POLITE_RL_IETF_SPENT);
  /* Retry-After takes precedence over t. */
  const char *f[] = {"RateLimit: \"p\";r=0;t=30", "Retry-After: 3", NULL};
  p = plan_of(f);
  assert_int_equal(p.reason, POLITE_PLAN_WAIT_SERVER);
  assert_int_equal(p.wait_us, 3 * SEC);
  const char *g[] = {"RateLimit: \"p\";r=0;t=30", "retry-after-ms: 1500", NULL};
  assert_int_equal(plan_of(g).wait_us, 1500 * MS);
  /* One policy's r is never paired with another's t: r=0 for 1 s and 50
   * over 30 s means wait 1 s, then 50/30, not "wait 30 s". */
  const char *h[] = {"RateLimit: \"a\";r=0;t=1, \"b\";r=50;t=30", NULL};
  p = plan_of(h);
  assert_int_equal(p.reason, POLITE_PLAN_WAIT_RESET);
  assert_int_equal(p.wait_us, contract_iv(1, 1));
  assert_int_equal(p.interval_us, contract_iv(30, 50));
}

static void test_plan_older_forms(void **state) {
  (void)state;
  const char *a[] = {"RateLimit: limit=5, remaining=4, reset=60", NULL};
  assert_spread(plan_of(a), 60, 4);
  const char *b[] = {"RateLimit-Limit: 100", "RateLimit-Remaining: 40",
                     "RateLimit-Reset: 20", NULL};
  assert_spread(plan_of(b), 20, 40);
  const char *c[] = {"RateLimit-Limit: 10, 10;w=1", "RateLimit-Remaining: 10",
                     "RateLimit-Reset: 1", NULL};
  assert_spread(plan_of(c), 1, 10);
}

static void test_plan_x_ratelimit(void **state) {
  (void)state;
  /* GitHub: an epoch reset, 600 s after the fake now. */
  const char *a[] = {"X-RateLimit-Limit: 5000", "X-RateLimit-Remaining: 4000",
                     "X-RateLimit-Reset: 1700000600", NULL};
  polite_rate_plan p = plan_of(a);
  assert_spread(p, 600, 4000);
  assert_int_equal(p.source, POLITE_RL_X);
  /* Kong: no reset; the minute bounds it (the worst case: all of it). */
  const char *b[] = {
      "X-RateLimit-Limit-Minute: 60", "X-RateLimit-Remaining-Minute: 30",
      "X-RateLimit-Limit-Hour: 1000", "X-RateLimit-Remaining-Hour: 990", NULL};
  /* The hour allows less (990 over up to 3600 s) than the minute. */
  p = plan_of(b);
  assert_spread(p, 3600, 990);
  assert_int_equal(p.source, POLITE_RL_KONG_HOUR);
  const char *c[] = {"X-RateLimit-Limit-Second: 5",
                     "X-RateLimit-Remaining-Second: 0", NULL};
  p = plan_of(c);
  assert_int_equal(p.reason, POLITE_PLAN_WAIT_RESET);
  assert_int_equal(p.wait_us, contract_iv(1, 1));
  assert_int_equal(p.interval_us, contract_iv(1, 5));
  /* OpenAI: Go durations; tokens only matter when spent. */
  const char *d[] = {
      "x-ratelimit-limit-requests: 60",   "x-ratelimit-remaining-requests: 59",
      "x-ratelimit-reset-requests: 20ms", "x-ratelimit-remaining-tokens: 100",
      "x-ratelimit-reset-tokens: 6m0s",   NULL};
  assert_spread(plan_of(d), 0.020, 59);
  const char *e[] = {"x-ratelimit-remaining-requests: 59",
                     "x-ratelimit-reset-requests: 1s",
                     "x-ratelimit-remaining-tokens: 0",
                     "x-ratelimit-reset-tokens: 6m0s", NULL};
  p = plan_of(e);
  assert_int_equal(p.reason, POLITE_PLAN_WAIT_RESET);
  assert_int_equal(p.source, POLITE_RL_TOKENS);
  assert_int_equal(p.wait_us, contract_iv(360, 1));
  /* Discord's reset-after and a retry-after-ms beside it. */
  const char *f[] = {"X-RateLimit-Remaining: 4", "X-RateLimit-Reset-After: 2.5",
                     NULL};
  assert_spread(plan_of(f), 2.5, 4);
}

/* The proxy's shape at 10/s burst 1: one start left per 100 ms, stated as
 * 10 over 1 s; a client following the plan reaches 9.8/s. */
static void test_plan_proxy_contract(void **state) {
  (void)state;
  const char *a[] = {"RateLimit-Policy: \"polite\";q=10;w=1",
                     "RateLimit: \"polite\";r=10;t=1", NULL};
  polite_rate_plan p = plan_of(a);
  assert_int_equal(p.interval_us, 102001);
  assert_true(p.rate_per_s > 9.8 && p.rate_per_s < 10.0);
  assert_string_equal(polite_plan_reason_name(p.reason), "spread");
}

/* ---- The shared rate ----------------------------------------------------- */

static void test_shared_merge(void **state) {
  (void)state;
  polite_shared_rate st = {0, 0, 0, 0};
  polite_shared_rate in = {10, 0, 0, 0};
  assert_int_equal(polite_shared_rate_merge(&st, &in, 0), 1); /* first */
  assert_true(st.rate_per_s == 10);
  in.rate_per_s = 12;
  assert_int_equal(polite_shared_rate_merge(&st, &in, 0), 1); /* raise */
  assert_true(st.rate_per_s == 12);
  in.rate_per_s = 11;
  assert_int_equal(polite_shared_rate_merge(&st, &in, 0), 0); /* not higher */
  polite_shared_rate cutv = {7, 10, 0, 0};
  assert_int_equal(polite_shared_rate_merge(&st, &cutv, 1), 1);
  assert_true(st.rate_per_s == 7 && st.limit_per_s == 10);
  assert_int_equal(st.generation, 1);
  /* A raise from before the cut is stale. */
  in.rate_per_s = 20;
  in.generation = 0;
  assert_int_equal(polite_shared_rate_merge(&st, &in, 0), 0);
  assert_true(st.rate_per_s == 7);
  /* A concurrent cut never raises. */
  cutv.rate_per_s = 9;
  assert_int_equal(polite_shared_rate_merge(&st, &cutv, 1), 1);
  assert_true(st.rate_per_s == 7);
  assert_int_equal(st.generation, 2);
  cutv.rate_per_s = 0;
  assert_int_equal(polite_shared_rate_merge(&st, &cutv, 1), 0);
}

/* ---- The controller against a simulated server --------------------------- */

#define MAX_FLIGHT 64
#define MAX_WORKERS 4
#define TICK_US 200

typedef struct {
  /* server: a GCRA limiter at `limit`/s (burst 2: nginx's "burst=1 nodelay"
   * lets one request through early), `limit2` from `change_us` on */
  double limit, limit2;
  int64_t change_us;
  int64_t latency_us;
  int64_t retry_after_us; /* on every 429 */
  int headers;            /* 1: the server sends RateLimit fields */
  /* clients */
  int workers;
  unsigned concurrency; /* per worker */
  int requests;         /* in all */
  double max_rate;      /* the controllers' cap, 0 none */
  /* 0: a 429 is answered at once, before the handler runs (nginx
   * limit_req: its 200s take latency_us, its 429s a tick); 1: after
   * latency_us like a 200 (a limiter behind the handler) */
  int slow_reject;
} sim_cfg;

typedef struct {
  int64_t wall_us;
  int oks, throttled;
  int throttled_after_change;
  int over_max;              /* samples above the cap (must be 0) */
  int max_in_flight;         /* per worker */
  double rate_min, rate_max; /* controller rate sampled after settle_us */
  double tput_min, tput_max; /* oks/s per 5 s window after settle_us */
  int64_t follow_us; /* after the change: the last time the rate was above
                        1.1 x limit2 */
} sim_result;

typedef struct {
  int64_t start, done;
  int status;
} flight;

typedef struct {
  polite_ratectl c;
  flight f[MAX_FLIGHT];
  int n;
} worker;

static void set_rate(polite_gcra *g, double rate) {
  polite_gcra t;
  polite_gcra_init(&t, rate, 1);
  t.tat_ns = g->tat_ns;
  t.tat_us = g->tat_us;
  *g = t;
}

/* Builds the headers a window server (q per w seconds, fixed windows
 * starting at 0) would send at `now`, and plans from them. */
static void window_plan(int64_t now, int left, int64_t w_us,
                        polite_rate_plan *p) {
  char line[128];
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  int64_t t = (w_us - now % w_us + SEC - 1) / SEC;
  snprintf(line, sizeof line, "RateLimit: \"w\";r=%d;t=%lld", left,
           (long long)t);
  polite_headers_feed_line(&h, line, strlen(line));
  polite_rate_plan_headers(&h, now, p);
}

/* Runs cfg to the end and measures. The workers share one pacer at the
 * shared rate and one pause, as a budget does; each has its own
 * controller, coupled only through the shared rate. */
static sim_result simulate(const sim_cfg *cfg, int64_t settle_us) {
  sim_result res;
  memset(&res, 0, sizeof res);
  res.rate_min = 1e18;
  res.tput_min = 1e18;
  polite_gcra server, pacer;
  polite_gcra_init(&server, cfg->limit, 2);
  polite_gcra_init(&pacer, 1, 1);
  int64_t w_us = 10 * SEC; /* header server: fixed windows of 10 s */
  int win_q = (int)(cfg->limit * 10), win_used = 0;
  int64_t win_start = 0;
  worker w[MAX_WORKERS];
  polite_shared_rate store = {0, 0, 0, 0};
  polite_ratectl_config rc = {0, cfg->max_rate, 0, cfg->concurrency};
  int64_t now = SEC;
  for (int i = 0; i < cfg->workers; i++) {
    polite_ratectl_init(&w[i].c, &rc, now);
    w[i].n = 0;
  }
  int queued = cfg->requests, done = 0, changed = 0;
  int64_t pause_until = 0, win_ok_start = now + settle_us;
  int win_oks = 0;
  double pacer_rate = 0;
  while (done < cfg->requests && now < 300 * SEC) {
    if (!changed && cfg->change_us > 0 && now >= cfg->change_us) {
      changed = 1;
      polite_gcra_init(&server, cfg->limit2, 2);
    }
    for (int i = 0; i < cfg->workers; i++) {
      worker *k = &w[i];
      for (int j = 0; j < k->n;) {
        flight *f = &k->f[j];
        if (f->done > now) {
          j++;
          continue;
        }
        polite_rate_plan plan;
        int has = 0;
        if (cfg->headers && f->status == 200) {
          window_plan(f->start, win_q - win_used, w_us, &plan);
          has = 1;
        }
        int64_t sw = f->status == 429 ? cfg->retry_after_us : -1;
        polite_ratectl_response r = {now, f->start, f->status, sw,
                                     has ? &plan : NULL};
        polite_ratectl_on_response(&k->c, &r);
        if (f->status == 429) {
          res.throttled++;
          if (changed)
            res.throttled_after_change++;
          queued++; /* retried */
          if (now + sw > pause_until) {
            pause_until = now + sw;
            polite_gcra_pause_until(&pacer, pause_until);
          }
        } else {
          res.oks++;
          done++;
          if (now >= win_ok_start)
            win_oks++;
        }
        *f = k->f[--k->n];
      }
      polite_shared_rate s;
      int is_cut;
      if (polite_ratectl_take_publish(&k->c, now, &s, &is_cut)) {
        polite_shared_rate_merge(&store, &s, is_cut);
        polite_ratectl_published(&k->c, now, &store);
      }
    }
    if (store.rate_per_s > 0 && store.rate_per_s != pacer_rate) {
      pacer_rate = store.rate_per_s;
      set_rate(&pacer, pacer_rate);
    }
    /* Every participant asks in turn; each answer carries the shared
     * rate, as the budget's acquire does. */
    for (int j = 0; j < cfg->workers && queued > 0; j++) {
      worker *k = &w[(j + now / TICK_US) % cfg->workers];
      if ((unsigned)k->n >= cfg->concurrency || now < pause_until ||
          now < polite_ratectl_hold_until(&k->c))
        continue;
      polite_ratectl_on_shared(&k->c, now, &store);
      if (polite_gcra_admit(&pacer, now, 1) != 0)
        continue;
      polite_ratectl_on_start(&k->c, now);
      flight *f = &k->f[k->n++];
      if (k->n > res.max_in_flight)
        res.max_in_flight = k->n;
      f->start = now;
      if (cfg->headers) {
        if (now - win_start >= w_us) {
          win_start = now - now % w_us;
          win_used = 0;
        }
        f->status = win_used < win_q ? 200 : 429;
        if (f->status == 200)
          win_used++;
      } else {
        f->status = polite_gcra_admit(&server, now, 1) == 0 ? 200 : 429;
      }
      f->done = now + (f->status == 429 && !cfg->slow_reject ? TICK_US
                                                             : cfg->latency_us);
      queued--;
    }
    if (now % (100 * MS) == 0) {
      for (int i = 0; i < cfg->workers; i++) {
        double r = polite_ratectl_rate(&w[i].c, now);
        if (getenv("SIM_TRACE") && now % (250 * MS) == 0)
          printf("t=%.2f w%d rate %.1f phase %d limit %.1f store %.1f "
                 "429s %d oks %d\n",
                 (now - SEC) / 1e6, i, r, w[i].c.phase, w[i].c.limit,
                 store.rate_per_s, res.throttled, res.oks);
        if (cfg->max_rate > 0 && r > cfg->max_rate + 1e-9)
          res.over_max++;
        if (now >= SEC + settle_us &&
            (!changed || now >= cfg->change_us + 5 * SEC)) {
          res.rate_min = fmin(res.rate_min, r);
          res.rate_max = fmax(res.rate_max, r);
        }
        if (changed && r > 1.1 * cfg->limit2)
          res.follow_us = now - cfg->change_us;
      }
    }
    if (now >= win_ok_start + 5 * SEC) {
      if (done < cfg->requests - 8) {
        double tp = win_oks / 5.0;
        res.tput_min = fmin(res.tput_min, tp);
        res.tput_max = fmax(res.tput_max, tp);
      }
      win_oks = 0;
      win_ok_start = now;
    }
    now += TICK_US;
  }
  res.wall_us = now - SEC;
  return res;
}

static void print_result(const char *name, const sim_result *r) {
  printf("# %s: wall %.2f s, %d ok, %d x 429 (%d after the change), rate "
         "%.1f..%.1f/s, throughput %.1f..%.1f/s, follow %.2f s\n",
         name, r->wall_us / 1e6, r->oks, r->throttled,
         r->throttled_after_change, r->rate_min, r->rate_max, r->tput_min,
         r->tput_max, r->follow_us / 1e6);
}

/* Runs cfg and checks #10's targets without headers: every request ok,
 * at most 5% answered 429, wall within 1.3 x N / limit. */
static sim_result run_targets_within(const char *name, const sim_cfg *cfg,
                                     int64_t settle_us, double wall) {
  sim_result r = simulate(cfg, settle_us);
  print_result(name, &r);
  assert_int_equal(r.oks, cfg->requests);
  assert_true(r.throttled <= cfg->requests / 20);
  assert_true(r.wall_us <=
              (int64_t)(wall * cfg->requests / cfg->limit * (double)SEC));
  return r;
}

static sim_result run_targets(const char *name, const sim_cfg *cfg,
                              int64_t settle_us) {
  return run_targets_within(name, cfg, settle_us, 1.3);
}

/* nginx limit_req 40 r/s burst 1, 100 ms handler, Retry-After 1, 600
 * GETs at concurrency 8 (the bench's shape): within the band after 5 s,
 * few 429s, wall within 1.3 x N / limit. */
static void test_converges(void **state) {
  (void)state;
  sim_cfg cfg = {40, 0, 0, 100 * MS, SEC, 0, 1, 8, 600, 0, 0};
  sim_result r = run_targets("40/s", &cfg, 5 * SEC);
  /* The band: the rate stays within [0.6, 1.1] x the limit. */
  assert_true(r.rate_min >= 0.6 * 40 && r.rate_max <= 1.1 * 40);
  assert_true(r.tput_min >= 0.7 * 40 && r.tput_max <= 1.0 * 40 + 1);
  assert_true(r.max_in_flight <= 8);
}

/* The same server fast (a static file: 2 ms), 200 GETs at 20/s, as
 * tests/integration/test_run_learned_rate.sh: a first answer in 2 ms must
 * not send the rate to concurrency / latency. */
static void test_fast_server(void **state) {
  (void)state;
  sim_cfg cfg = {20, 0, 0, 2 * MS, SEC, 0, 1, 8, 200, 0, 0};
  /* 1.40 x since #23 (1.24 x before): answers in 2 ms put slow start's
   * overshoot into its upper estimate (27/s for 20/s), so the first cut
   * lands above the limit and the relapse that finds it costs a pause and
   * a low landing; in a 10 s run that is a tenth of the time each. The
   * zoo's leaky-bucket-fast row (600 requests: 1.16 x, was 1.15 x) is the
   * longer measure, and the rules that cost this case are worth 1.55 ->
   * 1.16 x on a sliding window (docs/decisions.md). */
  run_targets_within("20/s, 2 ms handler", &cfg, 3 * SEC, 1.45);
}

/* Two participants of one budget (bench/adaptive with two processes), each
 * at concurrency 8, 600 GETs at 40/s in all. The one that did not cut
 * holds at the other's rate instead of climbing its own curve: one
 * crossing, one 429 (until 2026-12 the follower's raises brought a second
 * one 4 s later). */
static void test_converges_two(void **state) {
  (void)state;
  sim_cfg cfg = {40, 0, 0, 100 * MS, SEC, 0, 2, 8, 600, 0, 0};
  sim_result r = run_targets("40/s, 2 workers", &cfg, 5 * SEC);
  assert_int_equal(r.throttled, 1);
}

/* A longer run at a fixed limit: no oscillation beyond the band and few
 * 429s once steady. */
static void test_steady(void **state) {
  (void)state;
  sim_cfg cfg = {20, 0, 0, 200 * MS, SEC, 0, 1, 8, 1200, 0, 0};
  sim_result r = simulate(&cfg, 10 * SEC);
  print_result("20/s long", &r);
  assert_int_equal(r.oks, 1200);
  assert_true(r.rate_min >= 0.6 * 20 && r.rate_max <= 1.1 * 20);
  assert_true(r.tput_min >= 0.7 * 20);
  assert_true(r.throttled <= 24); /* 2% */
}

/* The limit halves mid-run: followed within 5 s, with at most 3 extra
 * 429s per worker; two workers share the rate through the store. */
static void test_follows_halving(void **state) {
  (void)state;
  sim_cfg cfg = {40, 20, 11 * SEC, 100 * MS, SEC, 0, 2, 4, 1000, 0, 0};
  sim_result r = simulate(&cfg, 5 * SEC);
  print_result("40/s -> 20/s, 2 workers", &r);
  /* The same run at 20/s throughout: its 429s after the same instant are
   * the probing a steady run pays anyway; the rest are the change's. */
  sim_cfg fixed = cfg;
  fixed.limit = 20;
  fixed.limit2 = 20;
  sim_result base = simulate(&fixed, 5 * SEC);
  print_result("20/s throughout, 2 workers", &base);
  assert_int_equal(r.oks, 1000);
  assert_true(r.follow_us <= 5 * SEC);
  assert_true(base.wall_us <= (int64_t)(1.3 * 1000 / 20 * SEC));
  assert_true(r.throttled_after_change - base.throttled_after_change <=
              3 * cfg.workers);
}

/* The same halving with two participants at concurrency 8 each, 8 s into
 * an 800-GET run (bench/adaptive --halve): the cuts after the change are
 * made from a few answers each; an estimate from fewer than MIN_SAMPLES
 * of them (until 2026-12: 2) put the account at 0.63 x the new limit for
 * the 20 s hold that followed. */
static void test_follows_halving_two(void **state) {
  (void)state;
  sim_cfg cfg = {40, 20, 9 * SEC, 100 * MS, SEC, 0, 2, 8, 800, 0, 0};
  sim_result r = simulate(&cfg, 5 * SEC);
  print_result("40/s -> 20/s at 8 s, 2 x concurrency 8", &r);
  assert_int_equal(r.oks, 800);
  assert_true(r.follow_us <= 5 * SEC);
  assert_true(r.throttled_after_change <= 3 * cfg.workers);
  /* From 5 s after the change: never below 0.85 x the new limit. */
  assert_true(r.rate_min >= 0.85 * 20);
  assert_true(r.wall_us <= (int64_t)(1.35 * (8 + (800 - 8 * 40) / 20.0) * SEC));
}

/* Slow start on c (concurrency 8) with clean answers at 100 ms until the
 * ramp is at 40/s, then one 429 with Retry-After: 1; returns when that
 * pause ends. */
static int64_t ramp_then_429(polite_ratectl *c) {
  polite_ratectl_config cfg = {0, 0, 0, 8};
  polite_ratectl_init(c, &cfg, 0);
  int64_t t = 0;
  while (polite_ratectl_rate(c, t) < 40) {
    polite_ratectl_on_start(c, t);
    polite_ratectl_response ok = {t + 100 * MS, t, 200, -1, NULL};
    polite_ratectl_on_response(c, &ok);
    t += 10 * MS;
  }
  polite_ratectl_on_start(c, t);
  polite_ratectl_response no = {t + MS, t, 429, SEC, NULL};
  assert_int_equal(polite_ratectl_on_response(c, &no), POLITE_CUT_THROTTLE);
  return t + MS + SEC;
}

/* The plateau after a cut is held for at least HOLD_PAUSES (20) times the
 * server's pause before the probe: a probe that finds the limit costs a
 * pause, so probing costs at most 5% of the time. Until 2026-12 the hold
 * was 12 s whatever the pause: at Retry-After 1 the probe's 429 came 16 s
 * into the bench's 15 s run and cost a second of it. Since #23 no 30 s cap
 * either: at Retry-After 10 a probe every 30 s cost a third of the time.
 * The hold runs from when the climb reaches the plateau (the epoch). */
static void test_hold_per_pause(void **state) {
  (void)state;
  polite_ratectl c;
  int64_t resume = ramp_then_429(&c);
  int64_t top = c.epoch_us > resume ? c.epoch_us : resume, t;
  double held = polite_ratectl_rate(&c, top);
  printf("# held at %.1f/s from %.1f s after the pause's end\n", held,
         (double)(top - resume) / 1e6);
  assert_true(fabs(polite_ratectl_rate(&c, top + 19 * SEC) - held) < 1e-9);
  assert_true(polite_ratectl_rate(&c, top + 21 * SEC) > held);
  /* Clean answers at the held rate for 25 s, then a 429 with a 10 s
   * pause: held 200 s (20 pauses). */
  for (t = resume; t < resume + 25 * SEC; t += 50 * MS) {
    polite_ratectl_on_start(&c, t);
    polite_ratectl_response ok = {t + 100 * MS, t, 200, -1, NULL};
    polite_ratectl_on_response(&c, &ok);
  }
  polite_ratectl_on_start(&c, t);
  polite_ratectl_response long_wait = {t + MS, t, 429, 10 * SEC, NULL};
  assert_int_equal(polite_ratectl_on_response(&c, &long_wait),
                   POLITE_CUT_THROTTLE);
  resume = t + MS + 10 * SEC;
  top = c.epoch_us > resume ? c.epoch_us : resume;
  held = polite_ratectl_rate(&c, top);
  assert_true(fabs(polite_ratectl_rate(&c, top + 199 * SEC) - held) < 1e-9);
  assert_true(polite_ratectl_rate(&c, top + 201 * SEC) > held);
}

/* A 429 of the first request after the pause: the cut landed above the
 * limit (a relapse). The limit lies below the rate that tripped and above
 * what got through since the first cut, pauses included: the cut lands at
 * that (never below half of 0.95 x the tripping rate: it overshot by what
 * the burst let through) and climbs to 0.95 x that; not counted as
 * steady. Until #23 it was a fixed 0.75 x cut
 * (0.9 x that to resume): a sliding window's post-pause burst took eight
 * such cuts to find its limit. */
static void test_fast_cut(void **state) {
  (void)state;
  polite_ratectl c;
  int64_t resume = ramp_then_429(&c);
  double r = polite_ratectl_rate(&c, resume);
  polite_ratectl_on_start(&c, resume);
  polite_ratectl_response again = {resume + MS, resume, 429, SEC, NULL};
  assert_int_equal(polite_ratectl_on_response(&c, &again), POLITE_CUT_THROTTLE);
  assert_true(c.relapse);
  int64_t resume2 = resume + MS + SEC;
  double cut_to = polite_ratectl_rate(&c, resume2);
  printf("# relapse: %.2f/s -> %.2f/s\n", r, cut_to);
  /* At least half of 95% of the tripping rate, less the plateau's 5%. */
  assert_true(cut_to >= 0.95 * 0.5 * 0.95 * r - 1e-9 && cut_to < r);
  assert_int_equal(c.steady, 0);
  double top = polite_ratectl_rate(&c, c.epoch_us + SEC);
  assert_true(top <= 0.95 * 0.95 * r + 1e-9 && top >= cut_to);
}

/* --max-rate is never exceeded, and the concurrency cap holds. */
static void test_max_rate(void **state) {
  (void)state;
  sim_cfg cfg = {40, 0, 0, 100 * MS, SEC, 0, 1, 8, 300, 15, 0};
  sim_result r = simulate(&cfg, 3 * SEC);
  print_result("cap 15/s", &r);
  assert_int_equal(r.over_max, 0);
  assert_int_equal(r.throttled, 0);
  assert_true(r.rate_max <= 15 + 1e-9);
  assert_true(r.tput_min >= 0.9 * 15);
  assert_true(r.max_in_flight <= 8);
}

/* A server far above what the concurrency allows: the rate stops at
 * concurrency / latency instead of growing without end. */
static void test_concurrency_cap(void **state) {
  (void)state;
  sim_cfg cfg = {1000, 0, 0, 500 * MS, SEC, 0, 1, 4, 200, 0, 0};
  sim_result r = simulate(&cfg, 3 * SEC);
  print_result("conc 4 at 500 ms", &r);
  assert_int_equal(r.throttled, 0);
  assert_true(r.rate_max <= 8.0 + 1e-6);
  assert_true(r.max_in_flight <= 4);
}

/* A server that states its limit in headers (fixed 10 s windows of
 * limit x 10): at most 0.5% 429s, wall within 1.1 x N / (q/w). */
static void test_headers_server(void **state) {
  (void)state;
  sim_cfg cfg = {20, 0, 0, 100 * MS, SEC, 1, 1, 8, 600, 0, 0};
  sim_result r = simulate(&cfg, 3 * SEC);
  print_result("headers 200 per 10 s", &r);
  assert_int_equal(r.oks, 600);
  assert_true(r.throttled <= 3);
  assert_true(r.wall_us <= (int64_t)(1.1 * 600 / 20 * SEC));
}

/* One 429 while the headers plan 9.8/s (a start that reached the server a
 * few ms early): after the server's second the rate is back within 5% of
 * the plan, not at a probe's 0.9 x what got through for the rest of the
 * run. */
static void test_headers_one_429(void **state) {
  (void)state;
  polite_ratectl c;
  polite_ratectl_config cfg = {0, 0, 0, 8};
  polite_ratectl_init(&c, &cfg, 0);
  const char *h[] = {"RateLimit-Policy: \"polite\";q=10;w=1",
                     "RateLimit: \"polite\";r=10;t=1", NULL};
  polite_rate_plan p = plan_of(h);
  int64_t t = 0;
  for (int i = 0; i < 100; i++, t += 102 * MS) {
    polite_ratectl_on_start(&c, t);
    polite_ratectl_response ok = {t + 100 * MS, t, 200, -1, &p};
    polite_ratectl_on_response(&c, &ok);
  }
  assert_int_equal(c.phase, POLITE_RC_HEADERS);
  polite_ratectl_on_start(&c, t);
  polite_ratectl_response no = {t + MS, t, 429, SEC, NULL};
  assert_int_equal(polite_ratectl_on_response(&c, &no), POLITE_CUT_THROTTLE);
  t += 2 * SEC;
  polite_ratectl_response ok = {t, t - 100 * MS, 200, -1, &p};
  polite_ratectl_on_response(&c, &ok);
  double r = polite_ratectl_rate(&c, t);
  printf("# after one 429 under a 9.8/s plan: %.2f/s\n", r);
  assert_true(r >= 0.95 * p.rate_per_s - 1e-9 && r <= p.rate_per_s);
}

/* The pure parts: no state outside the struct, first estimate then ramp. */
static void test_ramp_and_shared(void **state) {
  (void)state;
  polite_ratectl c;
  polite_ratectl_init(&c, NULL, 0);
  assert_true(polite_ratectl_rate(&c, 0) == POLITE_RATECTL_INITIAL_PER_S);
  /* No answer yet: no raise (a server that does not answer is not asked
   * faster). */
  polite_ratectl_on_start(&c, 0);
  assert_true(polite_ratectl_rate(&c, 500 * MS) ==
              POLITE_RATECTL_INITIAL_PER_S);
  /* A clean answer allows at most twice the rate it was started at, and
   * the ramp doubles every 500 ms below that. */
  polite_ratectl_response ok = {400 * MS, 0, 200, -1, NULL};
  polite_ratectl_on_response(&c, &ok);
  assert_true(fabs(polite_ratectl_rate(&c, 500 * MS) - 8) < 1e-9);
  assert_true(fabs(polite_ratectl_rate(&c, 900 * MS) - 8) < 1e-9);
  /* Another participant's cut is adopted at once. */
  polite_shared_rate s = {5, 7, 3, 0};
  polite_ratectl_on_shared(&c, SEC, &s);
  assert_true(fabs(polite_ratectl_rate(&c, SEC) - 5) < 1e-3);
  assert_int_equal(c.cuts[POLITE_CUT_SHARED], 1);
  assert_int_equal(c.phase, POLITE_RC_PROBE);
  /* ... then holds at its rate (the participant that cut leads: its
   * climb comes as raises), and probes on its own only after the longest
   * hold (30 s) without one. */
  assert_true(fabs(polite_ratectl_rate(&c, 3 * SEC) - 5) < 1e-3);
  polite_shared_rate out;
  int is_cut = -1;
  assert_int_equal(polite_ratectl_take_publish(&c, SEC, &out, &is_cut), 0);
  assert_int_equal(polite_ratectl_take_publish(&c, 3 * SEC, &out, &is_cut), 0);
  /* The same generation, higher: another participant's raise, followed and
   * held (not a jump up this participant's own probe). */
  polite_shared_rate up = {6, 7, 3, 0};
  polite_ratectl_on_shared(&c, 4 * SEC, &up);
  assert_true(fabs(polite_ratectl_rate(&c, 4 * SEC) - 6) < 1e-3);
  assert_true(fabs(polite_ratectl_rate(&c, 33 * SEC) - 6) < 1e-3);
  double later = polite_ratectl_rate(&c, 38 * SEC);
  assert_true(later > 6 && later < 7);
  assert_int_equal(polite_ratectl_take_publish(&c, 38 * SEC, &out, &is_cut), 1);
  assert_int_equal(is_cut, 0);
  assert_int_equal(out.generation, 3);
  /* A 429 cuts below the rate and asks to publish a cut. */
  polite_ratectl_response r = {38 * SEC, 38 * SEC - 100 * MS, 429, SEC, NULL};
  assert_int_equal(polite_ratectl_on_response(&c, &r), POLITE_CUT_THROTTLE);
  assert_true(polite_ratectl_rate(&c, 38 * SEC) < later);
  assert_int_equal(polite_ratectl_take_publish(&c, 38 * SEC, &out, &is_cut), 1);
  assert_int_equal(is_cut, 1);
  /* A 429 of a request already in flight at that cut does not cut again. */
  r.now_us += 50 * MS;
  assert_int_equal(polite_ratectl_on_response(&c, &r), POLITE_CUT_NONE);
  assert_string_equal(polite_ratectl_cause_name(POLITE_CUT_THROTTLE),
                      "throttle");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plan_none),
      cmocka_unit_test(test_plan_ietf),
      cmocka_unit_test(test_plan_older_forms),
      cmocka_unit_test(test_plan_x_ratelimit),
      cmocka_unit_test(test_plan_proxy_contract),
      cmocka_unit_test(test_shared_merge),
      cmocka_unit_test(test_ramp_and_shared),
      cmocka_unit_test(test_converges),
      cmocka_unit_test(test_fast_server),
      cmocka_unit_test(test_converges_two),
      cmocka_unit_test(test_steady),
      cmocka_unit_test(test_follows_halving),
      cmocka_unit_test(test_follows_halving_two),
      cmocka_unit_test(test_hold_per_pause),
      cmocka_unit_test(test_fast_cut),
      cmocka_unit_test(test_max_rate),
      cmocka_unit_test(test_concurrency_cap),
      cmocka_unit_test(test_headers_server),
      cmocka_unit_test(test_headers_one_429),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
