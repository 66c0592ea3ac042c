/* The run journal: an append-only, crash-safe record of a batch run in
 * SQLite (WAL mode, synchronous=FULL). SHA-256 lives in sha256.c. */
#define _GNU_SOURCE
#include <polite/redact.h>
#include <polite/clock.h>
#include <polite/journal.h>

#include "http_syntax.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libgen.h>
#include <sys/stat.h>
#include <unistd.h>

struct polite_journal {
  sqlite3 *db;
  char *path;
  int session;
  sqlite3_stmt *ins_request, *sel_key, *ins_attempt, *ins_attempt_start,
      *ins_result, *ins_requeue, *sel_result, *sel_handed;
  const polite_env *env; /* the wall clock of every record; NULL: real */
  char errstr[512];
};

/* Every record is one INSERT; nothing is ever updated or deleted, so the
 * journal is a log of what happened, in order (seq). */
static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS session(n INTEGER PRIMARY KEY, started_ms "
    "INTEGER, kind TEXT, fingerprint TEXT, input TEXT, out TEXT, requeue "
    "TEXT, forced INTEGER, version TEXT);"
    "CREATE TABLE IF NOT EXISTS request(seq INTEGER PRIMARY KEY, id TEXT NOT "
    "NULL, session INTEGER, line INTEGER, method TEXT, url TEXT, "
    "idempotency_key TEXT, created_ms INTEGER);"
    "CREATE INDEX IF NOT EXISTS request_id ON request(id);"
    "CREATE TABLE IF NOT EXISTS attempt(seq INTEGER PRIMARY KEY, id TEXT NOT "
    "NULL, session INTEGER, n INTEGER, started_ms INTEGER, ended_ms INTEGER, "
    "status INTEGER);"
    "CREATE TABLE IF NOT EXISTS attempt_start(seq INTEGER PRIMARY KEY, id TEXT "
    "NOT NULL, session INTEGER, n INTEGER, started_ms INTEGER);"
    "CREATE TABLE IF NOT EXISTS result(seq INTEGER PRIMARY KEY, id TEXT NOT "
    "NULL, session INTEGER, outcome TEXT, status INTEGER, attempts INTEGER, "
    "backfilled INTEGER, created_ms INTEGER);"
    "CREATE INDEX IF NOT EXISTS result_id ON result(id);"
    "CREATE TABLE IF NOT EXISTS requeue(seq INTEGER PRIMARY KEY, id TEXT NOT "
    "NULL, session INTEGER, outcome TEXT, created_ms INTEGER);"
    "CREATE INDEX IF NOT EXISTS requeue_id ON requeue(id);";

/* Formats "journal 'PATH': cannot OP: SQLITE MESSAGE (errno text)" into
 * j->errstr; the errno part only when an OS error was seen (SQLite's own
 * record of it, else errno as it was right after the failing call). A
 * busy/locked or not-a-database file gets its own plain message. */
static int fail_errno(polite_journal *j, int rc, const char *op, int err) {
  int prim = rc & 0xff;
  if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED) {
    snprintf(j->errstr, sizeof j->errstr,
             "journal '%s' is in use by another polite run", j->path);
    return POLITE_EINVAL;
  }
  if (prim == SQLITE_NOTADB) {
    snprintf(j->errstr, sizeof j->errstr,
             "journal '%s' is not a polite journal (not an SQLite file)",
             j->path);
    return POLITE_EINVAL;
  }
  int sys = j->db ? sqlite3_system_errno(j->db) : 0;
  if (sys == 0 &&
      (prim == SQLITE_IOERR || prim == SQLITE_FULL || prim == SQLITE_CANTOPEN))
    sys = err;
  const char *msg = j->db ? sqlite3_errmsg(j->db) : sqlite3_errstr(rc);
  if (sys != 0)
    snprintf(j->errstr, sizeof j->errstr, "journal '%s': cannot %s: %s (%s)",
             j->path, op, msg, strerror(sys));
  else
    snprintf(j->errstr, sizeof j->errstr, "journal '%s': cannot %s: %s",
             j->path, op, msg);
  return rc == SQLITE_NOMEM ? POLITE_ENOMEM : POLITE_EIO;
}

