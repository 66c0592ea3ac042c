/* The planner's margin, shared by lib/rateplan.c (one answer's plan) and
 * lib/ratectl.c (a plan refined over a window's answers), so that both
 * stretch an interval the same way. Internal to libpolite. */
#ifndef POLITE_RATEPLAN_H
#define POLITE_RATEPLAN_H

#include <stdint.h>

/* period_us / count, stretched by POLITE_PLAN_MARGIN_PCT percent and
 * POLITE_PLAN_MARGIN_US, rounded up; at most about 9e15 us. */
int64_t polite__plan_interval_us(double period_us, double count);

#endif
