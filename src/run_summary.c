/* polite run: the end-of-run summary (text and JSON) and the progress line. */
#include "run_summary.h"

#include "run_output.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <polite/clock.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

/* Hosts whose learned rate the text summary lists (scope host). */
#define SUMMARY_HOSTS 10

/* Derived numbers shared by the text and JSON summaries. */
typedef struct {
  uint64_t failures;
  double run_s;
  int rate_measured;     /* enough open time between starts to tell */
  double measured_rate;  /* network starts per second, pauses excluded */
  double mean_latency_s; /* per attempt */
  double mean_in_flight; /* over the active part of the run */
  double little;         /* measured rate x mean latency */
  double planned_interval_ms;
  double mean_cost;  /* rate units per attempt (1 without costs) */
  double start_plan; /* planned starts/s: --rate / mean cost; 0: none */
  double interval_mean_ms, interval_p50_ms, interval_p99_ms;
  double err_p50_ms, err_p99_ms; /* |interval - planned| */
  int rate_within_plan;
  int warn_429;
} derived;

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, size_t n, double q) {
  if (n == 0)
    return 0;
  size_t i = (size_t)ceil(q * (double)n) - 1;
  if (i >= n)
    i = n - 1;
  return (double)v[i] / 1000.0;
}

static void derive(const polite_batch_stats *s, const run_plan *p, derived *d) {
  memset(d, 0, sizeof *d);
  for (int o = POLITE_OUT_HTTP_ERROR; o < POLITE_OUT_COUNT; o++)
    d->failures += s->by_outcome[o];
  d->run_s = (double)s->run_us / 1e6;
  /* The rate while sending: gaps between starts that contain a server
   * pause are left out (else a pause would hide a too-fast plan). */
  /* Only gaps of open budget count, and only when they add up to enough
   * time: starts packed into a few microseconds between pauses give a
   * huge number that says nothing about the run. */
  if (s->unpaused_gaps > 0 && s->unpaused_gap_sum_us >= RUN_MIN_MEASURED_US) {
    d->rate_measured = 1;
    d->measured_rate =
        (double)s->unpaused_gaps / ((double)s->unpaused_gap_sum_us / 1e6);
  }
  if (s->attempts > 0)
    d->mean_latency_s = (double)s->latency_sum_us / 1e6 / (double)s->attempts;
  double active_s = s->first_start_us >= 0
                        ? (double)(s->run_us - s->first_start_us) / 1e6
                        : 0;
  if (active_s > 0)
    d->mean_in_flight = s->in_flight_integral_s / active_s;
  d->little = d->measured_rate * d->mean_latency_s;
  /* --rate counts units; with costs above 1, starts are planned at the
   * rate divided by the mean cost of the attempts made. */
  d->mean_cost = s->attempts > 0 && s->units > s->attempts
                     ? (double)s->units / (double)s->attempts
                     : 1.0;
  if (p->target_rate > 0) {
    d->start_plan = p->target_rate / d->mean_cost;
    d->planned_interval_ms = 1000.0 / d->start_plan;
  }
  size_t n = s->n_intervals;
  if (n > 0) {
    int64_t *v = malloc(n * sizeof *v);
    int64_t *e = malloc(n * sizeof *e);
    if (v && e) {
      double sum = 0;
      int64_t planned_us = (int64_t)(d->planned_interval_ms * 1000.0);
      for (size_t i = 0; i < n; i++) {
        v[i] = s->intervals_us[i];
        sum += (double)v[i];
        e[i] = planned_us > 0 ? llabs(v[i] - planned_us) : 0;
      }
      qsort(v, n, sizeof *v, cmp_i64);
      qsort(e, n, sizeof *e, cmp_i64);
      d->interval_mean_ms = sum / (double)n / 1000.0;
      d->interval_p50_ms = pct(v, n, 0.50);
      d->interval_p99_ms = pct(v, n, 0.99);
      d->err_p50_ms = pct(e, n, 0.50);
      d->err_p99_ms = pct(e, n, 0.99);
    }
    free(v);
    free(e);
  }
  /* Within the plan: the median gap between starts is not shorter than
   * planned (the median ignores the long gaps of server pauses), or, with
   * too few gaps to tell, the average rate is not above the plan. */
  if (p->target_rate > 0)
    d->rate_within_plan =
        n >= 5 ? d->interval_p50_ms >= d->planned_interval_ms * 0.95
               : d->rate_measured && d->measured_rate <= d->start_plan * 1.05;
  d->warn_429 = s->n429 > 0 && d->rate_within_plan;
}

