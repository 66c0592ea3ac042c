/* The learned-rate controller's reading of the server's window and its
 * plans (see ratectl_measure.h): where a window ends as the answers place
 * it, and a plan taken as the rate. Pure, like the controller. */
#include "ratectl_measure.h"

#include <limits.h>

#include "rateplan.h"

#define HEADER_FRESH_US 5000000 /* a plan rules this long after its answer */
/* A streak's refusals that lasted this long were probed at the streak's
 * longest hold (8 s, ratectl_probe.c STREAK_MAX_US) more than once. */
#define SPAN_HOLD_MIN_US 16000000

static int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* ---- The server's window, as the answers place it
 *
 * Servers state the reset in whole seconds, rounded up (express-rate-limit,
 * X-RateLimit-Reset as an epoch second): one answer's reset t is up to a
 * second late, and spreading over it wastes up to 1 / w of every window
 * (measured against express-rate-limit at 20 per 2 s: 1.36 x the floor).
 * The limiter computed t when the request arrived, just after it started,
 * so each answer says the window ends about started + t (now + t for a
 * reset sent as a time, which the client made a delta); the earliest of
 * those in one window is the sharpest (the first answer of a window
 * anchored at its first request gives it to the millisecond).
 *
 * Which answers are of one window: what remains only falls within a window
 * and jumps up at a new one, so an answer with more remaining than the last
 * one opens a new window (a refill of a token bucket or a sliding window
 * does too, which only forgets the sharper end). An answer whose request
 * started before the current window's first is of an earlier window: its
 * remaining and reset are ignored.
 *
 * Why this is safe: spreading what remains over a shorter time than the
 * truth can only send those r sooner, never more of them (what remains is
 * what the server accepts now), and the policy's average still caps the
 * rate. When the sharp end has passed but an answer of the same window
 * says some remain (the end was placed a few ms early: the request that
 * placed it arrived a little after it started), pacing at the policy's
 * average cannot exhaust a window anchored at the client's first request,
 * and its answers, less the requests in flight, stop it at r = 0. */

/* Places one answer's pair in the window: returns -1 for an answer of an
 * earlier window (ignore it), else the time left to the window's end
 * (<= 0: the sharp end has passed), or INT64_MAX when the answers say
 * nothing sharper than this answer's own reset. */
static int64_t window_left(polite_ratectl *c, int64_t now_us,
                           int64_t started_us, const polite_rate_plan *p) {
  if (p->remaining < 0 || p->reset_us <= 0)
    return INT64_MAX;
  if (c->win_end_us > 0 && started_us < c->win_start_us)
    return -1;
  int64_t end = (p->reset_absolute ? now_us : started_us) + p->reset_us;
  if (c->win_end_us == 0 || p->remaining > c->win_remaining) {
    c->win_start_us = started_us;
    c->win_end_us = end;
  } else if (end < c->win_end_us) {
    c->win_end_us = end;
  }
  c->win_remaining = p->remaining;
  int64_t left = c->win_end_us - now_us;
  return left < p->reset_us ? left : INT64_MAX;
}

/* The rate of a SPREAD plan: what remains over the time left to the
 * window's end, capped by the policy's average (see above). */
static double spread_rate(int64_t left, const polite_rate_plan *p) {
  if (left == INT64_MAX)
    return p->rate_per_s;
  if (left <= 0)
    return p->average_per_s > 0 ? p->average_per_s : p->rate_per_s;
  double r = 1e6 / (double)polite__plan_interval_us((double)left,
                                                    (double)p->remaining);
  if (p->average_per_s > 0 && r > p->average_per_s)
    r = p->average_per_s;
  return r > p->rate_per_s ? r : p->rate_per_s;
}

/* The hold of a WAIT_RESET plan: the window's sharp end with the
 * planner's margin when it is ahead; none when it has passed (the answer
 * was about the window that just ended: its "reset 1" may mean 3 ms, and
 * waiting it out would idle a whole second; if the window is in fact still
 * open a few ms longer, the server's 429 and Retry-After say so); the
 * plan's own when the answers place no end. */
