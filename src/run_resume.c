/* polite run --journal/--resume glue: checks the input and --out against
 * the journal, repairs the results file on resume (torn line, requeued
 * lines, backfilled records), and attaches libpolite's resume policy
 * (polite_journal_attach) with the results file deciding "finished". */
#define _GNU_SOURCE
#include "run_resume.h"

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <polite/clock.h>
#include <polite/results.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- A small string set (open addressing) --------------------------- */

typedef struct {
  char **keys;
  long *vals;
  size_t cap, n;
} strset;

static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Index of key's slot (found or the empty slot where it belongs). */
static size_t set_slot(const strset *s, const char *key) {
  size_t i = (size_t)fnv(key) & (s->cap - 1);
  while (s->keys[i] && strcmp(s->keys[i], key) != 0)
    i = (i + 1) & (s->cap - 1);
  return i;
}

static long *set_get(const strset *s, const char *key) {
  if (s->cap == 0)
    return NULL;
  size_t i = set_slot(s, key);
  return s->keys[i] ? &s->vals[i] : NULL;
}

/* Adds key (copied) with val, or updates val. Returns 0 or -1 (memory). */
static int set_put(strset *s, const char *key, long val) {
  if ((s->n + 1) * 2 > s->cap) {
    strset g = {NULL, NULL, s->cap ? s->cap * 2 : 64, 0};
    g.keys = calloc(g.cap, sizeof *g.keys);
    g.vals = calloc(g.cap, sizeof *g.vals);
    if (g.keys == NULL || g.vals == NULL) {
      free(g.keys);
      free(g.vals);
      return -1;
    }
    for (size_t i = 0; i < s->cap; i++)
      if (s->keys[i]) {
        size_t k = set_slot(&g, s->keys[i]);
        g.keys[k] = s->keys[i];
        g.vals[k] = s->vals[i];
        g.n++;
      }
    free(s->keys);
    free(s->vals);
    *s = g;
  }
  size_t i = set_slot(s, key);
  if (s->keys[i] == NULL) {
    if ((s->keys[i] = strdup(key)) == NULL)
      return -1;
    s->n++;
  }
  s->vals[i] = val;
  return 0;
}

static void set_free(strset *s) {
  for (size_t i = 0; i < s->cap; i++)
    free(s->keys[i]);
  free(s->keys);
  free(s->vals);
  memset(s, 0, sizeof *s);
}

/* ---- State --------------------------------------------------------- */

struct run_resume {
  run_resume_config c;
  polite_journal *j;
  polite_journal_run *run; /* the resume policy, attached to the batch */
  FILE *out;
  strset done;    /* ids with a result line in --out (resume) */
  strset seen;    /* ids requeued (while preparing --out on resume) */
  strset journal; /* ids the journal holds a live result for (resume) */
  int failed;     /* reading the journal's results ran out of memory */
  char errmsg[768];
  struct stat jst, ost; /* identity of the journal and --out when opened */
  uint64_t requeued, backfilled, lost;
  uint64_t rerun; /* of requeued: unfinished by default (not --requeue) */
  long long torn_bytes;
};

/* A journal or results file removed (or replaced) while the run writes it
 * would swallow every later record without an error: the writes go to an
 * unlinked file. So before each request, attempt and result the paths must
 * still name the files that were opened. Returns 1 when they do, else 0
 * with the reason in msg. */
static int files_intact(run_resume *rj, char *msg, size_t len) {
  const struct {
    const char *what, *path;
    const struct stat *was;
  } f[2] = {{"journal", rj->c.path, &rj->jst},
            {"results file", rj->c.out_path, &rj->ost}};
  for (int i = 0; i < 2; i++) {
    struct stat now;
    if (stat(f[i].path, &now) != 0) {
      snprintf(msg, len,
               "the %s '%s' is gone (%s) while the run was writing it",
               f[i].what, f[i].path, strerror(errno));
      return 0;
    }
    if (now.st_dev != f[i].was->st_dev || now.st_ino != f[i].was->st_ino) {
      snprintf(msg, len,
               "the %s '%s' was replaced by another file while the run was "
               "writing it",
               f[i].what, f[i].path);
      return 0;
    }
  }
  return 1;
}

/* ---- Hooks of the journal's resume policy (lib/resume.c) ------- */

