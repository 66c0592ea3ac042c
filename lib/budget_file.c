/* polite budget, file backend: processes on one host share accounts kept
 * in a file, read and written with pread/pwrite under flock (a lock the
 * kernel owns: a holder killed by SIGKILL never leaves it locked, and no
 * byte of the file can wedge it), with concurrency slots held as leases
 * that expire when their owner stops calling in. Each participant also
 * remembers what it holds, so that an account record found damaged is
 * rebuilt from what the participants know (lib/budget_file_store.c keeps
 * the bytes; this file keeps the accounts). */
#define _GNU_SOURCE
#include "budget_backends.h"
#include "budget_file_acct.h"

#include <polite/clock.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How often (of the callers' clock) a participant checks that its path
 * still names its file and that the header is intact. */
#define VERIFY_EVERY_US 100000
/* After an account is rebuilt nothing starts for this long, so that every
 * participant with requests in flight re-registers its slots first (the
 * engine renews its leases every second while requests run). */
#define SETTLE_US 2000000

static int errf(file_budget *fb, const char *fmt, const char *detail) {
  polite__budget_errf(fb->base.errstr, sizeof fb->base.errstr, fb->uri, fmt,
                      detail);
  return POLITE_EBUDGET;
}

/* This participant's local entry for key, created when missing; NULL when
 * out of memory or beyond PF_ACCOUNTS keys (errstr set). */
static pf_local *local_of(file_budget *fb, const char *key) {
  if (key == NULL)
    key = "";
  for (unsigned i = 0; i < fb->nloc; i++)
    if (strcmp(fb->loc[i].key, key) == 0)
      return &fb->loc[i];
  if (strlen(key) >= PF_KEYLEN) {
    errf(fb, "%s", "an account key is longer than 255 bytes");
    return NULL;
  }
  if (fb->nloc == PF_ACCOUNTS) {
    errf(fb, "%s", "all 64 accounts of the file are in use");
    return NULL;
  }
  pf_local *l = &fb->loc[fb->nloc];
  memset(l, 0, sizeof *l);
  if ((l->key = strdup(key)) == NULL) {
    errf(fb, "%s", "out of memory");
    return NULL;
  }
  l->index = -1;
  fb->nloc++;
  return l;
}

/* Sets fb->proto up for rate r (configured or learned) and returns it, 0
 * for unlimited. */
static double file_rate(file_budget *fb, const pf_record *rec) {
  polite_shared_rate sr = {rec->sr_rate, rec->sr_limit, rec->sr_gen,
                           rec->sr_ceiling};
  double r = polite__budget_rate(&fb->base.cfg, &sr);
  if (r > 0 && r != fb->proto_rate &&
      polite_gcra_init(&fb->proto, r, fb->base.cfg.burst) != 0)
    r = 0;
  fb->proto_rate = r;
  return r;
}

/* A fresh record for l at index, rebuilt from what this participant knows
 * when `why` is set (then nothing starts before now + SETTLE_US, and the
 * next start is spaced from then on: no burst), or new and empty. */
static void fresh_record(file_budget *fb, pf_acct *a, unsigned index,
                         int64_t now_us, const char *why) {
  pf_record *r = &a->r;
  memset(r, 0, sizeof *r);
  r->index = index;
  r->used = 1;
  r->keylen = (uint32_t)strlen(a->l->key);
  memcpy(r->key, a->l->key, r->keylen);
  a->l->index = (int)index;
  a->dirty = 1;
  if (why == NULL)
    return;
  snprintf(r->why, sizeof r->why, "%s", why);
  a->rebuilt = 1;
  r->settle_until_us = now_us + SETTLE_US;
  r->paused_until_us = a->l->pause_seen_us;
  r->sr_rate = a->l->sr_seen.rate_per_s;
  r->sr_limit = a->l->sr_seen.limit_per_s;
  r->sr_gen = a->l->sr_seen.generation;
  r->sr_ceiling = a->l->sr_seen.ceiling_per_s;
  r->admits = a->l->admits_seen;
  r->win = a->l->win;
  char bad[8]; /* a window this participant read before it was found bad */
  if (polite__pf_record_check(&fb->st, r, now_us, bad, sizeof bad) != 0)
    memset(&r->win, 0, sizeof r->win);
  int64_t from = r->settle_until_us > r->paused_until_us ? r->settle_until_us
                                                         : r->paused_until_us;
  if (file_rate(fb, r) > 0) {
    polite_gcra g = fb->proto;
    g.tat_ns = 0;
    polite_gcra_pause_until(&g, from);
    r->tat_ns = g.tat_ns;
  }
}

