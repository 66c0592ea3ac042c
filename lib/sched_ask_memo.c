/* polite scheduler: within one turn, what the budget answered a blocked
 * account, so that the host lookahead does not ask again for each of its
 * waiting requests (issue #22: 1,000 waiting on one host cost 64 budget
 * acquires per start). */
#include "sched_internal.h"

#include <stdlib.h>
#include <string.h>

void polite__sched_memo_clear(polite__sched *s) {
  for (unsigned i = 0; i < s->n_memo; i++)
    free(s->memo[i].key);
  s->n_memo = 0;
}

/* A wait that ends at a known time (a rate's next slot, a pause's end, the
 * learned rate's): kept as that end, so an ask at another moment gets the
 * wait from that moment. A slot's wait is a poll hint, kept as it is. */
static int timed(int got, int rc) {
  return got == POLITE__ASK_LEARNED ||
         (got == POLITE__ASK_BUDGET &&
          (rc == POLITE_BUDGET_WAIT_RATE || rc == POLITE_BUDGET_WAIT_PAUSE));
}

int polite__sched_memo_get(polite__sched *s, job *j, int64_t at, int64_t now,
                           unsigned cost, int64_t *w, int *rc) {
  for (unsigned i = 0; i < s->n_memo; i++) {
    const polite__ask_memo *m = &s->memo[i];
    /* A submitted request's account says it without comparing keys (no
     * account is made or freed while a turn admits). */
    if (m->cost != cost ||
        (m->acct && j->acct ? m->acct != j->acct
                            : !polite__sched_same_key(m->key, j->key)))
      continue;
    int64_t wait = timed(m->got, m->rc) ? m->end - at : m->end;
    if (timed(m->got, m->rc) && m->end <= now)
      return -1; /* over by now: ask (it may admit) */
    /* What polite__sched_ask leaves on the job. */
    if (j->rate == NULL)
      j->rate = m->rate;
    if (j->acct && j->rate)
      j->acct->rate = j->rate;
    *w = wait;
    *rc = m->rc;
    return m->got;
  }
  return -1;
}

void polite__sched_memo_put(polite__sched *s, const job *j, int64_t at,
                            unsigned cost, int got, int rc, int64_t w) {
  if (got == POLITE__ASK_BUDGET && rc == POLITE_BUDGET_ADMITTED) {
    /* A start changes what the budget holds (a slot shared by the
     * accounts, the learned rate): what it said before may no longer
     * hold. */
    polite__sched_memo_clear(s);
    return;
  }
  if (rc < 0 || s->n_memo == POLITE__ASK_MEMO_N)
    return;
  polite__ask_memo *m = &s->memo[s->n_memo];
  m->key = NULL;
  if (j->key && (m->key = strdup(j->key)) == NULL)
    return;
  m->cost = cost;
  m->got = got;
  m->rc = rc;
  m->end = timed(got, rc) ? at + w : w;
  m->rate = j->rate;
  m->acct = j->acct;
  s->n_memo++;
}