/* polite_journal_attach_options.is_finished: the results file decides
 * what is finished (a line there is what the user sees). */
static int rj_is_finished(void *ud, const char *id) {
  run_resume *rj = ud;
  return set_get(&rj->done, id) != NULL;
}

/* polite_journal_attach_options.check. */
static int rj_check(void *ud, char *msg, size_t len) {
  return files_intact(ud, msg, len) ? 0 : -1;
}

/* polite_journal_attach_options.commit_result: the result line was just
 * written by the command's on_result; it is flushed and fdatasync'ed to
 * --out before the journal records the result. So a result record always
 * has a durable line; a line without a record (a crash in between) is
 * found by --resume in the results file, which is what decides
 * "finished". */
static int rj_commit(void *ud, const polite_result *r, char *msg, size_t len) {
  run_resume *rj = ud;
  (void)r;
  int e = errno, bad = ferror(rj->out);
  if (fflush(rj->out) != 0) {
    bad = 1;
    e = errno;
  } else if (fdatasync(fileno(rj->out)) != 0) {
    bad = 1;
    e = errno;
  }
  if (!bad)
    return 0;
  snprintf(msg, len,
           "cannot write the results file '%s': %s (stopping; the journal "
           "keeps everything recorded so far)",
           rj->c.out_path, e ? strerror(e) : "write error");
  return -1;
}

/* ---- The results file on --resume ------------------------------------ */

/* The results file is read back by libpolite (polite_results_scan: JSON
 * lines with NUL bytes, a torn last line repaired, foreign lines refused). */
typedef polite_results_line_fn line_fn;
static long scan_lines(FILE *f, line_fn fn, void *ud, long long *end) {
  return polite_results_scan(f, fn, ud, end);
}

static int outcome_index(const char *name) {
  for (int o = 0; o < POLITE_OUT_COUNT; o++)
    if (strcmp(polite_outcome_name((polite_outcome)o), name) == 0)
      return o;
  return -1;
}

/* The "attempts" of a result line, or -1 when it has none. */
static long line_attempts(const char *line, size_t len) {
  json_t *j = json_loadb(line, len, JSON_ALLOW_NUL, NULL);
  json_t *a = json_object_get(j, "attempts");
  long n = json_is_integer(a) ? (long)json_integer_value(a) : -1;
  json_decref(j);
  return n;
}

/* 1 when a result line does not finish its request, whatever --requeue
 * says: `cancelled` (the run was interrupted or stopped: before the
 * request started, while it waited, or cut in flight), or any outcome but
 * ok and invalid_input reached without a single attempt (the run deadline,
 * a pause longer than --max-wait: nothing of it was tried). */
static int unfinished(int o, const char *line, size_t len) {
  if (o == POLITE_OUT_CANCELLED)
    return 1;
  if (o < 0 || o == POLITE_OUT_OK || o == POLITE_OUT_INVALID_INPUT)
    return 0;
  return line_attempts(line, len) == 0;
}

/* First pass: which ids have a line, and which of them run again (the
 * unfinished ones and the --requeue outcomes). */
static int note_line(void *ud, const char *id, const char *outcome,
                     const char *line, size_t len) {
  run_resume *rj = ud;
  int o = outcome_index(outcome);
  int chosen = o >= 0 && (rj->c.requeue & (1u << o));
  if (chosen || unfinished(o, line, len)) {
    rj->requeued++;
    rj->rerun += !chosen;
    return set_put(&rj->seen, id, o); /* "seen" doubles as the requeue set */
  }
  return set_put(&rj->done, id, o);
}

/* Second pass (only when something is requeued): copy the kept lines. */
typedef struct {
  run_resume *rj;
  FILE *tmp;
} copy_ctx;

static int copy_line(void *ud, const char *id, const char *outcome,
                     const char *line, size_t len) {
  copy_ctx *cc = ud;
  (void)outcome;
  if (set_get(&cc->rj->seen, id))
    return 0;
  return fwrite(line, 1, len, cc->tmp) == len ? 0 : -1;
}

static void note_journal_result(void *ud, const char *id, const char *outcome) {
  run_resume *rj = ud;
  if (set_put(&rj->journal, id, outcome_index(outcome)) != 0)
    rj->failed = 1;
}

