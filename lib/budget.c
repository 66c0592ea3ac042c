/* polite budget: opens a backend from its URI and forwards to its vtable. */
#include "budget_backends.h"

#include <polite/redact.h>
#include <polite/budget.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Keeps the URI, redacted, in the budget for later messages. */
static void keep_uri(polite_budget *b, const char *uri) {
  char *safe = polite_redact_url(uri);
  snprintf(b->uri, sizeof b->uri, "%s", safe ? safe : "(budget)");
  free(safe);
}

int polite_budget_open(const char *uri, const polite_budget_config *cfg,
                       polite_budget **out, char *errbuf, size_t errlen) {
  return polite_budget_open_env(uri, cfg, NULL, out, errbuf, errlen);
}

/* Opens the backend uri names: local (unless inspecting, flags
 * POLITE__BUDGET_INSPECT), file: or redis://; another scheme is refused
 * with `unknown` as the message. Then keeps the URI, redacted, for later
 * messages. */
static int open_backend(const char *uri, const polite_budget_config *cfg,
                        const polite_env *env, unsigned flags,
                        const char *unknown, polite_budget **out, char *errbuf,
                        size_t errlen) {
  if (errbuf && errlen)
    errbuf[0] = '\0';
  if (uri == NULL || cfg == NULL || out == NULL)
    return POLITE_EINVAL;
  *out = NULL;
  int rc;
  if (strcmp(uri, "local") == 0 && !(flags & POLITE__BUDGET_INSPECT)) {
    rc = polite_budget_local_new(cfg, out);
    if (rc != 0 && errbuf)
      snprintf(errbuf, errlen, "cannot create the local budget: %s",
               polite_strerror(rc));
  } else if (strncmp(uri, "file:", 5) == 0) {
    rc = polite__budget_file_open(uri, cfg, env, flags, out, errbuf, errlen);
  } else if (strncmp(uri, "redis://", 8) == 0) {
    rc = polite__budget_redis_open(uri, cfg, env, out, errbuf, errlen);
  } else {
    polite__budget_errf(errbuf, errlen, uri, "%s", unknown);
    return POLITE_EINVAL;
  }
  if (rc == 0)
    keep_uri(*out, uri);
  return rc;
}

int polite_budget_open_env(const char *uri, const polite_budget_config *cfg,
                           const polite_env *env, polite_budget **out,
                           char *errbuf, size_t errlen) {
  return open_backend(uri, cfg, env, 0,
                      "unknown backend (expected local, file:PATH or "
                      "redis://HOST:PORT/NAME)",
                      out, errbuf, errlen);
}

int polite_budget_open_inspect(const char *uri, polite_budget **out,
                               char *errbuf, size_t errlen) {
  polite_budget_config cfg = {0, 1, 0};
  return open_backend(uri, &cfg, NULL, POLITE__BUDGET_INSPECT,
                      "only a shared budget (file:PATH or "
                      "redis://HOST:PORT/NAME) can be inspected; a local "
                      "budget lives inside one process",
                      out, errbuf, errlen);
}