/* Finds l's record by scanning the file (its place is unknown, or the
 * record there is not its any more) and, when `create`, makes it: in place
 * of a damaged record (rebuilt: `damage` says why), or new. Called under the
 * lock. Returns 0 (a->r holds the record), 1 when absent and not created,
 * or POLITE_EBUDGET. */
static int locate(file_budget *fb, pf_acct *a, int64_t now_us, int create,
                  const char *damage) {
  int first_free = -1, first_bad = -1;
  char err[200];
  for (unsigned i = 0; i < PF_ACCOUNTS; i++) {
    int st = polite__pf_read(&fb->st, i, &a->r, err, sizeof err);
    if (st < 0)
      return errf(fb, "%s", err);
    if (st == PF_REC_USED && strlen(a->l->key) == a->r.keylen &&
        memcmp(a->r.key, a->l->key, a->r.keylen) == 0) {
      a->l->index = (int)i;
      return 0;
    }
    if (st == PF_REC_FREE && first_free < 0)
      first_free = (int)i;
    if (st == PF_REC_BAD && first_bad < 0)
      first_bad = (int)i;
  }
  if (!create && fb->inspect && first_bad >= 0)
    return errf(fb, "%s",
                "the file is damaged: an account record holds bytes polite "
                "did not write; the next participant to use it rebuilds it");
  if (!create)
    return 1;
  /* Without a clock (set_slot_cap on an account nobody acquired yet) only
   * a new, empty record is made: a rebuild settles until a time, which
   * needs now. */
  if (now_us == INT64_MIN &&
      (damage != NULL || first_bad >= 0 || first_free < 0))
    return 1;
  if (first_free < 0 && first_bad < 0)
    return errf(fb, "%s", "all 64 accounts of the file are in use");
  /* A damaged record may have been this account: its slots and pause are
   * unknown, so it is rebuilt as one (settling) rather than made anew. */
  if (damage == NULL && first_bad >= 0)
    damage = "a damaged account record was found";
  fresh_record(fb, a, (unsigned)(first_free >= 0 ? first_free : first_bad),
               now_us, damage);
  return 0;
}

/* The periodic check of the file's identity and header, with the lock
 * held: a file replaced or removed is reopened (and its lock taken), a
 * repairable header repaired. *held says whether the lock is still held
 * when an error is returned. */
static int verify(file_budget *fb, int64_t now_us, int *held) {
  *held = 1;
  if (fb->verified && now_us >= fb->verified_us &&
      now_us - fb->verified_us < VERIFY_EVERY_US)
    return 0;
  char err[300];
  int repaired = 0;
  int rc = polite__pf_verify(&fb->st, !fb->inspect, &repaired, err, sizeof err);
  if (rc == 1 && fb->inspect)
    return errf(fb, "%s", "the file was removed or replaced while in use");
  if (rc == 1) {
    /* The path names another file (or none): that is the budget now. A
     * failed reopen keeps the old file (and reports why). */
    polite__pf_unlock(&fb->st);
    rc = polite__pf_reopen(&fb->st, err, sizeof err);
    char lerr[300];
    if (polite__pf_lock(&fb->st, lerr, sizeof lerr) != 0) {
      *held = 0;
      return errf(fb, "%s", rc != 0 ? err : lerr);
    }
    if (rc != 0)
      return errf(fb, "%s", err);
    for (unsigned i = 0; i < fb->nloc; i++)
      fb->loc[i].index = -1;
    fb->switched_us = now_us;
  } else if (rc != 0) {
    return errf(fb, "%s", err);
  }
  fb->verified = 1;
  fb->verified_us = now_us;
  /* Damaged records anywhere are noted here and said once, by the first
   * call that does not rebuild an account anyway (see enter). */
  if (!fb->inspect &&
      polite__pf_bad_records(&fb->st, &fb->bad_now, err, sizeof err) != 0)
    return errf(fb, "%s", err);
  uint64_t fresh = fb->bad_now & ~fb->bad_told;
  fb->bad_told = fb->bad_now;
  char why[120];
  if (repaired)
    snprintf(why, sizeof why, "%s",
             "cut short or its header overwritten; repaired");
  else if (fresh)
    snprintf(why, sizeof why,
             "%d account record(s) overwritten; rebuilt when next used",
             __builtin_popcountll(fresh));
  /* Every participant of the file says it (each sees the count change). */
  if ((repaired || fresh) && !fb->inspect) {
    int marked = polite__pf_mark_repaired(&fb->st, repaired, fb->bad_now, why,
                                          err, sizeof err);
    if (marked < 0)
      return errf(fb, "%s", err);
    if (marked > 0 || repaired)
      snprintf(fb->note, sizeof fb->note, "the file was damaged (%s)", why);
  }
  return 0;
}