static int fail(polite_journal *j, int rc, const char *op) {
  return fail_errno(j, rc, op, errno);
}

/* Runs one prepared INSERT/SELECT-less statement to completion and resets
 * it; in autocommit mode that is one transaction, fsync'd on commit. */
static int step_done(polite_journal *j, sqlite3_stmt *st, const char *op) {
  errno = 0;
  int rc = sqlite3_step(st);
  int e = errno;
  int ok = rc == SQLITE_DONE;
  if (!ok)
    fail_errno(j, rc, op, e);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return ok ? 0 : POLITE_EIO;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s) {
  if (s)
    sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, i);
}

static int exec(polite_journal *j, const char *sql, const char *op) {
  errno = 0;
  int rc = sqlite3_exec(j->db, sql, NULL, NULL, NULL);
  int e = errno;
  return rc == SQLITE_OK ? 0 : fail_errno(j, rc, op, e);
}

static int prepare(polite_journal *j, const char *sql, sqlite3_stmt **st) {
  int rc = sqlite3_prepare_v2(j->db, sql, -1, st, NULL);
  return rc == SQLITE_OK ? 0 : fail(j, rc, "prepare a statement");
}

/* A journal's path must name the file itself: a symbolic link is refused,
 * dangling or not (SQLite would make the -wal file next to the link, not
 * next to its target, and a link planted at the path would put the journal
 * elsewhere; the same rule as for every file polite writes, see
 * docs/journal.md). The directory must let the journal and its -wal file
 * be created: when it does not, the error names it and the system's reason
 * (a read-only file system, no permission, no such directory) instead of
 * whatever SQLite's probing saw last. Returns 0 or a negative errno with
 * err set. */
static int check_path(const char *path, char *err, size_t errlen) {
  struct stat st;
  char target[256];
  if (polite__symlink_at(path, target, sizeof target)) {
    snprintf(err, errlen,
             "journal '%s' is a symbolic link (to '%s'): a journal is never "
             "opened through one (its -wal file would be made next to the "
             "link); give the target's path",
             path, target);
    return POLITE_EINVAL;
  }
  if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "journal '%s' is not a regular file", path);
    return POLITE_EINVAL;
  }
  char *copy = strdup(path);
  if (copy == NULL) {
    snprintf(err, errlen, "journal '%s': out of memory", path);
    return POLITE_ENOMEM;
  }
  const char *dir = dirname(copy);
  int rc = 0;
  if (access(dir, W_OK | X_OK) != 0) {
    snprintf(err, errlen,
             "journal '%s': cannot create files in its directory '%s': %s "
             "(the journal and its -wal file live there)",
             path, dir, strerror(errno));
    rc = errno == ENOENT ? POLITE_EINVAL : POLITE_EIO;
  }
  free(copy);
  return rc;
}

/* 1 when the file at path exists and is not empty. */
static int exists_nonempty(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && st.st_size > 0;
}

/* Checks the arguments and, for mode, whether the journal may be there:
 * CREATE refuses a journal that exists (it would be mixed with a new run),
 * RESUME one that does not. Returns 0, or an error with err filled. */
static int check_open(const char *path, int mode, char *err, size_t errlen) {
  if (path == NULL ||
      (mode != POLITE_JOURNAL_CREATE && mode != POLITE_JOURNAL_RESUME)) {
    snprintf(err, errlen, "journal: invalid arguments");
    return POLITE_EINVAL;
  }
  int prc = check_path(path, err, errlen);
  if (prc != 0)
    return prc;
  if (mode == POLITE_JOURNAL_CREATE && exists_nonempty(path)) {
    snprintf(err, errlen,
             "journal '%s' already exists (use --resume to continue its "
             "run, or remove it to start a new one)",
             path);
    return POLITE_EINVAL;
  }
  if (mode == POLITE_JOURNAL_RESUME && !exists_nonempty(path)) {
    snprintf(err, errlen,
             "journal '%s' does not exist or is empty (nothing to resume: "
             "run without --resume first)",
             path);
    return POLITE_EINVAL;
  }
  return 0;
}

