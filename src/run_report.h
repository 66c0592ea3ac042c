/* polite run: the end-of-run summary and the progress line (internal). */
#ifndef POLITE_RUN_REPORT_H
#define POLITE_RUN_REPORT_H

#include <polite/batch.h>
#include <stdio.h>

typedef struct {
  double target_rate;   /* planned starts/s; <= 0 when unlimited */
  unsigned concurrency; /* 0 when unlimited */
  uint64_t first;       /* --first N (0 when not a trial) */
  int64_t wall_ms;      /* whole run */
} run_plan;

/* Writes the human summary to f (stderr). */
void run_summary_text(FILE *f, const polite_batch_stats *s, const run_plan *p);
/* Writes the summary as one JSON object to path. Returns 0 or -1. */
int run_summary_json(const char *path, const polite_batch_stats *s,
                     const run_plan *p);

/* Progress line state. */
typedef struct {
  int on;
  int drawn;
  int64_t last_draw_us;
  long long total; /* requests in the input, -1 when unknown (streaming) */
} run_progress;

/* Redraws the progress line on stderr (at most ~10 times a second; `force`
 * draws now). */
void run_progress_draw(run_progress *p, const polite_batch_stats *s, int force);
/* Ends the progress line (a newline) when one was drawn. */
void run_progress_end(run_progress *p);

#endif
