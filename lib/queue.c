/* polite queue: opening a queue, pushing the run input format into it
 * (pipelined, idempotent by id), its status, its results and its dead
 * letters. A worker's side is lib/queue_worker.c; the script both run is
 * lib/queue_script.h. */
#define _GNU_SOURCE
#include "queue_internal.h"

#include "queue_script.h"

#include <polite/clock.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A push sends at most this many entries, or about this many bytes of
 * lines, per script call, and this many calls per round trip: a call
 * holds Redis for a few milliseconds at most, and a round trip carries
 * well under 10 MiB. */
#define PUSH_ENTRIES 256
#define PUSH_BYTES (512 * 1024)
#define PUSH_CALLS 8
/* Results read per XRANGE, and dead letters moved back per script call. */
#define RESULTS_PAGE 256
#define RETRY_PAGE 1000

void polite__queue_errf(polite_queue *q, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  polite__redis_vmsg(q->errstr, sizeof q->errstr, "queue ", q->u.safe, fmt, ap);
  va_end(ap);
}

/* ---- arguments ------------------------------------------------------------
 */

static void grow(polite__qargs *a) {
  if (a->n < a->cap || a->oom)
    return;
  size_t cap = a->cap ? a->cap * 2 : 64;
  const char **v = realloc(a->v, cap * sizeof *v);
  if (v)
    a->v = v;
  size_t *len = v ? realloc(a->len, cap * sizeof *len) : NULL;
  if (len)
    a->len = len;
  if (v == NULL || len == NULL)
    a->oom = 1;
  else
    a->cap = cap;
}

void polite__qargs_add(polite__qargs *a, const char *s, size_t len) {
  grow(a);
  if (a->oom)
    return;
  a->v[a->n] = s;
  a->len[a->n++] = len;
  a->bytes += len;
}

/* Keeps s (malloc'ed) to be freed with the arguments. */
static void own(polite__qargs *a, char *s, size_t len) {
  if (s == NULL) {
    a->oom = 1;
    return;
  }
  if (a->nowned == a->owned_cap) {
    size_t cap = a->owned_cap ? a->owned_cap * 2 : 32;
    char **o = realloc(a->owned, cap * sizeof *o);
    if (o == NULL) {
      free(s);
      a->oom = 1;
      return;
    }
    a->owned = o;
    a->owned_cap = cap;
  }
  a->owned[a->nowned++] = s;
  polite__qargs_add(a, s, len);
}

void polite__qargs_dup(polite__qargs *a, const char *s, size_t len) {
  char *c = malloc(len + 1);
  if (c) {
    memcpy(c, s, len);
    c[len] = '\0';
  }
  own(a, c, len);
}

void polite__qargs_addf(polite__qargs *a, const char *fmt, ...) {
  char *s = NULL;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  own(a, n < 0 ? NULL : s, n < 0 ? 0 : (size_t)n);
}

void polite__qargs_init(polite__qargs *a, polite_queue *q, const char *op,
                        const char *worker) {
  memset(a, 0, sizeof *a);
  polite__qargs_add(a, "EVALSHA", 7);
  /* The SHA-1 lives in the connection and is filled in when it connects;
   * the same script always has the same one. */
  polite__qargs_add(a, polite__rconn_sha(q->c), 40);
  polite__qargs_add(a, "6", 1);
  for (int k = 0; k < QK_COUNT; k++)
    polite__qargs_add(a, q->key[k], strlen(q->key[k]));
  polite__qargs_add(a, op, strlen(op));
  polite__qargs_add(a, worker, strlen(worker));
  a->bytes = 0;
}

void polite__qargs_free(polite__qargs *a) {
  for (size_t i = 0; i < a->nowned; i++)
    free(a->owned[i]);
  free(a->owned);
  free(a->v);
  free(a->len);
  memset(a, 0, sizeof *a);
}

polite__rcmd polite__qargs_cmd(const polite__qargs *a) {
  polite__rcmd c = {(int)a->n, a->v, a->len};
  return c;
}

/* ---- calls ------------------------------------------------------------------
 */

int polite__queue_exec(polite_queue *q, size_t n, const polite__rcmd *cmds,
                       redisReply **rep) {
  q->commands += n;
  if (polite__rconn_exec(q->c, n, cmds, rep) == 0)
    return 0;
  /* The connection's message already names the URI. */
  snprintf(q->errstr, sizeof q->errstr, "queue %s", polite__rconn_errstr(q->c));
  return POLITE_EIO;
}