/* Puts this participant's slots back into a (re-registration after a
 * rebuild, or after its lease ran out while its requests still ran) and
 * renews its lease. now_us INT64_MIN: no clock (release), no renewal. */
static int register_me(file_budget *fb, pf_acct *a, int64_t now_us) {
  a->me = polite__pf_owner_find(&a->r, fb->id);
  unsigned held = a->l->held;
  if (held == 0 && a->me != NULL && a->me->slots > 0) {
    memset(a->me, 0, sizeof *a->me); /* stale: nothing is held here */
    a->me = NULL;
    a->dirty = 1;
  }
  if (held == 0 || now_us == INT64_MIN)
    return 0;
  if (a->me == NULL) {
    if ((a->me = polite__pf_owner_new(&a->r)) == NULL)
      return errf(fb, "%s",
                  "all 128 participant entries of the account are in use");
    a->me->id = fb->id;
    a->me->pid = fb->pid;
    a->dirty = 1;
  }
  if (a->me->slots != held) {
    a->me->slots = held;
    a->dirty = 1;
  }
  if (a->me->expiry_us < now_us + fb->lease_us - fb->lease_us / 8) {
    a->me->expiry_us = now_us + fb->lease_us;
    a->dirty = 1;
  }
  return 0;
}

/* Reads l's record at its known place into a. Returns 0 when it is l's and
 * sound (or was rebuilt in place, its values being ones polite could not
 * have written), 1 when it is not l's any more (*damage says so), or a
 * negative errno. */
static int read_known(file_budget *fb, pf_acct *a, int64_t now_us, char *why,
                      size_t len, const char **damage) {
  char err[300];
  int st =
      polite__pf_read(&fb->st, (unsigned)a->l->index, &a->r, err, sizeof err);
  if (st < 0)
    return errf(fb, "%s", err);
  int mine = st == PF_REC_USED && a->r.keylen == strlen(a->l->key) &&
             memcmp(a->r.key, a->l->key, a->r.keylen) == 0;
  if (mine) {
    if (now_us == INT64_MIN ||
        polite__pf_record_check(&fb->st, &a->r, now_us, why, len) == 0)
      return 0;
    if (fb->inspect)
      return errf(fb, "the file is damaged: %s", why);
    fresh_record(fb, a, (unsigned)a->l->index, now_us, why);
    return 0;
  }
  snprintf(why, len, "the record of account '%.60s' was %s", a->l->key,
           st == PF_REC_BAD ? "overwritten with bytes polite did not write"
                            : "erased");
  *damage = why;
  return 1;
}

/* A repair of the file marked in this account's record since this
 * participant last read it becomes the note its next acquire says
 * (starting nothing); a rebuild of the account says it by settling. */
static void tell_damage(file_budget *fb, pf_acct *a) {
  pf_local *l = a->l;
  if (l->read_once && a->r.repairs != l->repairs_seen && !a->rebuilt)
    snprintf(fb->note, sizeof fb->note, "the file was damaged (%.120s)",
             a->r.why);
  l->repairs_seen = a->r.repairs;
  l->read_once = 1;
}

