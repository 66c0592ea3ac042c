/* polite queue: a work queue in Redis Streams that a fleet of batch engines
 * on many hosts shares (`polite queue push|status|results|retry-dead`,
 * `polite run --queue`). The guarantees, the keys and the costs are in
 * docs/queue.md. */
#ifndef POLITE_QUEUE_H
#define POLITE_QUEUE_H

#include <polite/batch.h>
#include <polite/core.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An entry is leased to the worker that took it for this long after the
 * worker last renewed it (it renews every third of it); then another
 * worker may claim it. */
#define POLITE_QUEUE_LEASE_DEFAULT_MS 30000
/* Takes of one entry without a result before it goes to the dead letters. */
#define POLITE_QUEUE_MAX_DELIVERIES_DEFAULT 5u
/* Entries one worker holds at most (in its engine and taken ahead). */
#define POLITE_QUEUE_WINDOW_MAX 4096u

typedef struct polite_queue polite_queue;

/* Opens the queue named by uri =
 * redis[s]://[[USER]:PASSWORD@]HOST[:PORT]/NAME[?timeout=D&cacert=F&cert=F&
 * key=F&insecure=1] and connects to it (nothing is created until a push).
 * Returns 0 and *out, POLITE_EINVAL for a malformed URI or POLITE_EIO when
 * the server cannot be used, with a message naming the URI (its password
 * masked) and the cause in err. */
POLITE_EXTERN int polite_queue_open(const char *uri, polite_queue **out,
                                    char *err, size_t errlen);
POLITE_EXTERN void polite_queue_close(polite_queue *q);
/* The last failure ("" when none), naming the URI and the cause. */
POLITE_EXTERN const char *polite_queue_errstr(const polite_queue *q);
/* The URI with its password masked. */
POLITE_EXTERN const char *polite_queue_uri(const polite_queue *q);
/* Round trips to Redis so far (for measurements). */
POLITE_EXTERN uint64_t polite_queue_round_trips(const polite_queue *q);

/* ---- push ------------------------------------------------------------- */

typedef struct {
  uint64_t lines;   /* request lines read (not blank, not comments) */
  uint64_t added;   /* new entries */
  uint64_t skipped; /* their id was in the queue already (pushed before) */
  uint64_t invalid; /* lines that are not valid requests: not pushed */
} polite_queue_push_stats;

/* Pushes every request line of `in` (the input format of `polite run`:
 * docs/input-format.md) as an entry: its text as written, its line number,
 * its id (a line without one gets "line-N-XXXXXXXX", see
 * polite_request_stable_id) and a fresh idempotency key, which every
 * worker uses for the entry's writes. An id already in the queue (pushed
 * before, finished or not) is skipped, atomically: pushing the same file
 * twice adds nothing. Invalid lines are not pushed; on_invalid (may be
 * NULL) gets each one's line number and message. Pipelined: a few hundred
 * entries per script call, several calls per round trip. Returns 0, or
 * POLITE_EIO (the queue's error says why; *st counts what was done: a
 * second push of the same input adds the rest). */
POLITE_EXTERN int
polite_queue_push(polite_queue *q, FILE *in, polite_queue_push_stats *st,
                  void (*on_invalid)(void *ud, long line, const char *error),
                  void *ud);

/* ---- status, results, dead letters -------------------------------------- */

typedef struct {
  char name[128];     /* the worker's consumer name: HOST:PID:RANDOM */
  uint64_t in_flight; /* entries it holds */
  int64_t idle_ms;    /* since it last took or renewed */
} polite_queue_worker;

typedef struct {
  int exists; /* 0: nothing was ever pushed to this queue */
  uint64_t pushed, pending, in_flight, ok, failed, dead;
  int64_t oldest_pending_ms;    /* waiting time of the next entry; -1: none */
  int64_t lease_ms;             /* the lease the first worker stored; 0: none */
  polite_queue_worker *workers; /* malloc'ed (polite_queue_status_free) */
  size_t n_workers;
} polite_queue_status;

/* One snapshot, in one round trip. Returns 0 or POLITE_EIO. */
POLITE_EXTERN int polite_queue_status_get(polite_queue *q,
                                          polite_queue_status *st);
POLITE_EXTERN void polite_queue_status_free(polite_queue_status *st);

/* Calls fn with each recorded result (its id and its line, as the worker
 * wrote it) in the order they were recorded: one per id. A non-zero
 * return from fn stops. Returns 0, fn's value, or POLITE_EIO. */
POLITE_EXTERN int polite_queue_results(polite_queue *q,
                                       int (*fn)(void *ud, const char *id,
                                                 const char *line, size_t len),
                                       void *ud);

/* Puts every dead letter back in the queue with its deliveries counted
 * from 0 (ids that have a result by now are dropped instead). *moved says
 * how many went back. Returns 0 or POLITE_EIO. */