static const char WARN_429[] =
    "429s arrived although the measured start rate stayed within the plan: "
    "another caller may share the allowance, the allowance may be lower than "
    "planned, or the limit is of another kind (concurrency, tokens, a "
    "quota); look before waiting longer.";

/* "1.50/s measured (pauses excluded)" or why there is no such figure. */
static void measured_text(char *buf, size_t n, const polite_batch_stats *s,
                          const derived *d) {
  if (d->rate_measured)
    snprintf(buf, n, "%.2f/s measured (pauses excluded)", d->measured_rate);
  else if (s->attempts < 2)
    snprintf(buf, n, "not measured (fewer than 2 starts)");
  else
    snprintf(buf, n,
             "not measured (the budget was open between starts for only "
             "%.1f ms)",
             (double)s->unpaused_gap_sum_us / 1000.0);
}

/* The start-rate and in-flight lines of the summary. */
static void print_rate_lines(FILE *f, const polite_batch_stats *s,
                             const run_plan *p, const derived *d) {
  char m[120];
  measured_text(m, sizeof m, s, d);
  if (p->target_rate > 0 && d->mean_cost > 1.0)
    fprintf(f,
            "  start rate: %s, %.2f/s planned (--rate %.2f units/s, mean cost "
            "%.2f units per attempt)\n",
            m, d->start_plan, p->target_rate, d->mean_cost);
  else if (p->target_rate > 0)
    fprintf(f, "  start rate: %s, %.2f/s planned\n", m, p->target_rate);
  else
    fprintf(f, "  start rate: %s (no --rate planned)\n", m);
  fprintf(f, "  in flight: mean %.2f, peak %u (--concurrency %u); ",
          d->mean_in_flight, s->peak_in_flight, p->concurrency);
  if (d->rate_measured && s->attempts > 0)
    fprintf(f, "Little's law: %.2f/s x %.1f ms mean latency = %.2f\n",
            d->measured_rate, d->mean_latency_s * 1000.0, d->little);
  else
    fprintf(f, "Little's law: not measured (no start rate)\n");
}

/* The run's learned rate as one series (its host NULL). */
static polite_host_rate run_learned(const polite_batch_stats *s) {
  polite_host_rate r = {NULL,
                        s->rate_first_per_s,
                        s->rate_final_per_s,
                        s->rate_lowest_per_s,
                        s->rate_highest_per_s,
                        s->rate_cuts_throttle,
                        s->rate_cuts_headers,
                        s->rate_cuts_budget};
  return r;
}

/* One line of a learned-rate series, after `label`. */
static void print_series(FILE *f, const char *label,
                         const polite_host_rate *r) {
  fprintf(f,
          "%s%.2f/s first, %.2f/s final (lowest %.2f/s, highest %.2f/s); "
          "cuts: %llu by 429/503, %llu by headers, %llu through the budget\n",
          label, r->first_per_s, r->final_per_s, r->lowest_per_s,
          r->highest_per_s, (unsigned long long)r->cuts_throttle,
          (unsigned long long)r->cuts_headers,
          (unsigned long long)r->cuts_budget);
}

/* The learned-rate lines of the summary: the run's, then (scope host) the
 * first SUMMARY_HOSTS hosts' (all of them are in --summary-json). */
static void print_learned(FILE *f, const polite_batch_stats *s) {
  polite_host_rate run = run_learned(s);
  print_series(f, "  learned rate: ", &run);
  for (size_t i = 0; i < s->n_host_rates && i < SUMMARY_HOSTS; i++) {
    const polite_host_rate *h = &s->host_rates[i];
    char label[320];
    snprintf(label, sizeof label, "    %s: ",
             strcmp(h->host, "*") == 0 ? "other hosts (*)" : h->host);
    print_series(f, label, h);
  }
  if (s->n_host_rates > SUMMARY_HOSTS)
    fprintf(f, "    ... %zu more hosts in --summary-json\n",
            s->n_host_rates - SUMMARY_HOSTS);
}