/* Takes the locks and reads key's account into a: the common start of
 * every call. A record that is not this account's any more, fails its
 * checksum or holds values polite could not have written is rebuilt
 * (unless inspecting: then it is an error naming the damage). Returns 0
 * with both locks held, 1 when the account does not exist and `create` is
 * 0 (nothing held), or a negative errno (nothing held). now_us INT64_MIN:
 * a call without a clock (no check of the file, no lease renewal). */
int polite__pf_enter(file_budget *fb, const char *key, int64_t now_us,
                     int create, pf_acct *a) {
  memset(a, 0, sizeof *a);
  pthread_mutex_lock(&fb->mu);
  char err[300], why[200] = "";
  const char *damage = NULL;
  int held = 0, rc = polite__pf_lock(&fb->st, err, sizeof err);
  if (rc != 0) {
    rc = errf(fb, "%s", err);
    goto fail;
  }
  held = 1;
  if (now_us != INT64_MIN && (rc = verify(fb, now_us, &held)) != 0)
    goto fail;
  if ((a->l = local_of(fb, key)) == NULL) {
    rc = POLITE_EBUDGET;
    goto fail;
  }
  rc = a->l->index >= 0 ? read_known(fb, a, now_us, why, sizeof why, &damage)
                        : 1;
  if (rc == 1 && damage != NULL && now_us != INT64_MIN) {
    /* Damage seldom stops at one record: look at the whole file now. */
    fb->verified = 0;
    if ((rc = verify(fb, now_us, &held)) != 0)
      goto fail;
    rc = 1;
  }
  /* Accounts made in a file that replaced the old one settle like rebuilt
   * ones: the participants of the old file hold slots it does not know. */
  if (rc == 1 && damage == NULL && fb->switched_us != 0 &&
      (now_us == INT64_MIN || now_us - fb->switched_us < 10 * SETTLE_US))
    damage = "the file was removed or replaced while in use";
  /* A damaged account is rebuilt by any call that meets it and has a
   * clock (a release has none: it only counts, and the next call with a
   * clock rebuilds). */
  if (rc == 1)
    rc = locate(fb, a, now_us, (create || damage) && !fb->inspect, damage);
  if (rc == 1 && fb->inspect && damage != NULL)
    rc = errf(fb, "the file is damaged: %s", damage);
  if (rc != 0)
    goto fail;
  if (!fb->inspect && (rc = register_me(fb, a, now_us)) != 0)
    goto fail;
  if (!fb->inspect)
    tell_damage(fb, a);
  a->l->pause_seen_us = a->r.paused_until_us; /* a sound record is truth */
  a->l->sr_seen.rate_per_s = a->r.sr_rate;
  a->l->sr_seen.limit_per_s = a->r.sr_limit;
  a->l->sr_seen.generation = a->r.sr_gen;
  a->l->sr_seen.ceiling_per_s = a->r.sr_ceiling;
  a->l->admits_seen = a->r.admits;
  a->l->win = a->r.win;
  return 0;
fail:
  if (held)
    polite__pf_unlock(&fb->st);
  pthread_mutex_unlock(&fb->mu);
  return rc;
}

/* Writes a back when changed, keeping the locks. Returns 0 or
 * POLITE_EBUDGET (the write failed: the call must not count). */
int polite__pf_write_back(file_budget *fb, pf_acct *a) {
  char err[300];
  if (a->dirty && polite__pf_write(&fb->st, &a->r, err, sizeof err) != 0)
    return errf(fb, "%s", err);
  return 0;
}

/* Drops the locks enter took. */
void polite__pf_leave(file_budget *fb) {
  polite__pf_unlock(&fb->st);
  pthread_mutex_unlock(&fb->mu);
}

/* The message while a rebuilt account settles. */
static int settling(file_budget *fb, const pf_acct *a, int64_t now_us) {
  char msg[300];
  snprintf(msg, sizeof msg,
           "the file was damaged (%.120s) and its account was rebuilt; "
           "nothing starts for %.1f s more, while every participant "
           "re-registers its slots",
           a->r.why[0] ? a->r.why : "stray bytes",
           (double)(a->r.settle_until_us - now_us) / 1e6);
  return errf(fb, "%s", msg);
}

