/* polite run's side of the report: taps the batch's callbacks to add the
 * run/result/end lines to the attempt log and to feed `--report`. */
#include "report_tap.h"

#include "cli.h"
#include "report_html.h"
#include "report_model.h"

#include <errno.h>
#include <polite/clock.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The batch has one `ud` for all its callbacks: the tap takes it and
 * passes every callback on to the one it replaced. */
struct report_tap {
  int (*inner_next)(void *, polite_request **);
  void (*inner_attempt)(void *, const polite_attempt *);
  void (*inner_result)(void *, const polite_result *);
  int (*inner_start)(void *, const polite_attempt_start *);
  void (*inner_tick)(void *, const polite_batch_stats *);
  void *inner_ud;
  FILE *log;
  const char *path;
  rp_model *m; /* NULL without --report */
};

static rp_action action_of(polite_action a) {
  return a == POLITE_RETRY  ? RP_ACT_RETRY
         : a == POLITE_STOP ? RP_ACT_STOP
                            : RP_ACT_DONE;
}

static int tap_next(void *ud, polite_request **out) {
  report_tap *t = ud;
  return t->inner_next(t->inner_ud, out);
}

static int tap_start(void *ud, const polite_attempt_start *a) {
  report_tap *t = ud;
  return t->inner_start ? t->inner_start(t->inner_ud, a) : 0;
}

static void tap_tick(void *ud, const polite_batch_stats *s) {
  report_tap *t = ud;
  if (t->inner_tick)
    t->inner_tick(t->inner_ud, s);
}

static void tap_attempt(void *ud, const polite_attempt *a) {
  report_tap *t = ud;
  if (t->inner_attempt)
    t->inner_attempt(t->inner_ud, a);
  if (t->m == NULL)
    return;
  const polite_decision *d = &a->decision;
  rp_attempt r = {a->start_wall_ms,
                  a->end_wall_ms,
                  a->attempt,
                  a->status,
                  action_of(d->action),
                  polite_reason_name(d->reason),
                  d->action == POLITE_RETRY ? d->wait_ms : -1,
                  d->server_wait_ms,
                  d->account_pause,
                  a->diagnosis ? polite_diagnosis_component(a->diagnosis)
                               : NULL,
                  a->diagnosis ? polite_limit_name(a->diagnosis->limit) : NULL};
  rp_model_attempt(t->m, &r);
}

/* {"event":"result",...}: what the attempt lines cannot tell (requests
 * that never started, or ended while waiting) and the cost. Ids are not
 * repeated here: the attempt lines carry them. */
static void tap_result(void *ud, const polite_result *r) {
  report_tap *t = ud;
  t->inner_result(t->inner_ud, r);
  unsigned cost = r->req && r->req->cost ? r->req->cost : 1;
  const char *outcome = polite_outcome_name(r->outcome);
  if (t->log) {
    fprintf(t->log,
            "{\"event\":\"result\",\"outcome\":\"%s\",\"attempts\":%u,"
            "\"cost\":%u,\"status\":",
            outcome, r->attempts, cost);
    if (r->status)
      fprintf(t->log, "%d", r->status);
    else
      fputs("null", t->log);
    fprintf(t->log, ",\"elapsed_ms\":%lld,\"wall_ms\":%lld}\n",
            (long long)r->elapsed_ms, (long long)polite_wall_ms());
    fflush(t->log);
  }
  if (t->m) {
    rp_result x = {outcome, r->attempts, cost};
    rp_model_result(t->m, &x);
  }
}

report_tap *report_tap_attach(polite_batch_options *bo, FILE *log,
                              const char *report_path,
                              const polite_budget_config *budget) {
  if (log == NULL && report_path == NULL)
    return NULL;
  report_tap *t = calloc(1, sizeof *t);
  if (t == NULL)
    return NULL;
  if (report_path &&
      ((t->m = rp_model_new()) == NULL || rp_model_source(t->m, "this run"))) {
    rp_model_free(t->m);
    free(t);
    return NULL;
  }
  t->log = log;
  t->path = report_path;
  t->inner_next = bo->next;
  t->inner_attempt = bo->on_attempt;
  t->inner_result = bo->on_result;
  t->inner_start = bo->on_attempt_start;
  t->inner_tick = bo->on_tick;
  t->inner_ud = bo->ud;
  bo->next = tap_next;
  bo->on_attempt = tap_attempt;
  bo->on_result = tap_result;
  bo->on_attempt_start = bo->on_attempt_start ? tap_start : NULL;
  bo->on_tick = bo->on_tick ? tap_tick : NULL;
  bo->ud = t;
  rp_run run = {budget->rate_per_s > 0 ? budget->rate_per_s : 0,
                (long)budget->concurrency,
                (long)bo->max_attempts,
                (long)budget->burst,
                polite_wall_ms(),
                bo->deadline_ms};
  if (t->m)
    rp_model_run(t->m, &run);
  if (log) {
    fputs("{\"event\":\"run\",\"rate_per_s\":", log);
    if (run.rate_per_s > 0)
      fprintf(log, "%.17g", run.rate_per_s);
    else
      fputs("null", log);
    fprintf(log,
            ",\"burst\":%ld,\"concurrency\":%ld,\"max_attempts\":%ld,"
            "\"deadline_ms\":",
            run.burst, run.concurrency, run.max_attempts);
    if (run.deadline_ms >= 0)
      fprintf(log, "%lld", (long long)run.deadline_ms);
    else
      fputs("null", log);
    fprintf(log, ",\"spread_ms\":%lld,\"started_wall_ms\":%lld,\"pid\":%ld}\n",
            (long long)bo->spread_ms, (long long)run.started_wall_ms,
            (long)getpid());
    fflush(log);
  }
  return t;
}

int report_write_file(rp_model *m, const char *path, char *err, size_t n) {
  size_t len = strlen(path) + 16;
  char *tmp = malloc(len);
  if (tmp == NULL) {
    snprintf(err, n, "out of memory");
    return -1;
  }
  snprintf(tmp, len, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  int rc = -1;
  if (f == NULL) {
    snprintf(err, n, "cannot create '%s': %s", tmp, strerror(errno));
  } else {
    int wrc = rp_write_page(f, m);
    int cerr = fclose(f);
    if (wrc != 0 || cerr != 0)
      snprintf(err, n, "cannot write '%s': %s", tmp, strerror(errno));
    else if (rename(tmp, path) != 0)
      snprintf(err, n, "cannot rename '%s' to '%s': %s", tmp, path,
               strerror(errno));
    else
      rc = 0;
    if (rc != 0)
      unlink(tmp);
  }
  free(tmp);
  return rc;
}

int report_tap_finish(report_tap *t) {
  if (t == NULL)
    return 0;
  int64_t now = polite_wall_ms();
  int rc = 0;
  if (t->log) {
    fprintf(t->log, "{\"event\":\"end\",\"wall_ms\":%lld}\n", (long long)now);
    fflush(t->log);
  }
  if (t->m) {
    char err[512];
    rp_model_end(t->m, now);
    rp_model_source_end(t->m);
    if (report_write_file(t->m, t->path, err, sizeof err) != 0) {
      fprintf(stderr, "polite run: --report: %s\n", err);
      rc = -1;
    }
    rp_model_free(t->m);
  }
  free(t);
  return rc;
}
