/* polite budget, file backend: processes on one host share accounts kept
 * in an mmap'ed file, guarded by a robust process-shared mutex (a holder
 * killed by SIGKILL never leaves it locked) with concurrency slots held as
 * leases that expire when their owner stops calling in. */
#define _GNU_SOURCE
#include "budget_backends.h"

#include <polite/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PF_MAGIC 0x46425445544c4f50ULL /* "POLITEBF" little-endian */
#define PF_VERSION 2u                  /* 2: the learned rate per account */
#define PF_ACCOUNTS 64 /* keys (hosts with --budget-scope host) per file */
#define PF_OWNERS 128  /* participants holding slots in one account */
#define PF_KEYLEN 256  /* a host name fits (253) */

/* One participant's slots in one account: `slots` slots, valid until
 * expiry_us (CLOCK_MONOTONIC). id 0 marks a free entry. */
typedef struct {
  uint64_t id;
  int32_t pid; /* for people reading the file; not trusted (namespaces) */
  uint32_t slots;
  int64_t expiry_us;
} pf_owner;

typedef struct {
  uint32_t used;
  uint32_t keylen;
  uint32_t hi; /* owners[hi..] are all free: scans stop there */
  uint32_t pad;
  char key[PF_KEYLEN];
  int64_t tat_ns;           /* GCRA theoretical arrival time, monotonic ns */
  int64_t paused_until_us;  /* monotonic us; 0 when never paused */
  double sr_rate, sr_limit; /* the learned rate (polite_shared_rate) */
  uint64_t sr_gen;
  pf_owner owners[PF_OWNERS];
} pf_account;

/* The file. Fields before `mu` are written once at creation (under flock)
 * and read-only afterwards; everything after `mu` changes under it. */
typedef struct {
  uint64_t magic; /* written last at creation: 0 means "not initialised" */
  uint32_t version;
  uint32_t size;       /* sizeof(pf_file): catches other builds/ABIs */
  uint32_t mutex_size; /* sizeof(pthread_mutex_t) */
  uint32_t burst;
  uint32_t concurrency;
  uint32_t pad;
  double rate_per_s;
  char boot_id[48]; /* monotonic times mean nothing after a reboot */
  pthread_mutex_t mu;
  pf_account acc[PF_ACCOUNTS];
} pf_file;

typedef struct {
  polite_budget base;
  pf_file *f;
  char *uri;   /* for messages */
  uint64_t id; /* this participant's owner id (random, nonzero) */
  int64_t lease_us;
  polite_gcra proto; /* interval/tolerance at proto_rate; tat unused */
  double proto_rate; /* 0: not set up */
} file_budget;

/* Bounds a value read from the file must respect: anything beyond them was
 * not written by polite (a stray write, another program, a bad disk). */
#define PF_MAX_AHEAD_US (POLITE_RA_MAX_SECONDS * 1000000) /* pause, TAT */
#define PF_MAX_LEASE_US (INT64_C(7) * 86400 * 1000000)
#define PF_MAX_RATE 1e9

/* Says what is wrong with account a at now_us in buf, or returns 0 when
 * nothing is: every field is checked against what polite could have
 * written, so a corrupted file fails with a message instead of making
 * every participant wait forever. */
static int pf_check_account(const pf_file *f, const pf_account *a,
                            int64_t now_us, char *buf, size_t len) {
  if (a->used > 1 || a->keylen >= PF_KEYLEN || a->hi > PF_OWNERS) {
    snprintf(buf, len,
             "an account header is invalid (used %u, key length "
             "%u, owners %u)",
             a->used, a->keylen, a->hi);
    return 1;
  }
  if (!a->used)
    return 0;
  if (a->paused_until_us - now_us > PF_MAX_AHEAD_US ||
      a->tat_ns / 1000 - now_us > PF_MAX_AHEAD_US) {
    snprintf(
        buf, len,
        "account '%.*s' has a pause or next start %lld s "
        "ahead",
        (int)a->keylen, a->key,
        (long long)((a->paused_until_us > a->tat_ns / 1000 ? a->paused_until_us
                                                           : a->tat_ns / 1000) -
                    now_us) /
            1000000);
    return 1;
  }
  if (!(a->sr_rate >= 0 && a->sr_rate <= PF_MAX_RATE) ||
      !(a->sr_limit >= 0 && a->sr_limit <= PF_MAX_RATE)) {
    snprintf(buf, len, "account '%.*s' has a learned rate of %g/s",
             (int)a->keylen, a->key, a->sr_rate);
    return 1;
  }
  for (uint32_t i = 0; i < a->hi; i++) {
    const pf_owner *o = &a->owners[i];
    if (o->id == 0)
      continue;
    if ((f->concurrency > 0 && o->slots > f->concurrency) ||
        o->expiry_us - now_us > PF_MAX_LEASE_US) {
      snprintf(buf, len,
               "account '%.*s': participant %u (pid %d) holds %u "
               "slots (concurrency %u) for %lld s",
               (int)a->keylen, a->key, i, (int)o->pid, o->slots, f->concurrency,
               (long long)(o->expiry_us - now_us) / 1000000);
      return 1;
    }
  }
  return 0;
}

