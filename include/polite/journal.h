/* polite journal: a crash-safe, append-only record of a batch run (SQLite
 * in WAL mode), so an interrupted `polite run` resumes without duplicates.
 * The format and the durability guarantee are described in docs/journal.md. */
#ifndef POLITE_JOURNAL_H
#define POLITE_JOURNAL_H

#include <polite/batch.h>
#include <polite/core.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct polite_journal polite_journal;

/* The journal's format version (meta key "format"). */
#define POLITE_JOURNAL_FORMAT 1

/* Open modes. CREATE: the file must not exist yet (or be empty); a journal
 * of an earlier run is never silently reused. RESUME: the file must exist
 * and hold at least one session. */
#define POLITE_JOURNAL_CREATE 1
#define POLITE_JOURNAL_RESUME 2

/* Opens (and with CREATE makes) the journal at path: WAL mode,
 * synchronous=FULL, so every request and result record has been fsync'd
 * when its call returns 0 (attempt records: see polite_journal_attempt).
 * Returns 0 and *out, or a negative polite_errno with a message naming the
 * file, the operation and the cause in err (POLITE_EINVAL: the file exists / is
 * missing / is not a journal; POLITE_EIO: SQLite or the file system failed).
 * Secrets are never stored: no headers, no bodies, URLs only through
 * polite_redact_url. */
POLITE_EXTERN int polite_journal_open(const char *path, int mode,
                                      polite_journal **out, char *err,
                                      size_t errlen);
/* The wall clock the journal stamps its records with (sessions, requests,
 * attempts, results, requeues), as the engine takes its clocks: NULL (the
 * default) is the real clock. polite_journal_attach sets the batch's env
 * (polite_batch_options.env) when it has one, so a test on a fake clock gets
 * fake times in the journal too. The header's created_ms is written by
 * polite_journal_open, before any env can be set: the real clock's. */
POLITE_EXTERN void polite_journal_set_env(polite_journal *j,
                                          const polite_env *env);
/* Closes (checkpoints the WAL into the main file). NULL is fine. */
POLITE_EXTERN void polite_journal_close(polite_journal *j);
/* The message of the last failed call ("" when none): names the file, the
 * operation and the cause (SQLite's message and errno text). */
POLITE_EXTERN const char *polite_journal_errstr(const polite_journal *j);

/* One run or resume of the same batch. */
typedef struct {
  const char *kind;        /* "run" or "resume" */
  const char *fingerprint; /* of the input, e.g. SHA-256 hex */
  const char *input;       /* input path as given (NULL: stdin) */
  const char *out;         /* results path as given */
  const char *requeue;     /* outcome names requeued, "" for none */
  int forced;              /* resumed with --force */
} polite_journal_session;

/* Records the start of a session and makes it the current one (its number
 * goes on every later record). Returns the session number (>= 1) or a
 * negative polite_errno. */
POLITE_EXTERN int polite_journal_begin(polite_journal *j,
                                       const polite_journal_session *s);
/* The fingerprint / out path recorded by the latest session before the
 * current one, copied into buf (NUL-terminated, truncated to len). Returns 1
 * when found, 0 when there is none, < 0 on error. */
POLITE_EXTERN int polite_journal_last_fingerprint(polite_journal *j, char *buf,
                                                  size_t len);
POLITE_EXTERN int polite_journal_last_out(polite_journal *j, char *buf,
                                          size_t len);

/* Records that the logical request `id` (input line `line`) is handed to
 * the engine with idempotency key `key` (NULL for none). `url` is redacted
 * before it is stored. Committed and fsync'd before it returns 0, so a key
 * is durable before any byte of the request is sent. */
POLITE_EXTERN int polite_journal_request(polite_journal *j, const char *id,
                                         long line, const char *method,
                                         const char *url, const char *key);
/* The latest key recorded for id (malloc'ed into *key, NULL when the id
 * was recorded without one). Returns 1 when the id was ever recorded, 0
 * when not, < 0 on error. */
POLITE_EXTERN int polite_journal_key(polite_journal *j, const char *id,
                                     char **key);
/* Whether id is finished: its latest result was not requeued by a later
 * session. Returns 1 (with that result's outcome copied into outcome, which
 * may be NULL), 0 when not, < 0 on error. */
POLITE_EXTERN int polite_journal_finished(polite_journal *j, const char *id,
                                          char *outcome, size_t len);
/* Whether id was already handed to the engine in the current session.
 * Returns 1 with its input line in *line (may be NULL), 0 when not, < 0 on
 * error. */
POLITE_EXTERN int polite_journal_handed(polite_journal *j, const char *id,
                                        long *line);
/* Records one network attempt of id (number n, wall-clock start and end in
 * ms, HTTP status or 0). Committed without its own fsync: it survives a
 * crash of the process at once, and a power loss from the next request or
 * result record on (those fsync the WAL up to and including it). */
POLITE_EXTERN int polite_journal_attempt(polite_journal *j, const char *id,
                                         unsigned n, int64_t start_ms,
                                         int64_t end_ms, int status);
/* Records that attempt n of id starts at start_ms (wall clock), before any
 * byte of it is sent; its end is recorded by polite_journal_attempt. With
 * sync (writes: POST/PATCH, or any request with an idempotency key) it is
 * committed and fsync'd before it returns 0; without (safe reads) it is
 * committed like an attempt record (survives a crash of the process; a
 * power loss from the next fsync'd record on). */
POLITE_EXTERN int polite_journal_attempt_start(polite_journal *j,
                                               const char *id, unsigned n,
                                               int64_t start_ms, int sync);
