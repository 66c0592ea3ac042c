/* polite ratectl merge: folds two copies of one learned-rate controller
 * into one (polite_client's calls each run on a copy). Internal. */
#ifndef POLITE_RATECTL_MERGE_H
#define POLITE_RATECTL_MERGE_H

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

#endif
