/* polite engine: the scheduler of polite_batch driven by a transport of
 * your own (an event loop, a proxy, the gateway), as libcurl's
 * multi_socket API lets a program drive libcurl from its own loop. The
 * engine never reads a clock, never sleeps and never does I/O: every call
 * takes `now`, the transport starts and relays the attempts, and the
 * engine says what to start, what each answer means and when to be called
 * next. polite_batch runs the same scheduler over libcurl; the rules
 * (budget admission, the learned rate, pauses, retries, deadlines,
 * max-wait) are the same, plus the gateway's: a bounded queue per
 * account, a wait that cannot be afforded answered at once, and a spent
 * quota that stops one account (docs/gateway.md, docs/c-api.md).
 *
 * One event loop turn:
 *
 *     polite_engine_now now = {mono_us, wall_ms};    read once per turn
 *     for each new client request:  polite_engine_submit(e, req, &now)
 *     for each answer head:  v = polite_engine_head(e, a, status, ...)
 *         RELAY      stream the answer to the client as it arrives,
 *                    then polite_engine_end(e, a, NULL, 0, &now)
 *         READ_BODY  read up to polite_engine_body_max() bytes, then
 *                    v = polite_engine_body(e, a, body, len, more, &now)
 *                    (RELAY: send that and stream the rest; DROP: as below)
 *         DROP       not the final answer: close (or drain) the upstream
 *                    connection; the engine retries later, a is gone
 *     for each attempt that failed before or during its answer:
 *                    polite_engine_end(e, a, "error text", timed_out, &now)
 *     polite_engine_step(e, &now, &wake)  starts what is due (io.start)
 *     sleep until wake or the next socket event
 *
 * Every request ends exactly once through the options' on_result, with
 * polite_result.relayed saying whether the client already has the
 * server's answer; when it does not, the caller answers it itself from
 * the outcome (the gateway: 429/503 with Retry-After from
 * polite_result.retry_after_ms, docs/gateway.md). Single-threaded: call
 * the engine from one thread, and never from inside its callbacks
 * (on_result, on_attempt, io.start, io.abort), as with libcurl's. */
#ifndef POLITE_ENGINE_H
#define POLITE_ENGINE_H

#include <polite/batch.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct polite_engine polite_engine;
/* One attempt in flight: from io.start until the call that ends it (a
 * DROP verdict, polite_engine_end, or io.abort). */
typedef struct polite_engine_attempt polite_engine_attempt;

/* One reading of the clocks, taken once per loop turn and passed to every
 * call of that turn: monotonic microseconds (waits, deadlines, the
 * budget) and Unix milliseconds (HTTP-dates, logs). */
typedef struct {
  int64_t mono_us;
  int64_t wall_ms;
} polite_engine_now;

/* What the transport sends for one attempt; valid until the attempt ends. */
typedef struct {
  const polite_request *req; /* method, url, headers, body, user */
  const char *method;        /* as sent */
  unsigned attempt;          /* 1-based: 2 and up are the engine's retries */
  int64_t timeout_ms;        /* the attempt's limit, cut to the deadline;
                                0: none. The transport ends the attempt with
                                timed_out set when it passes */
  /* Non-NULL: add "Idempotency-Key: KEY" to the request. The engine made
   * the key (idempotency_auto) for a write that had none, and the same key
   * comes with every attempt of the request. */
  const char *add_idempotency_key;
} polite_engine_send;

/* The transport. Neither callback may call the engine. */
typedef struct {
  /* Starts attempt a now: nothing of it was sent before this call.
   * Returns 0, or -1 with a message in err when it cannot be started (the
   * request then ends network_error, and a is gone). */
  int (*start)(void *ud, polite_engine_attempt *a, const polite_engine_send *s,
               char *err, size_t errlen);
  /* Drops attempt a's transfer (and a relay in progress) without an end
   * call: the run is cancelled past its grace, the request was withdrawn,
   * or the engine is freed. a is gone when this returns. May be NULL. */
  void (*abort)(void *ud, polite_engine_attempt *a);
  void *ud;
} polite_engine_io;

