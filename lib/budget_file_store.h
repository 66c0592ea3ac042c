/* polite budget, file backend: the bytes of a budget file and the kernel
 * lock that guards them (internal; lib/budget_file.c is the only user).
 * Nothing here maps the file: every access is a pread or a pwrite into a
 * private copy, checked before it is used, so no byte of the file (and no
 * truncation) can crash or hang a participant. */
#ifndef POLITE_BUDGET_FILE_STORE_H
#define POLITE_BUDGET_FILE_STORE_H

#include "budget_backends.h"

#include <polite/budget.h>

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PF_MAGIC 0x46425445544c4f50ULL /* "POLITEBF" little-endian */
/* 3: pread/pwrite, checksummed; 4: the window; 5: the rate's ceiling */
#define PF_VERSION 5u
#define PF_PAGE 4096u  /* header and each account record */
#define PF_ACCOUNTS 64 /* keys (hosts with --budget-scope host) per file */
#define PF_OWNERS 128  /* participants holding slots in one account */
#define PF_KEYLEN 256  /* a host name fits (253) */
#define PF_FILE_SIZE ((off_t)PF_PAGE * (1 + PF_ACCOUNTS))

/* How long a participant waits for the file's lock before it gives up with
 * POLITE_EBUDGET: a holder keeps it for a few microseconds, so a wait this
 * long means a participant was stopped (SIGSTOP, a frozen VM) while holding
 * it. The caller treats that as an outage and tries again later. */
#define PF_LOCK_WAIT_MS 250

/* Bounds a value read from the file must respect: anything beyond them was
 * not written by polite (a stray write, another program, a bad disk). */
#define PF_MAX_AHEAD_US (POLITE_RA_MAX_SECONDS * 1000000) /* pause, TAT */
#define PF_MAX_LEASE_US (INT64_C(7) * 86400 * 1000000)
#define PF_MAX_RATE POLITE__BUDGET_RATE_MAX

/* The first page. Written once by the creator; never changed after. */
typedef struct {
  uint64_t magic;
  uint32_t version;
  uint32_t page;     /* PF_PAGE */
  uint32_t accounts; /* PF_ACCOUNTS */
  uint32_t owners;   /* PF_OWNERS */
  uint32_t burst;
  uint32_t concurrency;
  double rate_per_s;
  uint64_t file_id; /* random, nonzero; every record carries it */
  int64_t created_wall_ms;
  char boot_id[48]; /* monotonic times mean nothing after a reboot */
  uint64_t sum;     /* checksum of every byte before it */
} pf_header;

/* One participant's slots in one account: `slots` slots, valid until
 * expiry_us (CLOCK_MONOTONIC). id 0 marks a free entry. */
typedef struct {
  uint64_t id;
  int32_t pid; /* for people reading the file; not trusted (namespaces) */
  uint32_t slots;
  int64_t expiry_us;
} pf_owner;

/* One account, at offset PF_PAGE * (1 + index). The checksum covers the
 * bytes after it up to owners[hi]; entries from hi on are free whatever
 * the file holds there. */
typedef struct {
  uint64_t sum;
  uint64_t file_id;
  uint32_t index; /* its own place in the file */
  uint32_t used;  /* 0: a free record */
  uint32_t keylen;
  uint32_t hi; /* owners[hi..] are all free: scans stop there */
  char key[PF_KEYLEN];
  int64_t tat_ns;           /* GCRA theoretical arrival time, monotonic ns */
  int64_t paused_until_us;  /* monotonic us; 0 when never paused */
  double sr_rate, sr_limit; /* the learned rate (polite_shared_rate) */
  uint64_t sr_gen;
  int64_t settle_until_us; /* after a rebuild, no start before this */
  uint32_t repairs;        /* bumped at each repair of the file seen by its
                              participants: each of them then says why */
  uint32_t slot_cap; /* a learned in-flight cap (polite_budget_set_slot_cap),
                        0: none; the same word was padding before, always 0 */
  uint64_t bad_seen; /* the damaged records known at the last mark */
  char why[120];     /* what the rebuild or the last repair found */
  /* Version 4: the account's admissions that charged rate units (every
   * participant's: polite_budget_admissions) and its learned window
   * (polite_shared_window, its times monotonic us like the others). */
  uint64_t admits;
  polite_shared_window win;
  double sr_ceiling; /* version 5: polite_shared_rate's ceiling_per_s */
  pf_owner owners[PF_OWNERS];
} pf_record;
_Static_assert(sizeof(pf_record) <= PF_PAGE, "a record fits in its page");

/* The open file of one participant. */
typedef struct {
  int fd;
  char *path;
  dev_t dev;
  ino_t ino;
  pf_header h; /* the header as it was when opened (the file's identity) */
  const polite_env *env; /* the opener's (polite_budget_open_env) */
} pf_store;

/* What a record read from the file is. */
typedef enum {
  PF_REC_FREE = 0, /* a valid record of this file, not used */
  PF_REC_USED,     /* a valid record of this file, in use */
  PF_REC_BAD       /* anything else: zeros, stray bytes, another file's */
} pf_rec_state;

