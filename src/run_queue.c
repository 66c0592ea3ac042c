/* polite run --queue: a worker of a Redis Streams queue. The queue is the
 * batch's source; each result line is written to --out once the queue has
 * recorded it, so that every worker's --out holds only the results it
 * recorded, and all of them together one line per id. */
#define _GNU_SOURCE
#include "run_queue.h"

#include "cli.h"

#include <stdlib.h>
#include <string.h>

struct run_queue {
  polite_queue *q;
  polite_queue_run *run;
  run_output *out;
  run_queue_config qc;
  int finished;
};

int run_queue_check(const run_queue_config *qc, int has_input,
                    int has_journal) {
  if (qc->uri == NULL) {
    /* A row left at its default cannot be told from one not given. */
    const char *row =
        qc->follow                                      ? "--follow"
        : qc->lease_ms != POLITE_QUEUE_LEASE_DEFAULT_MS ? "--lease"
        : qc->max_deliveries != POLITE_QUEUE_MAX_DELIVERIES_DEFAULT
            ? "--max-deliveries"
        : qc->outage_ms != RUN_QUEUE_OUTAGE_DEFAULT_MS ? "--queue-outage"
                                                       : NULL;
    return row ? cli_usage("run", "%s needs --queue URI", row) : -1;
  }
  if (has_input)
    return cli_usage("run", "--queue reads the requests from the queue: no "
                            "input FILE (push it with 'polite queue push')");
  if (has_journal)
    return cli_usage("run",
                     "--queue and --journal exclude each other: the queue "
                     "keeps the fleet's record (see queue.md)");
  if (qc->lease_ms < 1000)
    return cli_usage("run", "--lease: at least 1s (it is renewed every "
                            "third of it)");
  return -1;
}

int run_queue_open(const run_queue_config *qc, run_queue **out) {
  *out = NULL;
  run_queue *rq = calloc(1, sizeof *rq);
  if (rq == NULL)
    return CLI_EXIT_FAILED;
  rq->qc = *qc;
  char err[400];
  int rc = polite_queue_open(qc->uri, &rq->q, err, sizeof err);
  if (rc != 0) {
    free(rq);
    if (rc == POLITE_EINVAL)
      return cli_usage("run", "--queue: %s", err);
    fprintf(stderr, "polite run: --queue: %s\n", err);
    return CLI_EXIT_FAILED;
  }
  *out = rq;
  return 0;
}

static char *render(void *ud, const polite_result *r) {
  return run_output_line(((run_queue *)ud)->out, r);
}

/* A line the queue could not record gets "queue":"unrecorded" before its
 * closing brace: its entry stays in the queue and runs again, so this line
 * may not be the id's result. */
static void on_recorded(void *ud, const polite_queue_recorded *rec) {
  run_queue *rq = ud;
  if (rec->status == POLITE_QUEUE_RECORDED) {
    run_output_write(rq->out, rec->line);
  } else if (rec->status == POLITE_QUEUE_UNRECORDED && rec->len > 0 &&
             rec->line[rec->len - 1] == '}') {
    char *s = NULL;
    if (asprintf(&s, "%.*s,\"queue\":\"unrecorded\"}", (int)rec->len - 1,
                 rec->line) >= 0) {
      run_output_write(rq->out, s);
      free(s);
    }
  }
}

int run_queue_wrap(run_queue *rq, polite_batch_options *bo, run_output *out,
                   const polite_input_defaults *def, unsigned concurrency) {
  rq->out = out;
  unsigned window = concurrency > POLITE_QUEUE_WINDOW_MAX / 2
                        ? POLITE_QUEUE_WINDOW_MAX
                        : 2 * (concurrency ? concurrency : 1);
  polite_queue_worker_options wo = {rq->qc.lease_ms,
                                    rq->qc.max_deliveries,
                                    rq->qc.follow,
                                    window,
                                    rq->qc.outage_ms,
                                    def,
                                    NULL,
                                    render,
                                    on_recorded,
                                    rq};
  char err[300];
  if (polite_queue_attach(rq->q, bo, &wo, &rq->run, err, sizeof err) != 0) {
    fprintf(stderr, "polite run: --queue: %s\n", err);
    return CLI_EXIT_FAILED;
  }
  return 0;
}

void run_queue_set_batch(run_queue *rq, polite_batch *b) {
  polite_queue_run_set_batch(rq->run, b);
}

void run_queue_finish(run_queue *rq) {
  if (rq->run && !rq->finished)
    (void)polite_queue_run_finish(rq->run);
  rq->finished = 1;
}

void run_queue_summary(const run_queue *rq, FILE *f, int quiet) {
  polite_queue_run_status s;
  polite_queue_run_status_get(rq->run, &s);
  if (s.gave_up || s.unrecorded)
    fprintf(f, "polite run: %s\n", s.error[0] ? s.error : "the queue failed");
  if (s.unrecorded)
    fprintf(f,
            "polite run: %llu result(s) could not be recorded in the queue: "
            "they are in --out marked \"queue\":\"unrecorded\", and their "
            "entries will run again\n",
            (unsigned long long)s.unrecorded);
  if (s.missing && !quiet)
    fprintf(f,
            "polite run: queue '%s' does not exist (nothing was pushed to "
            "it): nothing to do\n",
            polite_queue_uri(rq->q));
  if (quiet)
    return;
  fprintf(f,
          "queue: took %llu (%llu claimed after their lease ran out), "
          "recorded %llu (%llu ok), %llu recorded first by another worker "
          "(not written), gave back %llu, %llu lease(s) lost, %llu "
          "dead-lettered; %llu round trips to Redis (%llu script calls)",
          (unsigned long long)s.taken, (unsigned long long)s.claimed,
          (unsigned long long)s.recorded, (unsigned long long)s.recorded_ok,
          (unsigned long long)s.duplicates, (unsigned long long)s.given_back,
          (unsigned long long)s.lost, (unsigned long long)s.dead_lettered,
          (unsigned long long)s.round_trips, (unsigned long long)s.commands);
  if (s.recorded + s.duplicates > 0)
    fprintf(f, "; per result: %.2f round trips, %.2f script calls",
            (double)s.round_trips / (double)(s.recorded + s.duplicates),
            (double)s.commands / (double)(s.recorded + s.duplicates));
  if (s.outages)
    fprintf(f, "; Redis was unreachable %llu time(s), %.1f s in all",
            (unsigned long long)s.outages, (double)s.down_ms / 1000.0);
  fputc('\n', f);
}

int run_queue_exit(const run_queue *rq, const polite_batch_stats *st) {
  polite_queue_run_status s;
  polite_queue_run_status_get(rq->run, &s);
  if (s.gave_up || s.unrecorded)
    return CLI_EXIT_FAILED;
  if (st->quota_stop)
    return CLI_EXIT_QUOTA;
  if (st->cancelled)
    return CLI_EXIT_INTERRUPTED;
  return s.recorded_ok == s.recorded ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}

void run_queue_close(run_queue *rq) {
  if (rq == NULL)
    return;
  run_queue_finish(rq);
  polite_queue_run_free(rq->run);
  polite_queue_close(rq->q);
  free(rq);
}
