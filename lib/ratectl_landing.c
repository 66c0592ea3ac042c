/* Slow start's landing on a leaky bucket (see ratectl_landing.h). Pure,
 * like the controller; the rule is in docs/decisions.md ("Slow start lands
 * at the bottom of the bucket's whole-depth range"). */
#include "ratectl_landing.h"

#include "ratectl_measure.h"

/* The lower end of the rates searched, as a share of the upper estimate:
 * the same as the lower estimate's floor in ratectl.c (LO_FLOOR). */
#define SEARCH_FLOOR 0.5

/* Slow start's upper estimate is what got through over its last 350 ms
 * (ratectl.c, estimates), and a leaky bucket's depth inflates it: over a
 * span T a bucket of rate L and depth B admits up to L x T + B, so that
 * 8 in flight against nginx 20/s burst 1 with instant answers measured
 * 27.3/s and landed at 24.5/s, above the limit, which cost a second pause
 * 1.4 s later (sim ho-gw-sdk-short, 1.29 x the floor; the gateway's
 * OpenAI Node SDK row for real, 1.27 x). The same answers bound the
 * bucket (polite__rc_bucket_fit): the rates that explain them with one
 * whole depth form a range, and the limit of such a bucket is in it; its
 * lower end is the landing that is below the limit whatever rate in the
 * range the bucket has. Never below what got through over the long
 * window: the limiter admitted that much (a limit shared with another
 * caller's bursts fits a lower rate than it has). */
double polite__rc_ss_landing(const polite_ratectl *c, int64_t from,
                             int64_t now_us, double hi, double got,
                             double usual) {
  if (c->others || !(hi > 0))
    return -1;
  double low = -1;
  if (polite__rc_bucket_fit(c, from, now_us, SEARCH_FLOOR * hi, hi, &low) <= 0 ||
      !(low > 0))
    return -1;
  if (got > low)
    low = got;
  return low < usual ? low : -1;
}
