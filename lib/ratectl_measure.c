/* The learned-rate controller's measurements (see ratectl_measure.h):
 * what the rings of starts and answers and the log of the server's pauses
 * say about the limit. Pure, like the controller. */
#include "ratectl_measure.h"

#include <limits.h>
#include <math.h>

static int64_t imax(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* The rate a request started at `at` was started at: the latest start
 * at or before it (the engine passes the same instant to both calls);
 * the current rate when it is older than the ring. */
double polite__rc_rate_at_start(const polite_ratectl *c, int64_t at) {
  for (unsigned i = 0; i < c->st_n; i++) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->st_us[k] <= at)
      return c->st_rate[k];
  }
  return polite_ratectl_rate(c, at);
}

/* Time in the server's pauses within [a, b). */
int64_t polite__rc_paused_within(const polite_ratectl *c, int64_t a,
                                 int64_t b) {
  int64_t t = 0;
  for (unsigned i = 0; i < POLITE__RATECTL_PAUSES; i++) {
    int64_t lo = imax(a, c->pause_log[i][0]);
    int64_t hi = c->pause_log[i][1] < b ? c->pause_log[i][1] : b;
    if (hi > lo)
      t += hi - lo;
  }
  return t;
}

/* Remembers the server's pause [from, until): extends the newest one when
 * they overlap (the echoes of one crossing), else starts a new one. */
void polite__rc_log_pause(polite_ratectl *c, int64_t from, int64_t until) {
  unsigned last =
      (c->pause_head + POLITE__RATECTL_PAUSES - 1) % POLITE__RATECTL_PAUSES;
  int64_t *p = c->pause_log[last];
  if (p[1] > p[0] && from <= p[1]) {
    if (until > p[1])
      p[1] = until;
    return;
  }
  c->pause_log[c->pause_head][0] = from;
  c->pause_log[c->pause_head][1] = until;
  c->pause_head = (c->pause_head + 1) % POLITE__RATECTL_PAUSES;
}

/* The account's starts over [a, b), outside the server's pauses: the rate
 * each start was made at, over the time to the next start (the account's
 * paced rate is piecewise constant between starts). Alone (no shared
 * budget), at most the starts made: slots, not the rate, may have paced
 * them. */
double polite__rc_sent_within(const polite_ratectl *c, int64_t a, int64_t b) {
  double sent = 0;
  unsigned own = 0;
  int64_t next = b;
  for (unsigned i = 0; i < c->st_n && next > a; i++) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    int64_t t = c->st_us[k];
    if (t >= b)
      continue;
    int64_t lo = imax(t, a);
    if (next > lo) {
      double span = (double)(next - lo - polite__rc_paused_within(c, lo, next));
      sent += c->st_rate[k] * span / 1e6;
    }
    own += t >= a;
    next = t;
  }
  if (!c->others && sent > own)
    sent = own;
  return sent;
}

/* This participant's requests in flight when the request started at `at`
 * started (the latest start at or before it). */
unsigned polite__rc_busy_at_start(const polite_ratectl *c, int64_t at) {
  for (unsigned i = 0; i < c->st_n; i++) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->st_us[k] <= at)
      return c->st_busy[k];
  }
  return 0;
}

/* What got through of the requests started in [from, to]: the share the
 * server let through of them, times what the account started over that
 * time (its paced rate over the time not paused), over that time, pauses
 * included. A share and the account's rate, not a count, so it is the
 * same for every participant of a shared budget, each of which sees only
 * its own answers; the time paused counts, so that a limiter that banks
 * the pause (a token bucket refills, a sliding window forgets) does not
 * seem to admit more than it does. -1 when fewer than `need` answers
 * tell. */
