/* polite budget, file backend: the file's layout, its checksums, the
 * kernel lock, and what is done when the bytes are not what polite wrote
 * (see budget_file_store.h), and the file: URI's parse. */
#define _GNU_SOURCE
#include "budget_file_store.h"
#include "budget_backends.h"
#include "http_syntax.h"

#include <polite/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Bytes of a record covered by its checksum (after `sum`, up to owners[hi])
 * and written back. */
static size_t record_len(uint32_t hi) {
  return offsetof(pf_record, owners) + (size_t)hi * sizeof(pf_owner);
}

static off_t record_off(unsigned index) {
  return (off_t)PF_PAGE * (1 + (off_t)index);
}

/* A 64-bit checksum, 32 bytes at a time in four independent lanes (a
 * multiply-xorshift mix each, so the lanes do not wait on each other). It
 * catches stray writes, zeroed pages and another file's bytes; it is not a
 * defence against someone who computes it on purpose (such a writer could
 * as well use the library). Never 0, so an all-zero page never passes. */
static uint64_t pf_sum(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h[4] = {0x9e3779b97f4a7c15ULL ^ (uint64_t)n, 0xbf58476d1ce4e5b9ULL,
                   0x94d049bb133111ebULL, 0x2545f4914f6cdd1dULL};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t w;
      memcpy(&w, b + i + 8 * k, 8);
      h[k] ^= w;
      h[k] *= 0xff51afd7ed558ccdULL;
      h[k] ^= h[k] >> 32;
    }
  uint64_t x = h[0] ^ (h[1] * 31) ^ (h[2] * 131) ^ (h[3] * 1031);
  for (; i < n; i++)
    x = (x ^ b[i]) * 0x100000001b3ULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 29;
  return x ? x : 1;
}

static uint64_t header_sum(const pf_header *h) {
  return pf_sum(h, offsetof(pf_header, sum));
}

static uint64_t rec_sum(const pf_record *r) {
  return pf_sum((const char *)r + 8, record_len(r->hi) - 8);
}

void polite__pf_header_seal(pf_header *h) {
  h->sum = header_sum(h);
}

static int all_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i])
      return 0;
  return 1;
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

/* 1 when h is a header of this version with a valid checksum. */
static int header_valid(const pf_header *h) {
  return h->magic == PF_MAGIC && h->version == PF_VERSION &&
         h->page == PF_PAGE && h->accounts == PF_ACCOUNTS &&
         h->owners == PF_OWNERS && h->file_id != 0 && h->burst >= 1 &&
         h->rate_per_s >= 0 && h->rate_per_s <= PF_MAX_RATE &&
         h->sum == header_sum(h);
}

/* Reads the header into *h: missing bytes (a short file) read as zeros.
 * Returns the bytes read, or -1 (errno set). */
static ssize_t read_header(int fd, pf_header *h) {
  memset(h, 0, sizeof *h);
  ssize_t n;
  do
    n = pread(fd, h, sizeof *h, 0);
  while (n < 0 && errno == EINTR);
  return n;
}

/* Writes all of buf at off. Returns 0 or -1 (errno set; ENOSPC for a
 * short write). */
static int write_all(int fd, const void *buf, size_t len, off_t off) {
  ssize_t n;
  do
    n = pwrite(fd, buf, len, off);
  while (n < 0 && errno == EINTR);
  if (n == (ssize_t)len)
    return 0;
  if (n >= 0)
    errno = ENOSPC;
  return -1;
}

/* Gives the file its full size, with its blocks reserved where the file
 * system can (so a full tmpfs fails here, at creation, and not in the
 * middle of a run). */
static int size_file(int fd) {
  if (ftruncate(fd, PF_FILE_SIZE) != 0)
    return -1;
  int rc = posix_fallocate(fd, 0, PF_FILE_SIZE);
  if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
    errno = rc;
    return -1;
  }
  return 0;
}

