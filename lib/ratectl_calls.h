/* polite ratectl calls: one learned-rate controller kept between the calls
 * of a polite_client (each call runs on a copy): merging the copies of
 * calls that ran at the same time, and not probing while no call ran.
 * Pure (no clock, no allocation). Internal. */
#ifndef POLITE_RATECTL_CALLS_H
#define POLITE_RATECTL_CALLS_H

#include <polite/ratectl.h>

/* Merges `other` into `into`, two copies of one controller that ran side by
 * side since they were copied (pure: no clock, no allocation). The state of
 * the copy that saw the latest cut (its own or one it adopted through a
 * budget; of equals, `other`) is kept whole, so a cut is never undone by a
 * copy that missed it; the measurement window (the starts and answers
 * rings) becomes the union of both, in time order, entries the copies
 * share counted once, the newest POLITE__RATECTL_RING kept; and the ramp's
 * clean rate is the higher of the two. */
void polite__ratectl_merge(polite_ratectl *into, const polite_ratectl *other);

/* Idle time beyond this, with no start, does not count towards a probe. */
#define POLITE__RATECTL_IDLE_US 1000000

/* Before a call takes its copy at now_us: time in which the client started
 * nothing (more than POLITE__RATECTL_IDLE_US after its last start or the
 * end of the server's pause) does not advance the probe, so a client idle
 * for a minute does not come back at many times the limit it found (the
 * probe curve grows with time, not with evidence; Linux's CUBIC shifts its
 * epoch over idle time the same way). Applies to probing after a cut and to
 * the climb from headers that stopped coming; slow start is already bound
 * to its answers. *accounted_us (0 at first) remembers up to when idle time
 * was taken out, so that calling it again takes out only the time since.
 */
void polite__ratectl_resume(polite_ratectl *c, int64_t *accounted_us,
                            int64_t now_us);

#endif