void run_summary_text(FILE *f, const polite_batch_stats *s, const run_plan *p) {
  derived d;
  derive(s, p, &d);
  fprintf(f,
          "%s: %llu requests in %.1f s: %llu ok, %llu failed; %llu "
          "network attempts (%llu first, %llu retries)\n",
          p->name ? p->name : "polite run", (unsigned long long)s->results,
          d.run_s, (unsigned long long)s->by_outcome[POLITE_OUT_OK],
          (unsigned long long)d.failures, (unsigned long long)s->attempts,
          (unsigned long long)s->first_attempts,
          (unsigned long long)s->retries);
  if (d.failures > 0) {
    fprintf(f, "  failures:");
    for (int o = POLITE_OUT_HTTP_ERROR; o < POLITE_OUT_COUNT; o++)
      if (s->by_outcome[o])
        fprintf(f, " %s %llu", polite_outcome_name((polite_outcome)o),
                (unsigned long long)s->by_outcome[o]);
    fprintf(f, "\n");
  }
  fprintf(f,
          "  responses: 429 x %llu, 503 x %llu; waited %.1f s between "
          "attempts; budget paused by the server %.1f s\n",
          (unsigned long long)s->n429, (unsigned long long)s->n503,
          (double)s->retry_wait_ms / 1000.0, (double)s->paused_ms / 1000.0);
  if (s->n_throttled > 0) {
    fprintf(f, "  429/503 by sender:");
    for (size_t i = 0; i < s->n_throttled; i++)
      fprintf(f, "%s %s %s x %llu", i ? "," : "", s->throttled[i].component,
              polite_limit_name(s->throttled[i].limit),
              (unsigned long long)s->throttled[i].count);
    fprintf(f, "\n");
  }
  print_rate_lines(f, s, p, &d);
  if (s->rate_learned)
    print_learned(f, s);
  if (p->first > 0) {
    fprintf(f,
            "  trial (--first %llu): start interval mean %.1f ms (p50 "
            "%.1f, p99 %.1f)",
            (unsigned long long)p->first, d.interval_mean_ms, d.interval_p50_ms,
            d.interval_p99_ms);
    if (p->target_rate > 0)
      fprintf(f, ", planned %.1f ms (error p50 %.1f ms, p99 %.1f ms)",
              d.planned_interval_ms, d.err_p50_ms, d.err_p99_ms);
    fprintf(f, "; in flight mean %.2f vs %.2f expected (rate x latency)",
            d.mean_in_flight,
            (p->target_rate > 0 ? d.start_plan : d.measured_rate) * /* 0 */
                d.mean_latency_s);
    if (p->concurrency && p->target_rate > 0 &&
        d.start_plan * d.mean_latency_s > p->concurrency)
      fprintf(f,
              "; --concurrency %u is below the expected in-flight count: "
              "the rate cannot be reached",
              p->concurrency);
    fprintf(f, "\n");
  }
  if (d.warn_429)
    fprintf(f, "  warning: %s\n", WARN_429);
  if (s->quota_stop)
    fprintf(f, "  stopped: a response said the quota is spent; waiting does "
               "not help\n");
  if (s->budget_outages > 0)
    fprintf(f,
            "  budget outages: %llu, %.1f s in all (nothing was sent while "
            "the budget could not be used)\n",
            (unsigned long long)s->budget_outages,
            (double)s->budget_outage_total_ms / 1000.0);
  if (s->cancelled)
    fprintf(f, "  interrupted: requests not finished are 'cancelled'\n");
}

/* A learned-rate series as JSON ("host" first when it has one). */
static json_t *series_json(const polite_host_rate *r) {
  json_t *o = json_object();
  if (r->host)
    json_object_set_new(o, "host", json_string(r->host));
  json_object_set_new(o, "first_per_s", json_real(r->first_per_s));
  json_object_set_new(o, "final_per_s", json_real(r->final_per_s));
  json_object_set_new(o, "lowest_per_s", json_real(r->lowest_per_s));
  json_object_set_new(o, "highest_per_s", json_real(r->highest_per_s));
  json_t *cuts = json_object();
  json_object_set_new(cuts, "throttle",
                      json_integer((json_int_t)r->cuts_throttle));
  json_object_set_new(cuts, "headers",
                      json_integer((json_int_t)r->cuts_headers));
  json_object_set_new(cuts, "budget", json_integer((json_int_t)r->cuts_budget));
  json_object_set_new(o, "cuts", cuts);
  return o;
}