POLITE_EXTERN int polite_queue_retry_dead(polite_queue *q, uint64_t *moved);

/* ---- a worker: the queue as a batch engine's source --------------------- */

/* What became of one result (polite_queue_worker_options.on_recorded). */
typedef enum {
  POLITE_QUEUE_RECORDED,  /* this worker recorded it: the id's result */
  POLITE_QUEUE_DUPLICATE, /* another worker had recorded this id first
                             (its lease ran out while this one ran it) */
  POLITE_QUEUE_UNRECORDED /* Redis could not be reached before the end:
                             the entry stays in the queue and will run
                             again */
} polite_queue_record_status;

typedef struct {
  const char *id;
  const char *line; /* what render returned */
  size_t len;
  polite_queue_record_status status;
  const char *by; /* DUPLICATE: the worker that recorded the id */
} polite_queue_recorded;

typedef struct {
  int64_t lease_ms;        /* 0: POLITE_QUEUE_LEASE_DEFAULT_MS; >= 1000 */
  unsigned max_deliveries; /* 0: POLITE_QUEUE_MAX_DELIVERIES_DEFAULT */
  int follow;              /* an empty queue: wait for more instead of
                              ending */
  unsigned window;         /* entries held at most; 0: 64 */
  int64_t outage_ms;       /* give up when Redis stays unreachable this
                              long; <= 0: never */
  const polite_input_defaults *defaults; /* -X, -H, -d for every line */
  const char *worker; /* consumer name; NULL: HOST:PID:RANDOM */
  /* The line recorded for a result (malloc'ed; NULL: out of memory),
   * called on the engine's thread during on_result. Required. */
  char *(*render)(void *ud, const polite_result *r);
  /* What became of each rendered line, called on the queue's own thread
   * (may be NULL). */
  void (*on_recorded)(void *ud, const polite_queue_recorded *rec);
  void *ud;
} polite_queue_worker_options;

typedef struct polite_queue_run polite_queue_run;

/* Makes q the request source of the batch options bo: bo->next takes
 * entries (never blocking: POLITE_EAGAIN while none is at hand), on_result
 * records each result (one per id across the fleet), on_attempt_start
 * refuses to start an entry whose lease was lost or could not be renewed
 * in time; bo's other callbacks are called as before. A write's
 * idempotency key is the one pushed with the entry (bo->idempotency_auto
 * decides whether writes get one, as without a queue; it is cleared: the
 * engine's own keys would differ between workers). Starts the queue's
 * thread, which takes, renews, records and gives back in one round trip
 * per turn. q must not be used otherwise until polite_queue_run_free.
 * Returns 0 and *out, or POLITE_EINVAL / POLITE_ENOMEM with a message. */
POLITE_EXTERN int polite_queue_attach(polite_queue *q, polite_batch_options *bo,
                                      const polite_queue_worker_options *wo,
                                      polite_queue_run **out, char *err,
                                      size_t errlen);
/* The engine to wake and, when the queue gives up on Redis, to cancel. */
POLITE_EXTERN void polite_queue_run_set_batch(polite_queue_run *r,
                                              polite_batch *b);
/* After polite_batch_run: gives back what was taken but not run, records
 * what is left, leaves the group when nothing is held, and stops the
 * thread. Waits for Redis at most the outage bound (10 s when none). Results
 * that could not be recorded are passed to on_recorded as UNRECORDED.
 * Returns 0, or POLITE_EIO when something could not be recorded or given
 * back. */
POLITE_EXTERN int polite_queue_run_finish(polite_queue_run *r);

typedef struct {
  uint64_t taken;       /* entries taken (claimed ones included) */
  uint64_t claimed;     /* taken from other workers after their lease */
  uint64_t recorded;    /* results recorded by this worker */
  uint64_t recorded_ok; /* ... with outcome ok */
  uint64_t duplicates;  /* results another worker had recorded first */
  uint64_t given_back;  /* entries put back in the queue */
  uint64_t lost;        /* entries another worker claimed while held here */
  uint64_t dead_lettered;
  uint64_t unrecorded; /* results Redis could not be told */
  uint64_t round_trips;
  uint64_t commands; /* script calls in them */
  uint64_t outages;  /* times Redis became unreachable */
  int64_t down_ms;   /* how long it was, in all (ended outages) */
  int gave_up;       /* Redis stayed unreachable past the outage bound */
  int missing;       /* the queue did not exist (nothing pushed) */
  const char *error; /* the last Redis failure, "" when none */
} polite_queue_run_status;
POLITE_EXTERN void polite_queue_run_status_get(const polite_queue_run *r,
                                               polite_queue_run_status *s);
POLITE_EXTERN void polite_queue_run_free(polite_queue_run *r);

#ifdef __cplusplus
}
#endif

#endif
