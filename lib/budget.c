/* polite budget: opens a backend from its URI and forwards to its vtable. */
#include "budget_backends.h"

#include <polite/budget.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int polite_budget_open(const char *uri, const polite_budget_config *cfg,
                       polite_budget **out, char *errbuf, size_t errlen) {
  if (errbuf && errlen)
    errbuf[0] = '\0';
  if (uri == NULL || cfg == NULL || out == NULL)
    return POLITE_EINVAL;
  *out = NULL;
  if (strcmp(uri, "local") == 0) {
    int rc = polite_budget_local_new(cfg, out);
    if (rc != 0 && errbuf)
      snprintf(errbuf, errlen, "cannot create the local budget: %s",
               polite_strerror(rc));
    return rc;
  }
  if (strncmp(uri, "file:", 5) == 0)
    return polite__budget_file_new(uri, cfg, out, errbuf, errlen);
  if (strncmp(uri, "redis://", 8) == 0)
    return polite__budget_redis_new(uri, cfg, out, errbuf, errlen);
  if (errbuf)
    snprintf(errbuf, errlen,
             "budget '%.60s': unknown backend (expected local, file:PATH or "
             "redis://HOST:PORT/NAME)",
             uri);
  return POLITE_EINVAL;
}

int polite_budget_acquire(polite_budget *b, const char *key, int64_t now_us,
                          unsigned units, unsigned slots, int64_t *wait_us) {
  int64_t dummy;
  if (wait_us == NULL)
    wait_us = &dummy;
  *wait_us = 0;
  if (b == NULL)
    return POLITE_BUDGET_ADMITTED;
  return b->vt->acquire(b, key, now_us, units, slots, wait_us);
}

void polite_budget_release(polite_budget *b, const char *key, unsigned slots) {
  if (b != NULL && slots > 0)
    b->vt->release(b, key, slots);
}

int polite_budget_pause_until(polite_budget *b, const char *key, int64_t now_us,
                              int64_t until_us) {
  if (b == NULL)
    return 0;
  return b->vt->pause_until(b, key, now_us, until_us);
}

int64_t polite_budget_paused_for(polite_budget *b, const char *key,
                                 int64_t now_us) {
  if (b == NULL)
    return 0;
  return b->vt->paused_for(b, key, now_us);
}

const char *polite_budget_errstr(const polite_budget *b) {
  return b ? b->errstr : "";
}

void polite_budget_close(polite_budget *b) {
  if (b != NULL)
    b->vt->close(b);
}

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
  int n = snprintf(buf, len, "budget '%.80s': ", uri);
  if (n < 0 || (size_t)n >= len)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, len - (size_t)n, fmt, ap);
  va_end(ap);
}