int run_summary_json(const char *path, const polite_batch_stats *s,
                     const run_plan *p) {
  derived d;
  derive(s, p, &d);
  json_t *o = json_object();
  json_t *fail = json_object();
  for (int k = POLITE_OUT_HTTP_ERROR; k < POLITE_OUT_COUNT; k++)
    json_object_set_new(fail, polite_outcome_name((polite_outcome)k),
                        json_integer((json_int_t)s->by_outcome[k]));
  json_object_set_new(o, "requests", json_integer((json_int_t)s->results));
  json_object_set_new(o, "read", json_integer((json_int_t)s->read));
  json_object_set_new(o, "ok",
                      json_integer((json_int_t)s->by_outcome[POLITE_OUT_OK]));
  json_object_set_new(o, "failed", json_integer((json_int_t)d.failures));
  json_object_set_new(o, "failures", fail);
  json_object_set_new(o, "first_attempts",
                      json_integer((json_int_t)s->first_attempts));
  json_object_set_new(o, "retries", json_integer((json_int_t)s->retries));
  json_object_set_new(o, "network_attempts",
                      json_integer((json_int_t)s->attempts));
  json_object_set_new(o, "status_429", json_integer((json_int_t)s->n429));
  json_object_set_new(o, "status_503", json_integer((json_int_t)s->n503));
  json_t *thr = json_array();
  for (size_t i = 0; i < s->n_throttled; i++) {
    json_t *t = json_object();
    json_object_set_new(t, "component", json_string(s->throttled[i].component));
    json_object_set_new(t, "limit",
                        json_string(polite_limit_name(s->throttled[i].limit)));
    json_object_set_new(t, "count",
                        json_integer((json_int_t)s->throttled[i].count));
    json_array_append_new(thr, t);
  }
  json_object_set_new(o, "throttled_by", thr);
  json_object_set_new(o, "retry_wait_ms", json_integer(s->retry_wait_ms));
  json_object_set_new(o, "paused_ms", json_integer(s->paused_ms));
  json_object_set_new(o, "elapsed_ms", json_integer(s->run_us / 1000));
  json_object_set_new(o, "rate_measured",
                      d.rate_measured ? json_real(d.measured_rate)
                                      : json_null());
  json_object_set_new(o, "units", json_integer((json_int_t)s->units));
  json_object_set_new(o, "rate_target",
                      p->target_rate > 0 ? json_real(p->target_rate)
                                         : json_null());
  json_t *lr = json_null();
  if (s->rate_learned) {
    polite_host_rate run = run_learned(s);
    lr = series_json(&run);
    if (s->n_host_rates > 0) {
      json_t *hosts = json_array();
      for (size_t i = 0; i < s->n_host_rates; i++)
        json_array_append_new(hosts, series_json(&s->host_rates[i]));
      json_object_set_new(lr, "hosts", hosts);
    }
  }
  json_object_set_new(o, "rate_learned", lr);
  json_object_set_new(o, "interval_mean_ms", json_real(d.interval_mean_ms));
  json_object_set_new(o, "interval_p50_ms", json_real(d.interval_p50_ms));
  json_object_set_new(o, "interval_p99_ms", json_real(d.interval_p99_ms));
  json_object_set_new(o, "interval_error_p50_ms", json_real(d.err_p50_ms));
  json_object_set_new(o, "interval_error_p99_ms", json_real(d.err_p99_ms));
  json_object_set_new(o, "in_flight_mean", json_real(d.mean_in_flight));
  json_object_set_new(o, "in_flight_peak",
                      json_integer((json_int_t)s->peak_in_flight));
  json_object_set_new(o, "latency_mean_ms",
                      json_real(d.mean_latency_s * 1000.0));
  json_object_set_new(o, "littles_law_in_flight",
                      d.rate_measured ? json_real(d.little) : json_null());
  json_object_set_new(o, "warning",
                      d.warn_429 ? json_string(WARN_429) : json_null());
  json_object_set_new(o, "quota_stop", json_boolean(s->quota_stop));
  json_object_set_new(o, "interrupted", json_boolean(s->cancelled));
  json_object_set_new(o, "budget_outages",
                      json_integer((json_int_t)s->budget_outages));
  json_object_set_new(o, "budget_outage_ms",
                      json_integer(s->budget_outage_total_ms));
  if (p->first > 0)
    json_object_set_new(o, "trial_first", json_integer((json_int_t)p->first));
  /* Every step checked, fclose included: a full disk shows there. */
  FILE *f = fopen(path, "w");
  int rc = f ? json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_INDENT(2)) : -1;
  if (f && rc == 0 && fputc('\n', f) == EOF)
    rc = -1;
  if (f && fclose(f) != 0)
    rc = -1;
  json_decref(o);
  return rc == 0 ? 0 : -1;
}

