/* polite proxy: Prometheus metrics (text exposition format 0.0.4) at
 * GET /__polite/metrics. */
#define _GNU_SOURCE
#include "px_track_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The rules of polite_proxy_throttled_total, each the sum of the kinds
 * whose row names it (px_track_report.c). */
static const char *const rules[] = {"failure_rate", "rate_limit",  "quota",
                                    "retry_after",  "concurrency", "tokens"};

/* A counter of the tracking state that is no answer (a family of its own). */
static void counter(FILE *f, const char *name, const char *help, uint64_t v) {
  fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name,
          name, (unsigned long long)v);
}

char *polite__px_metrics_text(px_state *s) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  fprintf(f, "# HELP polite_proxy_requests_total Requests answered, by "
             "outcome.\n# TYPE polite_proxy_requests_total counter\n");
  for (int k = 0; k < PX_KIND__COUNT; k++)
    fprintf(f, "polite_proxy_requests_total{outcome=\"%s\"} %llu\n",
            polite__px_kind_info((px_kind)k)->metric,
            (unsigned long long)polite__px_kind_count(s, (px_kind)k));
  fprintf(f, "# HELP polite_proxy_injected_total Answers the proxy made up "
             "instead of the upstream, by kind.\n"
             "# TYPE polite_proxy_injected_total counter\n");
  for (int k = 0; k < PX_KIND__COUNT; k++)
    if (polite__px_kind_info((px_kind)k)->rule)
      fprintf(f, "polite_proxy_injected_total{kind=\"%s\"} %llu\n",
              polite__px_kind_info((px_kind)k)->metric,
              (unsigned long long)polite__px_kind_count(s, (px_kind)k));
  fprintf(f, "# HELP polite_proxy_throttled_total Throttling answers, by the "
             "rule that made them.\n"
             "# TYPE polite_proxy_throttled_total counter\n");
  for (size_t r = 0; r < sizeof rules / sizeof rules[0]; r++) {
    uint64_t n = 0;
    for (int k = 0; k < PX_KIND__COUNT; k++) {
      const char *rule = polite__px_kind_info((px_kind)k)->rule;
      if (rule && strcmp(rule, rules[r]) == 0)
        n += polite__px_kind_count(s, (px_kind)k);
    }
    fprintf(f, "polite_proxy_throttled_total{rule=\"%s\"} %llu\n", rules[r],
            (unsigned long long)n);
  }
  /* Counters only grow: an early retry found stays found (issue 20). */
  counter(f, "polite_proxy_early_retries_total",
          "Requests from a client told to wait that came back too soon.",
          polite__px_kind_count(s, PX_KIND_EARLY));
  counter(f, "polite_proxy_connects_total",
          "CONNECT requests (tunnels; the requests inside are counted).",
          s->connects);
  counter(f, "polite_proxy_shared_identities_total",
          "Client identities (address, credentials, user agent) found to "
          "hold several clients.",
          s->shared_identities);
  counter(f, "polite_proxy_urls_evicted_total",
          "URLs whose own counts were let go of to stay within --max-urls.",
          s->urls_evicted);
  const px_metrics *m = polite__px_metrics(s);
  fprintf(f,
          "# HELP polite_proxy_in_flight Requests arrived and not yet "
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
          (unsigned long long)cum + (unsigned long long)m->lat_over,
          m->lat_sum_s, (unsigned long long)m->lat_count);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