/* The file's identity, checked at each use: a file overwritten while in
 * use fails at once. */
static int pf_header_ok(const pf_file *f) {
  return f->magic == PF_MAGIC && f->version == PF_VERSION &&
         f->size == sizeof(pf_file) && f->mutex_size == sizeof(pthread_mutex_t);
}

/* The error for a corrupted file, with why. */
static int pf_corrupt(file_budget *fb, const char *why) {
  polite__budget_errf(fb->base.errstr, sizeof fb->base.errstr, fb->uri,
                      "the file is corrupted: %s; remove it when no process "
                      "uses it",
                      why);
  return POLITE_EBUDGET;
}

/* Reads the kernel's boot id into out (empty when unavailable: then a
 * reboot is not detected, which only matters for stale files). */
static void read_boot_id(char out[48]) {
  memset(out, 0, 48);
  FILE *fp = fopen("/proc/sys/kernel/random/boot_id", "re");
  if (fp == NULL)
    return;
  if (fgets(out, 48, fp) == NULL)
    out[0] = '\0';
  out[strcspn(out, "\n")] = '\0';
  fclose(fp);
}

/* Initialises the lock and the accounts; called under flock with nobody
 * else using the mapping (new file, or a file from before a reboot). */
static int init_state(pf_file *f, const char *boot_id) {
  pthread_mutexattr_t at;
  if (pthread_mutexattr_init(&at) != 0)
    return -1;
  int rc = pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
  if (rc == 0)
    rc = pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
  if (rc == 0)
    rc = pthread_mutex_init(&f->mu, &at);
  pthread_mutexattr_destroy(&at);
  if (rc != 0)
    return -1;
  memset(f->acc, 0, sizeof f->acc);
  memcpy(f->boot_id, boot_id, sizeof f->boot_id);
  return 0;
}

/* Takes the cross-process lock. A holder that died (SIGKILL) leaves
 * EOWNERDEAD: its half-done update is at worst one field of one account
 * (a TAT, a pause, an owner entry), each of which is a valid value on its
 * own, so the state is declared consistent and used as is. */
static int pf_lock(file_budget *fb) {
  if (!pf_header_ok(fb->f))
    return pf_corrupt(fb, "its header changed while in use");
  int rc = pthread_mutex_lock(&fb->f->mu);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(&fb->f->mu);
    return 0;
  }
  if (rc != 0) {
    polite__budget_errf(fb->base.errstr, sizeof fb->base.errstr, fb->uri,
                        "cannot take the file's lock: %s", strerror(rc));
    return POLITE_EBUDGET;
  }
  return 0;
}

static void pf_unlock(file_budget *fb) {
  pthread_mutex_unlock(&fb->f->mu);
}

/* Finds the account for key (NULL and "" are the same), creating it when
 * `create`. Called under the lock. NULL when absent (and not created) or
 * when the table is full / the key too long (then errstr says so and
 * *err is set). */
static pf_account *find_account(file_budget *fb, const char *key, int create,
                                int *err) {
  if (key == NULL)
    key = "";
  size_t len = strlen(key);
  *err = 0;
  if (len >= PF_KEYLEN) {
    polite__budget_errf(fb->base.errstr, sizeof fb->base.errstr, fb->uri,
                        "account key longer than %d bytes", PF_KEYLEN - 1);
    *err = POLITE_EBUDGET;
    return NULL;
  }
  pf_account *free_slot = NULL;
  for (int i = 0; i < PF_ACCOUNTS; i++) {
    pf_account *a = &fb->f->acc[i];
    if (!a->used) {
      if (free_slot == NULL)
        free_slot = a;
      continue;
    }
    if (a->keylen == len && memcmp(a->key, key, len) == 0)
      return a;
  }
  if (!create)
    return NULL;
  if (free_slot == NULL) {
    polite__budget_errf(fb->base.errstr, sizeof fb->base.errstr, fb->uri,
                        "all %d accounts of the file are in use", PF_ACCOUNTS);
    *err = POLITE_EBUDGET;
    return NULL;
  }
  memset(free_slot, 0, sizeof *free_slot);
  memcpy(free_slot->key, key, len);
  free_slot->keylen = (uint32_t)len;
  free_slot->used = 1; /* last: a torn creation leaves the slot free */
  return free_slot;
}

