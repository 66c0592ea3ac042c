/* polite run's callback layers, wired in one place and in one order. */
#include "run_wire.h"

#include "cli.h"

/* The engine calls only the outermost layer; each layer calls the one it
 * wrapped. So a layer wired later sees a call before the ones wired earlier
 * do, and sees only what they pass on when it calls into them. The order,
 * innermost first:
 *
 *  1. The command's own callbacks (set by cmd_run before this): read the
 *     input, write --out, --log's attempt lines, the progress line. They
 *     are innermost because they write what the run did, after every layer
 *     above has decided what that is.
 *  2. The journal (--journal): it skips requests a previous session
 *     finished, makes and records idempotency keys, and records each
 *     attempt and result durably before the command writes the result
 *     line, so that a crash between the two is repaired by --resume rather
 *     than lost. It must wrap the command's callbacks to come first.
 *  3. Or the queue (--queue; the two exclude each other): it replaces the
 *     input as the request source and records each result in Redis, then
 *     writes it through the command's output once recorded.
 *  4. The report tap (--log's run and end lines, --report's page):
 *     outermost, so that it counts exactly the requests the engine runs
 *     (what the journal or the queue hands on, not the skipped ones) and
 *     every attempt and result, whatever the inner layers do with them
 *     (tests/integration/test_run_wire_order.sh fails when the tap is wired
 *     inside the journal). */
int run_wire(polite_batch_options *bo, const run_layers *l, report_tap **tap) {
  *tap = NULL;
  if (l->journal && run_resume_wrap(l->journal, bo) != 0)
    return CLI_EXIT_FAILED;
  if (l->queue &&
      run_queue_wrap(l->queue, bo, l->out, l->def, l->concurrency) != 0)
    return CLI_EXIT_FAILED;
  *tap = report_tap_attach(bo, l->log, l->report_path, l->budget);
  return 0;
}