/* Opens (creating when `create`) the budget file at path, refusing a
 * symbolic link, a file that is not regular and a file that is not a
 * polite budget file of this version (never overwritten). A new file, one
 * whose header is all zeros (a creator that died half way) or one made
 * before this boot is initialised with *want (rate, burst, concurrency).
 * An existing file's settings must equal *want unless `adopt` (then *want
 * gets the file's). Returns 0, POLITE_EINVAL (settings differ, symbolic
 * link) or POLITE_EBUDGET with the reason in err (no "budget 'URI': "
 * prefix: the caller adds it). */
int polite__pf_open(pf_store *s, const char *path, int create, int adopt,
                    const polite_env *env, polite_budget_config *want,
                    char *err, size_t errlen);
void polite__pf_close(pf_store *s);

/* Takes the file's lock (flock: the kernel owns it, a holder that dies
 * releases it, and no byte of the file can wedge it), waiting at most
 * PF_LOCK_WAIT_MS, interrupted by signals only for a moment. Returns 0 or
 * POLITE_EBUDGET with err set. */
int polite__pf_lock(pf_store *s, char *err, size_t errlen);
void polite__pf_unlock(pf_store *s);

/* Checks, under the lock, that path still names the file s has open and
 * that its header is intact. Returns 0 when it does; 1 when path now names
 * another file or none (the caller reopens: polite__pf_reopen); or
 * POLITE_EBUDGET with err set when the header was overwritten and cannot
 * be proved to be this file's (it is then never written). A header that
 * is all zeros, or was overwritten while the records still prove the file
 * is this one, is written again from s->h (repaired) and 0 returned. A
 * file cut short is extended to its size first (its lost records read as
 * PF_REC_BAD and are rebuilt by their users). *repaired is set to 1 when
 * anything was rewritten. Without `repair` (polite budget show) nothing is
 * written: what would be repaired is an error instead. */
int polite__pf_verify(pf_store *s, int repair, int *repaired, char *err,
                      size_t errlen);

/* Reopens path (created when missing) after polite__pf_verify returned 1,
 * keeping s on the old file when that fails. Same errors as
 * polite__pf_open; the settings of s->h are the ones asked for. */
int polite__pf_reopen(pf_store *s, char *err, size_t errlen);

/* Reads record `index` into *r (a private copy; owners from r->hi on are
 * zeroed) and says what it is. A short read (the file was cut) is
 * PF_REC_BAD. Returns the state, or POLITE_EBUDGET when the read itself
 * failed (err set). */
int polite__pf_read(pf_store *s, unsigned index, pf_record *r, char *err,
                    size_t errlen);

/* Sets bit i of *mask for each record i that is PF_REC_BAD. Returns 0 or
 * POLITE_EBUDGET with err set. */
int polite__pf_bad_records(pf_store *s, uint64_t *mask, char *err,
                           size_t errlen);

/* Bumps `repairs` and sets `why` in every record in use, so that every
 * participant says what was repaired: always after a repair of the header
 * (`repaired`), else only in records that did not know the damaged records
 * `bad` yet (a participant that joins later does not announce old damage
 * again). Returns how many records were marked, or POLITE_EBUDGET. */
int polite__pf_mark_repaired(pf_store *s, int repaired, uint64_t bad,
                             const char *why, char *err, size_t errlen);

/* Stamps r (file id, index, checksum) and writes it back. Returns 0 or
 * POLITE_EBUDGET with err set (a short write: the disk is full). */
int polite__pf_write(pf_store *s, pf_record *r, char *err, size_t errlen);

/* Says what is wrong with a used record's values at now_us in why, or
 * returns 0 when nothing is: the checksum catches stray bytes, this
 * catches values polite could not have written. */
int polite__pf_record_check(const pf_store *s, const pf_record *r,
                            int64_t now_us, char *why, size_t len);

/* The entry of participant `id` in r, or NULL. */
pf_owner *polite__pf_owner_find(pf_record *r, uint64_t id);
/* A free entry of r (cleared, extending hi), or NULL when all are taken. */
pf_owner *polite__pf_owner_new(pf_record *r);
/* Frees the entries of r whose lease ran out at now_us (setting *changed
 * when it did) and returns the slots held by the live ones; *next_expiry
 * gets the earliest live expiry (INT64_MAX: none). */
uint64_t polite__pf_reclaim(pf_record *r, int64_t now_us, int64_t *next_expiry,
                            int *changed);

/* Sets h->sum for the bytes before it (init, and tests that forge a
 * header). */
void polite__pf_header_seal(pf_header *h);

/* Splits "file:PATH[?lease=DUR]" into a malloc'ed path and the lease
 * (default POLITE__BUDGET_LEASE_DEFAULT_MS, at most 7 days). Returns 0,
 * POLITE_ENOMEM, or POLITE_EINVAL with errbuf naming the URI and the
 * problem. */
int polite__pf_parse_uri(const char *uri, char **path, int64_t *lease_ms,
                         char *errbuf, size_t errlen);

#endif
