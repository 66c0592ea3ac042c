/* The resume policy in one place: a journal attached to a batch records each
 * request with its idempotency key before it is handed over, each attempt's
 * start before it is sent, and each result; on resume it skips finished ids
 * and reuses their keys. `polite run --journal` and C programs share it. */
#define _GNU_SOURCE
#include <polite/clock.h>
#include <polite/journal.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct polite_journal_run {
  polite_journal *j;
  polite_journal_attach_options ao;
  polite_batch_options inner; /* the callbacks the journal's wrap */
  polite_batch *batch;
  int failed, input_failed;
  char errmsg[768];
  uint64_t skipped, handed, suppressed;
};

void polite_journal_run_stop(polite_journal_run *r, const char *msg) {
  if (r->failed)
    return;
  r->failed = 1;
  snprintf(r->errmsg, sizeof r->errmsg, "%s", msg);
  if (r->batch)
    polite_batch_cancel(r->batch);
}

/* The journal's last error as the reason to stop. */
static void stop_journal(polite_journal_run *r) {
  polite_journal_run_stop(r, polite_journal_errstr(r->j));
}

/* Runs the caller's check; returns 1 when the run may go on. */
static int checked(polite_journal_run *r) {
  if (r->ao.check == NULL)
    return 1;
  char msg[512] = "";
  if (r->ao.check(r->ao.ud, msg, sizeof msg) == 0)
    return 1;
  polite_journal_run_stop(r, msg[0] ? msg : "the journal's check failed");
  return 0;
}

/* The value of an Idempotency-Key header the request carries, or NULL. */
static const char *header_key(const polite_request *q) {
  static const char name[] = "Idempotency-Key";
  size_t n = sizeof name - 1;
  for (size_t i = 0; i < q->nheaders; i++)
    if (strncasecmp(q->headers[i], name, n) == 0 && q->headers[i][n] == ':') {
      const char *v = q->headers[i] + n + 1;
      while (*v == ' ' || *v == '\t')
        v++;
      return v;
    }
  return NULL;
}

/* Whether q's id is finished (1), not (0), or the lookup failed (< 0). */
static int finished(polite_journal_run *r, const polite_request *q) {
  if (r->ao.is_finished)
    return r->ao.is_finished(r->ao.ud, q->id) != 0;
  return polite_journal_finished(r->j, q->id, NULL, 0);
}

/* Sets q's idempotency key (see polite_journal_attach) into *key (malloc'ed,
 * NULL for none). Returns 0, or -1 after stopping the run. */
static int choose_key(polite_journal_run *r, polite_request *q, char **key) {
  *key = NULL;
  if (q->error != NULL)
    return 0;
  const char *hk = header_key(q);
  if (q->idempotency_key || hk) {
    /* A header key is sent as the header; recorded for the record. */
    *key = strdup(q->idempotency_key ? q->idempotency_key : hk);
  } else {
    if (polite_journal_key(r->j, q->id, key) < 0) {
      stop_journal(r);
      return -1;
    }
    char fresh[POLITE_IDEMPOTENCY_KEY_SIZE];
    if (*key == NULL && r->ao.idempotency_auto &&
        !polite_method_idempotent(polite_request_method(q))) {
      if (polite_idempotency_key(r->inner.env, fresh) != 0) {
        polite_journal_run_stop(r, "cannot make an idempotency key: the "
                                   "system's random source failed");
        return -1;
      }
      *key = strdup(fresh);
      if (*key == NULL)
        goto oom;
    }
    if (*key && (q->idempotency_key = strdup(*key)) == NULL)
      goto oom;
    return 0;
  }
  if (*key != NULL)
    return 0;
oom:
  free(*key);
  *key = NULL;
  polite_journal_run_stop(r, "out of memory");
  return -1;
}

/* Pulls requests from the inner source, skips finished ones, fixes the key
 * and commits the request record (with the key) before handing the request
 * to the engine: the key is durable before the first byte is sent. */
static int jn_next(void *ud, polite_request **out) {
  polite_journal_run *r = ud;
  for (;;) {
    if (r->failed || r->input_failed)
      return 0;
    polite_request *q = NULL;
    int rc = r->inner.next(r->inner.ud, &q);
    if (rc <= 0)
      return rc;
    long prev = 0;
    int fin = 0, handed = 0;
    char *key = NULL;
    if (polite_request_stable_id(q) != 0) {
      polite_journal_run_stop(r, "out of memory");
    } else if ((fin = finished(r, q)) < 0) {
      stop_journal(r);
    } else if (fin) {
      r->skipped++;
    } else if ((handed = polite_journal_handed(r->j, q->id, &prev)) < 0) {
      stop_journal(r);
    } else if (handed) {
      /* Bad input, not a failed write: end the input here but let the
       * requests already handed over finish and be recorded. */
      snprintf(r->errmsg, sizeof r->errmsg,
               "input line %ld: id '%s' was already used on line %ld; a "
               "journal needs a unique id per request (the input was read "
               "up to here)",
               q->line, q->id, prev);
      r->input_failed = 1;
    } else if (checked(r) && choose_key(r, q, &key) == 0) {
      if (polite_journal_request(r->j, q->id, q->line, polite_request_method(q),
                                 q->url, key) == 0) {
        free(key);
        r->handed++;
        *out = q;
        return 1;
      }
      stop_journal(r);
    }
    free(key);
    polite_request_free(q);
    if (fin != 1)
      return 0;
  }
}

