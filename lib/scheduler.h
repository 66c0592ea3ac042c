/* polite scheduler: the pure half of the batch engine (internal; not
 * installed). It owns the logical requests, the waiting set, budget
 * admission, the retry decisions, deadlines, account pauses, cancel and
 * grace, the quota stop and the heartbeat. It never reads a clock and never
 * sleeps: every call takes `now`, and it answers what to start (through
 * io->start), what to finish (through the user's on_result) and when to be
 * called next. lib/batch.c drives it over libcurl; tests/unit/
 * test_scheduler*.c drive it on a fake clock with a fake transport. */
#ifndef POLITE_SCHEDULER_H
#define POLITE_SCHEDULER_H

#include <polite/batch.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POLITE__NO_TIME INT64_MAX

/* One loop turn's reading of the clocks (read once per turn, passed down). */
typedef struct {
  int64_t mono_us; /* monotonic microseconds: intervals, deadlines, budget */
  int64_t wall_ms; /* Unix milliseconds: logs, HTTP-dates */
} polite__now;

/* One logical request while it is in memory (waiting or in flight). The
 * transport reads req, method, idem_sent and timeout_ms, and keeps its own
 * state in `io`; everything else belongs to the scheduler. */
typedef struct polite__job {
  struct polite__job *prev, *next; /* in-flight list */
  polite_request *req;
  const char *method;
  const char *idem_sent; /* idempotency key sent (a header), or NULL */
  int64_t timeout_ms;    /* this attempt's transfer timeout; 0 = none */
  void *io;              /* the transport's state for this attempt */

  char *key; /* budget account (host with scope_host) or NULL */
  struct polite__rate_acct *rate; /* its learned rate (sched_rate.c); NULL
                                     until its first admission */
  uint64_t seq;
  char idem[40]; /* auto idempotency key */
  int has_key;
  unsigned attempts;
  int prompt_used;
  int deadline_clamped;   /* timeout_ms was cut to end at the deadline */
  int64_t first_start_us; /* -1 before the first attempt */
  int64_t deadline_us;    /* POLITE__NO_TIME: none */
  int64_t attempt_start_us, attempt_start_wall;
  int status; /* last HTTP status */

  /* Submitted requests (polite__sched_submit, the gateway's): */
  struct polite__acct *acct; /* its account's queue; NULL when read */
  int64_t retry_after_us;    /* for the result (polite_result
                                .retry_after_ms); -1: none */
  int pause_status;          /* for the result (polite_result
                                .pause_status) */
  /* The answer is final and being relayed (polite__sched_answer): what
   * the result will say once polite__sched_relayed ends it. */
  int relaying;
  polite_outcome final_out;
  const char *final_why; /* static text, or NULL */
  char *final_loc;       /* redacted Location, or NULL */
} polite__job;

/* One finished attempt as the transport saw it. Everything is borrowed for
 * the duration of polite__sched_response. */
typedef struct {
  int status;              /* 0: no response */
  const char *error;       /* transport error text, or NULL */
  int timed_out;           /* the transfer's timeout_ms fired */
  polite_failure failure;  /* status 0: the kind of failure */
  polite_headers *headers; /* the response parsed once (NULL: none) */
  const char *retry_after, *request_id, *request_id_header;
  const char *location;   /* raw Location header value, or NULL */
  polite_diagnosis *diag; /* fed with the headers when status is 429/503,
                             finished here with the body; may be NULL */
  const char *body;
  size_t body_len;
  int body_truncated;
} polite__response;

/* The transport, as seen by the scheduler. */
typedef struct {
  /* Starts j's next attempt now (nothing of it sent before this call).
   * Returns 0, or -1 with a message in err when it could not be started
   * (the scheduler then gives the slot back and ends the request
   * network_error). */
  int (*start)(void *ud, polite__job *j, char *err, size_t errlen);
  /* Drops j's transfer without a response (cancel grace, fatal error). */
  void (*abort)(void *ud, polite__job *j);
  void *ud;
} polite__sched_io;

typedef struct polite__sched polite__sched;