void polite_budget_set_max_wait(polite_budget *b, int64_t max_wait_ms) {
  /* Atomic: every call of a polite_client shared by several threads sets it
   * (to the same value) as its one-request batch begins. */
  if (b != NULL)
    __atomic_store_n(&b->max_wait_ms, max_wait_ms, __ATOMIC_RELAXED);
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

/* The participant's max-wait in us, or -1 for none. */
static int64_t max_wait_us(const polite_budget *b) {
  int64_t ms = __atomic_load_n(&b->max_wait_ms, __ATOMIC_RELAXED);
  if (ms < 0)
    return -1;
  if (ms == 0)
    ms = POLITE_BUDGET_MAX_WAIT_DEFAULT_MS;
  return ms > INT64_MAX / 1000 ? INT64_MAX : ms * 1000;
}

int polite_budget_pause_until(polite_budget *b, const char *key, int64_t now_us,
                              int64_t until_us) {
  if (b == NULL)
    return 0;
  int64_t mw = max_wait_us(b);
  if (mw >= 0 && until_us > now_us && until_us - now_us > mw)
    until_us = now_us + mw;
  return b->vt->pause_until(b, key, now_us, until_us);
}

int polite_budget_pause_too_long(const polite_budget *b, int64_t wait_us,
                                 char *msg, size_t len) {
  if (msg != NULL && len > 0)
    msg[0] = '\0';
  if (b == NULL)
    return 0;
  int64_t mw = max_wait_us(b);
  if (mw < 0 || wait_us <= mw)
    return 0;
  if (msg != NULL && len > 0)
    snprintf(msg, len,
             "budget '%s' is paused for %.1f s more, longer than the max-wait "
             "of %.3g s; stopping now (if the pause is stale: polite budget "
             "clear %s)",
             b->uri, (double)wait_us / 1e6, (double)mw / 1e6, b->uri);
  return 1;
}

int polite_budget_publish_rate(polite_budget *b, const char *key,
                               int64_t now_us, polite_shared_rate *r,
                               int is_cut) {
  if (b == NULL || r == NULL)
    return 0;
  return b->vt->publish_rate(b, key, now_us, r, is_cut);
}

int polite_budget_shared_rate(polite_budget *b, const char *key,
                              polite_shared_rate *out) {
  if (out == NULL)
    return POLITE_EINVAL;
  memset(out, 0, sizeof *out);
  if (b == NULL)
    return 0;
  return b->vt->shared_rate(b, key, out);
}

void polite_budget_set_slot_cap(polite_budget *b, const char *key,
                                unsigned cap) {
  if (b != NULL && b->vt->set_slot_cap != NULL)
    b->vt->set_slot_cap(b, key, cap);
}

int polite_shared_window_merge(polite_shared_window *stored,
                               polite_shared_window *in) {
  int retract = stored->quota > 0 && in->retract_us > 0 &&
                in->retract_us == stored->open_us &&
                in->open_us < stored->open_us;
  if (in->quota == 0 ||
      (stored->quota > 0 && in->open_us < stored->open_us && !retract)) {
    *in = *stored;
    return 0;
  }
  polite_shared_window was = *stored;
  if (stored->quota > 0 && in->open_us == stored->open_us && !retract) {
    /* One window, two readings: a period errs long (each participant
     * places an opening at its own first admitted start after it), so
     * the shorter one and the earlier next start are kept. */
    if (stored->period_us > 0 && stored->period_us < in->period_us)
      in->period_us = stored->period_us;
    if (stored->next_us > 0 && stored->next_us < in->next_us)
      in->next_us = stored->next_us;
  }
  *stored = *in;
  return was.open_us != stored->open_us || was.open_n != stored->open_n ||
         was.period_us != stored->period_us || was.next_us != stored->next_us ||
         was.quota != stored->quota;
}

int polite_budget_window(polite_budget *b, const char *key,
                         polite_shared_window *w) {
  if (b == NULL || w == NULL || b->vt->window == NULL)
    return POLITE_EINVAL;
  return b->vt->window(b, key, w);
}

uint64_t polite_budget_admissions(polite_budget *b, const char *key) {
  return b != NULL && b->vt->admissions != NULL ? b->vt->admissions(b, key) : 0;
}

unsigned polite_budget_in_use(polite_budget *b, const char *key) {
  return b != NULL && b->vt->in_use != NULL ? b->vt->in_use(b, key) : 0;
}

int polite_budget_inspect(polite_budget *b, const char *key, int64_t now_us,
                          polite_budget_state *out) {
  if (b == NULL || out == NULL)
    return POLITE_EINVAL;
  memset(out, 0, sizeof *out);
  out->config = b->cfg;
  return b->vt->inspect(b, key, now_us, out);
}

int polite_budget_clear(polite_budget *b, const char *key, int64_t now_us) {
  if (b == NULL)
    return POLITE_EINVAL;
  return b->vt->clear(b, key, now_us);
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