/* The slot part of an admission (WAIT_SLOT, or 0 to go on; a->me then has
 * an entry for the slots). */
static int take_slot(file_budget *fb, pf_acct *a, int64_t now_us,
                     unsigned slots, int64_t *wait_us) {
  /* a learned in-flight cap may lower the configured limit */
  unsigned conc =
      polite__budget_slot_limit(fb->base.cfg.concurrency, a->r.slot_cap);
  int64_t next_expiry;
  uint64_t in_use = polite__pf_reclaim(&a->r, now_us, &next_expiry, &a->dirty);
  a->me = polite__pf_owner_find(&a->r, fb->id);
  if (polite__budget_slots_short(conc, in_use, slots)) {
    int64_t w = POLITE__BUDGET_SLOT_POLL_US;
    if (next_expiry != INT64_MAX && next_expiry - now_us < w)
      w = next_expiry - now_us > 0 ? next_expiry - now_us : 1;
    *wait_us = w;
    return POLITE_BUDGET_WAIT_SLOT;
  }
  if (a->me == NULL && (a->me = polite__pf_owner_new(&a->r)) == NULL)
    return errf(fb, "%s",
                "all 128 participant entries of the account are in use");
  a->l->in_use_seen = (unsigned)(in_use + slots); /* if admitted */
  return 0;
}

/* Same order as the local backend: the pause first (nothing starts), then
 * the slots (do not burn rate units for a start that cannot happen), then
 * the rate (recorded only on success). Any call renews this participant's
 * lease, so units 0 and slots 0 is the renewal (heartbeat). */
static int file_acquire(polite_budget *b, const char *key, int64_t now_us,
                        unsigned units, unsigned slots, int64_t *wait_us) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  int rc = polite__pf_enter(fb, key, now_us, 1, &a);
  if (rc != 0)
    return rc < 0 ? rc : POLITE_EBUDGET;
  int take = b->cfg.concurrency > 0 && slots > 0;
  if (now_us < a.r.settle_until_us && (units > 0 || slots > 0)) {
    rc = settling(fb, &a, now_us);
    fb->note[0] = '\0'; /* the settling says it */
  } else if (fb->note[0] && (units > 0 || slots > 0)) {
    /* Damage repaired since the last acquire: said once, nothing starts. */
    rc = errf(fb, "%s", fb->note);
    fb->note[0] = '\0';
  } else if (now_us < a.r.paused_until_us) {
    *wait_us = a.r.paused_until_us - now_us;
    rc = POLITE_BUDGET_WAIT_PAUSE;
  } else if (polite__pf_window_wait(&a.r, now_us, units, wait_us)) {
    rc = POLITE_BUDGET_WAIT_RATE;
  } else if (!take || (rc = take_slot(fb, &a, now_us, slots, wait_us)) == 0) {
    rc = POLITE_BUDGET_ADMITTED;
    if (file_rate(fb, &a.r) > 0) {
      polite_gcra g = fb->proto;
      g.tat_ns = a.r.tat_ns;
      int64_t w = polite_gcra_admit(&g, now_us, units);
      if (w > 0) {
        *wait_us = w;
        rc = POLITE_BUDGET_WAIT_RATE;
      } else if (units > 0) {
        a.r.tat_ns = g.tat_ns;
        a.dirty = 1;
      }
    }
    if (rc == POLITE_BUDGET_ADMITTED)
      polite__pf_window_count(&a, units);
    if (rc == POLITE_BUDGET_ADMITTED && take) {
      a.me->pid = fb->pid;
      a.me->slots += slots;
      a.me->expiry_us = now_us + fb->lease_us;
      a.me->id = fb->id;
      a.dirty = 1;
    }
  }
  if (rc == POLITE_BUDGET_ADMITTED)
    *wait_us = 0;
  int wrc = polite__pf_write_back(fb, &a);
  if (wrc != 0)
    rc = wrc; /* not recorded: not admitted either */
  else if (rc == POLITE_BUDGET_ADMITTED && take)
    a.l->held += slots;
  polite__pf_leave(fb);
  return rc;
}