static int64_t reset_hold(int64_t now_us, int64_t left,
                          const polite_rate_plan *p) {
  if (left == INT64_MAX)
    return p->not_before_us;
  if (left <= 0)
    return 0;
  int64_t sharp = now_us + polite__plan_interval_us((double)left, 1.0);
  return sharp < p->not_before_us ? sharp : p->not_before_us;
}

/* A plan with a rate rules while answers keep bringing one; a lower rate
 * than the current one is a cut the other participants must follow. */
polite_ratectl_cause polite__rc_take_plan(polite_ratectl *c, int64_t now_us,
                                          int64_t started_us,
                                          const polite_rate_plan *p) {
  polite_ratectl_cause made = POLITE_CUT_NONE;
  int64_t left = INT64_MAX;
  if (p->reason == POLITE_PLAN_SPREAD || p->reason == POLITE_PLAN_WAIT_RESET)
    left = window_left(c, now_us, started_us, p);
  if (left == -1)
    return made; /* an answer of an earlier window */
  double planned = p->reason == POLITE_PLAN_SPREAD && p->remaining > 0
                       ? spread_rate(left, p)
                       : p->rate_per_s;
  if (planned > 0) {
    /* A cut is of what the account is paced at: with a shared budget that
     * is the budget's rate, which may be below this participant's own,
     * not yet published one (its slow start above the first estimate). A
     * plan above the budget's rate is a raise; published as a cut, the
     * budget's merge would keep the lower rate and start a generation
     * every participant then holds at (4/s for 30 s against 5/s). */
    double cur = polite_ratectl_rate(c, now_us);
    if (c->shared_seen > 0 && c->shared_seen < cur)
      cur = c->shared_seen;
    c->header_rate = planned;
    c->header_until_us = now_us + HEADER_FRESH_US;
    if (c->phase != POLITE_RC_PROBE)
      c->phase = POLITE_RC_HEADERS;
    if (planned < cur / POLITE__RC_PUBLISH_STEP) {
      c->pending_cut = 1;
      c->limit = planned;
      polite__rc_count_cut(c, POLITE_CUT_HEADERS, now_us);
      made = POLITE_CUT_HEADERS;
      /* No hold: pacing at the lower rate from the last start already
       * spreads what remains (its r-th start comes t after the last one,
       * before the reset). A hold of one interval from the answer would
       * add the answer's latency to every gap (at 100 ms latency and
       * 10/s: one start every ~210 ms). */
    }
  }
  if (p->reason == POLITE_PLAN_WAIT_RESET) {
    /* Nothing remains: wait for the window's end, as sharp as the answers
     * place it (a reset of "1" may mean 18 ms). */
    c->hold_until_us = imax(c->hold_until_us, reset_hold(now_us, left, p));
  } else if (p->reason == POLITE_PLAN_WAIT_SERVER) {
    c->hold_until_us = imax(c->hold_until_us, p->not_before_us);
  }
  return made;
}

/* ---- A window without a wait
 *
 * A fixed window that names no wait (no headers, no Retry-After: the
 * express-rate-limit default) admits its quota and then refuses every
 * request until the window ends, whatever the rate. Its refusals come in
 * streaks that outlast a hold (polite__rc_hold_streak in ratectl_probe.c: a
 * leaky bucket's do not, it drains in the hold), and each streak ends at a
 * window's opening. Between two such openings the limiter admitted one quota,
 * counted up to the streak's first refusal, over one period. Once both are
 * known, the account starts at most the quota from each opening and holds
 * until the period is over: a whole quota at each window's start, as the
 * floor has it, and no refusal to learn that the window is spent (each
 * streak cost 3-5 x 429: the in-flight requests and each hold's probe).
 * The period errs long (a streak ends at the first probe after the
 * opening), so the openings it places lag the window's by the same error,
 * never lead it: no start before a window the count has not seen open. A
 * window anchored at its first request (express-rate-limit's memory
 * store) opens at the first start after the period, which is this one.
 * Alone only: another participant's starts spend the same quota unseen
 * (with others on the budget the count is not the account's), so with
 * others the streak holds as before. */