double polite__rc_admitted(const polite_ratectl *c, int64_t from, int64_t to,
                           unsigned need) {
  unsigned n = 0, ok = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (unsigned i = 0; i < c->ok_n; i++) {
    unsigned k =
        (c->ok_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->ok_us[k] < from || c->ok_us[k] > to)
      continue; /* answers arrive out of start order */
    n++;
    ok += c->ok_flag[k];
    if (c->ok_us[k] < first)
      first = c->ok_us[k];
    if (c->ok_us[k] > last)
      last = c->ok_us[k];
  }
  if (n < need)
    return -1;
  /* Over the whole window when the starts cover it (the first answered
   * start in it may come well after its beginning: a window of 40 at a
   * sliding log measured from its first answer read 44/s), else from the
   * first answered start. */
  int64_t oldest =
      c->st_n > 0 ? c->st_us[(c->st_head + POLITE__RATECTL_RING - c->st_n) %
                             POLITE__RATECTL_RING]
                  : first;
  int64_t a = oldest <= from ? from : imax(from, first), b = last + 1;
  double sent = polite__rc_sent_within(c, a, b);
  if (!(sent > 0))
    return -1;
  return (double)ok / n * sent / ((double)(b - a) / 1e6);
}

/* The share the server let through of the requests started in [from, to]
 * times the mean rate they were started at: what got through while
 * sending, pauses left out (the upper estimate of a cut). -1 when fewer
 * than `need` answers tell. */
double polite__rc_admitted_sending(const polite_ratectl *c, int64_t from,
                                   int64_t to, unsigned need) {
  unsigned n = 0, ok = 0;
  double sum = 0;
  for (unsigned i = 0; i < c->ok_n; i++) {
    unsigned k =
        (c->ok_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->ok_us[k] < from || c->ok_us[k] > to)
      continue;
    n++;
    ok += c->ok_flag[k];
    sum += c->ok_rate[k];
  }
  return n >= need ? (double)ok / n * (sum / n) : -1;
}

/* The start of the n-th latest answered request started at or before
 * `at` (answers arrive out of start order: the n-th greatest); INT64_MIN
 * when fewer than n were. */
int64_t polite__rc_nth_answer_start(const polite_ratectl *c, int64_t at,
                                    unsigned n) {
  unsigned got = 0;
  int64_t below = at;
  while (got < n) {
    int64_t found = INT64_MIN;
    unsigned same = 0;
    for (unsigned i = 0; i < c->ok_n; i++) {
      int64_t s = c->ok_us[i];
      if (s <= below && s > found) {
        found = s;
        same = 1;
      } else if (s == found) {
        same++;
      }
    }
    if (found == INT64_MIN)
      return INT64_MIN;
    got += same;
    if (got >= n)
      return found;
    below = found - 1;
  }
  return below;
}

/* The cap the answers of the requests started in [from, to] show, or 0:
 * `need` admitted and `refused` or more refused, and every refused
 * one started with more in flight than every admitted one: the least
 * count in flight a refused one started with. */