/* Gives back `slots` slots of this participant (never below zero); an entry
 * that reaches zero is freed. No clock is passed here, so the lease is not
 * renewed (the next acquire or pause renews it). What this participant
 * holds is counted here even when the file cannot be used: the count is
 * written at its next call that can. */
static void file_release(polite_budget *b, const char *key, unsigned slots) {
  file_budget *fb = (file_budget *)b;
  if (b->cfg.concurrency == 0)
    return;
  pf_acct a;
  int rc = polite__pf_enter(fb, key, INT64_MIN, 0, &a);
  if (rc != 0) {
    pthread_mutex_lock(&fb->mu);
    pf_local *l = local_of(fb, key);
    if (l != NULL)
      l->held = l->held > slots ? l->held - slots : 0;
    pthread_mutex_unlock(&fb->mu);
    return;
  }
  a.l->held = a.l->held > slots ? a.l->held - slots : 0;
  a.me = polite__pf_owner_find(&a.r, fb->id);
  if (a.me != NULL) {
    a.me->slots = a.l->held;
    if (a.me->slots == 0)
      memset(a.me, 0, sizeof *a.me);
    a.dirty = 1;
  }
  polite__pf_write_back(fb, &a);
  polite__pf_leave(fb);
}

/* Pauses the account for every process: no start before until_us, then
 * the planned spacing resumes (the same TAT rule as polite_gcra). */
static int file_pause_until(polite_budget *b, const char *key, int64_t now_us,
                            int64_t until_us) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  int rc = polite__pf_enter(fb, key, now_us, 1, &a);
  if (rc != 0)
    return rc < 0 ? rc : POLITE_EBUDGET;
  if (until_us > a.r.paused_until_us) {
    a.r.paused_until_us = until_us;
    a.l->pause_seen_us = until_us;
    a.dirty = 1;
    if (file_rate(fb, &a.r) > 0) {
      polite_gcra g = fb->proto;
      g.tat_ns = a.r.tat_ns;
      polite_gcra_pause_until(&g, until_us);
      a.r.tat_ns = g.tat_ns;
    }
  }
  rc = polite__pf_write_back(fb, &a);
  polite__pf_leave(fb);
  return rc;
}

static int64_t file_paused_for(polite_budget *b, const char *key,
                               int64_t now_us) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  if (polite__pf_enter(fb, key, now_us, 0, &a) != 0)
    return 0;
  int64_t left =
      a.r.paused_until_us > now_us ? a.r.paused_until_us - now_us : 0;
  polite__pf_write_back(fb, &a);
  polite__pf_leave(fb);
  return left;
}

/* Closing gives back every slot this participant still holds: nobody could
 * release them later. */
static void file_close(polite_budget *b) {
  file_budget *fb = (file_budget *)b;
  for (unsigned i = 0; i < fb->nloc && fb->st.fd >= 0; i++) {
    pf_acct a;
    if (fb->loc[i].held == 0 && fb->inspect)
      continue;
    fb->loc[i].held = 0;
    if (polite__pf_enter(fb, fb->loc[i].key, INT64_MIN, 0, &a) != 0)
      continue;
    a.me = polite__pf_owner_find(&a.r, fb->id);
    if (a.me != NULL) {
      memset(a.me, 0, sizeof *a.me);
      a.dirty = 1;
    }
    polite__pf_write_back(fb, &a);
    polite__pf_leave(fb);
  }
  for (unsigned i = 0; i < fb->nloc; i++)
    free(fb->loc[i].key);
  polite__pf_close(&fb->st);
  pthread_mutex_destroy(&fb->mu);
  free(fb->uri);
  free(fb);
}

int polite__budget_file_hold_lock(polite_budget *b) {
  if (b == NULL || b->vt == NULL || strcmp(b->vt->scheme, "file") != 0)
    return POLITE_EINVAL;
  file_budget *fb = (file_budget *)b;
  char err[300];
  return polite__pf_lock(&fb->st, err, sizeof err);
}

