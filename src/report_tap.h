/* polite run's side of the report: the run/result/end lines of the attempt
 * log and `polite run --report FILE.html` (internal). */
#ifndef POLITE_REPORT_TAP_H
#define POLITE_REPORT_TAP_H

#include <polite/batch.h>
#include <stdio.h>

typedef struct report_tap report_tap;

/* Wraps bo's on_attempt and on_result (call it last, after any other
 * wrapper) so that every attempt and result also reaches the report model
 * (when report_path is not NULL) and every result adds a "result" line to
 * the attempt log (when log is not NULL, borrowed). Writes the log's first
 * line, {"event":"run",...}, with the plan from budget and bo. Returns NULL
 * (and changes nothing) when both log and report_path are NULL or memory
 * is short. */
report_tap *report_tap_attach(polite_batch_options *bo, FILE *log,
                              const char *report_path,
                              const polite_budget_config *budget);

/* After the run: writes {"event":"end",...} to the log and the HTML page to
 * report_path (atomically), then frees the tap. Returns 0, or -1 when the
 * page could not be written (the message is on stderr). NULL is a no-op. */
int report_tap_finish(report_tap *t);

/* Writes the model's page to path through a temporary file renamed into
 * place. Returns 0, or -1 with a message in err. */
struct rp_model;
int report_write_file(struct rp_model *m, const char *path, char *err,
                      size_t n);

#endif