static void fmt_secs(char *buf, size_t n, double s) {
  if (s < 0 || s != s)
    snprintf(buf, n, "?");
  else if (s < 60)
    snprintf(buf, n, "%.0fs", s);
  else if (s < 3600)
    snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
  else if (s < 360000)
    snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
  else
    snprintf(buf, n, ">100h");
}

/* Appends to buf[*n..size) like snprintf, never past the end. */
static void add(char *buf, size_t size, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t size, size_t *n, const char *fmt, ...) {
  if (*n >= size)
    return;
  va_list ap;
  va_start(ap, fmt);
  /* va_start is right above; clang 14's checker misses it (see cli.c). */
  // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
  int k = vsnprintf(buf + *n, size - *n, fmt, ap);
  va_end(ap);
  if (k > 0)
    *n = *n + (size_t)k < size ? *n + (size_t)k : size - 1;
}

double run_progress_rate(const polite_batch_stats *s) {
  /* Seconds the budget was open so far: a pause adds its whole length to
   * paused_ms when it begins, so the part still ahead is taken off. */
  double paused_s =
      (double)(s->paused_ms - (s->paused_left_ms > 0 ? s->paused_left_ms : 0)) /
      1000.0;
  double open_s = (double)s->run_us / 1e6 - paused_s;
  if (open_s < 0.2 || s->results == 0)
    return 0;
  return (double)s->results / open_s;
}

double run_progress_eta(const run_progress *p, const polite_batch_stats *s) {
  if (p->total < 0)
    return -1;
  double left = (double)(p->total > (long long)s->results
                             ? p->total - (long long)s->results
                             : 0);
  if (left == 0)
    return 0;
  /* The plan, or what was measured while the budget was open when that is
   * slower (a concurrency too low for the plan): neither moves while the
   * server pauses the budget, so the ETA only counts the pause down. */
  double rate = run_progress_rate(s);
  if (p->planned_rate > 0 &&
      (rate <= 0 || s->results < 5 || rate > p->planned_rate))
    rate = p->planned_rate;
  if (rate <= 0)
    return -1;
  double pause_s = s->paused_left_ms > 0 ? (double)s->paused_left_ms / 1e3 : 0;
  return pause_s + left / rate;
}

/* " (learned LO-HI/s, N hosts)": the range of the hosts' current rates. */
static void add_host_range(char *buf, size_t size, size_t *n,
                           const polite_batch_stats *s) {
  double lo = s->host_rates[0].final_per_s, hi = lo;
  for (size_t i = 1; i < s->n_host_rates; i++) {
    double r = s->host_rates[i].final_per_s;
    lo = r < lo ? r : lo;
    hi = r > hi ? r : hi;
  }
  add(buf, size, n, " (learned %.*f-%.*f/s, %zu hosts)", lo < 10 ? 2 : 1, lo,
      hi < 10 ? 2 : 1, hi, s->n_host_rates);
}

size_t run_progress_format(char *buf, size_t size, const run_progress *p,
                           const polite_batch_stats *s) {
  size_t n = 0;
  buf[0] = '\0';
  if (p->total >= 0) {
    long long done = (long long)s->results;
    double frac = p->total > 0 ? (double)done / (double)p->total : 1;
    if (frac > 1)
      frac = 1;
    int fill = (int)(frac * RUN_PROGRESS_BAR + 1e-9);
    char bar[RUN_PROGRESS_BAR + 1];
    for (int i = 0; i < RUN_PROGRESS_BAR; i++)
      bar[i] = i < fill ? '#' : '.';
    bar[RUN_PROGRESS_BAR] = '\0';
    add(buf, size, &n, "[%s] %3d%% %lld/%lld done", bar,
        (int)(frac * 100 + 1e-9), done, p->total);
  } else {
    add(buf, size, &n, "%llu done, %llu read", (unsigned long long)s->results,
        (unsigned long long)s->read);
  }
  double rate = run_progress_rate(s);
  if (rate > 0)
    add(buf, size, &n, " | %.1f/s", rate);
  else
    add(buf, size, &n, " | -/s");
  if (p->planned_rate > 0)
    add(buf, size, &n, " (plan %.*f/s)", p->planned_rate < 10 ? 2 : 1,
        p->planned_rate);
  else if (s->n_host_rates > 1) /* scope host: one rate per host */
    add_host_range(buf, size, &n, s);
  else if (s->rate_learned)
    add(buf, size, &n, " (learned %.*f/s)", s->rate_final_per_s < 10 ? 2 : 1,
        s->rate_final_per_s);
  add(buf, size, &n, " | in flight %u | 429s %llu", s->in_flight,
      (unsigned long long)s->n429);
  if (p->total >= 0) {
    char eta[32];
    fmt_secs(eta, sizeof eta, run_progress_eta(p, s));
    add(buf, size, &n, " | ETA %s", eta);
  }
  if (s->paused_left_ms > 0)
    add(buf, size, &n, " | throttled by server: resuming in %.1f s",
        (double)s->paused_left_ms / 1000.0);
  if (s->budget_outage_ms > 0)
    add(buf, size, &n, " | budget unavailable for %.1f s: nothing sent",
        (double)s->budget_outage_ms / 1000.0);
  return n;
}