/* fsyncs the directory holding path, so a rename in it is durable. */
static int sync_dir(const char *path) {
  char *copy = strdup(path);
  if (copy == NULL)
    return -1;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
  free(copy);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* Removes the lines of requeued ids: the kept lines go to a temporary file
 * next to --out, which is fsync'ed and renamed over it (atomic), so the
 * file always has either all the old lines or exactly the kept ones.
 * Returns 0 or -1 with the failure recorded. */
static int rewrite_without_requeued(run_resume *rj, FILE *f) {
  char *tmp = NULL;
  if (asprintf(&tmp, "%s.polite-tmp", rj->c.out_path) < 0)
    return -1;
  copy_ctx cc = {rj, fopen(tmp, "w")};
  long long end;
  int ok = cc.tmp != NULL && scan_lines(f, copy_line, &cc, &end) == 0 &&
           fflush(cc.tmp) == 0 && fsync(fileno(cc.tmp)) == 0;
  int e = errno;
  if (cc.tmp && fclose(cc.tmp) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  if (ok && rename(tmp, rj->c.out_path) != 0) {
    ok = 0;
    e = errno;
  }
  if (ok)
    sync_dir(rj->c.out_path);
  if (!ok) {
    snprintf(rj->errmsg, sizeof rj->errmsg,
             "--requeue: cannot rewrite the results file '%s' (via '%s'): %s",
             rj->c.out_path, tmp, strerror(e));
    unlink(tmp);
  }
  free(tmp);
  return ok ? 0 : -1;
}

/* Records requeue rows for the requeued ids (after the file no longer has
 * their lines: a crash in between leaves a journal result without a line,
 * which --resume treats as unfinished, the same as requeued). */
static int journal_requeued(run_resume *rj) {
  for (size_t i = 0; i < rj->seen.cap; i++)
    if (rj->seen.keys[i] &&
        polite_journal_requeue(
            rj->j, rj->seen.keys[i],
            polite_outcome_name((polite_outcome)rj->seen.vals[i])) != 0)
      return -1;
  return 0;
}

/* Backfills a result record for each id with a line but no live result
 * record (a crash came between writing the line and recording it). */
static int backfill(run_resume *rj) {
  if (polite_journal_each_result(rj->j, note_journal_result, rj) != 0 ||
      rj->failed)
    return -1;
  for (size_t i = 0; i < rj->done.cap; i++) {
    const char *id = rj->done.keys[i];
    if (id == NULL || set_get(&rj->journal, id))
      continue;
    long o = rj->done.vals[i];
    if (polite_journal_result(rj->j, id,
                              o >= 0 ? polite_outcome_name((polite_outcome)o)
                                     : "unknown",
                              0, 0, 1) != 0)
      return -1;
    rj->backfilled++;
  }
  /* A result record whose line is gone (--out lost or replaced, or a
   * crash inside a requeue): the id runs again, and a requeue record says
   * why the journal will hold a second result for it. */
  for (size_t i = 0; i < rj->journal.cap; i++) {
    const char *id = rj->journal.keys[i];
    if (id == NULL || set_get(&rj->done, id) || set_get(&rj->seen, id))
      continue;
    /* A set with cap > 0 always has vals; the analyzer cannot tie the two. */
    long o = rj->journal.vals[i]; // NOLINT(clang-analyzer-core.NullDereference)
    if (polite_journal_requeue(rj->j, id,
                               o >= 0 ? polite_outcome_name((polite_outcome)o)
                                      : "unknown") != 0)
      return -1;
    rj->lost++;
  }
  return 0;
}

/* Prepares --out for a resume: truncates a torn last line, requeues, and
 * backfills. Returns 0, or a CLI exit code after printing a message. */
static int resume_results(run_resume *rj, FILE **results) {
  const char *path = rj->c.out_path;
  FILE *f = fopen(path, "r+");
  if (f == NULL && errno == ENOENT)
    f = fopen(path, "w+"); /* lost or never written: everything runs */
  if (f == NULL) {
    fprintf(stderr, "polite run: --out: cannot open '%s': %s\n", path,
            strerror(errno));
    return CLI_EXIT_USAGE;
  }
  long long end = 0;
  long bad = scan_lines(f, note_line, rj, &end);
  if (bad != 0) {
    if (bad < 0)
      fprintf(stderr, "polite run: --resume: cannot read '%s': %s\n", path,
              strerror(errno));
    else
      fprintf(stderr,
              "polite run: --resume: line %ld of the results file '%s' is "
              "not a result line (a JSON object with an \"id\"); move the "
              "file away or fix that line\n",
              bad, path);
    fclose(f);
    return bad < 0 ? CLI_EXIT_FAILED : CLI_EXIT_USAGE;
  }
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && st.st_size > end) {
    /* A torn last line (the process died mid-write): its request has no
     * result record either (records come after the line), so it runs
     * again. */
    rj->torn_bytes = (long long)st.st_size - end;
    if (ftruncate(fileno(f), (off_t)end) != 0 || fsync(fileno(f)) != 0) {
      fprintf(stderr,
              "polite run: --resume: cannot truncate the torn last line of "
              "'%s': %s\n",
              path, strerror(errno));
      fclose(f);
      return CLI_EXIT_FAILED;
    }
  }
  if (rj->requeued > 0 && rewrite_without_requeued(rj, f) != 0) {
    fclose(f);
    fprintf(stderr, "polite run: %s\n", rj->errmsg);
    return CLI_EXIT_FAILED;
  }
  fclose(f);
  if ((rj->requeued > 0 && journal_requeued(rj) != 0) || backfill(rj) != 0) {
    fprintf(stderr, "polite run: %s\n", polite_journal_errstr(rj->j));
    return CLI_EXIT_FAILED;
  }
  /* "seen" held the requeue set; from here it tracks this session. */
  set_free(&rj->seen);
  set_free(&rj->journal);
  if ((*results = fopen(path, "a")) == NULL) {
    fprintf(stderr, "polite run: --out: cannot open '%s': %s\n", path,
            strerror(errno));
    return CLI_EXIT_FAILED;
  }
  return 0;
}

/* ---- Public glue ----------------------------------------------------- */

int run_resume_parse_requeue(const char *list, unsigned *mask, char *bad,
                             size_t badlen) {
  *mask = 0;
  const char *p = list;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(n < 63 ? n : 63), p);
    int o = n < 63 ? outcome_index(name) : -1;
    if (o < 0 || o == POLITE_OUT_OK) {
      snprintf(bad, badlen, "%.*s", (int)n, p);
      return -1;
    }
    *mask |= 1u << o;
    if (e == NULL)
      return 0;
    p = e + 1;
  }
}