/* This participant's entry in a, or NULL. */
static pf_owner *my_owner(file_budget *fb, pf_account *a) {
  uint32_t hi = a->hi < PF_OWNERS ? a->hi : PF_OWNERS;
  for (uint32_t i = 0; i < hi; i++)
    if (a->owners[i].id == fb->id)
      return &a->owners[i];
  return NULL;
}

/* Frees entries whose lease ran out at now_us and returns the slots in
 * use by live ones; *next_expiry gets the earliest live expiry. */
static uint64_t reclaim(pf_account *a, int64_t now_us, int64_t *next_expiry) {
  uint64_t in_use = 0;
  *next_expiry = INT64_MAX;
  uint32_t hi = a->hi < PF_OWNERS ? a->hi : PF_OWNERS, last = 0;
  for (uint32_t i = 0; i < hi; i++) {
    pf_owner *o = &a->owners[i];
    if (o->id == 0)
      continue;
    if (o->slots == 0 || o->expiry_us <= now_us) {
      memset(o, 0, sizeof *o);
      continue;
    }
    in_use += o->slots;
    last = i + 1;
    if (o->expiry_us < *next_expiry)
      *next_expiry = o->expiry_us;
  }
  a->hi = last;
  return in_use;
}

/* Takes the file lock, finds (or creates) the account and renews this
 * participant's lease in it: the common start of acquire and pause. On
 * success the lock is held, 0 is returned and *me_out (may be NULL) is this
 * participant's entry or NULL; otherwise nothing is held. */
static int enter_account(file_budget *fb, const char *key, int64_t now_us,
                         pf_account **out, pf_owner **me_out) {
  int rc = pf_lock(fb);
  if (rc != 0)
    return rc;
  int err = 0;
  pf_account *a = find_account(fb, key, 1, &err);
  if (a == NULL) {
    pf_unlock(fb);
    return err != 0 ? err : POLITE_EBUDGET;
  }
  char why[200];
  if (pf_check_account(fb->f, a, now_us, why, sizeof why)) {
    pf_unlock(fb);
    return pf_corrupt(fb, why);
  }
  pf_owner *me = my_owner(fb, a);
  if (me != NULL && me->slots > 0)
    me->expiry_us = now_us + fb->lease_us;
  *out = a;
  if (me_out != NULL)
    *me_out = me;
  return 0;
}

/* Sets fb->proto up for the account's rate (configured or learned) and
 * returns it, 0 for unlimited. Called under the lock. */
static double file_rate(file_budget *fb, const pf_account *a) {
  polite_shared_rate sr = {a->sr_rate, a->sr_limit, a->sr_gen};
  double r = polite__budget_rate(&fb->base.cfg, &sr);
  if (r > 0 && r != fb->proto_rate &&
      polite_gcra_init(&fb->proto, r, fb->base.cfg.burst) != 0)
    r = 0;
  fb->proto_rate = r;
  return r;
}

/* Same order as the local backend: the pause first (nothing starts), then
 * the slots (do not burn rate units for a start that cannot happen), then
 * the rate (recorded only on success). Any call renews this participant's
 * lease, so units 0 and slots 0 is the renewal (heartbeat). */