/* The hold after a window's quota: to the period's upper bound, or a
 * quarter of the way up from its lower bound (the last refused start of
 * the streak that placed it) while they are more than 1/50 apart. One
 * start probes there: admitted, it is the upper bound now and the
 * window's first start; refused (one 429, no cut), the bounds do not
 * hold and probing stops. Without it the anchored window kept the period
 * its streak placed, up to 1.8 x the window (1.76-1.89 x the floor on
 * three seeds of five). */
static int64_t period_try(const polite_ratectl *c) {
  int64_t lo = c->qw_lo_us, hi = c->qw_period_us;
  if (lo <= 0 || lo >= hi || (hi - lo) * 50 <= hi)
    return hi;
  return lo + (hi - lo) / 4;
}

/* The first start after `after` (the streak's last refused one), at most
 * `at`: a window's first admitted request, whose answer may come after a
 * later one's. */
static int64_t first_start_after(const polite_ratectl *c, int64_t after,
                                 int64_t at) {
  int64_t first = at;
  for (unsigned i = 0; i < c->st_n; i++) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->st_us[k] <= after)
      break;
    if (c->st_us[k] < first)
      first = c->st_us[k];
  }
  return first;
}

/* The window's counts are kept apart from the rings: a quota larger than
 * they hold (300 per 60 s against 256 answers) was never learned, and each
 * of its windows cost 9-12 refusals of the streak's 8 s probes (held-out
 * ho-fixed-60s, 45 x 429 in 1500). The opening is a recent start, still in
 * the ring, so its counts start from the ring's; from then on they count
 * every start and admitted answer themselves. */
/* The count the quota is held on: the account's starts when the budget
 * counts them (every participant's: one quota between them), else this
 * participant's own, this start included either way. */
static uint64_t count_now(const polite_ratectl *c) {
  return c->acct_starts > 0 ? c->acct_starts : c->starts;
}

/* The count before this participant's first start at or after t (the
 * current count when there is none in the ring). */
static uint64_t count_before(const polite_ratectl *c, int64_t t) {
  if (c->acct_starts == 0)
    return c->starts - polite_ratectl_started_after(c, t - 1);
  uint64_t n = c->acct_starts;
  for (unsigned i = 0; i < c->st_n; i++) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->st_us[k] < t)
      break;
    n = c->st_acct[k] > 0 ? c->st_acct[k] - 1 : 0;
  }
  return n;
}

void polite_ratectl_account_starts(polite_ratectl *c, uint64_t n) {
  if (c != NULL)
    c->acct_starts = n;
}

void polite_ratectl_take_window(const polite_ratectl *c,
                                polite_shared_window *w) {
  int on = c->acct_starts > 0 && c->qw_open_us > 0;
  w->quota = on ? c->qw_quota : 0;
  w->period_us = c->qw_period_us;
  w->open_us = c->qw_open_us;
  w->open_n = c->qw_open_n;
  w->next_us = c->qw_open_us + period_try(c);
  w->retract_us = c->qw_retract_us;
}

void polite_ratectl_on_window(polite_ratectl *c,
                              const polite_shared_window *w) {
  if (w->quota == 0 || c->acct_starts == 0)
    return;
  if (w->open_us > c->qw_open_us) {
    c->qw_prev_open_us = c->qw_open_us;
    c->qw_prev_open_n = c->qw_open_n;
    c->qw_prev_ok = c->qw_ok;
    c->qw_ok = 0;
    c->qw_probe = 0;
  }
  c->qw_open_us = w->open_us;
  c->qw_open_n = w->open_n;
  c->qw_quota = w->quota;
  c->qw_period_us = w->period_us;
  c->qw_next_us = w->next_us;
}