/* Opens j->path in SQLite, locks it and sets it up: the pragmas, the
 * tables, and for CREATE the header records, in one exclusive transaction.
 * Returns 0 or an error with j->errstr filled. */
static int open_db(polite_journal *j, int mode) {
  /* NOFOLLOW: check_path refused a link; this closes the window after. */
  int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW;
  if (mode == POLITE_JOURNAL_CREATE)
    flags |= SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(j->path, &j->db, flags, NULL);
  if (rc != SQLITE_OK)
    return fail(j, rc, "open");
  sqlite3_extended_result_codes(j->db, 1);
  /* EXCLUSIVE locking: the process holds the journal for its lifetime, so a
   * second run on the same journal fails at once instead of interleaving;
   * it also keeps the WAL index in memory (no -shm file). FULL sync: each
   * commit fsyncs the WAL, so a record that returned 0 survives a crash of
   * the process, the kernel or the power. */
  int erc;
  if ((erc = exec(j, "PRAGMA locking_mode=EXCLUSIVE", "set the locking mode")))
    return erc;
  if ((erc = exec(j, "PRAGMA journal_mode=WAL", "switch to WAL mode")))
    return erc;
  if ((erc = exec(j, "PRAGMA synchronous=FULL", "set synchronous=FULL")))
    return erc;
  if ((erc = exec(j, "BEGIN EXCLUSIVE", "lock it")))
    return erc;
  if ((erc = exec(j, SCHEMA, "create the tables"))) {
    sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
    return erc;
  }
  if (mode == POLITE_JOURNAL_CREATE) {
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT OR IGNORE INTO meta VALUES('format','%d');"
             "INSERT OR IGNORE INTO meta VALUES('created_ms','%lld');"
             "INSERT OR IGNORE INTO meta VALUES('created_by','polite %s');",
             POLITE_JOURNAL_FORMAT, (long long)polite_env_wall_ms(j->env),
             polite_version());
    if ((erc = exec(j, sql, "write the header"))) {
      sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
      return erc;
    }
  }
  return exec(j, "COMMIT", "commit the header");
}

/* A journal must say it is one, in a format this version reads. Returns 0
 * or an error with j->errstr filled. */
static int check_format(polite_journal *j) {
  sqlite3_stmt *st = NULL;
  int fmt = -1;
  int erc = prepare(j, "SELECT value FROM meta WHERE key='format'", &st);
  if (erc)
    return erc;
  if (sqlite3_step(st) == SQLITE_ROW)
    fmt = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  if (fmt == POLITE_JOURNAL_FORMAT)
    return 0;
  snprintf(j->errstr, sizeof j->errstr,
           fmt < 0 ? "journal '%s' is not a polite journal (no format "
                     "record)"
                   : "journal '%s' has format %d; this polite reads %d",
           j->path, fmt, POLITE_JOURNAL_FORMAT);
  return POLITE_EINVAL;
}

/* The statements a journal keeps prepared for its lifetime, one row each:
 * where it is kept and its SQL. */
static const struct {
  size_t at; /* offsetof(polite_journal, the statement) */
  const char *sql;
} k_statements[] = {
    {offsetof(polite_journal, ins_request),
     "INSERT INTO request(id,session,line,method,url,"
     "idempotency_key,created_ms) VALUES(?,?,?,?,?,?,?)"},
    {offsetof(polite_journal, sel_key),
     "SELECT idempotency_key FROM request WHERE id=? ORDER "
     "BY (idempotency_key IS NOT NULL) DESC, seq DESC LIMIT 1"},
    {offsetof(polite_journal, ins_attempt),
     "INSERT INTO attempt(id,session,n,started_ms,ended_ms,"
     "status) VALUES(?,?,?,?,?,?)"},
    {offsetof(polite_journal, ins_attempt_start),
     "INSERT INTO attempt_start(id,session,n,started_ms) "
     "VALUES(?,?,?,?)"},
    {offsetof(polite_journal, ins_result),
     "INSERT INTO result(id,session,outcome,status,attempts,"
     "backfilled,created_ms) VALUES(?,?,?,?,?,?,?)"},
    {offsetof(polite_journal, ins_requeue),
     "INSERT INTO requeue(id,session,outcome,created_ms) "
     "VALUES(?,?,?,?)"},
    {offsetof(polite_journal, sel_result),
     "SELECT r.outcome FROM result r WHERE r.id=?1 AND NOT "
     "EXISTS (SELECT 1 FROM requeue q WHERE q.id=r.id AND "
     "q.session > r.session) ORDER BY r.seq DESC LIMIT 1"},
    {offsetof(polite_journal, sel_handed),
     "SELECT line FROM request WHERE id=? AND session=? "
     "LIMIT 1"},
};

