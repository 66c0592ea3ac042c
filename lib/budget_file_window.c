/* polite budget, file backend: the account's count of admissions and its
 * learned window (polite_shared_window), kept in the account's record
 * (version 4 of the file) and merged under the file's lock, so that every
 * participant on the host holds the account to one window quota
 * (docs/decisions.md, "Learning together"). The window's times are
 * CLOCK_MONOTONIC microseconds like every other time in the file: the
 * processes of one host share that clock, and a file made before this boot
 * is started afresh (budget_file_store.c). */
#define _GNU_SOURCE
#include "budget_file_acct.h"

#include <string.h>

int polite__pf_window_wait(const pf_record *r, int64_t now_us, unsigned units,
                           int64_t *wait_us) {
  const polite_shared_window *w = &r->win;
  if (units == 0 || w->quota == 0 || now_us >= w->next_us ||
      r->admits < w->open_n + w->quota)
    return 0;
  *wait_us = w->next_us - now_us; /* the window's quota is spent */
  return 1;
}

void polite__pf_window_count(pf_acct *a, unsigned units) {
  if (units > 0) {
    a->r.admits++;
    a->dirty = 1;
    a->l->admitted_n = a->r.admits;
  }
  a->l->admits_seen = a->r.admits;
}

/* This participant's entry for key, or NULL (no call made on it yet). */
static pf_local *known(file_budget *fb, const char *key) {
  if (key == NULL)
    key = "";
  for (unsigned i = 0; i < fb->nloc; i++)
    if (strcmp(fb->loc[i].key, key) == 0)
      return &fb->loc[i];
  return NULL;
}

/* No file access: the count this participant's last admission left. */
uint64_t polite__pf_admissions(polite_budget *b, const char *key) {
  file_budget *fb = (file_budget *)b;
  pthread_mutex_lock(&fb->mu);
  pf_local *l = known(fb, key);
  uint64_t n = l != NULL ? l->admitted_n : 0;
  pthread_mutex_unlock(&fb->mu);
  return n;
}

/* A window that would not change the one read at this participant's last
 * call costs no file access (the engine offers its window at every start
 * and answer); one that would is merged into the record under the lock. */
int polite__pf_window(polite_budget *b, const char *key,
                      polite_shared_window *w) {
  file_budget *fb = (file_budget *)b;
  pthread_mutex_lock(&fb->mu);
  pf_local *l = known(fb, key);
  polite_shared_window seen = l != NULL ? l->win : (polite_shared_window){0};
  polite_shared_window in = *w;
  int change = l != NULL && polite_shared_window_merge(&seen, &in);
  pthread_mutex_unlock(&fb->mu);
  if (!change) {
    if (l != NULL)
      *w = in;
    return l != NULL ? 0 : POLITE_EINVAL;
  }
  pf_acct a;
  int rc = polite__pf_enter(fb, key, INT64_MIN, 0, &a);
  if (rc != 0)
    return rc < 0 ? rc : POLITE_EBUDGET;
  if (polite_shared_window_merge(&a.r.win, w)) {
    if (a.r.admits < a.r.win.open_n) /* a count a rebuild set back */
      a.r.admits = a.r.win.open_n;
    a.dirty = 1;
  }
  rc = polite__pf_write_back(fb, &a);
  if (rc == 0)
    a.l->win = a.r.win;
  polite__pf_leave(fb);
  return rc;
}