static void set_open(polite_ratectl *c, int64_t t) {
  c->qw_open_us = t;
  c->qw_open_n = count_before(c, t);
  int ok = polite__rc_admitted_count(c, t, INT64_MAX);
  c->qw_ok = ok > 0 ? (unsigned)ok : 0;
}

/* Back to the window before (a start taken for the next one's first was
 * refused: the old one is still open): its counts take the current's. */
static void reopen_prev(polite_ratectl *c) {
  c->qw_retract_us = c->qw_open_us; /* for the budget's copy too */
  c->qw_open_us = c->qw_prev_open_us;
  c->qw_open_n = c->qw_prev_open_n;
  c->qw_ok += c->qw_prev_ok;
}

/* What got through of the current window's starts before `to`: from the
 * ring while it holds them all, else the window's own count. */
static int window_admitted(const polite_ratectl *c, int64_t to) {
  if (c->acct_starts > 0) { /* the account's starts before `to` */
    uint64_t n = count_before(c, to);
    return n > c->qw_open_n ? (int)(n - c->qw_open_n) : 0;
  }
  int q = polite__rc_admitted_count(c, c->qw_open_us, to);
  return q >= 0 ? q : (int)c->qw_ok;
}

int polite__rc_quota_admitted(polite_ratectl *c, int64_t started_us) {
  if (c->qw_open_us > 0 && started_us >= c->qw_open_us &&
      !(c->streak > 0 && started_us >= c->streak_onset_us))
    c->qw_ok++; /* of the window's starts before its streak */
  if (!c->qw_probe || started_us != c->qw_open_us)
    return 0;
  /* The probe after a hold got through: the window was open, and the
   * hold the probe set (to the old upper bound) ends, so that the rest of
   * its quota may start. */
  int64_t p = started_us - c->qw_prev_open_us;
  if (c->hold_until_us == c->qw_prev_open_us + c->qw_period_us)
    c->hold_until_us = started_us;
  if (p < c->qw_period_us)
    c->qw_period_us = p;
  c->qw_probe = 0;
  return 1;
}

void polite__rc_quota_reopened(polite_ratectl *c, int64_t started_us) {
  if (c->qw_persist && c->qw_last_refused_us > c->streak_onset_us)
    c->qw_span_us = c->qw_last_refused_us - c->streak_onset_us;
  if (c->qw_open_us > 0 && started_us > c->qw_open_us &&
      (c->qw_persist || c->qw_quota > 0)) {
    int q = window_admitted(c, c->streak_onset_us);
    int64_t period = started_us - c->qw_open_us;
    int64_t closed = c->qw_last_refused_us - c->qw_open_us;
    if (c->qw_persist && q >= 3 && (unsigned)q > c->qw_quota)
      c->qw_quota = (unsigned)q;
    if (c->qw_persist && c->qw_quota > 0) {
      if (c->qw_period_us == 0 || period < c->qw_period_us)
        c->qw_period_us = period;
      if (c->qw_lo_us >= 0 && closed > c->qw_lo_us)
        c->qw_lo_us = closed;
      if (c->qw_lo_us >= c->qw_period_us)
        c->qw_lo_us = -1; /* the bounds disagree: a window that drifts */
    }
  }
  if (c->qw_persist || c->qw_quota > 0)
    set_open(c, first_start_after(c, c->qw_last_refused_us, started_us));
  c->qw_persist = 0;
  c->qw_probe = 0;
}