/* Creates a scheduler over a copy of *o (callbacks, budget and env are
 * borrowed). o->next may be NULL: then requests come only from
 * polite__sched_submit, and the run is over only after
 * polite__sched_close_input. NULL with a message in err on bad options or
 * no memory. */
polite__sched *polite__sched_new(const polite_batch_options *o,
                                 const polite__sched_io *io, char *err,
                                 size_t errlen);
/* Frees every job (in-flight ones through io->abort) and the scheduler. */
void polite__sched_free(polite__sched *s);

/* Marks the run's start (t0, the run deadline). Call once, first. */
void polite__sched_begin(polite__sched *s, const polite__now *now);

/* One turn at `now`: cancel, grace, quota stop and run deadline; reads the
 * input and starts every admitted request that is due; renews leases; calls
 * on_tick. Returns 1 when the run is over (every request read has a
 * result), 0 to be called again no later than *wake_us (absolute
 * monotonic us; a response also warrants a call), or a negative
 * polite_errno when the engine failed (everything then ended). */
int polite__sched_step(polite__sched *s, const polite__now *now,
                       int64_t *wake_us);

/* The attempt of j (in flight) ended with r at now: decides, reports
 * on_attempt, and either finishes j (on_result, freed) or puts it back to
 * wait. The transport frees its own state afterwards. */
void polite__sched_response(polite__sched *s, polite__job *j,
                            const polite__response *r, const polite__now *now);

/* A request handed in at now (the gateway's clients; ownership of r passes
 * to the scheduler on 0). It is checked at once against its account: a
 * refused or stopped account, a full queue (queue_max), or a wait that the
 * request cannot afford (its account's pause and the queue ahead of it at
 * the planned rate, against max_wait and its deadline, which runs from
 * now) end it at once through on_result, before this returns; otherwise
 * it waits, due now, for the next polite__sched_step. Returns 0, or a
 * negative polite_errno with r still the caller's and on_result not
 * called: POLITE_ECANCELED once the input is closed or the run stops,
 * POLITE_ENOMEM. */
int polite__sched_submit(polite__sched *s, polite_request *r,
                         const polite__now *now);
/* No more submits: the run ends once every request has its result. */
void polite__sched_close_input(polite__sched *s);
/* Ends the run by `until` (absolute monotonic us) at the latest, as the
 * run deadline does, keeping an earlier one; the waiting requests that
 * cannot start before it end `deadline` at once. */
void polite__sched_end_by(polite__sched *s, int64_t until,
                          const polite__now *now);
/* Ends the request r (one the scheduler owns, waiting or in flight) at
 * now, `cancelled` with `why`: in flight, its transfer is dropped through
 * io->abort first. Returns 0, or POLITE_EINVAL when r is not there. */
int polite__sched_withdraw(polite__sched *s, const polite_request *r,
                           const char *why, const polite__now *now);

/* The engine's answer path (lib/engine.c), split in two so that an answer
 * can be relayed as it arrives. polite__sched_answer takes the attempt's
 * answer (its head, and the body when one was read) and decides as
 * polite__sched_response does. Returns 1 when the answer is final and
 * `relay` is set: j stays in flight (its slot held) while the transport
 * relays it, and polite__sched_relayed ends it. Returns 0 when j was put
 * back to wait (a retry) or ended (with `relay` 0, a final answer that
 * cannot be relayed ends network_error). */
int polite__sched_answer(polite__sched *s, polite__job *j,
                         const polite__response *r, int relay,
                         const polite__now *now);
/* The relay of j's final answer ended (error: NULL when all of it went
 * through): gives the slot back and emits the result. */
void polite__sched_relayed(polite__sched *s, polite__job *j, const char *error,
                           const polite__now *now);

/* Asks the run to stop (async-signal-safe: only sets a flag). */
void polite__sched_cancel(polite__sched *s);

/* The last call's final tick (stats at the end, on_tick once more). */
void polite__sched_end(polite__sched *s, const polite__now *now);

const polite_batch_stats *polite__sched_stats(const polite__sched *s);
const char *polite__sched_errstr(const polite__sched *s);
unsigned polite__sched_in_flight(const polite__sched *s);

#ifdef __cplusplus
}
#endif

#endif