static int file_acquire(polite_budget *b, const char *key, int64_t now_us,
                        unsigned units, unsigned slots, int64_t *wait_us) {
  file_budget *fb = (file_budget *)b;
  pf_account *a = NULL;
  pf_owner *me = NULL;
  int rc = enter_account(fb, key, now_us, &a, &me);
  if (rc != 0)
    return rc;
  unsigned conc = b->cfg.concurrency;
  if (now_us < a->paused_until_us) {
    *wait_us = a->paused_until_us - now_us;
    rc = POLITE_BUDGET_WAIT_PAUSE;
    goto out;
  }
  if (conc > 0 && slots > 0) {
    int64_t next_expiry;
    uint64_t in_use = reclaim(a, now_us, &next_expiry);
    me = my_owner(fb, a);
    if (slots > conc || in_use + slots > conc) {
      int64_t w = POLITE__BUDGET_SLOT_POLL_US;
      if (next_expiry != INT64_MAX && next_expiry - now_us < w)
        w = next_expiry - now_us > 0 ? next_expiry - now_us : 1;
      *wait_us = w;
      rc = POLITE_BUDGET_WAIT_SLOT;
      goto out;
    }
    if (me == NULL) {
      for (uint32_t i = 0; i < PF_OWNERS && me == NULL; i++)
        if (a->owners[i].id == 0) {
          me = &a->owners[i];
          if (a->hi < i + 1)
            a->hi = i + 1; /* before the entry is filled in */
        }
      if (me == NULL) {
        polite__budget_errf(
            b->errstr, sizeof b->errstr, fb->uri,
            "all %d participant entries of the account are in use", PF_OWNERS);
        rc = POLITE_EBUDGET;
        goto out;
      }
    }
  }
  if (file_rate(fb, a) > 0) {
    polite_gcra g = fb->proto;
    g.tat_ns = a->tat_ns;
    int64_t w = polite_gcra_admit(&g, now_us, units);
    if (w > 0) {
      *wait_us = w;
      rc = POLITE_BUDGET_WAIT_RATE;
      goto out;
    }
    a->tat_ns = g.tat_ns;
  }
  if (conc > 0 && slots > 0) {
    me->pid = (int32_t)getpid();
    me->slots += slots;
    me->expiry_us = now_us + fb->lease_us;
    me->id = fb->id; /* last: the entry counts once it is complete */
  }
  *wait_us = 0;
  rc = POLITE_BUDGET_ADMITTED;
out:
  pf_unlock(fb);
  return rc;
}

/* Gives back `slots` slots of this participant (never below zero); an entry
 * that reaches zero is freed. No clock is passed here, so the lease is not
 * renewed (the next acquire or pause renews it). */
static void file_release(polite_budget *b, const char *key, unsigned slots) {
  file_budget *fb = (file_budget *)b;
  if (b->cfg.concurrency == 0 || pf_lock(fb) != 0)
    return;
  int err;
  pf_account *a = find_account(fb, key, 0, &err);
  pf_owner *me = a ? my_owner(fb, a) : NULL;
  if (me != NULL) {
    me->slots = me->slots > slots ? me->slots - slots : 0;
    if (me->slots == 0)
      memset(me, 0, sizeof *me);
  }
  pf_unlock(fb);
}

/* Pauses the account for every process: no start before until_us, then
 * the planned spacing resumes (the same TAT rule as polite_gcra). */
static int file_pause_until(polite_budget *b, const char *key, int64_t now_us,
                            int64_t until_us) {
  file_budget *fb = (file_budget *)b;
  pf_account *a = NULL;
  int rc = enter_account(fb, key, now_us, &a, NULL);
  if (rc != 0)
    return rc;
  if (until_us > a->paused_until_us) {
    a->paused_until_us = until_us;
    if (file_rate(fb, a) > 0) {
      polite_gcra g = fb->proto;
      g.tat_ns = a->tat_ns;
      polite_gcra_pause_until(&g, until_us);
      a->tat_ns = g.tat_ns;
    }
  }
  pf_unlock(fb);
  return 0;
}

static int64_t file_paused_for(polite_budget *b, const char *key,
                               int64_t now_us) {
  file_budget *fb = (file_budget *)b;
  int64_t left = 0;
  if (pf_lock(fb) != 0)
    return 0;
  int err;
  pf_account *a = find_account(fb, key, 0, &err);
  if (a != NULL && a->paused_until_us > now_us)
    left = a->paused_until_us - now_us;
  pf_unlock(fb);
  return left;
}

/* Closing gives back every slot this participant still holds: nobody could
 * release them later. */
static void file_close(polite_budget *b) {
  file_budget *fb = (file_budget *)b;
  if (fb->f != NULL) {
    if (pf_lock(fb) == 0) {
      for (int i = 0; i < PF_ACCOUNTS; i++) {
        pf_account *a = &fb->f->acc[i];
        pf_owner *me = a->used ? my_owner(fb, a) : NULL;
        if (me != NULL)
          memset(me, 0, sizeof *me);
      }
      pf_unlock(fb);
    }
    munmap(fb->f, sizeof(pf_file));
  }
  free(fb->uri);
  free(fb);
}