/* Records the final result of id. `backfilled` is 1 when it was recovered
 * from the results file on resume rather than seen live. Committed and
 * fsync'd. */
POLITE_EXTERN int polite_journal_result(polite_journal *j, const char *id,
                                        const char *outcome, int status,
                                        unsigned attempts, int backfilled);
/* Records that id's earlier result (`outcome`) was handed back to the
 * queue by --requeue. Committed and fsync'd. */
POLITE_EXTERN int polite_journal_requeue(polite_journal *j, const char *id,
                                         const char *outcome);
/* Calls fn for every id whose latest event is a result (not a requeue),
 * with that result's outcome. Returns 0 or < 0 on error. */
POLITE_EXTERN int polite_journal_each_result(
    polite_journal *j,
    void (*fn)(void *ud, const char *id, const char *outcome), void *ud);

/* ---- The resume policy: a journal attached to a batch ------------------- */

/* How a journal takes part in a run (all optional; zero them). */
typedef struct {
  /* Writes (POST, PATCH, ...) without a key get one: the key recorded for
   * their id by an earlier session, else a new random one, recorded before
   * the request is handed to the engine. */
  int idempotency_auto;
  /* 1 when id is already finished. NULL: the journal's own result records
   * decide (polite_journal_finished). `polite run` passes its results file
   * here, which is what it trusts. */
  int (*is_finished)(void *ud, const char *id);
  /* Called before a request is handed to the engine and before a result is
   * recorded; non-zero stops the run (polite_journal_run_stop) with the
   * message it wrote into msg. `polite run` checks that its files are still
   * the ones it opened. */
  int (*check)(void *ud, char *msg, size_t len);
  /* Called after the previous on_result returned and before the result is
   * recorded: make the result durable where the caller keeps it (fsync a
   * results file). Non-zero stops the run with the message written into
   * msg, and the result is not recorded (it runs again on resume). */
  int (*commit_result)(void *ud, const polite_result *res, char *msg,
                       size_t len);
  void *ud;
} polite_journal_attach_options;

typedef struct polite_journal_run polite_journal_run;

/* Attaches journal j to the batch options bo: bo's callbacks (next,
 * on_result, on_attempt, on_attempt_start, on_tick, on_rate) and ud are
 * replaced by
 * the journal's, which call the previous ones. The policy, in one place:
 *  - a request without an "id" (parsed as "line-N") gets the stable id
 *    "line-N-XXXXXXXX" (8 hex digits of the SHA-256 of its method, URL,
 *    body and error), so an edited input never matches an old result;
 *  - finished ids are skipped (never handed to the engine again);
 *  - an id handed twice in one session ends the input there (the requests
 *    already handed finish and are recorded);
 *  - the idempotency key is the request's, else its Idempotency-Key
 *    header, else the one recorded for the id, else (idempotency_auto, for
 *    writes) a new one from polite_idempotency_key; the request record with
 *    the key is committed and fsync'd before the request is handed over;
 *  - every attempt's start is recorded before any byte is sent (fsync'd
 *    for writes and keyed requests); an attempt whose start cannot be
 *    recorded is vetoed (not sent) and the run stops;
 *  - each attempt's end and each result are recorded; the result after the
 *    previous on_result returned (so a results file can be made durable
 *    first).
 * The first failure stops the run: new starts end, results after it are
 * not recorded (the resumed run does them again). bo->idempotency_auto is
 * cleared: the engine's own keys would never be recorded. Returns 0 and
 * *out (free it after the run, before closing j), or POLITE_ENOMEM. */
POLITE_EXTERN int polite_journal_attach(polite_journal *j,
                                        polite_batch_options *bo,
                                        const polite_journal_attach_options *ao,
                                        polite_journal_run **out);
/* The engine to cancel when recording fails (after polite_batch_new). */
POLITE_EXTERN void polite_journal_run_set_batch(polite_journal_run *r,
                                                polite_batch *b);
/* Stops the run with a message (the first one is kept): cancels the
 * batch; later requests are not handed over, later results not recorded. */
POLITE_EXTERN void polite_journal_run_stop(polite_journal_run *r,
                                           const char *msg);
/* What happened. failed: a record or a check failed (the run was
 * stopped); input_failed: the input had a repeated id (reading ended). */
typedef struct {
  int failed, input_failed;
  const char *error;   /* "" when neither */
  uint64_t skipped;    /* finished requests not handed over */
  uint64_t handed;     /* requests handed to the engine */
  uint64_t suppressed; /* results not recorded after a failure */
} polite_journal_run_status;
POLITE_EXTERN void polite_journal_run_status_get(const polite_journal_run *r,
                                                 polite_journal_run_status *s);
POLITE_EXTERN void polite_journal_run_free(polite_journal_run *r);

/* Counts of records, for reports and tests. */
typedef struct {
  int64_t sessions, requests, attempts, results, requeues;
  int64_t attempt_starts;
} polite_journal_counts;
POLITE_EXTERN int polite_journal_count(polite_journal *j,
                                       polite_journal_counts *c);

/* SHA-256 of a file's bytes as 64 lowercase hex digits (+ NUL). Returns 0,
 * or POLITE_EIO with errno set. */
POLITE_EXTERN int polite_sha256_file(const char *path, char hex[65]);
/* SHA-256 of a buffer as hex. */
POLITE_EXTERN void polite_sha256_hex(const void *data, size_t len,
                                     char hex[65]);

#ifdef __cplusplus
}
#endif

#endif
