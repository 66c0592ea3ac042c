/* polite budget, local backend: accounts in this process, guarded by one
 * mutex so that several threads (polite_client users) share them. */
#include <polite/budget.h>

#include "budget_backends.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct account {
  struct account *next;
  char *key;
  polite_gcra gcra;
  double rate;           /* the rate gcra runs at; 0: unlimited */
  polite_shared_rate sr; /* the learned rate */
  unsigned in_flight;
  unsigned slot_cap;        /* polite_budget_set_slot_cap; 0: none */
  unsigned in_use_seen;     /* in_flight after the last admission */
  uint64_t admits;          /* admissions that charged rate units */
  polite_shared_window win; /* the learned window */
  int64_t paused_until_us;  /* 0 when never paused */
} account;

typedef struct {
  polite_budget base;
  pthread_mutex_t mu;
  account *accounts;
} local_budget;

/* Finds or creates the account for key (NULL and "" are the same). Called
 * with the mutex held. Returns NULL only when out of memory. */
static account *find_account(local_budget *lb, const char *key) {
  if (key == NULL)
    key = "";
  for (account *a = lb->accounts; a; a = a->next)
    if (strcmp(a->key, key) == 0)
      return a;
  account *a = calloc(1, sizeof *a);
  if (a == NULL)
    return NULL;
  a->key = strdup(key);
  if (a->key == NULL) {
    free(a);
    return NULL;
  }
  a->next = lb->accounts;
  lb->accounts = a;
  return a;
}

/* Keeps the account's GCRA at its current rate (configured or learned);
 * returns the rate, 0 for unlimited. Called with the mutex held. */
static double sync_rate(local_budget *lb, account *a) {
  double r = polite__budget_rate(&lb->base.cfg, &a->sr);
  if (r != a->rate && r > 0) {
    if (a->rate > 0)
      polite__gcra_rerate(&a->gcra, r, lb->base.cfg.burst);
    else if (polite_gcra_init(&a->gcra, r, lb->base.cfg.burst) != 0)
      r = 0;
  }
  a->rate = r;
  return r;
}

/* Order matters: the pause first (nothing starts), then the slots (do not
 * burn rate units for a start that cannot happen), then the rate (recorded
 * only on success). slots 0 never waits for a slot, units 0 charges no rate;
 * with both 0 nothing is taken (there are no leases here to renew). */
static int local_acquire(polite_budget *b, const char *key, int64_t now_us,
                         unsigned units, unsigned slots, int64_t *wait_us) {
  local_budget *lb = (local_budget *)b;
  int rc;
  unsigned conc = b->cfg.concurrency;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL)
    conc = polite__budget_slot_limit(conc, a->slot_cap);
  if (a == NULL) {
    snprintf(b->errstr, sizeof b->errstr, "out of memory");
    rc = POLITE_ENOMEM;
  } else if (now_us < a->paused_until_us) {
    *wait_us = a->paused_until_us - now_us;
    rc = POLITE_BUDGET_WAIT_PAUSE;
  } else if (polite__budget_slots_short(conc, a->in_flight, slots)) {
    *wait_us = -1;
    rc = POLITE_BUDGET_WAIT_SLOT;
  } else if (units > 0 && a->win.quota > 0 && now_us < a->win.next_us &&
             a->admits >= a->win.open_n + a->win.quota) {
    *wait_us = a->win.next_us - now_us; /* the window's quota is spent */
    rc = POLITE_BUDGET_WAIT_RATE;
  } else {
    int64_t w =
        sync_rate(lb, a) > 0 ? polite_gcra_admit(&a->gcra, now_us, units) : 0;
    if (w > 0) {
      *wait_us = w;
      rc = POLITE_BUDGET_WAIT_RATE;
    } else {
      a->admits += units > 0;
      if (conc > 0) {
        a->in_flight += slots;
        if (slots > 0)
          a->in_use_seen = a->in_flight;
      }
      *wait_us = 0;
      rc = POLITE_BUDGET_ADMITTED;
    }
  }
  pthread_mutex_unlock(&lb->mu);
  return rc;
}

static void local_release(polite_budget *b, const char *key, unsigned slots) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL)
    a->in_flight = a->in_flight > slots ? a->in_flight - slots : 0;
  pthread_mutex_unlock(&lb->mu);
}

static int local_pause_until(polite_budget *b, const char *key, int64_t now_us,
                             int64_t until_us) {
  local_budget *lb = (local_budget *)b;
  int rc = 0;
  (void)now_us;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a == NULL) {
    snprintf(b->errstr, sizeof b->errstr, "out of memory");
    rc = POLITE_ENOMEM;
  } else if (until_us > a->paused_until_us) {
    a->paused_until_us = until_us;
    if (sync_rate(lb, a) > 0)
      polite_gcra_pause_until(&a->gcra, until_us);
  }
  pthread_mutex_unlock(&lb->mu);
  return rc;
}