int polite__queue_expect(polite_queue *q, const redisReply *r, int type,
                         const char *what) {
  if (r != NULL && r->type == type)
    return 0;
  if (r != NULL && r->type == REDIS_REPLY_ERROR)
    polite__queue_errf(q, "%s: the server refused: %.120s", what, r->str);
  else
    polite__queue_errf(q, "%s: unexpected reply from the script", what);
  return POLITE_EIO;
}

const char *polite__reply_str(const redisReply *r, char *buf, size_t len) {
  if (r == NULL)
    return NULL;
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
    return r->str;
  if (r->type == REDIS_REPLY_INTEGER && buf != NULL) {
    snprintf(buf, len, "%lld", r->integer);
    return buf;
  }
  return NULL;
}

long long polite__reply_int(const redisReply *r) {
  if (r == NULL)
    return -1;
  if (r->type == REDIS_REPLY_INTEGER)
    return r->integer >= 0 ? r->integer : -1;
  if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len > 18)
    return -1;
  long long v = 0;
  for (size_t i = 0; i < r->len; i++) {
    if (r->str[i] < '0' || r->str[i] > '9')
      return -1;
    v = v * 10 + (r->str[i] - '0');
  }
  return v;
}

/* ---- open and close --------------------------------------------------------
 */

int polite_queue_open(const char *uri, polite_queue **out, char *err,
                      size_t errlen) {
  *out = NULL;
  if (err && errlen)
    err[0] = '\0';
  polite_queue *q = calloc(1, sizeof *q);
  if (q == NULL)
    return POLITE_ENOMEM;
  char why[300];
  int rc = polite__redis_uri_parse(uri, &q->u, why, sizeof why);
  if (rc != 0) {
    if (err && errlen)
      snprintf(err, errlen, "queue %s", why[0] ? why : "out of memory");
    free(q);
    return rc;
  }
  static const char *const suffix[QK_COUNT] = {"work", "results", "dead",
                                               "ids",  "done",    "meta"};
  /* The first {...} is the Cluster hash tag: every key of a queue lives in
   * one slot, so one script may touch them all. */
  for (int k = 0; k < QK_COUNT; k++)
    snprintf(q->key[k], sizeof q->key[k], "polite:queue:{%s}:%s", q->u.name,
             suffix[k]);
  q->c = polite__rconn_new(&q->u, QUEUE_SCRIPT);
  if (q->c == NULL) {
    polite_queue_close(q);
    return POLITE_ENOMEM;
  }
  if (polite__rconn_connect(q->c) != 0) {
    if (err && errlen)
      snprintf(err, errlen, "queue %s", polite__rconn_errstr(q->c));
    polite_queue_close(q);
    return POLITE_EIO;
  }
  *out = q;
  return 0;
}

void polite_queue_close(polite_queue *q) {
  if (q == NULL)
    return;
  polite__rconn_free(q->c);
  polite__redis_uri_free(&q->u);
  free(q);
}

const char *polite_queue_errstr(const polite_queue *q) {
  return q->errstr;
}

const char *polite_queue_uri(const polite_queue *q) {
  return q->u.safe;
}

uint64_t polite_queue_round_trips(const polite_queue *q) {
  return polite__rconn_round_trips(q->c);
}

/* ---- push
 * -------------------------------------------------------------------- */

/* Sends the calls a[0..n) in one round trip and adds up their
 * {added, skipped} replies. */
static int push_flush(polite_queue *q, polite__qargs *a, size_t n,
                      polite_queue_push_stats *st) {
  polite__rcmd cmds[PUSH_CALLS];
  redisReply *rep[PUSH_CALLS];
  memset(cmds, 0, sizeof cmds);
  for (size_t i = 0; i < n; i++) {
    if (a[i].oom) {
      polite__queue_errf(q, "push: out of memory");
      return POLITE_EIO;
    }
    cmds[i] = polite__qargs_cmd(&a[i]);
  }
  if (polite__queue_exec(q, n, cmds, rep) != 0)
    return POLITE_EIO;
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (rc == 0 &&
        (rc = polite__queue_expect(q, rep[i], REDIS_REPLY_ARRAY, "push")) ==
            0 &&
        rep[i]->elements == 2) {
      st->added += (uint64_t)polite__reply_int(rep[i]->element[0]);
      st->skipped += (uint64_t)polite__reply_int(rep[i]->element[1]);
    }
    freeReplyObject(rep[i]);
  }
  return rc;
}

