/* polite budget, file backend: what lib/budget_file.c and
 * lib/budget_file_window.c share (internal). */
#ifndef POLITE_BUDGET_FILE_ACCT_H
#define POLITE_BUDGET_FILE_ACCT_H

#include "budget_file_store.h"

#include "budget_backends.h"

#include <pthread.h>

/* What this participant knows of one account, whatever the file says:
 * where its record was, the slots it holds, the latest pause and learned
 * rate it saw. A rebuilt record starts from this. */
typedef struct {
  char *key; /* "" for the default account */
  int index; /* its record; -1 until found */
  unsigned held;
  unsigned in_use_seen; /* the account's slots after the last admission */
  int64_t pause_seen_us;
  polite_shared_rate sr_seen;
  uint32_t repairs_seen;    /* the record's repair count when last read */
  uint64_t admits_seen;     /* the account's admissions, when last read */
  polite_shared_window win; /* its window, when last read */
  uint64_t admitted_n;      /* the account's admissions right after this
                               participant's last one (polite_budget_admissions) */
  int read_once;
} pf_local;

typedef struct {
  polite_budget base;
  pthread_mutex_t mu; /* flock is per open file: threads need their own */
  pf_store st;
  char *uri;   /* for messages */
  uint64_t id; /* this participant's owner id (random, nonzero) */
  int64_t lease_us;
  int32_t pid; /* for people reading the file (getpid is a system call) */
  int inspect; /* polite budget show|clear: never rebuilds, holds nothing */
  polite_gcra proto; /* interval/tolerance at proto_rate; tat unused */
  double proto_rate; /* 0: not set up */
  int64_t verified_us;
  int verified;
  int64_t switched_us; /* when the path last named a new file; 0: never */
  char note[200];    /* damage repaired, said by the next acquire ("": none) */
  uint64_t bad_now;  /* damaged records seen at the last check */
  uint64_t bad_told; /* of those, the ones already reported */
  pf_local loc[PF_ACCOUNTS];
  unsigned nloc;
} file_budget;

/* One call's account: the record (a private copy) and this participant's
 * entry in it. */
typedef struct {
  pf_local *l;
  pf_record r;
  pf_owner *me;
  int dirty;
  int rebuilt; /* fresh_record rebuilt it in this call */
} pf_acct;

/* Takes the locks and reads key's account into a: the common start of
 * every call (lib/budget_file.c says how damage is met). Returns 0 with
 * both locks held, 1 when the account does not exist and `create` is 0
 * (nothing held), or a negative errno (nothing held). */
int polite__pf_enter(file_budget *fb, const char *key, int64_t now_us,
                     int create, pf_acct *a);
/* Writes a back when changed, keeping the locks: 0 or POLITE_EBUDGET. */
int polite__pf_write_back(file_budget *fb, pf_acct *a);
/* Drops the locks polite__pf_enter took. */
void polite__pf_leave(file_budget *fb);

/* The window part of an admission of `units` units at now_us (the file
 * lock held): 1 with *wait_us set while the account's window quota is
 * spent, else 0 (and an admission that charges units is counted in the
 * record by polite__pf_window_count). */
int polite__pf_window_wait(const pf_record *r, int64_t now_us, unsigned units,
                           int64_t *wait_us);
void polite__pf_window_count(pf_acct *a, unsigned units);
/* The vtable's admissions and window members. */
uint64_t polite__pf_admissions(polite_budget *b, const char *key);
int polite__pf_window(polite_budget *b, const char *key,
                      polite_shared_window *w);

#endif