/* A canonical form of a path for comparing sessions (the path itself when
 * it cannot be resolved). */
static void canon(const char *path, char *buf, size_t len) {
  char *r = realpath(path, NULL);
  if (r == NULL) {
    /* A file that does not exist (yet): resolve its directory. */
    char *d = strdup(path), *b = strdup(path);
    char *rd = d && b ? realpath(dirname(d), NULL) : NULL;
    if (rd && asprintf(&r, "%s/%s", rd, basename(b)) < 0)
      r = NULL;
    free(rd);
    free(d);
    free(b);
  }
  snprintf(buf, len, "%s", r ? r : path);
  free(r);
}

/* What --journal needs before anything is opened: --out, and the input as
 * a regular file, whose SHA-256 goes into fp. Returns 0 or an exit code
 * (the message printed). */
static int check_inputs(const run_resume_config *c, char fp[65]) {
  struct stat st;
  if (c->out_path == NULL)
    return cli_usage("run", "--journal needs --out FILE (the results file "
                            "that --resume repairs and appends to)");
  if (c->input_path == NULL || stat(c->input_path, &st) != 0 ||
      !S_ISREG(st.st_mode))
    return cli_usage("run",
                     "--journal needs the input as a regular FILE, not "
                     "stdin or a pipe ('%s'), so --resume can check that it "
                     "has not changed",
                     c->input_path ? c->input_path : "-");
  if (polite_sha256_file(c->input_path, fp) != 0)
    return cli_usage("run", "cannot read input '%s': %s", c->input_path,
                     strerror(errno));
  return 0;
}

/* --resume continues the same run: the input must have the journal's last
 * fingerprint fp and --out must be the journal's results file, unless
 * --force. Returns 0 or an exit code (the message printed). */