int polite_journal_open(const char *path, int mode, polite_journal **out,
                        char *err, size_t errlen) {
  *out = NULL;
  int erc = check_open(path, mode, err, errlen);
  if (erc != 0)
    return erc;
  polite_journal *j = calloc(1, sizeof *j);
  if (j == NULL || (j->path = strdup(path)) == NULL) {
    free(j);
    snprintf(err, errlen, "journal '%s': out of memory", path);
    return POLITE_ENOMEM;
  }
  if ((erc = open_db(j, mode)) || (erc = check_format(j)))
    goto bad;
  for (size_t i = 0; i < sizeof k_statements / sizeof k_statements[0]; i++) {
    sqlite3_stmt **st = (sqlite3_stmt **)((char *)j + k_statements[i].at);
    if ((erc = prepare(j, k_statements[i].sql, st)))
      goto bad;
  }
  *out = j;
  return 0;
bad:
  snprintf(err, errlen, "%s", j->errstr[0] ? j->errstr : "journal: failed");
  polite_journal_close(j);
  return erc ? erc : POLITE_EIO;
}

void polite_journal_close(polite_journal *j) {
  if (j == NULL)
    return;
  sqlite3_finalize(j->ins_request);
  sqlite3_finalize(j->sel_key);
  sqlite3_finalize(j->ins_attempt);
  sqlite3_finalize(j->ins_attempt_start);
  sqlite3_finalize(j->ins_result);
  sqlite3_finalize(j->ins_requeue);
  sqlite3_finalize(j->sel_result);
  sqlite3_finalize(j->sel_handed);
  sqlite3_close(j->db);
  free(j->path);
  free(j);
}

void polite_journal_set_env(polite_journal *j, const polite_env *env) {
  if (j != NULL)
    j->env = env;
}

const char *polite_journal_errstr(const polite_journal *j) {
  return j ? j->errstr : "";
}

int polite_journal_begin(polite_journal *j, const polite_journal_session *s) {
  sqlite3_stmt *st = NULL;
  int erc = prepare(j,
                    "INSERT INTO session(started_ms,kind,fingerprint,input,"
                    "out,requeue,forced,version) VALUES(?,?,?,?,?,?,?,?)",
                    &st);
  if (erc)
    return erc;
  sqlite3_bind_int64(st, 1, polite_env_wall_ms(j->env));
  bind_text(st, 2, s->kind);
  bind_text(st, 3, s->fingerprint);
  bind_text(st, 4, s->input);
  bind_text(st, 5, s->out);
  bind_text(st, 6, s->requeue ? s->requeue : "");
  sqlite3_bind_int(st, 7, s->forced);
  bind_text(st, 8, polite_version());
  erc = step_done(j, st, "record the session");
  sqlite3_finalize(st);
  if (erc)
    return erc;
  j->session = (int)sqlite3_last_insert_rowid(j->db);
  return j->session;
}

/* Copies column `col` of the latest session before the current one. */
static int last_session_text(polite_journal *j, const char *col, char *buf,
                             size_t len) {
  char sql[160];
  snprintf(sql, sizeof sql,
           "SELECT %s FROM session WHERE n<? ORDER BY n DESC LIMIT 1", col);
  sqlite3_stmt *st = NULL;
  int erc = prepare(j, sql, &st);
  if (erc)
    return erc;
  sqlite3_bind_int(st, 1, j->session > 0 ? j->session : INT32_MAX);
  int rc = sqlite3_step(st), found = 0;
  if (rc == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
    found = 1;
  } else if (rc != SQLITE_DONE) {
    erc = fail(j, rc, "read the sessions");
  }
  sqlite3_finalize(st);
  return erc ? erc : found;
}

