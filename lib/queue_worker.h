/* polite queue, a worker: the state the engine's callbacks
 * (lib/queue_worker.c) and the queue's thread (lib/queue_cycle.c) share
 * under one mutex. Internal, not installed. */
#ifndef POLITE_QUEUE_WORKER_H
#define POLITE_QUEUE_WORKER_H

#include "clock_wait.h"
#include "queue_internal.h"

#include <pthread.h>

/* Where an entry is. */
enum { E_INBOX, E_ENGINE, E_OUTBOX, E_BUSY };
/* What the outbox is to do with it. */
enum { OUT_RECORD, OUT_GIVEBACK };

/* One entry this worker holds, from its take until Redis has its result
 * or has it back. Only the queue's thread frees entries. */
typedef struct qentry {
  struct qentry *prev, *next; /* the held list */
  struct qentry *hnext;       /* the request hash */
  struct qentry *fnext;       /* the inbox or the outbox */
  char *sid, *id, *line, *key;
  size_t line_len;
  long lineno;
  unsigned deliveries;
  int claimed;          /* taken from another worker after its lease */
  int64_t confirmed_us; /* the lease was last confirmed (a take or renew
                           sent at this monotonic time) */
  int where, lost, started, vetoed;
  polite_request *req; /* while in the engine (owned by it) */
  int kind;            /* OUT_RECORD / OUT_GIVEBACK */
  char *rline;         /* the rendered result line */
  size_t rlen;
  const char *outcome; /* static */
} qentry;

struct polite_queue_run {
  polite_queue *q;
  polite_queue_worker_options wo;
  polite_batch_options inner; /* the callbacks the worker's wrap */
  polite_batch *batch;
  char worker[128];
  int idempotency_auto;
  pthread_t th;
  int th_started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  /* Under mu. */
  qentry *held;
  size_t nheld;
  qentry **hash; /* by request pointer, hcap buckets */
  size_t hcap;
  qentry *in_head, *in_tail, *out_head, *out_tail;
  int ended;       /* nothing pending or in flight anywhere: next says 0 */
  int stop_taking; /* the engine is stopping, or the queue gave up */
  int finishing;   /* polite_queue_run_finish runs: drain and stop */
  int quit;
  int busy; /* the thread holds detached entries */
  int64_t lease_us, renew_us, safe_us;
  polite_queue_run_status st;
  char error[400];
  /* The thread's own. */
  int connected;
  int64_t down_since_us, next_connect_us, backoff_us;
  int64_t next_renew_us, next_poll_us, poll_gap_us, claim_after_us;
  unsigned takes;
  char cursor[48];
};

/* Puts the entries of a take reply ({cursor, pel, dead_lettered, exists,
 * stored_lease, then (sid, id, line, lineno, key, deliveries, claimed) per
 * entry}, sent at sent_us) in r's inbox, and notes whether the queue is
 * done (mu held). Elements of the wrong type are skipped. Returns the
 * number of entries taken. */
size_t polite__queue_take_reply(polite_queue_run *r, const redisReply *rep,
                                int64_t sent_us);
/* The queue's thread (lib/queue_cycle.c). */
void *polite__queue_thread(void *arg);
/* Unlinks e from the held list and the hash and frees it (mu held). */
void polite__queue_entry_free(polite_queue_run *r, qentry *e);
/* Appends e to the outbox as `kind` and wakes the thread (mu held). */
void polite__queue_outbox(polite_queue_run *r, qentry *e, int kind);

#endif
