/* One scenario from the command line (polite_sim --row SPEC), so that a
 * bench against a real limiter can run the same limiter in the
 * simulation beside it: SPEC is space- or comma-separated key=value pairs,
 *   name=S kind=gcra|fixed|log|counter|conc rate=R burst=B quota=Q
 *   window_ms=W inflight=K headers=0|1 anchored=0|1 ra=N|none|window
 *   latency_ms=L
 *   jitter_ms=J n=N conc=C other_burst=K other_period_ms=P
 *   change_at_ms=T change_by=F [change2_at_ms=T2 change2_by=F2] (the limit
 *   times F from T on, times F * F2 from T2 on)
 * Bad input gets an error naming the pair. */
#include "sim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sim_scenario g_row;
static char g_name[64] = "row";

/* The kinds, by name. */
static const struct {
  const char *name;
  zoo_kind kind;
} k_kinds[] = {
    {"gcra", ZOO_GCRA},        {"fixed", ZOO_FIXED},
    {"log", ZOO_SLIDING_LOG},  {"counter", ZOO_SLIDING_COUNTER},
    {"conc", ZOO_CONCURRENCY},
};

static int set_kind(const char *v) {
  for (unsigned i = 0; i < sizeof k_kinds / sizeof k_kinds[0]; i++)
    if (strcmp(v, k_kinds[i].name) == 0) {
      g_row.z.kind = k_kinds[i].kind;
      return 0;
    }
  return -1;
}

/* ra=none, ra=window or ra=SECONDS (a whole number, 0 to 86400: atoi took
 * "2x" for 2 and "x" for 0). A bad value is named on stderr, beside the
 * caller's "bad pair". */
static int set_ra(const char *v) {
  if (strcmp(v, "none") == 0) {
    g_row.z.retry_after = ZOO_RA_NONE;
    return 0;
  }
  if (strcmp(v, "window") == 0) {
    g_row.z.retry_after = ZOO_RA_WINDOW;
    return 0;
  }
  char *end;
  errno = 0;
  long s = strtol(v, &end, 10);
  if (end == v || *end != '\0' || errno != 0 || s < 0 || s > 86400) {
    fprintf(stderr,
            "polite_sim: --row: ra='%s' is not none, window or whole "
            "seconds from 0 to 86400\n",
            v);
    return -1;
  }
  g_row.z.retry_after = (int)s;
  return 0;
}

/* Sets key to the number v; -1 for an unknown key or a bad value. */
static int set_number(const char *key, double v) {
  const int64_t ms = 1000;
  if (!(v >= 0) || v > 1e9)
    return -1;
  if (strcmp(key, "rate") == 0)
    g_row.z.rate = v;
  else if (strcmp(key, "burst") == 0)
    g_row.z.burst = (unsigned)v;
  else if (strcmp(key, "quota") == 0)
    g_row.z.quota = (unsigned)v;
  else if (strcmp(key, "window_ms") == 0)
    g_row.z.window_us = (int64_t)v * ms;
  else if (strcmp(key, "inflight") == 0)
    g_row.z.max_inflight = (unsigned)v;
  else if (strcmp(key, "headers") == 0)
    g_row.z.headers = v > 0;
  else if (strcmp(key, "anchored") == 0)
    g_row.z.anchored = v > 0;
  else if (strcmp(key, "latency_ms") == 0)
    g_row.z.latency_us = (int64_t)(v * ms);
  else if (strcmp(key, "jitter_ms") == 0)
    g_row.z.jitter_us = (int64_t)(v * ms);
  else if (strcmp(key, "n") == 0)
    g_row.requests = (unsigned)v;
  else if (strcmp(key, "conc") == 0)
    g_row.concurrency = (unsigned)v;
  else if (strcmp(key, "change_at_ms") == 0)
    g_row.z.change.t1_us = (int64_t)(v * ms);
  else if (strcmp(key, "change_by") == 0)
    g_row.z.change.f1 = v;
  else if (strcmp(key, "change2_at_ms") == 0)
    g_row.z.change.t2_us = (int64_t)(v * ms);
  else if (strcmp(key, "change2_by") == 0)
    g_row.z.change.f2 = v;
  else if (strcmp(key, "other_burst") == 0)
    g_row.z.other.burst = (unsigned)v;
  else if (strcmp(key, "other_period_ms") == 0)
    g_row.z.other.period_us = (int64_t)(v * ms);
  else
    return -1;
  return 0;
}

static int set_pair(const char *key, const char *v) {
  if (strcmp(key, "name") == 0) {
    snprintf(g_name, sizeof g_name, "%s", v);
    return 0;
  }
  if (strcmp(key, "kind") == 0)
    return set_kind(v);
  if (strcmp(key, "ra") == 0)
    return set_ra(v);
  char *end;
  double d = strtod(v, &end);
  return end == v || *end ? -1 : set_number(key, d);
}

const sim_scenario *sim_parse_row(const char *spec, char *err, size_t errlen) {
  memset(&g_row, 0, sizeof g_row);
  g_row.z =
      (zoo_params){ZOO_GCRA, 40,           2,         0, 0, 0, 0, 1, 100000,
                   10000,    {0, 0, 0, 0}, {0, 0, 0}, 0};
  g_row.requests = 600;
  g_row.concurrency = 8;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *tok = strtok_r(buf, " ,", &save); tok;
       tok = strtok_r(NULL, " ,", &save)) {
    char *eq = strchr(tok, '=');
    if (eq == NULL || (*eq = '\0', set_pair(tok, eq + 1) != 0)) {
      snprintf(err, errlen, "--row: bad pair '%s%s%s'", tok, eq ? "=" : "",
               eq ? eq + 1 : "");
      return NULL;
    }
  }
  int bad = g_row.requests == 0 || g_row.concurrency == 0 ||
            g_row.z.latency_us <= 0 ||
            (g_row.z.kind == ZOO_GCRA && !(g_row.z.rate > 0)) ||
            (g_row.z.kind == ZOO_CONCURRENCY && g_row.z.max_inflight == 0) ||
            ((g_row.z.kind == ZOO_FIXED || g_row.z.kind == ZOO_SLIDING_LOG ||
              g_row.z.kind == ZOO_SLIDING_COUNTER) &&
             (g_row.z.quota == 0 || g_row.z.window_us <= 0));
  if (bad) {
    snprintf(err, errlen,
             "--row: '%s' lacks what its kind needs (rate, inflight, or "
             "quota and window_ms; n, conc, latency_ms > 0)",
             spec);
    return NULL;
  }
  g_row.shape = g_name;
  g_row.what = "a row given on the command line";
  return &g_row;
}