unsigned polite__rc_concurrency_signature(const polite_ratectl *c, int64_t from,
                                          int64_t to, unsigned refused,
                                          unsigned need) {
  unsigned max_ok = 0, min_ref = UINT_MAX, n_ok = 0, n_ref = 0;
  for (unsigned i = 0; i < c->ok_n; i++) {
    unsigned k =
        (c->ok_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    if (c->ok_us[k] < from || c->ok_us[k] > to)
      continue;
    unsigned b = c->ok_busy[k];
    if (c->ok_flag[k]) {
      n_ok++;
      max_ok = b > max_ok ? b : max_ok;
    } else {
      n_ref++;
      min_ref = b < min_ref ? b : min_ref;
    }
  }
  if (n_ref < refused || n_ok < need || min_ref <= max_ok)
    return 0;
  /* The cap is above every admitted count and at most the least refused
   * one; the answers of the requests started in between may not be in
   * yet, so the refused one is taken (a lower cap shows in later
   * refusals). */
  return min_ref;
}

/* ---- The leaky bucket that explains the answers
 *
 * A leaky bucket (GCRA: nginx limit_req, a token bucket) of rate L and
 * depth b admits a start when its level, drained at L since the last
 * admission, is at most b - 1 before it, and every admission adds 1. For
 * one L, the answers of a series of starts bound b: each admitted start
 * needs b >= its level + 1, each refused one b < its level + 1. L explains
 * the answers when some b fits both, within FIT_SLACK of a request (the
 * time a start reaches the limiter is not the time it was made). Slow
 * start's first 429 cannot tell a deep bucket at a low rate from a shallow
 * one at a high rate; a relapse after the pause narrows it, and the highest
 * L that explains the whole series is an upper bound of the limit (the
 * bucket drains in the pause, so its level is known again after it). */
#define FIT_SLACK 0.05
/* A whole depth tells more than the landing's margin only while one
 * request is more than 10% of the bucket (see polite__rc_bucket_fit). */
#define WHOLE_DEPTH_MAX 10
#define FIT_STEPS 64

/* The starts made in [from, to], oldest first, into t, and whether each
 * was admitted into ok (at most POLITE__RATECTL_RING); returns their
 * count. A start is refused when a refusal was answered for a request
 * started at its instant; one not answered yet counts as admitted (a
 * limiter answers a refusal at once, so a request still in flight at a
 * cut was let through, and leaving it out would make the bucket seem to
 * refuse at a lower level than it did). */
static unsigned starts_and_refusals(const polite_ratectl *c, int64_t from,
                                    int64_t to, int64_t *t, unsigned char *ok) {
  int64_t ref[POLITE__RATECTL_RING];
  unsigned nref = 0;
  for (unsigned i = 0; i < c->ok_n; i++) {
    int64_t s = c->ok_us[i];
    if (c->ok_flag[i] || s < from || s > to)
      continue;
    unsigned j = nref++;
    for (; j > 0 && ref[j - 1] > s; j--)
      ref[j] = ref[j - 1];
    ref[j] = s;
  }
  unsigned n = 0, r = 0;
  for (unsigned i = c->st_n; i-- > 0;) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    int64_t s = c->st_us[k];
    if (s < from || s > to)
      continue;
    while (r < nref && ref[r] < s)
      r++; /* a refusal of a start older than the ring */
    t[n] = s;
    ok[n] = !(r < nref && ref[r] == s);
    r += !ok[n];
    n++;
  }
  return n;
}

/* The depth of a leaky bucket of rate l (per s) that explains the n
 * answers (see above), or 0 when none does; with `whole`, the least whole
 * number of requests that does (see polite__rc_bucket_fit), else the
 * least depth the admitted ones need. */
static double bucket_explains(const int64_t *t, const unsigned char *ok,
                              unsigned n, double l, int whole) {
  double level = 0, need = 0, below = 1e300;
  for (unsigned i = 0; i < n; i++) {
    if (i > 0) {
      level -= l * (double)(t[i] - t[i - 1]) / 1e6;
      if (level < 0)
        level = 0;
    }
    if (ok[i]) {
      level += 1;
      if (level > need)
        need = level;
    } else if (level + 1 < below) {
      below = level + 1;
    }
  }
  if (whole)
    need = fmax(1, ceil(need - FIT_SLACK));
  return need < below + FIT_SLACK ? fmax(need, 1e-9) : 0;
}

/* A limiter's depth is a whole number of requests (nginx's burst=N is a
 * bucket of N + 1, a token bucket holds whole tokens): a rate whose
 * answers only a fractional depth explains is above the limit (nginx 20/s
 * burst 1 behind the OpenAI Node SDK: 24.4/s explained a depth of
 * 1.34-1.42, and the landing at 0.9 x it tripped again; with a whole
 * depth, 21.2/s). From hi down, in geometric steps, the first rate that
 * explains with a whole depth, and into *low the lowest below it that
 * explains with the same depth; when none does (the starts' times are not
 * the arrivals'), the first that explains with any depth, and *low = -1. */