int polite_journal_last_fingerprint(polite_journal *j, char *buf, size_t len) {
  return last_session_text(j, "fingerprint", buf, len);
}

int polite_journal_last_out(polite_journal *j, char *buf, size_t len) {
  return last_session_text(j, "out", buf, len);
}

int polite_journal_request(polite_journal *j, const char *id, long line,
                           const char *method, const char *url,
                           const char *key) {
  char *red = url ? polite_redact_url(url) : NULL;
  if (url && red == NULL) {
    snprintf(j->errstr, sizeof j->errstr, "journal '%s': out of memory",
             j->path);
    return POLITE_ENOMEM;
  }
  sqlite3_stmt *st = j->ins_request;
  bind_text(st, 1, id);
  sqlite3_bind_int(st, 2, j->session);
  sqlite3_bind_int64(st, 3, line);
  bind_text(st, 4, method);
  bind_text(st, 5, red);
  bind_text(st, 6, key);
  sqlite3_bind_int64(st, 7, polite_env_wall_ms(j->env));
  free(red);
  return step_done(j, st, "record a request and its idempotency key");
}

int polite_journal_key(polite_journal *j, const char *id, char **key) {
  *key = NULL;
  sqlite3_stmt *st = j->sel_key;
  bind_text(st, 1, id);
  int rc = sqlite3_step(st), found = 0, erc = 0;
  if (rc == SQLITE_ROW) {
    found = 1;
    const unsigned char *t = sqlite3_column_text(st, 0);
    if (t && (*key = strdup((const char *)t)) == NULL)
      erc = POLITE_ENOMEM;
  } else if (rc != SQLITE_DONE) {
    erc = fail(j, rc, "look up a request");
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return erc ? erc : found;
}

/* Runs a one-row SELECT bound to id (and the session when with_session);
 * copies column 0 as text into buf, or as an integer into *num. Returns 1
 * for a row, 0 for none, or a negative polite_errno. */
static int select_one(polite_journal *j, sqlite3_stmt *st, const char *id,
                      int with_session, char *buf, size_t len, long *num,
                      const char *op) {
  bind_text(st, 1, id);
  if (with_session)
    sqlite3_bind_int(st, 2, j->session);
  int rc = sqlite3_step(st), found = 0, erc = 0;
  if (rc == SQLITE_ROW) {
    found = 1;
    if (buf) {
      const unsigned char *t = sqlite3_column_text(st, 0);
      snprintf(buf, len, "%s", t ? (const char *)t : "");
    }
    if (num)
      *num = (long)sqlite3_column_int64(st, 0);
  } else if (rc != SQLITE_DONE) {
    erc = fail(j, rc, op);
  }
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return erc ? erc : found;
}

int polite_journal_finished(polite_journal *j, const char *id, char *outcome,
                            size_t len) {
  char tmp[2];
  return select_one(j, j->sel_result, id, 0, outcome ? outcome : tmp,
                    outcome ? len : sizeof tmp, NULL, "look up a result");
}

int polite_journal_handed(polite_journal *j, const char *id, long *line) {
  long tmp = 0;
  return select_one(j, j->sel_handed, id, 1, NULL, 0, line ? line : &tmp,
                    "look up a request of this session");
}

int polite_journal_attempt(polite_journal *j, const char *id, unsigned n,
                           int64_t start_ms, int64_t end_ms, int status) {
  sqlite3_stmt *st = j->ins_attempt;
  bind_text(st, 1, id);
  sqlite3_bind_int(st, 2, j->session);
  sqlite3_bind_int64(st, 3, n);
  sqlite3_bind_int64(st, 4, start_ms);
  sqlite3_bind_int64(st, 5, end_ms);
  sqlite3_bind_int(st, 6, status);
  /* An attempt record is history, not a promise: it is committed without
   * its own fsync (synchronous=NORMAL), which survives a crash of the
   * process; the next request or result commit (FULL) fsyncs the WAL up to
   * and including it. This saves one fsync per attempt. */
  int erc = exec(j, "PRAGMA synchronous=NORMAL", "set synchronous=NORMAL");
  if (erc == 0)
    erc = step_done(j, st, "record an attempt");
  int erc2 = exec(j, "PRAGMA synchronous=FULL", "set synchronous=FULL");
  return erc ? erc : erc2;
}

int polite_journal_attempt_start(polite_journal *j, const char *id, unsigned n,
                                 int64_t start_ms, int sync) {
  sqlite3_stmt *st = j->ins_attempt_start;
  bind_text(st, 1, id);
  sqlite3_bind_int(st, 2, j->session);
  sqlite3_bind_int64(st, 3, n);
  sqlite3_bind_int64(st, 4, start_ms);
  if (sync) /* synchronous=FULL is the connection's normal state */
    return step_done(j, st, "record the start of an attempt");
  int erc = exec(j, "PRAGMA synchronous=NORMAL", "set synchronous=NORMAL");
  if (erc == 0)
    erc = step_done(j, st, "record the start of an attempt");
  else {
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }
  int erc2 = exec(j, "PRAGMA synchronous=FULL", "set synchronous=FULL");
  return erc ? erc : erc2;
}

/* Writes an outcome row (a result or a requeue): the columns both start
 * with (id, session, outcome) are bound here, created_ms (column `at`) on
 * the env's wall clock, after the caller bound the ones in between. */
static int outcome_row(polite_journal *j, sqlite3_stmt *st, const char *id,
                       const char *outcome, int at, const char *what) {
  bind_text(st, 1, id);
  sqlite3_bind_int(st, 2, j->session);
  bind_text(st, 3, outcome);
  sqlite3_bind_int64(st, at, polite_env_wall_ms(j->env));
  return step_done(j, st, what);
}

int polite_journal_result(polite_journal *j, const char *id,
                          const char *outcome, int status, unsigned attempts,
                          int backfilled) {
  sqlite3_stmt *st = j->ins_result;
  sqlite3_bind_int(st, 4, status);
  sqlite3_bind_int64(st, 5, attempts);
  sqlite3_bind_int(st, 6, backfilled != 0);
  return outcome_row(j, st, id, outcome, 7, "record a result");
}

int polite_journal_requeue(polite_journal *j, const char *id,
                           const char *outcome) {
  return outcome_row(j, j->ins_requeue, id, outcome, 4, "record a requeue");
}

int polite_journal_each_result(polite_journal *j,
                               void (*fn)(void *, const char *, const char *),
                               void *ud) {
  /* The latest result of each id, unless a later session requeued it
   * (requeue rows are written at the start of a session, before any result
   * of that session). */
  sqlite3_stmt *st = NULL;
  int erc = prepare(j,
                    "SELECT r.id, r.outcome FROM result r WHERE r.seq = "
                    "(SELECT max(seq) FROM result WHERE id=r.id) AND NOT "
                    "EXISTS (SELECT 1 FROM requeue q WHERE q.id=r.id AND "
                    "q.session > r.session) ORDER BY r.seq",
                    &st);
  if (erc)
    return erc;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    fn(ud, (const char *)sqlite3_column_text(st, 0),
       (const char *)sqlite3_column_text(st, 1));
  if (rc != SQLITE_DONE)
    erc = fail(j, rc, "read the results");
  sqlite3_finalize(st);
  return erc;
}

int polite_journal_count(polite_journal *j, polite_journal_counts *c) {
  static const char *const sql[] = {
      "SELECT count(*) FROM session", "SELECT count(*) FROM request",
      "SELECT count(*) FROM attempt", "SELECT count(*) FROM result",
      "SELECT count(*) FROM requeue", "SELECT count(*) FROM attempt_start"};
  int64_t *dst[] = {&c->sessions, &c->requests, &c->attempts,
                    &c->results,  &c->requeues, &c->attempt_starts};
  for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
    sqlite3_stmt *st = NULL;
    int erc = prepare(j, sql[i], &st);
    if (erc)
      return erc;
    int rc = sqlite3_step(st);
    *dst[i] = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
      return fail(j, rc, "count the records");
  }
  return 0;
}