/* Adds one request to the call being built: id, line, line number, key. */
static int push_one(polite__qargs *a, polite_request *r, const char *line,
                    size_t len) {
  char key[POLITE_IDEMPOTENCY_KEY_SIZE];
  if (polite_request_stable_id(r) != 0 ||
      polite_idempotency_key(NULL, key) != 0)
    return -1;
  polite__qargs_dup(a, r->id, strlen(r->id));
  polite__qargs_dup(a, line, len);
  polite__qargs_addf(a, "%ld", r->line);
  polite__qargs_dup(a, key, strlen(key));
  return a->oom ? -1 : 0;
}

int polite_queue_push(polite_queue *q, FILE *in, polite_queue_push_stats *st,
                      void (*on_invalid)(void *ud, long line,
                                         const char *error),
                      void *ud) {
  memset(st, 0, sizeof *st);
  polite_input *pi = polite_input_open(in, NULL);
  polite__qargs a[PUSH_CALLS];
  size_t calls = 0, in_call = 0;
  int rc = pi ? 0 : POLITE_ENOMEM;
  memset(a, 0, sizeof a);
  while (rc == 0) {
    polite_request *r = NULL;
    int got = polite_input_next(pi, &r);
    if (got <= 0) {
      if (got < 0)
        polite__queue_errf(q, "push: cannot read the input: %s",
                           polite_strerror(got));
      rc = got;
      break;
    }
    st->lines++;
    size_t len = 0;
    const char *line = polite_input_line(pi, &len);
    if (r->error != NULL || line == NULL) {
      st->invalid++;
      if (on_invalid)
        on_invalid(ud, r->line, r->error ? r->error : "the line is too long");
      polite_request_free(r);
      continue;
    }
    if (in_call == 0)
      polite__qargs_init(&a[calls], q, "push", "");
    int bad = push_one(&a[calls], r, line, len);
    polite_request_free(r);
    if (bad) {
      polite__queue_errf(q, "push: out of memory");
      rc = POLITE_ENOMEM;
      break;
    }
    if (++in_call < PUSH_ENTRIES && a[calls].bytes < PUSH_BYTES)
      continue;
    in_call = 0;
    if (++calls == PUSH_CALLS) {
      rc = push_flush(q, a, calls, st);
      for (size_t i = 0; i < calls; i++)
        polite__qargs_free(&a[i]);
      calls = 0;
    }
  }
  calls += in_call > 0;
  if (rc == 0 && calls > 0)
    rc = push_flush(q, a, calls, st);
  for (size_t i = 0; i < PUSH_CALLS; i++)
    polite__qargs_free(&a[i]);
  polite_input_close(pi);
  return rc == 0 ? 0 : POLITE_EIO;
}

/* ---- status
 * -------------------------------------------------------------------- */

/* The consumers after the 9 counters: (name, in flight, idle) each. */
static int status_workers(const redisReply *r, polite_queue_status *st) {
  size_t n = (r->elements - 9) / 3;
  st->workers = n ? calloc(n, sizeof *st->workers) : NULL;
  if (n && st->workers == NULL)
    return POLITE_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    redisReply *const *e = r->element + 9 + 3 * i;
    const char *name = polite__reply_str(e[0], NULL, 0);
    long long inf = polite__reply_int(e[1]), idle = polite__reply_int(e[2]);
    if (name == NULL || inf < 0)
      continue;
    polite_queue_worker *w = &st->workers[st->n_workers++];
    snprintf(w->name, sizeof w->name, "%s", name);
    w->in_flight = (uint64_t)inf;
    w->idle_ms = idle;
  }
  return 0;
}

int polite__queue_status_parse(const redisReply *r, polite_queue_status *st) {
  memset(st, 0, sizeof *st);
  st->oldest_pending_ms = -1;
  if (r->type != REDIS_REPLY_ARRAY)
    return POLITE_EIO;
  if (r->elements >= 1 && polite__reply_int(r->element[0]) == 1 &&
      r->elements >= 9) {
    long long v[9];
    for (int i = 0; i < 9; i++)
      v[i] = polite__reply_int(r->element[i]);
    st->exists = 1;
    st->pushed = (uint64_t)(v[1] > 0 ? v[1] : 0);
    st->pending = (uint64_t)(v[2] > 0 ? v[2] : 0);
    st->in_flight = (uint64_t)(v[3] > 0 ? v[3] : 0);
    st->ok = (uint64_t)(v[4] > 0 ? v[4] : 0);
    st->failed = (uint64_t)(v[5] > 0 ? v[5] : 0);
    st->dead = (uint64_t)(v[6] > 0 ? v[6] : 0);
    /* -1 (none) is not a whole number to polite__reply_int either. */
    st->oldest_pending_ms = v[7];
    st->lease_ms = v[8] > 0 ? v[8] : 0;
    return status_workers(r, st);
  }
  return 0;
}

