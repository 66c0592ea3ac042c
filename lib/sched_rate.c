/* polite scheduler: the seam for a rate controller. Every attempt start and
 * every response of the run passes through these two functions, and the
 * admission rate is read from the budget at every admission, so a
 * controller hooked in here observes everything and changes the rate for
 * the next start. */
#include "sched_internal.h"

void polite__sched_observe_start(polite__sched *s, const job *j, int64_t now) {
  (void)s, (void)j, (void)now;
}

void polite__sched_observe_response(polite__sched *s, const job *j,
                                    const polite__response *r,
                                    const polite_decision *d,
                                    int64_t latency_us, int64_t now) {
  (void)s, (void)j, (void)r, (void)d, (void)latency_us, (void)now;
}