int polite__rc_quota_refused(polite_ratectl *c, int64_t started_us) {
  c->qw_last_refused_us = started_us;
  if (c->acct_starts > 0 && c->qw_quota > 0 && started_us >= c->qw_open_us &&
      started_us < c->qw_open_us + c->qw_period_us &&
      count_before(c, started_us) >= c->qw_open_n + c->qw_quota)
    return 1; /* past the account's quota: the window is spent, as known */
  if (c->qw_quota > 0 && !c->qw_probe && started_us == c->qw_open_us &&
      c->qw_prev_open_us > 0) {
    /* The first start after the period found the window closed: the
     * period is longer (a probe lowered it below the window's). */
    c->qw_period_us += c->qw_period_us / 10;
    c->qw_lo_us = -1;
    reopen_prev(c);
    return 1;
  }
  if (!c->qw_probe || started_us != c->qw_open_us) {
    /* Refused inside a learned window before its quota was started: the
     * quota is what got through of it. */
    if (c->qw_quota > 0 && started_us >= c->qw_open_us &&
        started_us < c->qw_open_us + c->qw_period_us) {
      int q = window_admitted(c, started_us);
      /* On the account's count a start refused early may be of a window
       * whose opening another participant placed late: half at most. */
      if (q >= 3 && (unsigned)q < c->qw_quota &&
          (c->acct_starts == 0 || 2 * (unsigned)q >= c->qw_quota))
        c->qw_quota = (unsigned)q;
    }
    return 0;
  }
  /* The probe found the window still closed: it is the last one's, and
   * the openings the answers place do not bound its period well (a window
   * at fixed times, whose openings lag its own by a varying time): no
   * more probes, each would cost a refusal. */
  c->qw_lo_us = -1;
  reopen_prev(c);
  c->qw_probe = 0;
  return 1;
}

/* A window that names no wait refuses about as long each time its quota
 * is spent (the rest of the window), and the last streak's last refused
 * start came before that window opened (the streak ends at the first
 * probe after the opening). So a streak that outlasts its first hold
 * holds on to as long after its first refusal as the last one refused:
 * the streak's doubling holds (up to 8 s) probed a 60 s window's dead time
 * every 8 s, 11 refusals in the window after the first (held-out
 * ho-fixed-60s). If the window opens later this time, the probe there is
 * refused and the doubling holds go on from it. */
void polite__rc_quota_span_hold(polite_ratectl *c, int64_t now_us) {
  if (c->qw_span_us < SPAN_HOLD_MIN_US || c->streak < 2 ||
      c->streak_from_us != now_us)
    return; /* short dead time, or no hold began at this refusal */
  int64_t until = c->streak_onset_us + c->qw_span_us;
  if (until <= c->hold_until_us)
    return;
  c->hold_until_us = until;
  c->qw_persist = 1; /* a hold the window outlasted: see span_learns */
  polite__rc_log_pause(c, now_us, until); /* not sending time */
}

void polite__rc_quota_on_start(polite_ratectl *c, int64_t now_us) {
  if (c->qw_quota == 0 || c->qw_open_us <= 0 ||
      (c->acct_starts == 0 && (c->others || c->qw_crowd)))
    return;
  int64_t end = c->qw_open_us + c->qw_period_us;
  int64_t try_end = c->qw_open_us + period_try(c);
  /* A participant that placed no bounds of its own (it adopted the
   * window) starts the next window where the budget's learner probes. */
  if (c->qw_lo_us == 0 && c->qw_next_us > c->qw_open_us &&
      c->qw_next_us < try_end)
    try_end = c->qw_next_us;
  if (now_us >= try_end) {
    /* The first start of the next window, or the probe for it. */
    c->qw_probe = now_us < end;
    c->qw_prev_open_us = c->qw_open_us;
    c->qw_prev_open_n = c->qw_open_n;
    c->qw_prev_ok = c->qw_ok;
    c->qw_open_us = now_us;
    c->qw_open_n = count_now(c) - 1; /* this start is the window's first */
    c->qw_ok = 0;
    if (c->qw_probe) /* nothing more until its answer says */
      c->hold_until_us = imax(c->hold_until_us, end);
    return;
  }
  if (count_now(c) - c->qw_open_n >= c->qw_quota)
    c->hold_until_us = imax(c->hold_until_us, try_end);
}
