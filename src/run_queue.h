/* polite run --queue: the command's side of a queue worker. It opens the
 * queue, attaches it to the batch as its request source (libpolite's
 * polite_queue_attach) with the results file as where recorded results
 * go, and reports what the worker did. */
#ifndef POLITE_RUN_QUEUE_H
#define POLITE_RUN_QUEUE_H

#include "run_output.h"

#include <polite/polite.h>
#include <stdio.h>

/* --queue-outage's default, 10 minutes (the row's default must match). */
#define RUN_QUEUE_OUTAGE_DEFAULT_MS (10 * 60 * 1000)

/* The queue rows of `polite run`. */
typedef struct {
  const char *uri;         /* --queue URI; NULL: not a worker */
  int follow;              /* --follow */
  int64_t lease_ms;        /* --lease */
  unsigned max_deliveries; /* --max-deliveries */
  int64_t outage_ms;       /* --queue-outage; -1: none */
} run_queue_config;

typedef struct run_queue run_queue;

/* Checks the queue rows against the rest of the command line (positional
 * input, --journal, rows without --queue). Returns -1 to go on, else an
 * exit status after a message. */
int run_queue_check(const run_queue_config *qc, int has_input, int has_journal);

/* Opens the queue. Returns 0, or an exit status after a message. */
int run_queue_open(const run_queue_config *qc, run_queue **out);

/* Makes the queue the batch's source (after bo's callbacks are set and
 * before polite_batch_new): results are rendered by out and written to it
 * once recorded; a worker holds at most 2 x concurrency entries. Returns 0
 * or an exit status after a message. */
int run_queue_wrap(run_queue *q, polite_batch_options *bo, run_output *out,
                   const polite_input_defaults *def, unsigned concurrency);

void run_queue_set_batch(run_queue *q, polite_batch *b);

/* Right after polite_batch_run: gives back and records what is left. */
void run_queue_finish(run_queue *q);

/* Prints the worker's line of the summary (what it took, recorded, gave
 * back, its round trips to Redis) and any failure. */
void run_queue_summary(const run_queue *q, FILE *f, int quiet);

/* The exit status of a worker: 0 when every result it recorded is ok, 1
 * when one is not or Redis was lost, 3 a quota was spent, 130 stopped by a
 * signal. */
int run_queue_exit(const run_queue *q, const polite_batch_stats *st);

void run_queue_close(run_queue *q);

#endif
