/* polite run: the results file (one JSON line per request) and the JSON
 * helpers the attempt log shares (internal). */
#ifndef POLITE_RUN_OUTPUT_H
#define POLITE_RUN_OUTPUT_H

#include <jansson.h>
#include <polite/polite.h>
#include <stdio.h>
#include <sys/stat.h>

/* Where result lines go and what went wrong writing them. */
typedef struct {
  FILE *out;
  const char *bodies_dir; /* --bodies-dir, or NULL */
  /* Without a journal, a failed result write stops the run (see
   * docs/run.md, "When writing the results fails"). */
  int journal;          /* the journal wrapper handles write failures */
  const char *out_name; /* --out path, or NULL for stdout */
  polite_batch *batch;  /* cancelled at the first failed write */
  struct stat out_st;   /* identity of --out when opened */
  int out_regular;      /* --out is a regular file (checked, truncated) */
  int out_error;
  int out_failed;
  int out_errno;
  const char *out_op;     /* "write", "flush", or NULL: file gone/replaced */
  long long out_good;     /* bytes of complete lines written */
  uint64_t out_lines;     /* lines written */
  uint64_t out_unwritten; /* results with no line after the failure */
  int out_torn_removed;   /* a partial line was cut off */
  uint64_t body_errors;   /* body files that could not be written */
} run_output;

/* A JSON string for bytes that may not be UTF-8 (invalid bytes become
 * U+FFFD). Never NULL. */
json_t *run_text_json(const char *s, size_t n);
/* A redacted copy of a URL, and of free text that may quote URLs. */
json_t *run_redacted_url_json(const char *url);
json_t *run_redacted_text_json(const char *text);

/* The file name under --bodies-dir for an id: the id with every byte
 * outside [A-Za-z0-9_-] (and a leading '.') written as %XX, so the name
 * decodes back to the id and two ids never share a file. NULL (the body
 * stays in the result line) when the name would be longer than
 * RUN_BODY_NAME_MAX. Malloc'ed. */
#define RUN_BODY_NAME_MAX 240
char *run_body_name(const char *id);

/* The rule for every file polite run writes (--out, --log, --summary-json,
 * --report, --journal, a file: budget, body files): a symbolic link at its
 * path is refused, whether it dangles or names a file, unless it names a
 * stream (a character device, a FIFO or a socket: /dev/stdout, /dev/fd/N,
 * /dev/null), which is written like the stream. Returns 0, or -1 with a
 * message naming `what`, the path and the link's target in err. */
int run_output_path_check(const char *what, const char *path, char *err,
                          size_t len);

/* Opens path for writing (truncated, or appended to) under that rule, with
 * O_NOFOLLOW so that a link planted after the check is refused too. NULL
 * with errno set (ELOOP for such a link). */
FILE *run_output_open(const char *path, int append);

/* The batch's on_result: writes one result line (ud is a run_output). */
void run_output_result(void *ud, const polite_result *r);
/* The result line of r (malloc'ed, without its newline; NULL when out of
 * memory), writing its body file under --bodies-dir: the two halves of
 * run_output_result, for a caller that writes the line later (a queue
 * worker writes it once the queue has recorded it). */
char *run_output_line(run_output *c, const polite_result *r);
/* Writes one line as run_output_result would (nothing after a failure). */
void run_output_write(run_output *c, const char *line);

/* After the run: prints why the results could not be written, if they
 * could not. */
void run_output_report(const run_output *o);

#endif
