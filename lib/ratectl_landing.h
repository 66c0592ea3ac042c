/* Slow start's landing on a leaky bucket (lib/ratectl_landing.c): the
 * first cut's rate when the answers so far bound the bucket. Internal to
 * libpolite. */
#ifndef POLITE_RATECTL_LANDING_H
#define POLITE_RATECTL_LANDING_H

#include <polite/ratectl.h>

/* Slow start's first cut, at now_us, over the requests started in
 * [from, now_us] (at least the limiter's window: ratectl.c, estimates):
 * the lowest rate at which a leaky bucket of the one whole depth that
 * explains their answers does, and at least `got`, what got through over
 * that window (-1: unknown). Returns it when it is below `usual`, the
 * landing the upper estimate `hi` gives; else -1 (the usual landing
 * stands). Alone only: another participant's starts fill the bucket
 * unseen. Pure. */
double polite__rc_ss_landing(const polite_ratectl *c, int64_t from,
                             int64_t now_us, double hi, double got,
                             double usual);

#endif
