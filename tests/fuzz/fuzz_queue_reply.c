/* libFuzzer target: what a worker and `polite queue status` make of the
 * replies of the queue's script (lib/queue_cycle.c, lib/queue.c), on
 * bytes read by the connection's bounded reader (lib/redis_conn.c) as from
 * a hostile server: no crash, no leak, no huge allocation, every entry
 * taken has its strings, and the counts add up. */
#include "queue_worker.h"

#include <hiredis/hiredis.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void take(const redisReply *rep) {
  polite_queue_run *r = calloc(1, sizeof *r);
  if (r == NULL)
    return;
  r->wo.window = 64;
  r->lease_us = 30000000;
  r->renew_us = r->lease_us / 3;
  r->hcap = 129;
  r->hash = calloc(r->hcap, sizeof *r->hash);
  snprintf(r->cursor, sizeof r->cursor, "0-0");
  if (r->hash == NULL) {
    free(r);
    return;
  }
  size_t n = polite__queue_take_reply(r, rep, 0);
  if (n != r->nheld || n != r->st.taken || r->renew_us <= 0)
    abort();
  size_t k = 0;
  for (qentry *e = r->in_head; e; e = e->fnext, k++)
    if (e->sid == NULL || e->id == NULL || e->line == NULL || e->key == NULL ||
        strlen(e->line) > e->line_len || e->deliveries < 1)
      abort();
  if (k != n || strlen(r->cursor) >= sizeof r->cursor)
    abort();
  while (r->held)
    polite__queue_entry_free(r, r->held);
  free(r->hash);
  free(r);
}

static void status(const redisReply *rep) {
  polite_queue_status st;
  if (polite__queue_status_parse(rep, &st) == 0) {
    if (st.n_workers && st.workers == NULL)
      abort();
    for (size_t i = 0; i < st.n_workers; i++)
      if (memchr(st.workers[i].name, '\0', sizeof st.workers[i].name) == NULL)
        abort();
  }
  polite_queue_status_free(&st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  redisReader *rd = polite__rconn_reader();
  if (rd == NULL)
    return 0;
  redisReaderFeed(rd, (const char *)data, size);
  void *reply = NULL;
  for (int i = 0;
       i < 4 && redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL;
       i++) {
    take(reply);
    status(reply);
    freeReplyObject(reply);
    reply = NULL;
  }
  redisReaderFree(rd);
  return 0;
}
