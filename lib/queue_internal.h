/* polite queue: what lib/queue.c (the queue's commands) and
 * lib/queue_worker.c (a worker) share. Internal, not installed. */
#ifndef POLITE_QUEUE_INTERNAL_H
#define POLITE_QUEUE_INTERNAL_H

#include "redis_conn.h"
#include "redis_uri.h"

#include <polite/queue.h>

/* The keys of a queue, in the order the script takes them (KEYS[1..6]). */
enum { QK_WORK, QK_RESULTS, QK_DEAD, QK_IDS, QK_DONE, QK_META, QK_COUNT };

struct polite_queue {
  polite__redis_uri u;
  polite__rconn *c;
  char key[QK_COUNT][POLITE__REDIS_NAME_MAX + 32];
  char errstr[400];
  int attached;      /* a worker's thread uses the connection */
  uint64_t commands; /* sent by polite__queue_exec (script calls, ...) */
};

/* One script call's arguments: EVALSHA, the script's SHA-1, 6, the keys,
 * the operation and the worker, then the operation's own. Strings added
 * with polite__qargs_add are borrowed; with _addf/_dup they are owned. */
typedef struct {
  const char **v;
  size_t *len;
  size_t n, cap;
  char **owned;
  size_t nowned, owned_cap;
  size_t bytes; /* of the arguments, for batching by size */
  int oom;
} polite__qargs;

void polite__qargs_init(polite__qargs *a, polite_queue *q, const char *op,
                        const char *worker);
void polite__qargs_add(polite__qargs *a, const char *s, size_t len);
void polite__qargs_dup(polite__qargs *a, const char *s, size_t len);
void polite__qargs_addf(polite__qargs *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void polite__qargs_free(polite__qargs *a);
/* The command (valid while a lives). */
polite__rcmd polite__qargs_cmd(const polite__qargs *a);

/* Runs n commands in one round trip. An error reply of the script
 * (anything but a redirect, handled below it) is left in the replies.
 * Returns 0, or POLITE_EIO with q->errstr set ("queue 'URI': cause"). */
int polite__queue_exec(polite_queue *q, size_t n, const polite__rcmd *cmds,
                       redisReply **rep);

/* Checks that r is a reply of `type` (REDIS_REPLY_ARRAY, ...); otherwise
 * sets q->errstr naming `what` and the server's error, and returns
 * POLITE_EIO. */
int polite__queue_expect(polite_queue *q, const redisReply *r, int type,
                         const char *what);

/* "queue 'URI': " + fmt into q->errstr. */
void polite__queue_errf(polite_queue *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Fills st from the reply of the script's "status" (see queue_script.h);
 * elements of the wrong type count as 0. Returns 0, POLITE_EIO (not an
 * array) or POLITE_ENOMEM. */
int polite__queue_status_parse(const redisReply *r, polite_queue_status *st);

/* A reply element as a string (a bulk string, or an integer's digits in
 * buf), or NULL when it is neither. */
const char *polite__reply_str(const redisReply *r, char *buf, size_t len);
/* A reply element as a whole number (an integer, or a string of digits),
 * or -1. */
long long polite__reply_int(const redisReply *r);

#endif