/* One header field of an answer, as the transport's parser split it: the
 * name without the colon, the value with or without surrounding spaces.
 * Neither needs a NUL; both are only read during the call. */
typedef struct {
  const char *name;
  size_t name_len;
  const char *value;
  size_t value_len;
} polite_header_field;

/* What to do with an answer. */
typedef enum {
  POLITE_ENGINE_RELAY = 0,     /* the final answer: relay it to the client
                                  as it arrives (status, headers, body),
                                  then call polite_engine_end */
  POLITE_ENGINE_READ_BODY = 1, /* a 429, 503 or 403: the decision needs the
                                  body (quota, diagnosis); read at most
                                  polite_engine_body_max() bytes of it and
                                  call polite_engine_body */
  POLITE_ENGINE_DROP = 2       /* not the final answer: the engine retries
                                  the request (a new io.start later); drop
                                  this answer and its body. a is gone */
} polite_engine_verdict;

/* The most bytes of a 429/503/403 body the engine reads before deciding:
 * what the quota hint and the diagnosis look at. */
#define POLITE_ENGINE_BODY_MAX (64u << 10)

/* Creates an engine over a copy of *o (polite_batch_options_init, then
 * the run's settings; budget, env and the callbacks are borrowed, not
 * owned). o->next may be NULL: requests then come only from
 * polite_engine_submit. io is copied. Returns NULL with a message in err on
 * bad options or no memory. The engine's clock starts at the first call
 * that passes a `now`. */
POLITE_EXTERN polite_engine *polite_engine_new(const polite_batch_options *o,
                                               const polite_engine_io *io,
                                               char *err, size_t errlen);
/* Frees the engine: in-flight attempts are dropped through io.abort,
 * waiting requests freed without a result. NULL is ignored. */
POLITE_EXTERN void polite_engine_free(polite_engine *e);

/* Hands request r in at now (a client is waiting for it from now on; its
 * deadline, o.deadline_ms, runs from here). Ownership of r passes to the
 * engine on 0. The request is checked against its account at once: a
 * refused or stopped account, a full queue (o.queue_max), or a wait it
 * cannot afford (the account's pause and the queue ahead of it at the
 * planned rate, longer than o.max_wait_ms or its deadline) end it before
 * this returns, through on_result with polite_result.retry_after_ms;
 * otherwise it waits for the next polite_engine_step. Returns 0, or
 * POLITE_ECANCELED (draining, cancelled, or the run stopped) or
 * POLITE_ENOMEM, with r still the caller's and on_result not called. */
POLITE_EXTERN int polite_engine_submit(polite_engine *e, polite_request *r,
                                       const polite_engine_now *now);

/* One turn at now: cancel, grace and the drain deadline; pulls o.next when
 * set; starts every admitted request that is due (io.start); renews the
 * budget's leases; calls on_tick. Returns 0 with *wake_us set (absolute
 * monotonic us: call again then at the latest, and after any event), 1
 * when the run is over (drained, or o.next said the end, and every
 * request has its result), or a negative polite_errno when the engine
 * failed (the budget broke; every request then ended). */
POLITE_EXTERN int polite_engine_step(polite_engine *e,
                                     const polite_engine_now *now,
                                     int64_t *wake_us);

/* The head of a's answer arrived: its final status (never a 1xx) and its
 * n header fields. See polite_engine_verdict. With RELAY the engine has
 * decided (the result comes at polite_engine_end); the concurrency slot
 * stays held while the answer streams. */
POLITE_EXTERN polite_engine_verdict polite_engine_head(
    polite_engine *e, polite_engine_attempt *a, int status,
    const polite_header_field *fields, size_t n, const polite_engine_now *now);
/* After READ_BODY: the first len bytes of the body (len <=
 * polite_engine_body_max(); more = 1 when the body goes on beyond them, or
 * its end is not known yet). Returns RELAY (send these bytes after the
 * head, then the rest as it comes, then polite_engine_end) or DROP. */
