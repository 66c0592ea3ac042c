/* polite run: the end-of-run summary (text and JSON) and the progress line. */
#include "run_report.h"

#include <jansson.h>
#include <math.h>
#include <polite/clock.h>
#include <stdlib.h>
#include <string.h>

/* Derived numbers shared by the text and JSON summaries. */
typedef struct {
  uint64_t failures;
  double run_s;
  double measured_rate;  /* network starts per second, first to last */
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
  if (s->unpaused_gaps > 0 && s->unpaused_gap_sum_us > 0)
    d->measured_rate =
        (double)s->unpaused_gaps / ((double)s->unpaused_gap_sum_us / 1e6);
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
               : d->measured_rate <= d->start_plan * 1.05;
  d->warn_429 = s->n429 > 0 && d->rate_within_plan;
}

static const char WARN_429[] =
    "429s arrived although the measured start rate stayed within the plan: "
    "another caller may share the allowance, the allowance may be lower than "
    "planned, or the limit is of another kind (concurrency, tokens, a "
    "quota); look before waiting longer.";

void run_summary_text(FILE *f, const polite_batch_stats *s, const run_plan *p) {
  derived d;
  derive(s, p, &d);
  fprintf(f,
          "polite run: %llu requests in %.1f s: %llu ok, %llu failed; %llu "
          "network attempts (%llu first, %llu retries)\n",
          (unsigned long long)s->results, d.run_s,
          (unsigned long long)s->by_outcome[POLITE_OUT_OK],
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
  if (p->target_rate > 0 && d.mean_cost > 1.0)
    fprintf(f,
            "  start rate: %.2f/s measured (pauses excluded), %.2f/s planned "
            "(--rate %.2f units/s, mean cost %.2f units per attempt)\n",
            d.measured_rate, d.start_plan, p->target_rate, d.mean_cost);
  else if (p->target_rate > 0)
    fprintf(f,
            "  start rate: %.2f/s measured (pauses excluded), %.2f/s planned\n",
            d.measured_rate, p->target_rate);
  else
    fprintf(f, "  start rate: %.2f/s measured (no --rate planned)\n",
            d.measured_rate);
  fprintf(f,
          "  in flight: mean %.2f, peak %u (--concurrency %u); Little's law: "
          "%.2f/s x %.1f ms mean latency = %.2f\n",
          d.mean_in_flight, s->peak_in_flight, p->concurrency, d.measured_rate,
          d.mean_latency_s * 1000.0, d.little);
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
            (p->target_rate > 0 ? d.start_plan : d.measured_rate) *
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
  if (s->cancelled)
    fprintf(f, "  interrupted: requests not finished are 'cancelled'\n");
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
  json_object_set_new(o, "rate_measured", json_real(d.measured_rate));
  json_object_set_new(o, "units", json_integer((json_int_t)s->units));
  json_object_set_new(o, "rate_target",
                      p->target_rate > 0 ? json_real(p->target_rate)
                                         : json_null());
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
  json_object_set_new(o, "littles_law_in_flight", json_real(d.little));
  json_object_set_new(o, "warning",
                      d.warn_429 ? json_string(WARN_429) : json_null());
  json_object_set_new(o, "quota_stop", json_boolean(s->quota_stop));
  json_object_set_new(o, "interrupted", json_boolean(s->cancelled));
  if (p->first > 0)
    json_object_set_new(o, "trial_first", json_integer((json_int_t)p->first));
  int rc = json_dump_file(o, path, JSON_PRESERVE_ORDER | JSON_INDENT(2));
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
  else
    snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
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
  double run_s = (double)s->run_us / 1e6;
  double rate = run_s > 0 ? (double)s->results / run_s : 0;
  char line[256], eta[32] = "?";
  int n;
  if (p->total >= 0) {
    if (rate > 0)
      fmt_secs(eta, sizeof eta,
               (double)((long long)p->total - (long long)s->results) / rate);
    n = snprintf(
        line, sizeof line, "%llu/%lld done | %.1f/s | in flight %u | ETA %s",
        (unsigned long long)s->results, p->total, rate, s->in_flight, eta);
  } else {
    n = snprintf(line, sizeof line,
                 "%llu done, %llu read | %.1f/s | in flight %u",
                 (unsigned long long)s->results, (unsigned long long)s->read,
                 rate, s->in_flight);
  }
  if (s->paused_left_ms > 0 && n > 0 && (size_t)n < sizeof line)
    snprintf(line + n, sizeof line - (size_t)n,
             " | throttled by server: resuming in %.1f s",
             (double)s->paused_left_ms / 1000.0);
  /* \r and "erase to end of line": one line redrawn in place. */
  fprintf(stderr, "\r%s\033[K", line);
  fflush(stderr);
}

void run_progress_end(run_progress *p) {
  if (p->on && p->drawn) {
    fputc('\n', stderr);
    fflush(stderr);
  }
}