void run_progress_draw(run_progress *p, const polite_batch_stats *s,
                       int force) {
  if (!p->on)
    return;
  int64_t now = polite_mono_us();
  if (!force && p->drawn && now - p->last_draw_us < 100000)
    return;
  p->last_draw_us = now;
  p->drawn = 1;
  char line[320];
  run_progress_format(line, sizeof line, p, s);
  /* \r and "erase to end of line": one line redrawn in place. */
  fprintf(stderr, "\r%s\033[K", line);
  fflush(stderr);
}

/* Says on stderr when a budget outage begins (what failed, and what
 * happens now) and when it ends; the progress line shows it meanwhile. */
void run_outage_tell(run_outage *c, const run_progress *p,
                     const polite_batch_stats *s) {
  int on = s->budget_error != NULL;
  if (on == c->on)
    return;
  c->on = on;
  if (!on && c->quiet)
    return;
  if (p->on && p->drawn)
    fputs("\r\033[K", stderr); /* the progress line is drawn again */
  if (on && c->told++ == 0 && c->limit_ms > 0)
    fprintf(stderr,
            "polite run: %s\npolite run: nothing is sent while the budget "
            "cannot be used; asking again (100 ms doubling to 2 s) for up "
            "to %.0f s (--budget-outage), then stopping\n",
            s->budget_error, (double)c->limit_ms / 1e3);
  else if (on)
    fprintf(stderr, "polite run: %s; nothing is sent until it answers\n",
            s->budget_error);
  else
    fprintf(stderr, "polite run: the budget answers again; sending\n");
}

void run_progress_end(run_progress *p) {
  if (p->on && p->drawn) {
    fputc('\n', stderr);
    fflush(stderr);
  }
}

/* ---- The attempt log (--log) ----------------------------------------------
 */

/* Who sent a 429/503 and why, for the attempt log (evidence sentences
 * never quote secret headers: see diagnose.h). */
static void diagnosis_line(run_jline *j, const polite_diagnosis *d) {
  run_jline_open(j, "diagnosis", '{');
  run_jline_cstr(j, "component", polite_diagnosis_component(d));
  run_jline_cstr(j, "limit", polite_limit_name(d->limit));
  run_jline_bool(j, "retry_helps", d->retry_helps);
  if (d->wait_ms >= 0)
    run_jline_int(j, "wait_ms", d->wait_ms);
  else
    run_jline_null(j, "wait_ms");
  run_jline_open(j, "evidence", '[');
  for (size_t i = 0; i < d->n_evidence; i++)
    run_jline_redacted(j, NULL, d->evidence[i]);
  run_jline_close(j, ']');
  run_jline_close(j, '}');
}

/* An integer field that is null when absent (negative, or 0 for a
 * status). */
static void int_or_null(run_jline *j, const char *key, long long v, int has) {
  if (has)
    run_jline_int(j, key, v);
  else
    run_jline_null(j, key);
}

/* One attempt's fields, in the log's order (docs/run.md, "The attempt
 * log"). */