POLITE_EXTERN polite_engine_verdict
polite_engine_body(polite_engine *e, polite_engine_attempt *a, const char *body,
                   size_t len, int more, const polite_engine_now *now);
/* Attempt a is over. After RELAY: the relay ended (error NULL: all of it
 * went through; else the relay broke off, and the request ends
 * network_error). Before any head, or while its body was read: the
 * attempt failed with `error` (timed_out: its timeout_ms passed), and the
 * engine retries it when the rules allow, else ends it network_error (or
 * deadline). a is gone when this returns. */
POLITE_EXTERN void polite_engine_end(polite_engine *e, polite_engine_attempt *a,
                                     const char *error, int timed_out,
                                     const polite_engine_now *now);

/* The client of request r (one handed to the engine and not ended yet)
 * gave up: the request ends `cancelled` with `why` at once, through
 * io.abort first when an attempt of it is in flight. O(n) in the waiting
 * requests. Returns 0, or POLITE_EINVAL when r is not the engine's. */
POLITE_EXTERN int polite_engine_withdraw(polite_engine *e,
                                         const polite_request *r,
                                         const char *why,
                                         const polite_engine_now *now);

/* Stops taking requests (polite_engine_submit says POLITE_ECANCELED) and
 * ends the run by now + timeout_ms: the waiting requests that cannot start
 * before then end `deadline` at once, the others at that time; attempts in
 * flight go on to their end. polite_engine_step returns 1 once every
 * request has its result. */
POLITE_EXTERN void polite_engine_drain(polite_engine *e, int64_t timeout_ms,
                                       const polite_engine_now *now);
/* Stops now: waiting requests end `cancelled`, attempts in flight get
 * o.cancel_grace_ms, then io.abort. Async-signal-safe (sets a flag; the
 * next step acts on it: with no o.on_tick and no o.next the wake asked for
 * may be up to 1 s off, so step after calling it, as after any event). */
POLITE_EXTERN void polite_engine_cancel(polite_engine *e);

/* The user's pointer of attempt a (NULL until set): the transport keeps
 * its connection here. */
POLITE_EXTERN void polite_engine_attempt_set_private(polite_engine_attempt *a,
                                                     void *p);
POLITE_EXTERN void *
polite_engine_attempt_private(const polite_engine_attempt *a);
/* The request attempt a sends (valid while a is). */
POLITE_EXTERN const polite_request *
polite_engine_attempt_request(const polite_engine_attempt *a);

/* POLITE_ENGINE_BODY_MAX, or o.max_body when that is smaller. */
POLITE_EXTERN size_t polite_engine_body_max(const polite_engine *e);

/* One account with submitted requests, as polite_engine_accounts reports
 * it at `now`. */
typedef struct {
  const char *key;         /* the host with scope_host; NULL: the default
                              account. Valid until the next engine call */
  unsigned waiting;        /* submitted requests waiting to start */
  unsigned in_flight;      /* their attempts in flight (or relaying) */
  int64_t pause_left_ms;   /* what is known of the account's pause; 0 none */
  int64_t refused_left_ms; /* the account is refused (a wait past max-wait)
                              or stopped (a spent quota) for this long; 0 */
  double rate_per_s;       /* the start rate it is paced at (learned or the
                              budget's); 0 when none */
} polite_engine_account;

/* Fills out[0..max) with the accounts that have submitted requests (in no
 * particular order) and returns how many there are (which may be more than
 * max). For metrics: O(accounts). */
POLITE_EXTERN size_t polite_engine_accounts(const polite_engine *e,
                                            polite_engine_account *out,
                                            size_t max,
                                            const polite_engine_now *now);

POLITE_EXTERN const polite_batch_stats *
polite_engine_stats(const polite_engine *e);
/* Last engine error ("" when none). */
POLITE_EXTERN const char *polite_engine_errstr(const polite_engine *e);

#ifdef __cplusplus
}
#endif

#endif