static int check_same_run(const run_resume *rj, const char *fp) {
  const run_resume_config *c = &rj->c;
  char outc[PATH_MAX], prev[PATH_MAX];
  int f = polite_journal_last_fingerprint(rj->j, prev, sizeof prev);
  if (f > 0 && strcmp(prev, fp) != 0 && !c->force)
    return cli_usage("run",
                     "--resume: the input '%s' changed since the journal "
                     "'%s' was made (SHA-256 %.12s..., now %.12s...); "
                     "resume with --force to match requests by id anyway, "
                     "or start a new journal",
                     c->input_path, c->path, prev, fp);
  canon(c->out_path, outc, sizeof outc);
  f = polite_journal_last_out(rj->j, prev, sizeof prev);
  if (f > 0 && strcmp(prev, outc) != 0 && !c->force)
    return cli_usage("run",
                     "--resume: --out '%s' is not the results file of the "
                     "journal's run ('%s'); give the same --out, or --force",
                     c->out_path, prev);
  return 0;
}

/* Records this session (input fingerprint fp, the canonical paths, the
 * outcomes to requeue) in the journal. Returns 0 or an exit code. */
static int begin_session(run_resume *rj, const char *fp) {
  const run_resume_config *c = &rj->c;
  char outc[PATH_MAX], inc[PATH_MAX];
  canon(c->input_path, inc, sizeof inc);
  canon(c->out_path, outc, sizeof outc);
  char rq[256] = "";
  for (int o = 0; o < POLITE_OUT_COUNT; o++)
    if (c->requeue & (1u << o)) {
      size_t n = strlen(rq);
      snprintf(rq + n, sizeof rq - n, "%s%s", n ? "," : "",
               polite_outcome_name((polite_outcome)o));
    }
  polite_journal_session s = {
      c->resume ? "resume" : "run", fp, inc, outc, rq, c->force};
  if (polite_journal_begin(rj->j, &s) < 0) {
    fprintf(stderr, "polite run: %s\n", polite_journal_errstr(rj->j));
    return CLI_EXIT_FAILED;
  }
  return 0;
}

/* One line even with -q: it says what --resume repaired. */
static void announce_resume(const run_resume *rj) {
  fprintf(stderr,
          "polite run: resuming from '%s': %zu already done, %llu run "
          "again (cancelled or never started), %llu requeued%s\n",
          rj->c.path, rj->done.n, (unsigned long long)rj->rerun,
          (unsigned long long)(rj->requeued - rj->rerun),
          rj->torn_bytes ? ", a torn last result line removed" : "");
  if (rj->lost)
    fprintf(stderr,
            "polite run: %llu result(s) in the journal have no line in '%s'; "
            "they run again (their recorded idempotency keys are reused)\n",
            (unsigned long long)rj->lost, rj->c.out_path);
}

int run_resume_open(const run_resume_config *c, run_resume **out,
                    FILE **results) {
  *out = NULL;
  *results = NULL;
  char fp[65];
  int rc = check_inputs(c, fp);
  if (rc != 0)
    return rc;
  run_resume *rj = calloc(1, sizeof *rj);
  if (rj == NULL)
    return CLI_EXIT_FAILED;
  rj->c = *c;
  char err[600];
  rc = polite_journal_open(
      c->path, c->resume ? POLITE_JOURNAL_RESUME : POLITE_JOURNAL_CREATE,
      &rj->j, err, sizeof err);
  if (rc != 0) {
    free(rj);
    if (rc == POLITE_EINVAL)
      return cli_usage("run", "--journal: %s", err);
    fprintf(stderr, "polite run: --journal: %s\n", err);
    return CLI_EXIT_FAILED;
  }
  if (c->resume && (rc = check_same_run(rj, fp)) != 0)
    goto fail;
  /* The session is recorded first: requeue and backfilled records made
   * while preparing --out belong to it. */
  if (!c->resume) {
    if ((*results = fopen(c->out_path, "w")) == NULL) {
      rc = cli_usage("run", "--out: cannot open '%s': %s", c->out_path,
                     strerror(errno));
      goto fail;
    }
    sync_dir(c->out_path); /* the new file's name survives a power cut */
  }
  if ((rc = begin_session(rj, fp)) != 0)
    goto fail;
  if (c->resume && (rc = resume_results(rj, results)) != 0)
    goto fail;
  /* A file-size limit (ulimit -f) must give EFBIG and a clear message, not
   * kill the process in the middle of a line. */
  signal(SIGXFSZ, SIG_IGN);
  if (c->resume)
    announce_resume(rj);
  rj->out = *results;
  if (stat(c->path, &rj->jst) != 0 || fstat(fileno(rj->out), &rj->ost) != 0) {
    fprintf(stderr, "polite run: --journal: cannot stat '%s': %s\n", c->path,
            strerror(errno));
    rc = CLI_EXIT_FAILED;
    goto fail;
  }
  *out = rj;
  return 0;
fail:
  if (*results) {
    fclose(*results);
    *results = NULL;
  }
  run_resume_close(rj);
  if (!c->resume) {
    /* Nothing ran: do not leave a journal that would block the next try. */
    char wal[PATH_MAX + 8];
    snprintf(wal, sizeof wal, "%s-wal", c->path);
    unlink(wal);
    unlink(c->path);
  }
  return rc;
}

