/* Slow start's landing on a leaky bucket (see ratectl_landing.h). Pure,
 * like the controller; the rule is in docs/decisions.md ("slow start's cut
 * on a bucket whose depth the ramp shows"). */
#include "ratectl_landing.h"

#include "ratectl_measure.h"

/* The lower end of the rates searched, as a share of the upper estimate:
 * the same as the lower estimate's floor in ratectl.c (LO_FLOOR). */
#define SEARCH_FLOOR 0.5
/* The shallowest depth that says anything about slow start's first
 * refusal: see polite__rc_ss_landing. */
#define MIN_DEPTH 2

/* Slow start's upper estimate is what got through over its last 350 ms
 * (ratectl.c, estimates), and a leaky bucket's depth inflates it: over a
 * span T a bucket of rate L and depth B admits up to L x T + B, so that
 * 8 in flight against nginx 20/s burst 1 with instant answers measured
 * 27.3/s and landed at 24.5/s, above the limit, which cost a second pause
 * 1.4 s later (sim ho-gw-sdk-short, 1.29 x the floor; the gateway's
 * OpenAI Node SDK row for real, 1.27 x). The same answers bound the
 * bucket (polite__rc_bucket_range): the rates that explain them with one
 * whole depth form a range, and the lower end of that range is below the
 * limit whichever rate in it the bucket has. Not a depth of 1: a strict
 * limiter at about the rate of the last starts explains the first refusal
 * of any ramp that accelerates (its gaps shrink, the refused one is the
 * shortest), so it tells nothing (three real series of that row fitted a
 * depth of 1 at 29-30/s, and 2, the bucket's, at 18.8-21.1/s). The rates
 * searched reach up to the rate that tripped (the bucket's is below it)
 * even when the upper estimate is lower. Never below what got through
 * over the long window: the limiter admitted that much. */
double polite__rc_ss_landing(const polite_ratectl *c, int64_t from,
                             int64_t now_us, double hi, double got,
                             double usual) {
  if (c->others || !(hi > 0))
    return -1;
  double top = polite__rc_rate_at_start(c, c->cut_from_us), low = -1;
  if (!(top > hi))
    top = hi;
  if (polite__rc_bucket_range(c, from, now_us, SEARCH_FLOOR * hi, top,
                              MIN_DEPTH, &low) <= 0 ||
      !(low > 0))
    return -1;
  if (got > low)
    low = got;
  return low < usual ? low : -1;
}
