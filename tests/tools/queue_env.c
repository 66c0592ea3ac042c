/* queue_env: a work-queue worker on a fake random source, for
 * tests/integration/test_queue_env.sh. Pushes one entry to the queue at
 * URI, attaches a worker whose batch options carry an env whose random
 * bytes are all 0x5a (the clocks stay real), waits until the queue lists the
 * worker, and prints its consumer name ("HOST:PID:RANDOM": the RANDOM part
 * comes from the env the worker was given, not from the system's source).
 * Usage: queue_env URI. Exit 0, 1 when the queue cannot be used or the
 * worker never shows. */
#define _GNU_SOURCE
#include <polite/clock.h>
#include <polite/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The fake source: every byte 0x5a. */
static int fake_bytes(void *ud, void *buf, size_t n) {
  (void)ud;
  memset(buf, 0x5a, n);
  return 0;
}

/* The line a result would be recorded as (no result is made here). */
static char *render(void *ud, const polite_result *r) {
  (void)ud;
  (void)r;
  return strdup("{}");
}

/* Polls the queue's status (on its own connection) for a worker, at most
 * five seconds; prints every worker's name. Returns 0 when one showed. */
static int show_workers(const char *uri) {
  char err[256];
  polite_queue *q = NULL;
  if (polite_queue_open(uri, &q, err, sizeof err) != 0) {
    fprintf(stderr, "queue_env: %s\n", err);
    return 1;
  }
  int rc = 1;
  for (int i = 0; i < 100 && rc != 0; i++) {
    polite_queue_status st;
    if (polite_queue_status_get(q, &st) == 0) {
      for (size_t k = 0; k < st.n_workers; k++)
        printf("%s\n", st.workers[k].name);
      rc = st.n_workers > 0 ? 0 : 1;
      polite_queue_status_free(&st);
    }
    if (rc != 0)
      usleep(50000);
  }
  polite_queue_close(q);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: queue_env URI\n");
    return 2;
  }
  char err[256];
  polite_queue *q = NULL;
  if (polite_queue_open(argv[1], &q, err, sizeof err) != 0) {
    fprintf(stderr, "queue_env: %s\n", err);
    return 1;
  }
  static char line[] = "http://127.0.0.1:9/env\n";
  FILE *in = fmemopen(line, strlen(line), "r");
  polite_queue_push_stats ps;
  int rc = in != NULL ? polite_queue_push(q, in, &ps, NULL, NULL) : 1;
  if (in)
    fclose(in);
  polite_env env = {NULL, NULL, fake_bytes, NULL};
  polite_batch_options bo;
  memset(&bo, 0, sizeof bo);
  bo.env = &env;
  polite_queue_worker_options wo;
  memset(&wo, 0, sizeof wo);
  wo.render = render;
  polite_queue_run *r = NULL;
  if (rc == 0 && polite_queue_attach(q, &bo, &wo, &r, err, sizeof err) != 0) {
    fprintf(stderr, "queue_env: %s\n", err);
    rc = 1;
  }
  if (rc == 0)
    rc = show_workers(argv[1]);
  else
    fprintf(stderr, "queue_env: %s\n", polite_queue_errstr(q));
  if (r != NULL) {
    polite_queue_run_finish(r);
    polite_queue_run_free(r);
  }
  polite_queue_close(q);
  return rc;
}