int run_resume_wrap(run_resume *rj, polite_batch_options *bo) {
  polite_journal_attach_options ao = {rj->c.idempotency_auto, rj_is_finished,
                                      rj_check, rj_commit, rj};
  if (polite_journal_attach(rj->j, bo, &ao, &rj->run) != 0) {
    fprintf(stderr, "polite run: out of memory\n");
    return CLI_EXIT_FAILED;
  }
  return 0;
}

uint64_t run_resume_kept_failures(const run_resume *rj, char *names,
                                  size_t len) {
  uint64_t n = 0, by[POLITE_OUT_COUNT] = {0};
  if (rj == NULL)
    return 0;
  for (size_t i = 0; i < rj->done.cap; i++)
    if (rj->done.keys[i] && rj->done.vals[i] != POLITE_OUT_OK) {
      n++;
      if (rj->done.vals[i] >= 0 && rj->done.vals[i] < POLITE_OUT_COUNT)
        by[rj->done.vals[i]]++;
    }
  size_t k = 0;
  if (len > 0)
    names[0] = '\0';
  for (int o = 0; o < POLITE_OUT_COUNT && len > 0; o++)
    if (by[o] && k < len) {
      int w = snprintf(names + k, len - k, "%s%s %llu", k ? ", " : "",
                       polite_outcome_name((polite_outcome)o),
                       (unsigned long long)by[o]);
      k = w > 0 ? k + (size_t)w : k;
    }
  return n;
}

int run_resume_report_kept(const run_resume *rj) {
  char kept[200];
  uint64_t n = run_resume_kept_failures(rj, kept, sizeof kept);
  if (n > 0)
    fprintf(stderr,
            "polite run: the batch is not all ok: %llu request(s) finished "
            "in earlier sessions did not end ok (%s); --requeue runs them "
            "again\n",
            (unsigned long long)n, kept);
  return n > 0;
}

long long run_resume_done(const run_resume *rj) {
  return rj ? (long long)rj->done.n : 0;
}

void run_resume_set_batch(run_resume *rj, polite_batch *b) {
  if (rj->run)
    polite_journal_run_set_batch(rj->run, b);
}

int run_resume_finish(run_resume *rj) {
  if (rj == NULL || rj->run == NULL)
    return 0;
  polite_journal_run_status st;
  polite_journal_run_status_get(rj->run, &st);
  if (st.input_failed && !st.failed) {
    fprintf(stderr, "polite run: %s\n", st.error);
    return 1;
  }
  if (st.failed) {
    fprintf(stderr,
            "polite run: %s\npolite run: stopped: nothing new was started "
            "after that; %llu result(s) were not written and run again on "
            "--resume\n",
            st.error, (unsigned long long)st.suppressed);
    return 1;
  }
  if (rj->c.resume && !rj->c.quiet && (st.skipped || rj->backfilled))
    fprintf(stderr, "polite run: --resume skipped %llu finished request(s)%s\n",
            (unsigned long long)st.skipped,
            rj->backfilled ? " (some results recovered from --out)" : "");
  return 0;
}

void run_resume_close(run_resume *rj) {
  if (rj == NULL)
    return;
  polite_journal_run_free(rj->run);
  polite_journal_close(rj->j);
  set_free(&rj->done);
  set_free(&rj->seen);
  set_free(&rj->journal);
  free(rj);
}
