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

/* ---- The line writer: one JSON object per line, by hand ----------------
 * The attempt log's and the result file's lines, written byte for byte as
 * jansson's json_dumps(JSON_COMPACT | JSON_PRESERVE_ORDER) of the same
 * object would write them (tests/unit/test_jline.c and fuzz_jline compare
 * the two), without an allocation per field: at full throughput the
 * gateway spent a sixth of its CPU building and freeing jansson objects
 * for its log. Text is written as run_text_json would hold it: valid UTF-8
 * kept, each invalid byte U+FFFD, '"', '\\' and control bytes escaped
 * (\n, \t, ..., \u00XX). Redaction stays the caller's, in front of it. */
typedef struct {
  char *p;       /* the line so far (NUL-terminated after run_jline_end) */
  size_t n, cap; /* its length and allocation; kept for the next line */
  int oom;       /* an allocation failed: run_jline_end returns NULL */
  long long sec; /* the second whose ISO text is cached in date */
  char date[40]; /* "YYYY-MM-DDTHH:MM:SS" of sec, or "" */
} run_jline;

/* Starts a line ('{'): the buffer of the last one is reused. */
void run_jline_begin(run_jline *j);
/* Ends the object and returns the line (owned by j, valid until the next
 * begin), or NULL when memory ran out on the way. */
const char *run_jline_end(run_jline *j);
/* Frees the buffer; j may be begun again. */
void run_jline_free(run_jline *j);
/* Fields. key NULL: an element of the array just opened. Text of n bytes,
 * or of a C string where NULL is written as null. */
void run_jline_text(run_jline *j, const char *key, const char *s, size_t n);
void run_jline_cstr(run_jline *j, const char *key, const char *s);
void run_jline_int(run_jline *j, const char *key, long long v);
void run_jline_real(run_jline *j, const char *key, double v);
void run_jline_bool(run_jline *j, const char *key, int v);
void run_jline_null(run_jline *j, const char *key);
/* A redacted URL, and redacted free text that may quote URLs (NULL: null). */
void run_jline_url(run_jline *j, const char *key, const char *url);
void run_jline_redacted(run_jline *j, const char *key, const char *text);
/* ms since the epoch as ISO-8601 UTC with milliseconds. */
void run_jline_time(run_jline *j, const char *key, long long ms);
/* Opens a nested object ('{') or array ('['), and closes it ('}', ']'). */
void run_jline_open(run_jline *j, const char *key, char kind);
void run_jline_close(run_jline *j, char kind);

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
