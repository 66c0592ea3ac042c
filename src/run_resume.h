/* polite run --journal/--resume: the command's side of a journaled run:
 * checks the input and --out against the journal, repairs the results file
 * on resume, and attaches the journal's resume policy (libpolite's
 * polite_journal_attach) with the results file as the record of what is
 * finished. */
#ifndef POLITE_RUN_RESUME_H
#define POLITE_RUN_RESUME_H

#include <polite/polite.h>
#include <stdio.h>

typedef struct run_resume run_resume;

typedef struct {
  const char *path;       /* --journal FILE */
  int resume;             /* --resume */
  int force;              /* --force: resume although input/--out changed */
  unsigned requeue;       /* (1u << outcome) for each --requeue outcome */
  const char *input_path; /* the input FILE (stdin is refused) */
  const char *out_path;   /* --out FILE (required) */
  int idempotency_auto;   /* --idempotency-key auto */
  int quiet;              /* -q: no notes on stderr */
} run_resume_config;

/* Parses --requeue "deadline,cancelled" (any outcome name but ok) into a
 * mask. Returns 0, or -1 with the offending name copied into bad. */
int run_resume_parse_requeue(const char *list, unsigned *mask, char *bad,
                             size_t badlen);

/* Opens or creates the journal, checks the input's fingerprint and the
 * --out path against the journal (on --resume), repairs the results file
 * (torn last line, requeued lines) and opens it for writing into *results
 * (truncated for a new run, appended to on --resume). Returns 0, or a CLI
 * exit code after printing a message that names the file and the cause:
 * 2 for usage errors (missing --out, stdin input, journal exists/missing,
 * changed input), 1 when the file system failed. */
int run_resume_open(const run_resume_config *c, run_resume **out,
                    FILE **results);

/* Attaches the journal to the batch (polite_journal_attach: the resume
 * policy lives in libpolite), with the results file as what decides
 * "finished" and made durable before each result record. Call after
 * setting bo's callbacks and before polite_batch_new. Returns 0 or a CLI
 * exit code after printing a message. */
int run_resume_wrap(run_resume *rj, polite_batch_options *bo);

/* How many input requests --resume will skip (they have a result line),
 * so a progress total can leave them out. 0 for NULL. */
long long run_resume_done(const run_resume *rj);

/* The results kept from earlier sessions on --resume that are not ok
 * (http_error, ...: finished, but not successfully), so that the exit
 * status counts the whole batch. names gets "http_error 2, deadline 1".
 * 0 for NULL. */
uint64_t run_resume_kept_failures(const run_resume *rj, char *names,
                                  size_t len);

/* Says so on stderr, and returns 1, when run_resume_kept_failures is not
 * 0: the exit status of a resume counts the whole batch. 0 for NULL. */
int run_resume_report_kept(const run_resume *rj);

/* The engine to cancel when recording fails (call after polite_batch_new). */
void run_resume_set_batch(run_resume *rj, polite_batch *b);

/* After the run: prints what went wrong (if anything) and a one-line note
 * of what the resume skipped. Returns 1 when recording failed (the run was
 * stopped), else 0. */
int run_resume_finish(run_resume *rj);

/* Closes the journal. NULL is fine. */
void run_resume_close(run_resume *rj);

#endif