double polite__rc_bucket_fit(const polite_ratectl *c, int64_t from, int64_t to,
                             double lo, double hi, double *low) {
  int64_t t[POLITE__RATECTL_RING];
  unsigned char ok[POLITE__RATECTL_RING];
  unsigned n = starts_and_refusals(c, from, to, t, ok), refused = 0;
  double unused;
  int whole = low != NULL;
  if (!whole)
    low = &unused;
  *low = -1;
  for (unsigned i = 0; i < n; i++)
    refused += !ok[i];
  if (refused == 0 || n - refused < 3 || !(lo > 0) || !(hi > lo))
    return -1;
  double step = pow(lo / hi, 1.0 / (FIT_STEPS - 1));
  double l = hi, fit = -1, depth = 0;
  for (unsigned s = 0; whole && s < FIT_STEPS; s++, l *= step) {
    double d = bucket_explains(t, ok, n, l, 1);
    if (fit > 0 && d != depth)
      break;
    if (d > 0 && fit <= 0) {
      fit = l;
      depth = d;
    }
    if (fit > 0)
      *low = l;
  }
  if (fit > 0 && depth < WHOLE_DEPTH_MAX)
    return fit;
  *low = -1;
  l = hi;
  for (unsigned s = 0; s < FIT_STEPS; s++, l *= step)
    if (bucket_explains(t, ok, n, l, 0) > 0)
      return l;
  return -1;
}

int polite__rc_admitted_count(const polite_ratectl *c, int64_t from,
                              int64_t to) {
  int n = 0;
  int64_t oldest = INT64_MAX;
  for (unsigned i = 0; i < c->ok_n; i++) {
    int64_t s = c->ok_us[i];
    if (s < oldest)
      oldest = s;
    n += c->ok_flag[i] && s >= from && s < to;
  }
  /* A full ring may have dropped answers of the span's first starts. */
  if (c->ok_n == POLITE__RATECTL_RING && oldest >= from)
    return -1;
  return n;
}

/* The rate this participant started requests at over [from, to]: its
 * starts there, one fewer than their count over the time from the first
 * to the last (the intervals between them); -1 with fewer than `need`. */
double polite__rc_started_rate(const polite_ratectl *c, int64_t from,
                               int64_t to, unsigned need) {
  unsigned n = 0;
  int64_t first = 0, last = 0;
  for (unsigned i = 0; i < c->st_n; i++) {
    unsigned k =
        (c->st_head + POLITE__RATECTL_RING - 1 - i) % POLITE__RATECTL_RING;
    int64_t t = c->st_us[k];
    if (t > to)
      continue;
    if (t < from)
      break;
    if (n++ == 0)
      last = t;
    first = t;
  }
  return n >= need && last > first ? (n - 1) * 1e6 / (double)(last - first)
                                   : -1;
}

/* A relapse's own estimate and slow start's lower one, within this share
 * of each other, are one window's quota (see estimates); the relapse's
 * rate is at most QUOTA_AT x slow start's. */
#define QUOTA_BAND 0.05
#define QUOTA_AT 0.9

/* A window's quota: the first relapse after slow start's cut got
 * through over its window, the pause in it, what slow start's lower
 * estimate did over the window before its 429, though it tripped at
 * a rate well below slow start's. The same count at two rates is a
 * limit on the count in a window, and the count is the limit (a
 * sliding log of 40 in 1 s: 40.0/s in slow start at 82/s, 38.9/s at
 * the relapse at 68.6/s; capped at 0.9 x the rate that tripped and
 * floored at slow start's landing, the relapse landed at 60/s and the
 * next at 25.6/s). A bucket lets more through at a higher rate, and
 * in the pause drains or refills: its two differ (nginx 20/s: 12.8
 * and 5.1/s; a token bucket 58.9 and 29.1/s). The higher of the two
 * is the quota (a counter that counts the refused ones: 58.7 and
 * 57.2 of 60/s). */
double polite__rc_window_quota(const polite_ratectl *c, double own, double at) {
  if (c->ss_lo > 0 && own > 0 && own <= at &&
      fabs(own - c->ss_lo) <= QUOTA_BAND * c->ss_lo &&
      polite__rc_rate_at_start(c, c->cut_from_us) < QUOTA_AT * c->ss_at)
    return own > c->ss_lo ? own : c->ss_lo;
  return -1;
}
