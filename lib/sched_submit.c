/* polite scheduler: requests handed in rather than pulled (the gateway's
 * clients, through polite/engine.h): submit, withdraw, the end of input and
 * a drain deadline. Pure, like the rest of the scheduler. */
#include "sched_internal.h"

#include <stdio.h>
#include <stdlib.h>

int polite__sched_submit(polite__sched *s, polite_request *r,
                         const polite__now *now) {
  if (r == NULL)
    return POLITE_EINVAL;
  if (s->input_done || s->cancelling || s->fatal || s->st.quota_stop ||
      s->run_deadline_hit)
    return POLITE_ECANCELED;
  int64_t t = now->mono_us;
  job *j = polite__sched_job_new(s, r);
  if (j == NULL)
    return POLITE_ENOMEM;
  /* From here on the request is the scheduler's: whatever happens to it
   * comes out through on_result. */
  s->st.read++;
  if ((j = polite__sched_job_begin(s, j, t)) == NULL)
    return 0;
  j->acct = polite__sched_acct_get(s, j->key);
  if (j->acct == NULL) {
    polite__sched_finish(s, j, POLITE_OUT_CANCELLED, 0,
                         "not queued: out of memory", t, NULL, NULL);
    return 0;
  }
  /* The client is waiting from now on: its deadline runs from here. */
  if (s->o.deadline_ms >= 0)
    j->deadline_us = t + s->o.deadline_ms * 1000;
  if (polite__sched_gate(s, j, t))
    return 0;
  if (polite__sched_wait_push(s, j, t) != 0)
    polite__sched_finish(s, j, POLITE_OUT_CANCELLED, 0, s->errstr, t, NULL,
                         NULL);
  return 0;
}

void polite__sched_close_input(polite__sched *s) {
  s->input_done = 1;
  s->st.input_done = 1;
}

void polite__sched_end_by(polite__sched *s, int64_t until,
                          const polite__now *now) {
  if (until < s->run_deadline_us)
    s->run_deadline_us = until;
  polite__sched_sweep_all(s, now->mono_us);
}

int polite__sched_withdraw(polite__sched *s, const polite_request *r,
                           const char *why, const polite__now *now) {
  int64_t t = now->mono_us;
  for (job *j = s->inflight; j; j = j->next) {
    if (j->req != r)
      continue;
    polite__sched_update_stats(s, t);
    if (s->io.abort)
      s->io.abort(s->io.ud, j);
    polite__sched_inflight_remove(s, j);
    polite_budget_release(s->o.budget, j->key, 1);
    polite__sched_finish(s, j, POLITE_OUT_CANCELLED, j->status, why, t, NULL,
                         NULL);
    return 0;
  }
  for (size_t i = 0; i < s->waiting.n; i++) {
    job *j = s->waiting.v[i].item;
    if (j->req != r)
      continue;
    (void)polite__heap_remove(&s->waiting, j);
    polite__sched_finish(s, j, POLITE_OUT_CANCELLED, j->status, why, t, NULL,
                         NULL);
    return 0;
  }
  return POLITE_EINVAL;
}
