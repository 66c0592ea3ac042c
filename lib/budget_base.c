/* polite budget: the helpers every backend shares (allocation, messages,
 * URI parameters, the admitted rate, the slot rule, the publish rule of the
 * learned rate), so that the local, file and Redis backends keep one copy. */
#include "budget_backends.h"

#include <polite/redact.h>
#include <polite/budget.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *polite__budget_alloc(size_t size, const polite_budget_vtable *vt,
                           const polite_budget_config *cfg) {
  if (cfg == NULL || cfg->rate_per_s != cfg->rate_per_s ||
      size < sizeof(polite_budget))
    return NULL;
  polite_budget *b = calloc(1, size);
  if (b == NULL)
    return NULL;
  b->vt = vt;
  b->cfg = *cfg;
  if (b->cfg.burst == 0)
    b->cfg.burst = 1;
  return b;
}

void polite__budget_errf(char *buf, size_t len, const char *uri,
                         const char *fmt, ...) {
  if (buf == NULL || len == 0)
    return;
  char *safe = polite_redact_url(uri);
  int n = snprintf(buf, len, "budget '%.80s': ", safe ? safe : "(budget)");
  free(safe);
  if (n < 0 || (size_t)n >= len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - (size_t)n, fmt, ap);
  va_end(ap);
}

double polite__budget_rate(const polite_budget_config *cfg,
                           const polite_shared_rate *sr) {
  double cap = cfg->rate_per_s > 0 ? cfg->rate_per_s : 0;
  if (sr != NULL && sr->rate_per_s > 0)
    return cap > 0 && cap < sr->rate_per_s ? cap : sr->rate_per_s;
  return cap;
}

int polite__gcra_rerate(polite_gcra *g, double rate_per_s, unsigned burst) {
  polite_gcra t;
  int rc = polite_gcra_init(&t, rate_per_s, burst ? burst : 1);
  if (rc != 0)
    return rc;
  t.tat_ns = g->tat_ns;
  t.tat_us = g->tat_us;
  *g = t;
  return 0;
}

int polite__budget_uri_params(const char *q, const polite__budget_param *params,
                              size_t n, const char *uri, char *errbuf,
                              size_t errlen) {
  char names[160] = "";
  for (size_t i = 0; i < n; i++) {
    size_t k = strlen(names);
    snprintf(names + k, sizeof names - k, "%s%s=DURATION", i ? " or " : "",
             params[i].name);
  }
  while (q != NULL) {
    const char *s = q + 1;
    q = strchr(s, '&');
    size_t len = q ? (size_t)(q - s) : strlen(s);
    char param[128];
    if (len >= sizeof param) {
      polite__budget_errf(errbuf, errlen, uri, "URI parameter too long");
      return POLITE_EINVAL;
    }
    memcpy(param, s, len);
    param[len] = '\0';
    size_t nl = strcspn(param, "=");
    const polite__budget_param *p = NULL;
    for (size_t i = 0; i < n && p == NULL; i++)
      if (strlen(params[i].name) == nl &&
          strncmp(param, params[i].name, nl) == 0 && param[nl] == '=')
        p = &params[i];
    if (p == NULL) {
      /* The name only: an unknown parameter's value may be a secret. */
      polite__budget_errf(errbuf, errlen, uri,
                          "unknown parameter '%.*s' (expected %s)", (int)nl,
                          param, names);
      return POLITE_EINVAL;
    }
    const char *v = param + nl + 1;
    int64_t ms;
    if (polite_duration_parse(v, &ms) != 0 || ms < 1 ||
        (p->max_ms > 0 && ms > p->max_ms)) {
      polite__budget_errf(errbuf, errlen, uri,
                          "%s: expected a duration like 30s or 500ms%s%s%s, "
                          "got '%.40s'",
                          p->name, p->bound ? " (" : "",
                          p->bound ? p->bound : "", p->bound ? ")" : "", v);
      return POLITE_EINVAL;
    }
    *p->ms = ms;
  }
  return 0;
}

/* A ceiling above POLITE__BUDGET_RATE_MAX is never stored: the file's
 * bound on every rate (a higher one would read as a damaged record to
 * every sharer). */
static int merge_ceiling(polite_shared_rate *stored,
                         const polite_shared_rate *in) {
  double c = in->ceiling_per_s;
  if (!(c > 0) || !(c <= POLITE__BUDGET_RATE_MAX) ||
      !(c > stored->ceiling_per_s))
    return 0;
  stored->ceiling_per_s = c;
  return 1;
}

/* The publish rule of polite/budget.h, one for every backend. */
int polite_shared_rate_merge(polite_shared_rate *stored,
                             const polite_shared_rate *in, int is_cut) {
  if (stored == NULL || in == NULL || !(in->rate_per_s > 0))
    return 0;
  int ceil = merge_ceiling(stored, in);
  if (is_cut) {
    if (stored->rate_per_s <= 0 || in->rate_per_s < stored->rate_per_s)
      stored->rate_per_s = in->rate_per_s;
    stored->limit_per_s = in->limit_per_s;
    stored->generation++;
    return 1;
  }
  /* Nothing learned yet (or cleared): any participant may set it. */
  if (stored->rate_per_s > 0 && (in->generation != stored->generation ||
                                 !(in->rate_per_s > stored->rate_per_s)))
    return ceil;
  stored->rate_per_s = in->rate_per_s;
  return 1;
}

unsigned polite__budget_slot_limit(unsigned concurrency, unsigned slot_cap) {
  return slot_cap > 0 && slot_cap < concurrency ? slot_cap : concurrency;
}

int polite__budget_slots_short(unsigned limit, uint64_t in_use,
                               unsigned slots) {
  return limit > 0 && slots > 0 && (slots > limit || in_use + slots > limit);
}
