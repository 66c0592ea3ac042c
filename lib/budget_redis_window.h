/* polite budget, Redis backend: the account's count of admissions and its
 * learned window (polite_shared_window) as this client last saw them, and
 * their conversion between this process's monotonic clock and Redis TIME;
 * the other parts of a reply read on their own (internal;
 * lib/budget_redis.c is the only user). */
#ifndef POLITE_BUDGET_REDIS_WINDOW_H
#define POLITE_BUDGET_REDIS_WINDOW_H

#include <polite/budget.h>

#include <hiredis/hiredis.h>

#include <stdint.h>

/* The window of the last reply that carried one: `win` in this process's
 * monotonic microseconds, `srv_*` the same times in Redis TIME as stored.
 * A stored time that did not change keeps its monotonic value (each reply
 * would otherwise move it by the round trip's jitter), and a time offered
 * back that equals one of them is sent as the stored one, exactly. */
typedef struct {
  polite_shared_window win;
  int64_t srv_open, srv_next, srv_retract;
  uint64_t admits; /* the account's admissions after this one's last */
  int seen;        /* a reply carried the window */
} polite__rw_memo;

/* The six window arguments of the script's "win" op into num: a time as
 * "@T" (Redis TIME), "~D" (D microseconds after the script's now) or "0"
 * (none), then open_n, period_us, quota. */
void polite__rw_args(const polite__rw_memo *m, const polite_shared_window *w,
                     int64_t now_us, char num[6][40]);

/* Takes the window of a reply (elements 6-13, after the common six: the
 * count, Redis's now, then open, open_n, period, next, retract, quota) as
 * seen at now_us; `admitted`: the reply admitted a start that charged rate
 * units (its count is then this participant's). Returns 1 when the reply
 * had them. */
int polite__rw_reply(polite__rw_memo *m, const redisReply *r, int64_t now_us,
                     int admitted);

/* Errors after which the connection is useless (the server went away, or
 * a failover turned it into a replica / it is loading its data). */
int polite__rw_fatal(const redisReply *r);
/* The learned rate in elements 2-5 of a reply (the ceiling bounded), when
 * there. */
int polite__rw_rate(const redisReply *r, polite_shared_rate *sr);

#endif
