/* polite run's callback layers wired in one place: the command's own
 * callbacks, the journal or the queue, and the report tap, each wrapping
 * the ones before it (run_wire says in which order and why). */
#ifndef POLITE_RUN_WIRE_H
#define POLITE_RUN_WIRE_H

#include "report_tap.h"
#include "run_resume.h"
#include "run_output.h"
#include "run_queue.h"

#include <polite/polite.h>
#include <stdio.h>

/* The layers of one run; a NULL member is a layer the run does not have.
 * Everything is borrowed. */
typedef struct {
  run_resume *journal; /* --journal */
  run_queue *queue;    /* --queue (never with --journal) */
  run_output *out;     /* where the queue writes recorded results */
  const polite_input_defaults *def;   /* -X, -H, -d for queued lines */
  unsigned concurrency;               /* bounds the queue's window */
  FILE *log;                          /* --log, for the tap */
  const char *report_path;            /* --report, for the tap */
  const polite_budget_config *budget; /* the plan the tap's log states */
} run_layers;

/* Wraps the command's callbacks in bo (set by the caller: they are the
 * innermost layer) with the layers in l, in the order run_wire.c gives, and
 * sets *tap to the report tap (NULL without --log and --report; the caller
 * finishes it). Call before polite_batch_new. Returns 0, or an exit status
 * after a message. */
int run_wire(polite_batch_options *bo, const run_layers *l, report_tap **tap);

#endif