/* Records the start of an attempt before the engine sends any byte of it.
 * A write (a method that is not idempotent, or any request carrying an
 * idempotency key) is committed and fsync'd, like its request record: after
 * any crash the journal says "attempt n of this write may have been sent".
 * A safe read is committed without its own fsync (it costs ~0.3 ms and
 * resending a read harms nobody). A failed record stops the run and vetoes
 * the attempt, so nothing unrecorded is sent. */
static int jn_attempt_start(void *ud, const polite_attempt_start *s) {
  polite_journal_run *r = ud;
  if (r->failed || !checked(r))
    return 1;
  if (r->inner.on_attempt_start &&
      r->inner.on_attempt_start(r->inner.ud, s) != 0)
    return 1;
  int sync = s->idempotency_key != NULL || header_key(s->req) != NULL ||
             !polite_method_idempotent(s->method);
  if (polite_journal_attempt_start(r->j, s->req->id, s->attempt,
                                   s->start_wall_ms, sync) != 0) {
    stop_journal(r);
    return 1;
  }
  return 0;
}

/* The end of an attempt: the attempt record follows its attempt_start. */
static void jn_attempt(void *ud, const polite_attempt *a) {
  polite_journal_run *r = ud;
  if (r->inner.on_attempt)
    r->inner.on_attempt(r->inner.ud, a);
  if (r->failed)
    return;
  if (polite_journal_attempt(r->j, a->req->id, a->attempt, a->start_wall_ms,
                             a->end_wall_ms, a->status) != 0)
    stop_journal(r);
}

/* The result goes to the previous on_result first (which may make it
 * durable elsewhere, and may stop the run when it cannot), then the result
 * record is committed. So a result record never precedes its line. */
static void jn_result(void *ud, const polite_result *res) {
  polite_journal_run *r = ud;
  if (r->failed || !checked(r)) {
    r->suppressed++; /* left unfinished: the resumed run does it again */
    return;
  }
  r->inner.on_result(r->inner.ud, res);
  if (r->failed)
    return;
  char msg[512] = "";
  if (r->ao.commit_result &&
      r->ao.commit_result(r->ao.ud, res, msg, sizeof msg) != 0) {
    polite_journal_run_stop(r, msg[0] ? msg : "the result was not kept");
    return;
  }
  if (polite_journal_result(r->j, res->req->id,
                            polite_outcome_name(res->outcome), res->status,
                            res->attempts, 0) != 0)
    stop_journal(r);
}

/* The engine has one ud for all callbacks, so the tick is wrapped too. */
static void jn_tick(void *ud, const polite_batch_stats *s) {
  polite_journal_run *r = ud;
  if (r->inner.on_tick)
    r->inner.on_tick(r->inner.ud, s);
}

static void jn_rate(void *ud, const polite_rate_change *c) {
  polite_journal_run *r = ud;
  if (r->inner.on_rate)
    r->inner.on_rate(r->inner.ud, c);
}

int polite_journal_attach(polite_journal *j, polite_batch_options *bo,
                          const polite_journal_attach_options *ao,
                          polite_journal_run **out) {
  *out = NULL;
  if (j == NULL || bo == NULL || bo->next == NULL || bo->on_result == NULL)
    return POLITE_EINVAL;
  polite_journal_run *r = calloc(1, sizeof *r);
  if (r == NULL)
    return POLITE_ENOMEM;
  r->j = j;
  if (ao)
    r->ao = *ao;
  r->inner = *bo;
  if (bo->env != NULL)
    polite_journal_set_env(j, bo->env); /* its records on the batch's clock */
  if (bo->idempotency_auto)
    r->ao.idempotency_auto = 1;
  bo->next = jn_next;
  bo->on_result = jn_result;
  bo->on_attempt = jn_attempt;
  bo->on_attempt_start = jn_attempt_start;
  bo->on_tick = jn_tick;
  bo->on_rate = jn_rate;
  bo->ud = r;
  bo->idempotency_auto = 0; /* every automatic key is made and recorded here */
  *out = r;
  return 0;
}

void polite_journal_run_set_batch(polite_journal_run *r, polite_batch *b) {
  r->batch = b;
}

void polite_journal_run_status_get(const polite_journal_run *r,
                                   polite_journal_run_status *s) {
  s->failed = r->failed;
  s->input_failed = r->input_failed;
  s->error = r->failed || r->input_failed ? r->errmsg : "";
  s->skipped = r->skipped;
  s->handed = r->handed;
  s->suppressed = r->suppressed;
}

void polite_journal_run_free(polite_journal_run *r) {
  free(r);
}
