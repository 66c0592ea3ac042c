/* Folds two copies of one learned-rate controller into one (see
 * ratectl_calls.h): polite_client's calls run at the same time, each on a
 * copy, and each copy sees only its own call's starts and answers. */
#include "ratectl_calls.h"

#include <stdlib.h>
#include <string.h>

#define RING POLITE__RATECTL_RING

/* One ring entry: a start (us, rate) or an answer (us = its request's
 * start, ok, rate). */
typedef struct {
  int64_t us;
  double rate;
  unsigned char ok;
  unsigned short busy; /* requests in flight at the start */
} entry;

static int entry_cmp(const void *pa, const void *pb) {
  const entry *a = pa, *b = pb;
  if (a->us != b->us)
    return a->us < b->us ? -1 : 1;
  if (a->rate != b->rate)
    return a->rate < b->rate ? -1 : 1;
  return (int)a->ok - (int)b->ok;
}

/* Sorts e[0..n) by time, drops entries equal to their predecessor (the ones
 * both copies held from before they were copied) and returns how many of
 * the newest, at most RING, now start at e[0]. */
static unsigned sort_unique_newest(entry *e, unsigned n) {
  if (n == 0)
    return 0;
  qsort(e, n, sizeof *e, entry_cmp);
  unsigned m = 1;
  for (unsigned i = 1; i < n; i++)
    if (entry_cmp(&e[i], &e[m - 1]) != 0)
      e[m++] = e[i];
  unsigned keep = m < RING ? m : RING;
  memmove(e, e + (m - keep), keep * sizeof *e);
  return keep;
}

/* The ring index of entry i (0: the oldest) of the n entries that end just
 * before head. */
static unsigned slot(unsigned head, unsigned n, unsigned i) {
  return (head + RING - n + i) % RING;
}

static unsigned take_starts(const polite_ratectl *c, entry *e) {
  for (unsigned i = 0; i < c->st_n; i++) {
    unsigned k = slot(c->st_head, c->st_n, i);
    e[i] = (entry){c->st_us[k], c->st_rate[k], 0, c->st_busy[k]};
  }
  return c->st_n;
}

static unsigned take_answers(const polite_ratectl *c, entry *e) {
  for (unsigned i = 0; i < c->ok_n; i++) {
    unsigned k = slot(c->ok_head, c->ok_n, i);
    e[i] = (entry){c->ok_us[k], c->ok_rate[k], c->ok_flag[k], c->ok_busy[k]};
  }
  return c->ok_n;
}

/* The rings are written oldest first from slot 0, so that the next entry
 * goes to slot n (and the oldest is evicted first). */
static void put_starts(polite_ratectl *c, const entry *e, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    c->st_us[i] = e[i].us;
    c->st_rate[i] = e[i].rate;
    c->st_busy[i] = e[i].busy;
  }
  c->st_n = n;
  c->st_head = n % RING;
}

static void put_answers(polite_ratectl *c, const entry *e, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    c->ok_us[i] = e[i].us;
    c->ok_rate[i] = e[i].rate;
    c->ok_flag[i] = e[i].ok;
    c->ok_busy[i] = e[i].busy;
  }
  c->ok_n = n;
  c->ok_head = n % RING;
}

void polite__ratectl_merge(polite_ratectl *into, const polite_ratectl *other) {
  if (into == NULL || other == NULL || into == other)
    return;
  entry st[2 * RING], ans[2 * RING];
  unsigned ns = take_starts(into, st);
  ns += take_starts(other, st + ns);
  unsigned na = take_answers(into, ans);
  na += take_answers(other, ans + na);
  double clean = into->clean_rate > other->clean_rate ? into->clean_rate
                                                      : other->clean_rate;
  if (other->last_cut_us >= into->last_cut_us)
    *into = *other;
  put_starts(into, st, sort_unique_newest(st, ns));
  put_answers(into, ans, sort_unique_newest(ans, na));
  into->clean_rate = clean;
}

void polite__ratectl_resume(polite_ratectl *c, int64_t *accounted_us,
                            int64_t now_us) {
  if (c == NULL || accounted_us == NULL || c->st_n == 0)
    return;
  int64_t last = c->st_us[(c->st_head + RING - 1) % RING];
  if (c->pause_end_us > last)
    last = c->pause_end_us;
  int64_t from = last + POLITE__RATECTL_IDLE_US;
  if (*accounted_us > from)
    from = *accounted_us;
  if (now_us <= from)
    return;
  int64_t idle = now_us - from;
  *accounted_us = now_us;
  if (c->phase == POLITE_RC_PROBE) {
    c->epoch_us += idle;
  } else if (c->phase == POLITE_RC_HEADERS && c->header_until_us < now_us) {
    /* The climb starts when the plan went stale: take out the idle part
     * of the climb, leaving it stale (header_until_us <= now_us). */
    int64_t climb_from = c->header_until_us > from ? c->header_until_us : from;
    c->header_until_us += now_us - climb_from;
  }
}