int polite__budget_file_hold_lock(polite_budget *b) {
  if (b == NULL || b->vt == NULL || strcmp(b->vt->scheme, "file") != 0)
    return POLITE_EINVAL;
  return pf_lock((file_budget *)b);
}

static int file_publish_rate(polite_budget *b, const char *key, int64_t now_us,
                             polite_shared_rate *r, int is_cut) {
  file_budget *fb = (file_budget *)b;
  pf_account *a = NULL;
  int rc = enter_account(fb, key, now_us, &a, NULL);
  if (rc != 0)
    return rc;
  polite_shared_rate sr = {a->sr_rate, a->sr_limit, a->sr_gen};
  rc = polite_shared_rate_merge(&sr, r, is_cut);
  a->sr_rate = sr.rate_per_s;
  a->sr_limit = sr.limit_per_s;
  a->sr_gen = sr.generation;
  *r = sr;
  pf_unlock(fb);
  return rc;
}

/* Read from the file at once: as cheap as remembering it. */
static int file_shared_rate(polite_budget *b, const char *key,
                            polite_shared_rate *out) {
  file_budget *fb = (file_budget *)b;
  int rc = pf_lock(fb);
  if (rc != 0)
    return rc;
  int err;
  pf_account *a = find_account(fb, key, 0, &err);
  if (a != NULL) {
    out->rate_per_s = a->sr_rate;
    out->limit_per_s = a->sr_limit;
    out->generation = a->sr_gen;
  }
  pf_unlock(fb);
  return 0;
}

