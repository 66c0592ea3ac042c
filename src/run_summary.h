/* polite run: the end-of-run summary and the progress line (internal). */
#ifndef POLITE_RUN_SUMMARY_H
#define POLITE_RUN_SUMMARY_H

#include "run_output.h"

#include <polite/batch.h>
#include <stdio.h>

typedef struct {
  double target_rate;   /* planned starts/s; <= 0 when unlimited */
  unsigned concurrency; /* 0 when unlimited */
  uint64_t first;       /* --first N (0 when not a trial) */
  int64_t wall_ms;      /* whole run */
  const char *name;     /* the summary's first word: NULL, "polite run";
                           "polite gateway" */
} run_plan;

/* Writes the human summary to f (stderr). */
void run_summary_text(FILE *f, const polite_batch_stats *s, const run_plan *p);
/* Writes the summary as one JSON object to path. Returns 0 or -1. */
int run_summary_json(const char *path, const polite_batch_stats *s,
                     const run_plan *p);

/* Rates are measured only over at least this much open budget time (see
 * docs/run.md, "Summary"). */
#define RUN_MIN_MEASURED_US 50000

/* Progress line state. */
typedef struct {
  int on;
  int drawn;
  int64_t last_draw_us;
  long long total;     /* requests in the input, -1 when unknown (stdin) */
  double planned_rate; /* planned requests/s (--rate / --cost); 0: none */
} run_progress;

#define RUN_PROGRESS_BAR 20

/* Results per second over the time the budget was open (server pauses
 * left out), 0 when too early to tell. Pure: reads only s. */
double run_progress_rate(const polite_batch_stats *s);
/* Seconds left: the current pause plus what is left at the planned rate
 * (or the measured one when slower or when none is planned); -1 when it
 * cannot be told (no total, no rate). It never grows while a pause counts
 * down. */
double run_progress_eta(const run_progress *p, const polite_batch_stats *s);
/* Formats the progress line into buf (no \r, no escape codes): a bar, a
 * percentage and an ETA when the total is known, plain counts when not; the
 * measured and planned rates, in flight, 429s so far, a pause. Pure.
 * Returns its length. */
size_t run_progress_format(char *buf, size_t size, const run_progress *p,
                           const polite_batch_stats *s);

/* Redraws the progress line on stderr (at most ~10 times a second; `force`
 * draws now). */
void run_progress_draw(run_progress *p, const polite_batch_stats *s, int force);
/* What polite run has said about budget outages (--budget-outage). */
typedef struct {
  int quiet;        /* -q: the end of an outage is not said */
  int64_t limit_ms; /* --budget-outage */
  uint64_t told;    /* outages said so far */
  int on;           /* one is going on */
} run_outage;

/* Says on stderr when a budget outage begins (the budget's message, and
 * what happens now) and when it ends; the progress line p, when drawn, is
 * cleared first (it is drawn again at the next tick). */
void run_outage_tell(run_outage *c, const run_progress *p,
                     const polite_batch_stats *s);

/* Ends the progress line (a newline) when one was drawn. */
void run_progress_end(run_progress *p);

/* The attempt log (--log FILE): one JSON line per network attempt. */
typedef struct {
  FILE *f;          /* NULL: no log */
  const char *path; /* for messages */
  int failed;       /* a write failed: nothing more is written */
  int err;          /* its errno */
  /* May be NULL: adds fields of the command's own to an attempt's line
   * (written into j after the log's own) before it is written (the
   * gateway: the queue wait, the client's own retries). */
  void (*extra)(void *ud, const polite_attempt *a, run_jline *j);
  void *extra_ud;
  run_jline line; /* the line being written, its buffer reused */
  /* 0: each line is flushed as it is written (polite run). 1: lines stay
   * in the stream's buffer until run_log_flush (the gateway flushes after
   * each pass of its loop, once the answers went out). */
  int deferred;
} run_log;

/* Writes one attempt's line; the first failure stops the log (the run goes
 * on) and is reported by run_log_close. */
void run_log_attempt(run_log *l, const polite_attempt *a);
/* Writes one change of the learned rate as a line with "event":"rate"
 * (lines with an "event" key are not attempts). */
void run_log_rate(run_log *l, const polite_rate_change *r);
/* Writes what the stream buffers (a deferred log); a failure stops the
 * log as a failed line would. */
void run_log_flush(run_log *l);
/* Closes the log. Returns 0, or -1 after a message naming the file when any
 * write or the close failed. */
int run_log_close(run_log *l);

#endif
