/* polite budget, Redis backend: the learned window's conversion between a
 * client's monotonic clock and Redis TIME (see budget_redis_window.h). The
 * window is stored in Redis TIME, as the pause and the TAT are, since the
 * hosts sharing one Redis share no clock; each time crosses the edge as a
 * duration from the call's now (the script adds Redis's now), the round
 * trip's latency its only error. */
#define _GNU_SOURCE
#include "budget_redis_window.h"
#include "budget_backends.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One time of *w for the script: the stored one exactly when it is the
 * one this client was given, else a duration from now. */
static void time_arg(char *out, size_t len, int64_t t, int64_t seen,
                     int64_t srv, int64_t now_us) {
  if (t == 0)
    snprintf(out, len, "0");
  else if (srv != 0 && t == seen)
    snprintf(out, len, "@%lld", (long long)srv);
  else
    snprintf(out, len, "~%lld", (long long)(t - now_us));
}

void polite__rw_args(const polite__rw_memo *m, const polite_shared_window *w,
                     int64_t now_us, char num[6][40]) {
  const polite_shared_window *s = &m->win;
  time_arg(num[0], 40, w->open_us, s->open_us, m->srv_open, now_us);
  snprintf(num[1], 40, "%llu", (unsigned long long)w->open_n);
  snprintf(num[2], 40, "%lld", (long long)w->period_us);
  time_arg(num[3], 40, w->next_us, s->next_us, m->srv_next, now_us);
  /* a retraction names an opening: the stored one, or this one's own */
  int64_t rs = w->retract_us == s->open_us ? m->srv_open : m->srv_retract;
  int64_t rseen = w->retract_us == s->open_us ? s->open_us : s->retract_us;
  time_arg(num[4], 40, w->retract_us, rseen, rs, now_us);
  snprintf(num[5], 40, "%u", w->quota);
}

static int64_t str_us(const redisReply *e) {
  if (e->type == REDIS_REPLY_INTEGER)
    return e->integer;
  return e->type == REDIS_REPLY_STRING ? strtoll(e->str, NULL, 10) : 0;
}

/* A stored time as a monotonic one: kept when it did not change. */
static int64_t mono_of(int64_t srv, int64_t old_srv, int64_t old_mono,
                       int64_t srv_now, int64_t now_us) {
  if (srv == 0)
    return 0;
  return srv == old_srv && old_mono != 0 ? old_mono : now_us + (srv - srv_now);
}

int polite__rw_reply(polite__rw_memo *m, const redisReply *r, int64_t now_us,
                     int admitted) {
  if (r->elements < 14)
    return 0;
  for (size_t i = 6; i < 14; i++)
    if (r->element[i]->type != REDIS_REPLY_INTEGER &&
        r->element[i]->type != REDIS_REPLY_STRING)
      return 0;
  int64_t n = str_us(r->element[6]), srv_now = str_us(r->element[7]);
  if (admitted && n > 0)
    m->admits = (uint64_t)n;
  int64_t so = str_us(r->element[8]), sx = str_us(r->element[11]);
  int64_t sr = str_us(r->element[12]);
  int64_t q = str_us(r->element[13]), on = str_us(r->element[9]);
  int64_t p = str_us(r->element[10]);
  polite_shared_window w = {0, 0, 0, 0, 0, 0};
  if (q > 0 && q <= UINT32_MAX && on >= 0 && p >= 0) {
    w.open_us = mono_of(so, m->srv_open, m->win.open_us, srv_now, now_us);
    w.open_n = (uint64_t)on;
    w.period_us = p;
    w.next_us = mono_of(sx, m->srv_next, m->win.next_us, srv_now, now_us);
    w.retract_us =
        mono_of(sr, m->srv_retract, m->win.retract_us, srv_now, now_us);
    w.quota = (unsigned)q;
  } else {
    so = sx = sr = 0;
  }
  m->win = w;
  m->srv_open = so;
  m->srv_next = sx;
  m->srv_retract = sr;
  m->seen = 1;
  return 1;
}

/* Errors after which the connection is useless (the server went away, or
 * a failover turned it into a replica / it is loading its data). */
int polite__rw_fatal(const redisReply *r) {
  return strncmp(r->str, "READONLY", 8) == 0 ||
         strncmp(r->str, "LOADING", 7) == 0 ||
         strncmp(r->str, "MASTERDOWN", 10) == 0 ||
         strncmp(r->str, "CLUSTERDOWN", 11) == 0;
}

/* The learned rate in elements 2-5 of a reply, when there. A ceiling
 * that is not a number from 0 to 10^9/s is read as none (the Redis key may
 * hold anything a foreign writer put there). */
int polite__rw_rate(const redisReply *r, polite_shared_rate *sr) {
  if (r->elements < 6 || r->element[2]->type != REDIS_REPLY_STRING ||
      r->element[3]->type != REDIS_REPLY_STRING ||
      r->element[4]->type != REDIS_REPLY_INTEGER ||
      r->element[5]->type != REDIS_REPLY_STRING)
    return 0;
  sr->rate_per_s = strtod(r->element[2]->str, NULL);
  sr->limit_per_s = strtod(r->element[3]->str, NULL);
  sr->generation = (uint64_t)r->element[4]->integer;
  double k = strtod(r->element[5]->str, NULL);
  sr->ceiling_per_s = k >= 0 && k <= POLITE__BUDGET_RATE_MAX ? k : 0;
  return sr->rate_per_s >= 0 && sr->limit_per_s >= 0;
}