static int64_t local_paused_for(polite_budget *b, const char *key,
                                int64_t now_us) {
  local_budget *lb = (local_budget *)b;
  int64_t left = 0;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL && a->paused_until_us > now_us)
    left = a->paused_until_us - now_us;
  pthread_mutex_unlock(&lb->mu);
  return left;
}

static void local_close(polite_budget *b) {
  local_budget *lb = (local_budget *)b;
  account *a = lb->accounts;
  while (a) {
    account *next = a->next;
    free(a->key);
    free(a);
    a = next;
  }
  pthread_mutex_destroy(&lb->mu);
  free(lb);
}

static int local_publish_rate(polite_budget *b, const char *key, int64_t now_us,
                              polite_shared_rate *r, int is_cut) {
  local_budget *lb = (local_budget *)b;
  (void)now_us;
  int rc = 0;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a == NULL) {
    snprintf(b->errstr, sizeof b->errstr, "out of memory");
    rc = POLITE_ENOMEM;
  } else {
    rc = polite_shared_rate_merge(&a->sr, r, is_cut);
    *r = a->sr;
  }
  pthread_mutex_unlock(&lb->mu);
  return rc;
}

static int local_shared_rate(polite_budget *b, const char *key,
                             polite_shared_rate *out) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL)
    *out = a->sr;
  pthread_mutex_unlock(&lb->mu);
  return a != NULL ? 0 : POLITE_ENOMEM;
}

static int local_inspect(polite_budget *b, const char *key, int64_t now_us,
                         polite_budget_state *out) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL) {
    out->pause_left_us =
        a->paused_until_us > now_us ? a->paused_until_us - now_us : 0;
    out->rate = a->sr;
    out->slots_in_use = a->in_flight;
    out->config_stored = 1;
  }
  pthread_mutex_unlock(&lb->mu);
  return a != NULL ? 0 : POLITE_ENOMEM;
}

static int local_clear(polite_budget *b, const char *key, int64_t now_us) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL) {
    a->paused_until_us = 0;
    if (a->gcra.tat_ns > now_us * 1000) { /* the pause had pushed it too */
      a->gcra.tat_ns = now_us * 1000;
      a->gcra.tat_us = now_us;
    }
    a->sr.rate_per_s = a->sr.limit_per_s = a->sr.ceiling_per_s = 0;
    a->slot_cap = 0;
    a->sr.generation++; /* raises from before the clear are stale */
  }
  pthread_mutex_unlock(&lb->mu);
  return a != NULL ? 0 : POLITE_ENOMEM;
}

static void local_set_slot_cap(polite_budget *b, const char *key,
                               unsigned cap) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL)
    a->slot_cap = cap;
  pthread_mutex_unlock(&lb->mu);
}

static unsigned local_in_use(polite_budget *b, const char *key) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  unsigned n = a != NULL ? a->in_use_seen : 0;
  pthread_mutex_unlock(&lb->mu);
  return n;
}

/* In one process the count is exact at any time: this participant's last
 * admission was the last call into the budget it made. */
static uint64_t local_admissions(polite_budget *b, const char *key) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  uint64_t n = a != NULL ? a->admits : 0;
  pthread_mutex_unlock(&lb->mu);
  return n;
}

static int local_window(polite_budget *b, const char *key,
                        polite_shared_window *w) {
  local_budget *lb = (local_budget *)b;
  pthread_mutex_lock(&lb->mu);
  account *a = find_account(lb, key);
  if (a != NULL)
    polite_shared_window_merge(&a->win, w);
  pthread_mutex_unlock(&lb->mu);
  return a != NULL ? 0 : POLITE_ENOMEM;
}

static const polite_budget_vtable local_vt = {
    "local",          local_acquire, local_release,      local_pause_until,
    local_paused_for, local_close,   local_publish_rate, local_shared_rate,
    local_inspect,    local_clear,   local_set_slot_cap, local_in_use,
    local_admissions, local_window};

int polite_budget_local_new(const polite_budget_config *cfg,
                            polite_budget **out) {
  if (cfg == NULL || out == NULL || cfg->rate_per_s != cfg->rate_per_s)
    return POLITE_EINVAL;
  local_budget *lb = polite__budget_alloc(sizeof *lb, &local_vt, cfg);
  if (lb == NULL)
    return POLITE_ENOMEM;
  if (pthread_mutex_init(&lb->mu, NULL) != 0) {
    free(lb);
    return POLITE_ENOMEM;
  }
  snprintf(lb->base.uri, sizeof lb->base.uri, "local");
  *out = &lb->base;
  return 0;
}
