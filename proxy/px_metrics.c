/* polite proxy: Prometheus metrics (text exposition format 0.0.4) at
 * GET /__polite/metrics. */
#define _GNU_SOURCE
#include "px.h"

#include <stdio.h>
#include <stdlib.h>

static const double lat_bounds[PX_LAT_BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

void polite__px_metrics_latency(px_metrics *m, int64_t us) {
  double s = (double)(us < 0 ? 0 : us) / 1e6;
  m->lat_count++;
  m->lat_sum_s += s;
  for (int i = 0; i < PX_LAT_BUCKETS; i++) {
    if (s <= lat_bounds[i]) {
      m->lat_bucket[i]++;
      return;
    }
  }
  m->lat_over++;
}

/* What each kind of answer is called in the metrics: the outcome label of
 * polite_proxy_requests_total, and for those the proxy made up, the kind
 * label of polite_proxy_injected_total and the rule of
 * polite_proxy_throttled_total (NULL: not a throttle). */
static const struct {
  px_kind kind;
  const char *outcome;
  const char *rule;
} kinds[] = {
    {PX_KIND_PASSED, "passed", NULL},
    {PX_KIND_ERROR, "upstream_error", NULL},
    {PX_KIND_FAILURE, "failure", "failure_rate"},
    {PX_KIND_RATE, "rate_limited", "rate_limit"},
    {PX_KIND_QUOTA, "quota_exceeded", "quota"},
    {PX_KIND_EARLY, "early_retry", "retry_after"},
    {PX_KIND_THROTTLED, "during_throttle", "retry_after"},
    {PX_KIND_CONCURRENCY, "concurrency_limited", "concurrency"},
};

#define NKINDS (sizeof kinds / sizeof kinds[0])

char *polite__px_metrics_text(px_state *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  fprintf(f, "# HELP polite_proxy_requests_total Requests answered, by "
             "outcome.\n# TYPE polite_proxy_requests_total counter\n");
  for (size_t i = 0; i < NKINDS; i++)
    fprintf(f, "polite_proxy_requests_total{outcome=\"%s\"} %llu\n",
            kinds[i].outcome,
            (unsigned long long)polite__px_kind_count(s, kinds[i].kind));
  fprintf(f, "# HELP polite_proxy_injected_total Answers the proxy made up "
             "instead of the upstream, by kind.\n"
             "# TYPE polite_proxy_injected_total counter\n");
  for (size_t i = 0; i < NKINDS; i++)
    if (kinds[i].rule)
      fprintf(f, "polite_proxy_injected_total{kind=\"%s\"} %llu\n",
              kinds[i].outcome,
              (unsigned long long)polite__px_kind_count(s, kinds[i].kind));
  fprintf(f, "# HELP polite_proxy_throttled_total Throttling answers, by the "
             "rule that made them.\n"
             "# TYPE polite_proxy_throttled_total counter\n");
  static const char *const rules[] = {"failure_rate", "rate_limit", "quota",
                                      "retry_after", "concurrency"};
  for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
    uint64_t n = 0;
    for (size_t i = 0; i < NKINDS; i++)
      if (kinds[i].rule && kinds[i].rule == rules[r])
        n += polite__px_kind_count(s, kinds[i].kind);
    fprintf(f, "polite_proxy_throttled_total{rule=\"%s\"} %llu\n", rules[r],
            (unsigned long long)n);
  }
  fprintf(f, "# HELP polite_proxy_early_retries_total Requests from a client "
             "told to wait that came back too soon.\n"
             "# TYPE polite_proxy_early_retries_total counter\n"
             "polite_proxy_early_retries_total %llu\n",
          (unsigned long long)polite__px_kind_count(s, PX_KIND_EARLY));
  const px_metrics *m = polite__px_metrics(s);
  fprintf(f, "# HELP polite_proxy_in_flight Requests arrived and not yet "
             "answered.\n# TYPE polite_proxy_in_flight gauge\n"
             "polite_proxy_in_flight %lld\n",
          (long long)(m->in_flight > 0 ? m->in_flight : 0));
  fprintf(f, "# HELP polite_proxy_upstream_latency_seconds Time from sending "
             "a request upstream to its answer's head.\n"
             "# TYPE polite_proxy_upstream_latency_seconds histogram\n");
  uint64_t cum = 0;
  for (int i = 0; i < PX_LAT_BUCKETS; i++) {
    cum += m->lat_bucket[i];
    fprintf(f, "polite_proxy_upstream_latency_seconds_bucket{le=\"%g\"} %llu\n",
            lat_bounds[i], (unsigned long long)cum);
  }
  fprintf(f,
          "polite_proxy_upstream_latency_seconds_bucket{le=\"+Inf\"} %llu\n"
          "polite_proxy_upstream_latency_seconds_sum %.6f\n"
          "polite_proxy_upstream_latency_seconds_count %llu\n",
          (unsigned long long)(cum + m->lat_over), m->lat_sum_s,
          (unsigned long long)m->lat_count);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
