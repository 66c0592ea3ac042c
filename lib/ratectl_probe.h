/* The learned rate's probe after a landing (lib/ratectl_probe.c): the
 * curve above the plateau, and the evidence that the limit moved up that
 * makes it climb fast. Internal to libpolite. */
#ifndef POLITE_RATECTL_PROBE_H
#define POLITE_RATECTL_PROBE_H

#include <polite/ratectl.h>

/* The probing curve around the plateau, y seconds after the epoch, at
 * t_us (the clock, or the end of the server's pause when later): CUBIC's
 * concave approach, the hold, the slow probe, and the fast climb once
 * polite__rc_probe_on_answer saw the limit moved. */
double polite__rc_probe_curve(const polite_ratectl *c, double y, int64_t t_us);
/* An answer at now_us: when the slow probe is past the limit and what got
 * through over the evidence window is too, the limit moved up; the fast
 * climb starts (sets probe_fast_us and probe_fast_rate). */
void polite__rc_probe_on_answer(polite_ratectl *c, int64_t now_us);

/* A refusal that names no wait at now, of a request started at
 * started_us: the second in a row holds the account (the streak's hold). */
void polite__rc_hold_streak(polite_ratectl *c, int64_t now, int64_t started_us);

/* The budget's state at an admission: its ceiling (the account's memory
 * of a rate that got through), when finite and within bounds of its rate
 * and limit, raises shared_ceiling. */
void polite__rc_probe_on_shared(polite_ratectl *c, const polite_shared_rate *s);

#endif