int polite_queue_status_get(polite_queue *q, polite_queue_status *st) {
  memset(st, 0, sizeof *st);
  st->oldest_pending_ms = -1;
  polite__qargs a;
  polite__qargs_init(&a, q, "status", "");
  polite__rcmd cmd = polite__qargs_cmd(&a);
  redisReply *r = NULL;
  int rc = a.oom ? POLITE_ENOMEM : polite__queue_exec(q, 1, &cmd, &r);
  if (rc == 0)
    rc = polite__queue_expect(q, r, REDIS_REPLY_ARRAY, "status");
  if (rc == 0)
    rc = polite__queue_status_parse(r, st);
  freeReplyObject(r);
  polite__qargs_free(&a);
  return rc;
}

void polite_queue_status_free(polite_queue_status *st) {
  free(st->workers);
  st->workers = NULL;
  st->n_workers = 0;
}

/* ---- results and dead letters ----------------------------------------------
 */

/* Calls fn for each entry of one XRANGE page; *last is the page's last id.
 * Returns the number of entries, or < 0 (fn's value negated, or EIO). */
static int results_page(polite_queue *q, const redisReply *r, char *last,
                        size_t lastlen,
                        int (*fn)(void *, const char *, const char *, size_t),
                        void *ud, int *stop) {
  for (size_t i = 0; i < r->elements; i++) {
    const redisReply *e = r->element[i];
    if (e->type != REDIS_REPLY_ARRAY || e->elements != 2 ||
        e->element[0]->type != REDIS_REPLY_STRING ||
        e->element[1]->type != REDIS_REPLY_ARRAY) {
      polite__queue_errf(q, "results: an entry is not what polite writes");
      return POLITE_EIO;
    }
    snprintf(last, lastlen, "%s", e->element[0]->str);
    const redisReply *f = e->element[1];
    const char *id = NULL, *line = NULL;
    size_t len = 0;
    for (size_t k = 0; k + 1 < f->elements; k += 2) {
      const char *name = polite__reply_str(f->element[k], NULL, 0);
      const redisReply *v = f->element[k + 1];
      if (name && v->type == REDIS_REPLY_STRING && strcmp(name, "id") == 0)
        id = v->str;
      if (name && v->type == REDIS_REPLY_STRING &&
          strcmp(name, "result") == 0) {
        line = v->str;
        len = v->len;
      }
    }
    if (id != NULL && line != NULL && (*stop = fn(ud, id, line, len)) != 0)
      return (int)i + 1;
  }
  return (int)r->elements;
}

int polite_queue_results(polite_queue *q,
                         int (*fn)(void *ud, const char *id, const char *line,
                                   size_t len),
                         void *ud) {
  char last[64] = "-", start[72];
  int stop = 0;
  for (;;) {
    snprintf(start, sizeof start, "%s%s", strcmp(last, "-") ? "(" : "", last);
    const char *argv[6] = {"XRANGE", q->key[QK_RESULTS], start, "+", "COUNT",
                           "256"};
    polite__rcmd cmd = {6, argv, NULL};
    redisReply *r = NULL;
    if (polite__queue_exec(q, 1, &cmd, &r) != 0)
      return POLITE_EIO;
    int n = polite__queue_expect(q, r, REDIS_REPLY_ARRAY, "results");
    if (n == 0)
      n = results_page(q, r, last, sizeof last, fn, ud, &stop);
    freeReplyObject(r);
    if (n < 0)
      return n;
    if (stop)
      return stop;
    if (n < RESULTS_PAGE)
      return 0;
  }
}

int polite_queue_retry_dead(polite_queue *q, uint64_t *moved) {
  *moved = 0;
  for (;;) {
    polite__qargs a;
    polite__qargs_init(&a, q, "retry", "");
    polite__qargs_addf(&a, "%d", RETRY_PAGE);
    polite__rcmd cmd = polite__qargs_cmd(&a);
    redisReply *r = NULL;
    int rc = a.oom ? POLITE_ENOMEM : polite__queue_exec(q, 1, &cmd, &r);
    if (rc == 0)
      rc = polite__queue_expect(q, r, REDIS_REPLY_ARRAY, "retry-dead");
    long long looked = 0;
    if (rc == 0 && r->elements == 2) {
      *moved += (uint64_t)polite__reply_int(r->element[0]);
      looked = polite__reply_int(r->element[1]);
    }
    freeReplyObject(r);
    polite__qargs_free(&a);
    if (rc != 0)
      return POLITE_EIO;
    if (looked <= 0)
      return 0;
  }
}