static int file_publish_rate(polite_budget *b, const char *key, int64_t now_us,
                             polite_shared_rate *r, int is_cut) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  int rc = polite__pf_enter(fb, key, now_us, 1, &a);
  if (rc != 0)
    return rc < 0 ? rc : POLITE_EBUDGET;
  polite_shared_rate sr = {a.r.sr_rate, a.r.sr_limit, a.r.sr_gen,
                           a.r.sr_ceiling};
  int changed = polite_shared_rate_merge(&sr, r, is_cut);
  a.r.sr_rate = sr.rate_per_s;
  a.r.sr_limit = sr.limit_per_s;
  a.r.sr_gen = sr.generation;
  a.r.sr_ceiling = sr.ceiling_per_s;
  a.l->sr_seen = sr;
  a.dirty |= changed != 0;
  *r = sr;
  rc = polite__pf_write_back(fb, &a);
  polite__pf_leave(fb);
  return rc != 0 ? rc : changed;
}

/* Read from the file at once: as cheap as remembering it. */
static int file_shared_rate(polite_budget *b, const char *key,
                            polite_shared_rate *out) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  int rc = polite__pf_enter(fb, key, INT64_MIN, 0, &a);
  if (rc != 0)
    return rc < 0 ? rc : 0;
  out->rate_per_s = a.r.sr_rate;
  out->limit_per_s = a.r.sr_limit;
  out->generation = a.r.sr_gen;
  out->ceiling_per_s = a.r.sr_ceiling;
  polite__pf_write_back(fb, &a);
  polite__pf_leave(fb);
  return 0;
}

static int file_inspect(polite_budget *b, const char *key, int64_t now_us,
                        polite_budget_state *out) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  int rc = polite__pf_enter(fb, key, now_us, 0, &a);
  out->config_stored = 1;
  out->config.rate_per_s = fb->st.h.rate_per_s;
  out->config.burst = fb->st.h.burst;
  out->config.concurrency = fb->st.h.concurrency;
  if (rc != 0)
    return rc < 0 ? rc : 0; /* an account nobody used yet: all empty */
  out->pause_left_us =
      a.r.paused_until_us > now_us ? a.r.paused_until_us - now_us : 0;
  out->rate.rate_per_s = a.r.sr_rate;
  out->rate.limit_per_s = a.r.sr_limit;
  out->rate.generation = a.r.sr_gen;
  out->rate.ceiling_per_s = a.r.sr_ceiling;
  for (uint32_t i = 0; i < a.r.hi; i++) {
    const pf_owner *o = &a.r.owners[i];
    if (o->id == 0 || o->slots == 0 || o->expiry_us <= now_us)
      continue;
    out->slots_in_use += o->slots;
    if (out->n_holders < POLITE_BUDGET_MAX_HOLDERS) {
      polite_budget_holder *hd = &out->holders[out->n_holders++];
      snprintf(hd->id, sizeof hd->id, "pid %d", (int)o->pid);
      hd->slots = o->slots;
      hd->lease_left_us = o->expiry_us - now_us;
    }
  }
  polite__pf_leave(fb);
  return 0;
}

/* The next start is allowed at once: a pause had pushed the TAT too. */
static int file_clear(polite_budget *b, const char *key, int64_t now_us) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  int rc = polite__pf_enter(fb, key, now_us, 0, &a);
  if (rc != 0)
    return rc < 0 ? rc : 0; /* nothing to clear */
  a.r.paused_until_us = 0;
  if (a.r.tat_ns > now_us * 1000) /* the pause had pushed it too */
    a.r.tat_ns = now_us * 1000;
  a.r.sr_rate = a.r.sr_limit = a.r.sr_ceiling = 0;
  a.r.slot_cap = 0;
  memset(&a.r.win, 0, sizeof a.r.win); /* the learned window too */
  a.r.sr_gen++; /* raises from before the clear are stale */
  a.dirty = 1;
  rc = polite__pf_write_back(fb, &a);
  polite__pf_leave(fb);
  return rc;
}

/* The cap lives in the account's record, in the word that was padding
 * (0 in every file written before: no cap), so that every participant's
 * acquire holds it under the file's lock. Like release, no clock: a write
 * that fails leaves the cap as it was (the next change writes again). */