static void attempt_line(run_jline *j, const polite_attempt *a) {
  const polite_decision *d = &a->decision;
  run_jline_cstr(j, "id", a->req->id);
  run_jline_int(j, "attempt", a->attempt);
  run_jline_cstr(j, "method", a->method);
  run_jline_url(j, "url", a->req->url ? a->req->url : "");
  run_jline_time(j, "start", a->start_wall_ms);
  run_jline_time(j, "end", a->end_wall_ms);
  run_jline_int(j, "start_ms", a->start_wall_ms);
  run_jline_int(j, "end_ms", a->end_wall_ms);
  int_or_null(j, "status", a->status, a->status != 0);
  run_jline_cstr(j, "retry_after", a->retry_after);
  run_jline_cstr(j, "action",
                 d->action == POLITE_RETRY  ? "retry"
                 : d->action == POLITE_STOP ? "stop"
                                            : "done");
  run_jline_cstr(j, "reason", polite_reason_name(d->reason));
  int_or_null(j, "wait_ms", d->wait_ms, d->action == POLITE_RETRY);
  int_or_null(j, "server_wait_ms", d->server_wait_ms, d->server_wait_ms >= 0);
  run_jline_bool(j, "account_pause", d->account_pause);
  run_jline_cstr(j, "why", d->why);
  if (d->reason == POLITE_R_CANCELLED) /* cut in flight: no answer came */
    run_jline_bool(j, "cut_in_flight", 1);
  run_jline_cstr(j, "request_id", a->request_id);
  if (a->request_id_header)
    run_jline_cstr(j, "request_id_header", a->request_id_header);
  if (a->error)
    run_jline_redacted(j, "error", a->error);
  if (a->diagnosis)
    diagnosis_line(j, a->diagnosis);
}

/* Writes the line l->line holds (begun, not yet ended) to the log. */
static void log_line(run_log *l) {
  const char *s = run_jline_end(&l->line);
  errno = 0;
  /* Checked line by line: a full disk (or /dev/full) is an error the run
   * reports, not a log silently cut short. */
  if (s == NULL || fwrite(s, 1, l->line.n, l->f) != l->line.n ||
      fputc('\n', l->f) == EOF || (!l->deferred && fflush(l->f) != 0)) {
    l->failed = 1;
    l->err = s ? errno : ENOMEM;
  }
}

void run_log_flush(run_log *l) {
  if (l->f == NULL || l->failed)
    return;
  errno = 0;
  if (fflush(l->f) != 0) {
    l->failed = 1;
    l->err = errno;
  }
}

/* 1 when the log takes no more lines: none, or a write failed (also one of
 * the run/result/end lines the report tap writes to the same stream: its
 * error flag stays set). */
static int log_closed(run_log *l) {
  if (l->f != NULL && !l->failed && ferror(l->f)) {
    l->failed = 1;
    l->err = 0; /* the tap's write failed: its errno is gone */
  }
  return l->f == NULL || l->failed;
}

void run_log_attempt(run_log *l, const polite_attempt *a) {
  if (log_closed(l))
    return;
  run_jline_begin(&l->line);
  attempt_line(&l->line, a);
  if (l->extra)
    l->extra(l->extra_ud, a, &l->line);
  log_line(l);
}

void run_log_rate(run_log *l, const polite_rate_change *r) {
  if (log_closed(l))
    return;
  run_jline *j = &l->line;
  run_jline_begin(j);
  run_jline_cstr(j, "event", "rate");
  run_jline_int(j, "wall_ms", r->wall_ms);
  run_jline_real(j, "rate_per_s", r->rate_per_s);
  if (r->previous_per_s >= 0)
    run_jline_real(j, "previous_per_s", r->previous_per_s);
  else
    run_jline_null(j, "previous_per_s");
  run_jline_cstr(j, "reason", r->reason);
  run_jline_cstr(j, "detail", r->detail);
  if (r->host) /* --budget-scope host: the host account it belongs to */
    run_jline_cstr(j, "host", r->host);
  log_line(l);
}

int run_log_close(run_log *l) {
  run_jline_free(&l->line);
  if (l->f == NULL)
    return 0;
  errno = 0;
  (void)log_closed(l);
  if (fclose(l->f) != 0 && !l->failed) {
    l->failed = 1;
    l->err = errno;
  }
  l->f = NULL;
  if (!l->failed)
    return 0;
  fprintf(stderr,
          "polite run: --log: cannot write the attempt log '%s': %s; the log "
          "is incomplete (the results are not affected)\n",
          l->path, l->err ? strerror(l->err) : "write error");
  return -1;
}