static int file_inspect(polite_budget *b, const char *key, int64_t now_us,
                        polite_budget_state *out) {
  file_budget *fb = (file_budget *)b;
  pf_account *a = NULL;
  int rc = enter_account(fb, key, now_us, &a, NULL);
  if (rc != 0)
    return rc;
  out->config_stored = 1;
  out->config.rate_per_s = fb->f->rate_per_s;
  out->config.burst = fb->f->burst;
  out->config.concurrency = fb->f->concurrency;
  out->pause_left_us =
      a->paused_until_us > now_us ? a->paused_until_us - now_us : 0;
  out->rate.rate_per_s = a->sr_rate;
  out->rate.limit_per_s = a->sr_limit;
  out->rate.generation = a->sr_gen;
  for (uint32_t i = 0; i < a->hi && i < PF_OWNERS; i++) {
    const pf_owner *o = &a->owners[i];
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
  pf_unlock(fb);
  return 0;
}

/* The next start is allowed at once: a pause had pushed the TAT too. */
static int file_clear(polite_budget *b, const char *key, int64_t now_us) {
  file_budget *fb = (file_budget *)b;
  pf_account *a = NULL;
  int rc = enter_account(fb, key, now_us, &a, NULL);
  if (rc != 0)
    return rc;
  a->paused_until_us = 0;
  if (a->tat_ns > now_us * 1000) /* the pause had pushed it too */
    a->tat_ns = now_us * 1000;
  a->sr_rate = a->sr_limit = 0;
  a->sr_gen++; /* raises from before the clear are stale */
  pf_unlock(fb);
  return 0;
}

static const polite_budget_vtable file_vt = {
    "file",          file_acquire, file_release,      file_pause_until,
    file_paused_for, file_close,   file_publish_rate, file_shared_rate,
    file_inspect,    file_clear};

/* Splits "file:PATH[?lease=DUR]" into a malloc'ed path and the lease.
 * Returns 0 or POLITE_EINVAL with errbuf set. */
static int parse_uri(const char *uri, char **path, int64_t *lease_ms,
                     char *errbuf, size_t errlen) {
  const char *p = uri + 5;
  const char *q = strchr(p, '?');
  size_t plen = q ? (size_t)(q - p) : strlen(p);
  *lease_ms = POLITE__BUDGET_LEASE_DEFAULT_MS;
  if (plen == 0) {
    polite__budget_errf(errbuf, errlen, uri,
                        "expected file:PATH (the path is empty)");
    return POLITE_EINVAL;
  }
  while (q != NULL) {
    const char *s = q + 1;
    q = strchr(s, '&');
    size_t n = q ? (size_t)(q - s) : strlen(s);
    char param[128];
    if (n >= sizeof param) {
      polite__budget_errf(errbuf, errlen, uri, "URI parameter too long");
      return POLITE_EINVAL;
    }
    memcpy(param, s, n);
    param[n] = '\0';
    if (strncmp(param, "lease=", 6) == 0) {
      if (polite_duration_parse(param + 6, lease_ms) != 0 || *lease_ms < 1 ||
          *lease_ms > PF_MAX_LEASE_US / 1000) {
        polite__budget_errf(errbuf, errlen, uri,
                            "lease: expected a duration like 30s or 500ms "
                            "(at most 7 days), got '%.40s'",
                            param + 6);
        return POLITE_EINVAL;
      }
    } else {
      /* The name only: an unknown parameter's value may be a secret. */
      polite__budget_errf(errbuf, errlen, uri,
                          "unknown parameter '%.*s' (expected lease=DURATION)",
                          (int)strcspn(param, "="), param);
      return POLITE_EINVAL;
    }
  }
  *path = strndup(p, plen);
  return *path ? 0 : POLITE_ENOMEM;
}

/* Maps the file, creating and initialising it under flock when it is new
 * (or was left half-initialised by a creator that died: magic still 0).
 * flock is only held during this step and is dropped by the kernel if the
 * process dies, so a crash here blocks nobody. */
static int map_file(file_budget *fb, const char *path, unsigned flags,
                    char *errbuf, size_t errlen) {
  const char *uri = fb->uri;
  int inspect = (flags & POLITE__BUDGET_INSPECT) != 0;
  int fd = open(path, O_RDWR | O_CLOEXEC | (inspect ? 0 : O_CREAT), 0666);
  if (fd < 0) {
    polite__budget_errf(errbuf, errlen, uri, "cannot open %s: %s", path,
                        strerror(errno));
    return POLITE_EBUDGET;
  }
  int rc = 0;
  while (flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      polite__budget_errf(errbuf, errlen, uri, "cannot lock %s: %s", path,
                          strerror(errno));
      close(fd);
      return POLITE_EBUDGET;
    }
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    polite__budget_errf(errbuf, errlen, uri, "cannot stat %s: %s", path,
                        strerror(errno));
    rc = POLITE_EBUDGET;
    goto done;
  }
  if (inspect && st.st_size == 0) {
    polite__budget_errf(errbuf, errlen, uri,
                        "%s is empty: no participant has used it yet", path);
    rc = POLITE_EBUDGET;
    goto done;
  }
  if (st.st_size != 0 && st.st_size != (off_t)sizeof(pf_file)) {
    polite__budget_errf(
        errbuf, errlen, uri,
        "%s is not a polite budget file of this version (size %lld, "
        "expected %zu); remove it when no process uses it",
        path, (long long)st.st_size, sizeof(pf_file));
    rc = POLITE_EBUDGET;
    goto done;
  }
  if (st.st_size == 0 && ftruncate(fd, sizeof(pf_file)) != 0) {
    polite__budget_errf(errbuf, errlen, uri, "cannot size %s: %s", path,
                        strerror(errno));
    rc = POLITE_EBUDGET;
    goto done;
  }
  pf_file *f =
      mmap(NULL, sizeof(pf_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (f == MAP_FAILED) {
    polite__budget_errf(errbuf, errlen, uri, "cannot map %s: %s", path,
                        strerror(errno));
    rc = POLITE_EBUDGET;
    goto done;
  }
  fb->f = f;
  char boot[48];
  read_boot_id(boot);
  const polite_budget_config *c = &fb->base.cfg;
  uint64_t magic = __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE);
  if (magic == 0) {
    f->version = PF_VERSION;
    f->size = sizeof(pf_file);
    f->mutex_size = sizeof(pthread_mutex_t);
    f->rate_per_s = c->rate_per_s > 0 ? c->rate_per_s : 0;
    f->burst = c->burst;
    f->concurrency = c->concurrency;
    if (init_state(f, boot) != 0) {
      polite__budget_errf(errbuf, errlen, uri,
                          "cannot initialise the lock in %s", path);
      rc = POLITE_EBUDGET;
      goto done;
    }
    __atomic_store_n(&f->magic, PF_MAGIC, __ATOMIC_RELEASE);
    goto done;
  }
  if (magic != PF_MAGIC || f->version != PF_VERSION ||
      f->size != sizeof(pf_file) || f->mutex_size != sizeof(pthread_mutex_t)) {
    polite__budget_errf(
        errbuf, errlen, uri,
        "%s is not a polite budget file of this version; remove it when "
        "no process uses it",
        path);
    rc = POLITE_EBUDGET;
    goto done;
  }
  if (inspect) { /* a tool looking at the file takes its settings */
    fb->base.cfg.rate_per_s = f->rate_per_s;
    fb->base.cfg.burst = f->burst;
    fb->base.cfg.concurrency = f->concurrency;
    fb->proto_rate = 0;
  }
  double want = c->rate_per_s > 0 ? c->rate_per_s : 0;
  if (!(f->rate_per_s >= 0 && f->rate_per_s <= PF_MAX_RATE) || f->burst == 0) {
    polite__budget_errf(errbuf, errlen, uri,
                        "%s is corrupted: rate %g/s, burst %u; remove it "
                        "when no process uses it",
                        path, f->rate_per_s, f->burst);
    rc = POLITE_EBUDGET;
    goto done;
  }
  if (fabs(f->rate_per_s - want) > 1e-9 * fmax(1.0, want) ||
      f->burst != c->burst || f->concurrency != c->concurrency) {
    polite__budget_errf(
        errbuf, errlen, uri,
        "%s was created with rate %g/s, burst %u, concurrency %u; this "
        "process asks for rate %g/s, burst %u, concurrency %u (use the "
        "same settings, or another file)",
        path, f->rate_per_s, f->burst, f->concurrency, want, c->burst,
        c->concurrency);
    rc = POLITE_EINVAL;
    goto done;
  }
  if (strncmp(f->boot_id, boot, sizeof boot) != 0) {
    /* Written before this boot: its monotonic times (TAT, pauses, lease
     * expiries) and its lock word are meaningless now, and no process of
     * that boot can still be using it. Start fresh. */
    if (init_state(f, boot) != 0) {
      polite__budget_errf(errbuf, errlen, uri,
                          "cannot initialise the lock in %s", path);
      rc = POLITE_EBUDGET;
    }
    goto done;
  }
  /* Every account is checked once at open (and the one in use at each
   * call), so a corrupted file is refused before the run starts. Read
   * without the lock: a racing writer can only write valid values. */
  int64_t now = polite_mono_us();
  char why[200];
  for (int i = 0; i < PF_ACCOUNTS; i++)
    if (pf_check_account(f, &f->acc[i], now, why, sizeof why)) {
      polite__budget_errf(errbuf, errlen, uri,
                          "%s is corrupted: %s; remove it when no process "
                          "uses it",
                          path, why);
      rc = POLITE_EBUDGET;
      break;
    }
done:
  flock(fd, LOCK_UN);
  close(fd);
  return rc;
}

int polite__budget_file_new(const char *uri, const polite_budget_config *cfg,
                            polite_budget **out, char *errbuf, size_t errlen) {
  return polite__budget_file_open(uri, cfg, 0, out, errbuf, errlen);
}

int polite__budget_file_open(const char *uri, const polite_budget_config *cfg,
                             unsigned flags, polite_budget **out, char *errbuf,
                             size_t errlen) {
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
  fb->uri = strdup(uri);
  char *path = NULL;
  int64_t lease_ms = 0;
  int rc = fb->uri ? parse_uri(uri, &path, &lease_ms, errbuf, errlen)
                   : POLITE_ENOMEM;
  if (rc == 0 && cfg->rate_per_s > 0) {
    if (polite_gcra_init(&fb->proto, cfg->rate_per_s, fb->base.cfg.burst) !=
        0) {
      polite__budget_errf(errbuf, errlen, uri, "rate %g/s is out of range",
                          cfg->rate_per_s);
      rc = POLITE_EINVAL;
    }
    fb->proto_rate = cfg->rate_per_s;
  }
  fb->lease_us = lease_ms * 1000;
  if (rc == 0 && polite_random_bytes(&fb->id, sizeof fb->id) != 0)
    fb->id = ((uint64_t)getpid() << 32) ^ (uint64_t)polite_mono_us();
  if (fb->id == 0)
    fb->id = 1;
  if (rc == 0)
    rc = map_file(fb, path, flags, errbuf, errlen);
  free(path);
  if (rc != 0) {
    if (fb->f != NULL)
      munmap(fb->f, sizeof(pf_file));
    free(fb->uri);
    free(fb);
    return rc;
  }
  *out = &fb->base;
  return 0;
}