static void file_set_slot_cap(polite_budget *b, const char *key, unsigned cap) {
  file_budget *fb = (file_budget *)b;
  pf_acct a;
  if (polite__pf_enter(fb, key, INT64_MIN, 1, &a) != 0)
    return;
  if (a.r.slot_cap != cap) {
    a.r.slot_cap = cap;
    a.dirty = 1;
  }
  polite__pf_write_back(fb, &a);
  polite__pf_leave(fb);
}

static unsigned file_in_use(polite_budget *b, const char *key) {
  file_budget *fb = (file_budget *)b;
  pthread_mutex_lock(&fb->mu);
  pf_local *l = local_of(fb, key);
  unsigned n = l != NULL ? l->in_use_seen : 0;
  pthread_mutex_unlock(&fb->mu);
  return n;
}

static const polite_budget_vtable file_vt = {
    "file",
    file_acquire,
    file_release,
    file_pause_until,
    file_paused_for,
    file_close,
    file_publish_rate,
    file_shared_rate,
    file_inspect,
    file_clear,
    file_set_slot_cap,
    file_in_use,
    polite__pf_admissions,
    polite__pf_window}; /* window: each participant keeps its own */

int polite__budget_file_new(const char *uri, const polite_budget_config *cfg,
                            polite_budget **out, char *errbuf, size_t errlen) {
  return polite__budget_file_open(uri, cfg, NULL, 0, out, errbuf, errlen);
}

int polite__budget_file_open(const char *uri, const polite_budget_config *cfg,
                             const polite_env *env, unsigned flags,
                             polite_budget **out, char *errbuf, size_t errlen) {
  if (errbuf && errlen)
    errbuf[0] = '\0';
  if (out == NULL)
    return POLITE_EINVAL;
  *out = NULL;
  if (uri == NULL || cfg == NULL || strncmp(uri, "file:", 5) != 0 ||
      cfg->rate_per_s != cfg->rate_per_s)
    return POLITE_EINVAL;
  file_budget *fb = polite__budget_alloc(sizeof *fb, &file_vt, cfg);
  if (fb == NULL)
    return POLITE_ENOMEM;
  fb->st.fd = -1;
  fb->inspect = (flags & POLITE__BUDGET_INSPECT) != 0;
  fb->pid = (int32_t)getpid();
  pthread_mutex_init(&fb->mu, NULL);
  fb->uri = strdup(uri);
  char *path = NULL;
  int64_t lease_ms = 0;
  int rc = fb->uri ? polite__pf_parse_uri(uri, &path, &lease_ms, errbuf, errlen)
                   : POLITE_ENOMEM;
  if (rc == 0 && cfg->rate_per_s > 0 &&
      polite_gcra_init(&fb->proto, cfg->rate_per_s, fb->base.cfg.burst) != 0) {
    polite__budget_errf(errbuf, errlen, uri, "rate %g/s is out of range",
                        cfg->rate_per_s);
    rc = POLITE_EINVAL;
  }
  fb->proto_rate = rc == 0 && cfg->rate_per_s > 0 ? cfg->rate_per_s : 0;
  fb->lease_us = lease_ms * 1000;
  if (rc == 0 && polite_env_random_bytes(env, &fb->id, sizeof fb->id) != 0)
    fb->id = ((uint64_t)getpid() << 32) ^ (uint64_t)polite_env_mono_us(env);
  if (fb->id == 0)
    fb->id = 1;
  if (rc == 0) {
    char err[400];
    rc = polite__pf_open(&fb->st, path, !fb->inspect, fb->inspect, env,
                         &fb->base.cfg, err, sizeof err);
    if (rc != 0)
      polite__budget_errf(errbuf, errlen, uri, "%s", err);
    else if (fb->inspect)
      fb->proto_rate = 0; /* the file's settings are taken */
  }
  free(path);
  if (rc != 0) {
    polite__pf_close(&fb->st);
    pthread_mutex_destroy(&fb->mu);
    free(fb->uri);
    free(fb);
    return rc;
  }
  *out = &fb->base;
  return 0;
}
