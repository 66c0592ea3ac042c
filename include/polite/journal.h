/* polite journal: a crash-safe, append-only record of a batch run (SQLite
 * in WAL mode), so an interrupted `polite run` resumes without duplicates.
 * The format and the durability guarantee are described in docs/journal.md. */
#ifndef POLITE_JOURNAL_H
#define POLITE_JOURNAL_H

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