/* Writes a fresh file: free records first, the header last (a creator that
 * dies half way leaves a header of zeros, which the next opener
 * initialises). keep_id != 0 keeps the file's identity. */
static int init_file(pf_store *s, const polite_budget_config *c,
                     uint64_t keep_id, char *err, size_t errlen) {
  pf_header h;
  memset(&h, 0, sizeof h);
  h.magic = PF_MAGIC;
  h.version = PF_VERSION;
  h.page = PF_PAGE;
  h.accounts = PF_ACCOUNTS;
  h.owners = PF_OWNERS;
  h.burst = c->burst ? c->burst : 1;
  h.concurrency = c->concurrency;
  h.rate_per_s = c->rate_per_s > 0 ? c->rate_per_s : 0;
  h.file_id = keep_id;
  while (h.file_id == 0 &&
         polite_env_random_bytes(s->env, &h.file_id, sizeof h.file_id) != 0)
    h.file_id = polite_random_seed();
  h.created_wall_ms = polite_env_wall_ms(s->env);
  read_boot_id(h.boot_id);
  h.sum = header_sum(&h);
  if (size_file(s->fd) != 0) {
    snprintf(err, errlen, "cannot size %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  s->h = h;
  for (unsigned i = 0; i < PF_ACCOUNTS; i++) {
    pf_record r;
    memset(&r, 0, offsetof(pf_record, owners));
    r.index = i;
    if (polite__pf_write(s, &r, err, errlen) != 0)
      return POLITE_EBUDGET;
  }
  if (write_all(s->fd, &h, sizeof h, 0) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  return 0;
}

/* The message for a symbolic link at path (with its target when
 * readable). */
static void link_refused(const char *path, char *err, size_t errlen) {
  char target[256];
  polite__symlink_at(path, target, sizeof target);
  snprintf(err, errlen,
           "%s is a symbolic link (to '%s'): a budget file is never opened "
           "through one, so that every participant uses the same file; give "
           "the target's path",
           path, target);
}

/* Opens the file descriptor of s (not locked). */
static int open_fd(pf_store *s, int create, char *err, size_t errlen) {
  s->fd = open(s->path,
               O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0666);
  if (s->fd < 0) {
    int e = errno;
    if (e == ELOOP) {
      link_refused(s->path, err, errlen);
      return POLITE_EINVAL;
    }
    snprintf(err, errlen, "cannot open %s: %s", s->path, strerror(e));
    return POLITE_EBUDGET;
  }
  struct stat st;
  if (fstat(s->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s is not a regular file", s->path);
    close(s->fd);
    s->fd = -1;
    return POLITE_EBUDGET;
  }
  s->dev = st.st_dev;
  s->ino = st.st_ino;
  return 0;
}

/* The header of an opened, locked file: initialised when new, half made
 * or from before this boot; extended when cut short. Returns 0 or an
 * error with err set. */
static int take_header(pf_store *s, int adopt, const polite_budget_config *want,
                       char *err, size_t errlen) {
  struct stat st;
  if (fstat(s->fd, &st) != 0) {
    snprintf(err, errlen, "cannot stat %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  if (st.st_size == 0 && adopt) {
    snprintf(err, errlen, "%s is empty: no participant has used it yet",
             s->path);
    return POLITE_EBUDGET;
  }
  pf_header h;
  if (read_header(s->fd, &h) < 0) {
    snprintf(err, errlen, "cannot read %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  if (all_zero(&h, sizeof h) && (st.st_size == 0 || !adopt))
    return init_file(s, want, 0, err, errlen);
  if (!header_valid(&h)) {
    if (h.magic == PF_MAGIC && h.version != PF_VERSION)
      snprintf(err, errlen,
               "%s is a polite budget file of another version (%u, this is "
               "%u); remove it when no process uses it",
               s->path, h.version, PF_VERSION);
    else
      snprintf(err, errlen,
               "%s is not a polite budget file of this version (size %lld); "
               "remove it when no process uses it",
               s->path, (long long)st.st_size);
    return POLITE_EBUDGET;
  }
  char boot[48];
  read_boot_id(boot);
  if (strncmp(h.boot_id, boot, sizeof boot) != 0) {
    /* Written before this boot: its monotonic times (TAT, pauses, lease
     * expiries) are meaningless now, and no process of that boot can
     * still be using it. Start fresh with its settings. */
    polite_budget_config c = {h.rate_per_s, h.burst, h.concurrency};
    return init_file(s, &c, h.file_id, err, errlen);
  }
  s->h = h;
  if (st.st_size < PF_FILE_SIZE && size_file(s->fd) != 0) {
    snprintf(err, errlen, "cannot size %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  return 0;
}

/* Compares the file's settings with what the caller asked for (or adopts
 * them). */
static int check_settings(pf_store *s, int adopt, polite_budget_config *want,
                          char *err, size_t errlen) {
  const pf_header *h = &s->h;
  if (adopt) {
    want->rate_per_s = h->rate_per_s;
    want->burst = h->burst;
    want->concurrency = h->concurrency;
    return 0;
  }
  double w = want->rate_per_s > 0 ? want->rate_per_s : 0;
  unsigned burst = want->burst ? want->burst : 1;
  if (fabs(h->rate_per_s - w) > 1e-9 * fmax(1.0, w) || h->burst != burst ||
      h->concurrency != want->concurrency) {
    snprintf(err, errlen,
             "%s was created with rate %g/s, burst %u, concurrency %u; this "
             "process asks for rate %g/s, burst %u, concurrency %u (use the "
             "same settings, or another file)",
             s->path, h->rate_per_s, h->burst, h->concurrency, w, burst,
             want->concurrency);
    return POLITE_EINVAL;
  }
  return 0;
}

int polite__pf_open(pf_store *s, const char *path, int create, int adopt,
                    const polite_env *env, polite_budget_config *want,
                    char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->env = env;
  if ((s->path = strdup(path)) == NULL) {
    snprintf(err, errlen, "out of memory");
    return POLITE_ENOMEM;
  }
  int rc = open_fd(s, create, err, errlen);
  if (rc == 0 && (rc = polite__pf_lock(s, err, errlen)) == 0) {
    rc = take_header(s, adopt, want, err, errlen);
    if (rc == 0)
      rc = check_settings(s, adopt, want, err, errlen);
    polite__pf_unlock(s);
  }
  if (rc != 0)
    polite__pf_close(s);
  return rc;
}

void polite__pf_close(pf_store *s) {
  if (s->fd >= 0)
    close(s->fd);
  s->fd = -1;
  free(s->path);
  s->path = NULL;
}

int polite__pf_lock(pf_store *s, char *err, size_t errlen) {
  int64_t t0 = 0;
  long sleep_ns = 20000;
  for (unsigned tries = 0;; tries++) {
    if (flock(s->fd, LOCK_EX | LOCK_NB) == 0)
      return 0;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      snprintf(err, errlen, "cannot lock %s: %s", s->path, strerror(errno));
      return POLITE_EBUDGET;
    }
    /* A holder keeps the lock for microseconds: yield a few times, then
     * sleep a little longer each time, up to the bound. */
    if (tries < 16) {
      sched_yield();
      continue;
    }
    /* The real clock, not the opener's env: this bounds a real sleep on
     * a real lock, which a fake clock that stands still would never end. */
    int64_t now = polite_mono_us();
    if (t0 == 0)
      t0 = now;
    if (now - t0 >= PF_LOCK_WAIT_MS * 1000) {
      snprintf(err, errlen,
               "the lock of %s has been held by another participant for "
               "more than %d ms (one stopped or frozen while holding it)",
               s->path, PF_LOCK_WAIT_MS);
      return POLITE_EBUDGET;
    }
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL); /* a signal cuts it short: fine, we look again */
    if (sleep_ns < 2000000)
      sleep_ns *= 2;
  }
}

void polite__pf_unlock(pf_store *s) {
  flock(s->fd, LOCK_UN);
}

/* 1 when at least one record of the file carries s's identity and a valid
 * checksum: the file is provably the one s opened. */
static int records_prove_identity(pf_store *s) {
  for (unsigned i = 0; i < PF_ACCOUNTS; i++) {
    pf_record r;
    char e[8];
    if (polite__pf_read(s, i, &r, e, sizeof e) == PF_REC_USED)
      return 1;
  }
  return 0;
}

int polite__pf_verify(pf_store *s, int repair, int *repaired, char *err,
                      size_t errlen) {
  *repaired = 0;
  struct stat st, pst;
  if (stat(s->path, &pst) != 0 || pst.st_dev != s->dev || pst.st_ino != s->ino)
    return 1;
  if (fstat(s->fd, &st) != 0) {
    snprintf(err, errlen, "cannot stat %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  pf_header h;
  ssize_t n = read_header(s->fd, &h);
  if (n < 0) {
    snprintf(err, errlen, "cannot read %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  /* Byte identity is what is meant: both are the file's own bytes (a
   * double's -0.0 or NaN included), so memcmp, not a member compare. */
  // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
  int same = memcmp(&h, &s->h, sizeof h) == 0;
  /* Ours for sure: intact, cut to a prefix of it (or to nothing), zeroed
   * (nothing of anyone's is lost by writing it again), or overwritten
   * where records of this file still prove whose it is. */
  int ours = same || all_zero(&h, sizeof h) ||
             (n < (ssize_t)sizeof h && memcmp(&h, &s->h, (size_t)n) == 0);
  if (!ours && header_valid(&h) && h.file_id != s->h.file_id) {
    snprintf(err, errlen,
             "%s now holds another budget (it was overwritten in place with "
             "another budget file); nothing is sent through it: remove it "
             "and the participants make a new one",
             s->path);
    return POLITE_EBUDGET;
  }
  if (!ours && !records_prove_identity(s)) {
    snprintf(err, errlen,
             "the header of %s was overwritten (bytes polite did not "
             "write) and nothing in the file proves it is a budget file, so "
             "it is not touched: remove it and the participants make a new "
             "one",
             s->path);
    return POLITE_EBUDGET;
  }
  if (!repair && (!same || st.st_size < PF_FILE_SIZE)) {
    snprintf(err, errlen,
             "%s was %s; the next participant to use it repairs it", s->path,
             !same ? "overwritten at its header" : "cut short");
    return POLITE_EBUDGET;
  }
  if (st.st_size < PF_FILE_SIZE) {
    if (size_file(s->fd) != 0) {
      snprintf(err, errlen, "cannot size %s: %s", s->path, strerror(errno));
      return POLITE_EBUDGET;
    }
    *repaired = 1;
  }
  if (!same) {
    if (write_all(s->fd, &s->h, sizeof s->h, 0) != 0) {
      snprintf(err, errlen, "cannot write %s: %s", s->path, strerror(errno));
      return POLITE_EBUDGET;
    }
    *repaired = 1;
  }
  return 0;
}

int polite__pf_reopen(pf_store *s, char *err, size_t errlen) {
  polite_budget_config want = {s->h.rate_per_s, s->h.burst, s->h.concurrency};
  pf_store t;
  int rc = polite__pf_open(&t, s->path, 1, 0, s->env, &want, err, errlen);
  if (rc != 0)
    return rc;
  polite__pf_close(s);
  *s = t;
  return 0;
}

/* pread of len bytes at off into buf, missing bytes (past the end of the
 * file) read as zeros. Returns the bytes read or -1. */
static ssize_t read_at(int fd, void *buf, size_t len, off_t off) {
  ssize_t n;
  do
    n = pread(fd, buf, len, off);
  while (n < 0 && errno == EINTR);
  if (n >= 0 && (size_t)n < len)
    memset((char *)buf + n, 0, len - (size_t)n);
  return n;
}

/* The first read of a record: its fixed part and the first owners, which
 * is all of it for up to this many participants holding slots. */
#define FIRST_READ (offsetof(pf_record, owners) + 24 * sizeof(pf_owner))

int polite__pf_read(pf_store *s, unsigned index, pf_record *r, char *err,
                    size_t errlen) {
  ssize_t n = read_at(s->fd, r, FIRST_READ, record_off(index));
  if (n >= (ssize_t)FIRST_READ && r->hi <= PF_OWNERS &&
      record_len(r->hi) > FIRST_READ) {
    ssize_t m =
        read_at(s->fd, (char *)r + FIRST_READ, record_len(r->hi) - FIRST_READ,
                record_off(index) + (off_t)FIRST_READ);
    n = m < 0 ? m : n + m;
  }
  if (n < 0) {
    snprintf(err, errlen, "cannot read %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  /* Entries from hi on are free whatever the file holds there: nothing
   * reads them (my_owner and reclaim stop at hi; new_owner clears one
   * before it takes it). */
  if (r->file_id != s->h.file_id || r->index != index || r->used > 1 ||
      r->hi > PF_OWNERS || r->keylen >= PF_KEYLEN ||
      (size_t)n < record_len(r->hi) || r->sum != rec_sum(r))
    return PF_REC_BAD;
  return r->used ? PF_REC_USED : PF_REC_FREE;
}

int polite__pf_bad_records(pf_store *s, uint64_t *mask, char *err,
                           size_t errlen) {
  *mask = 0;
  for (unsigned i = 0; i < PF_ACCOUNTS; i++) {
    pf_record r;
    int st = polite__pf_read(s, i, &r, err, errlen);
    if (st < 0)
      return st;
    if (st == PF_REC_BAD)
      *mask |= UINT64_C(1) << i;
  }
  return 0;
}

int polite__pf_mark_repaired(pf_store *s, int repaired, uint64_t bad,
                             const char *why, char *err, size_t errlen) {
  int marked = 0;
  for (unsigned i = 0; i < PF_ACCOUNTS; i++) {
    pf_record r;
    int st = polite__pf_read(s, i, &r, err, errlen);
    if (st < 0)
      return st;
    if (st != PF_REC_USED || (!repaired && (bad & ~r.bad_seen) == 0))
      continue;
    r.repairs++;
    r.bad_seen = bad;
    snprintf(r.why, sizeof r.why, "%s", why);
    if (polite__pf_write(s, &r, err, errlen) != 0)
      return POLITE_EBUDGET;
    marked++;
  }
  return marked;
}

int polite__pf_write(pf_store *s, pf_record *r, char *err, size_t errlen) {
  r->file_id = s->h.file_id;
  if (r->hi > PF_OWNERS)
    r->hi = PF_OWNERS;
  r->sum = rec_sum(r);
  if (write_all(s->fd, r, record_len(r->hi), record_off(r->index)) != 0) {
    snprintf(err, errlen, "cannot write %s: %s", s->path, strerror(errno));
    return POLITE_EBUDGET;
  }
  return 0;
}

int polite__pf_record_check(const pf_store *s, const pf_record *r,
                            int64_t now_us, char *why, size_t len) {
  int64_t tat_us = r->tat_ns / 1000;
  if (r->paused_until_us - now_us > PF_MAX_AHEAD_US ||
      tat_us - now_us > PF_MAX_AHEAD_US ||
      r->settle_until_us - now_us > PF_MAX_AHEAD_US) {
    snprintf(why, len, "account '%.*s' has a pause or next start %lld s ahead",
             (int)r->keylen, r->key,
             (long long)((r->paused_until_us > tat_us ? r->paused_until_us
                                                      : tat_us) -
                         now_us) /
                 1000000);
    return 1;
  }
  /* A window that would hold every sharer for longer than any pause. */
  const polite_shared_window *w = &r->win;
  if (w->quota > 0 && (w->next_us - now_us > PF_MAX_AHEAD_US ||
                       w->period_us < 0 || w->period_us > PF_MAX_AHEAD_US)) {
    snprintf(why, len,
             "account '%.*s' has a window of %u starts in %lld s, the next "
             "one %lld s ahead",
             (int)r->keylen, r->key, w->quota,
             (long long)(w->period_us / 1000000),
             (long long)((w->next_us - now_us) / 1000000));
    return 1;
  }
  if (!(r->sr_rate >= 0 && r->sr_rate <= PF_MAX_RATE) ||
      !(r->sr_limit >= 0 && r->sr_limit <= PF_MAX_RATE) ||
      !(r->sr_ceiling >= 0 && r->sr_ceiling <= PF_MAX_RATE)) {
    snprintf(why, len, "account '%.*s' has a learned rate of %g/s",
             (int)r->keylen, r->key, r->sr_rate);
    return 1;
  }
  for (uint32_t i = 0; i < r->hi; i++) {
    const pf_owner *o = &r->owners[i];
    if (o->id == 0)
      continue;
    if ((s->h.concurrency > 0 && o->slots > s->h.concurrency) ||
        o->expiry_us - now_us > PF_MAX_LEASE_US) {
      snprintf(why, len,
               "account '%.*s': participant %u (pid %d) holds %u slots "
               "(concurrency %u) for %lld s",
               (int)r->keylen, r->key, i, (int)o->pid, o->slots,
               s->h.concurrency, (long long)(o->expiry_us - now_us) / 1000000);
      return 1;
    }
  }
  return 0;
}

pf_owner *polite__pf_owner_find(pf_record *r, uint64_t id) {
  for (uint32_t i = 0; i < r->hi; i++)
    if (r->owners[i].id == id)
      return &r->owners[i];
  return NULL;
}

pf_owner *polite__pf_owner_new(pf_record *r) {
  for (uint32_t i = 0; i < r->hi; i++)
    if (r->owners[i].id == 0)
      return &r->owners[i];
  if (r->hi == PF_OWNERS)
    return NULL;
  pf_owner *o = &r->owners[r->hi++];
  memset(o, 0, sizeof *o);
  return o;
}

uint64_t polite__pf_reclaim(pf_record *r, int64_t now_us, int64_t *next_expiry,
                            int *changed) {
  uint64_t in_use = 0;
  uint32_t last = 0;
  *next_expiry = INT64_MAX;
  for (uint32_t i = 0; i < r->hi; i++) {
    pf_owner *o = &r->owners[i];
    if (o->id == 0)
      continue;
    if (o->slots == 0 || o->expiry_us <= now_us) {
      memset(o, 0, sizeof *o);
      *changed = 1;
      continue;
    }
    in_use += o->slots;
    last = i + 1;
    if (o->expiry_us < *next_expiry)
      *next_expiry = o->expiry_us;
  }
  if (r->hi != last) {
    r->hi = last;
    *changed = 1;
  }
  return in_use;
}

/* Splits "file:PATH[?lease=DUR]" into a malloc'ed path and the lease.
 * Returns 0 or POLITE_EINVAL with errbuf set. */
int polite__pf_parse_uri(const char *uri, char **path, int64_t *lease_ms,
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
  const polite__budget_param params[] = {
      {"lease", lease_ms, PF_MAX_LEASE_US / 1000, "at most 7 days"}};
  int rc = polite__budget_uri_params(q, params, 1, uri, errbuf, errlen);
  if (rc != 0)
    return rc;
  *path = strndup(p, plen);
  return *path ? 0 : POLITE_ENOMEM;
}
