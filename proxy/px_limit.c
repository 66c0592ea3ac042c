/* polite proxy: rate limiters (GCRA, fixed window, sliding log) and quotas,
 * each with the honest (r, t) of the planner contract. Pure: `now` is an
 * argument. */
#include "px_limit.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
  int64_t at_us; /* when it was admitted */
  int64_t cost;
} slide_ent;

struct px_lim {
  const px_lim_cfg *cfg;
  polite_gcra g;          /* gcra */
  int64_t units_left;     /* fixed: -1 before the first request */
  int64_t reset_at_us;    /* fixed: the window ends then */
  slide_ent *ring;        /* sliding: admitted requests, oldest first */
  size_t head, n, cap;
};

static int64_t ceil_div(int64_t a, int64_t b) {
  return a <= 0 ? 0 : (a + b - 1) / b;
}

static int64_t window_s(const px_lim_cfg *c) {
  return ceil_div(c->window_us, 1000000);
}

px_lim *polite__px_lim_new(const px_lim_cfg *cfg) {
  if (cfg->limit < 1 || cfg->window_us < 1000000 || cfg->cost < 1 ||
      cfg->cost > cfg->limit || cfg->burst < 1)
    return NULL;
  px_lim *l = calloc(1, sizeof *l);
  if (l == NULL)
    return NULL;
  l->cfg = cfg;
  l->units_left = -1;
  if (cfg->mode == PX_LIM_GCRA &&
      polite_gcra_init(&l->g,
                       (double)cfg->limit / cfg->cost * 1e6 /
                           (double)cfg->window_us,
                       cfg->burst) != 0) {
    free(l);
    return NULL;
  }
  if (cfg->mode == PX_LIM_SLIDING) {
    if (cfg->limit > PX_SLIDING_MAX) {
      free(l);
      return NULL;
    }
    l->cap = (size_t)cfg->limit;
    l->ring = calloc(l->cap, sizeof *l->ring);
    if (l->ring == NULL) {
      free(l);
      return NULL;
    }
  }
  return l;
}

void polite__px_lim_free(void *p) {
  px_lim *l = p;
  if (l) {
    free(l->ring);
    free(l);
  }
}

/* r requests spread over t, capped so that r / t never exceeds q / w. */
static void plan(px_lim_state *o, int64_t r, int64_t t) {
  int64_t cap = o->window_s > 0 ? o->quota * t / o->window_s : r;
  if (r > cap)
    r = cap;
  if (r <= 0) {
    r = 0;
    if (t < 1)
      t = 1;
  }
  o->remaining = r;
  o->reset_s = t;
}

/* ---- GCRA -----------------------------------------------------------------
 * After the state's debt D = TAT - now, tolerance tau and interval T, the
 * k-th request of a plan spaced s >= T apart is admitted when
 * k*s >= D - tau + (k-1)*T, i.e. when s >= max(T, D - tau). So over
 * t = w seconds, r = floor(w / max(T, D - tau)); when even one slot does
 * not fit in w, r = 0 and t = D - tau rounded up. */
static void gcra_admit(px_lim *l, int64_t now_us, int take, px_lim_state *o) {
  polite_gcra *g = &l->g;
  unsigned cost = 1; /* the rate already counts requests (limit / cost) */
  if (take) {
    o->wait_us = polite_gcra_admit(g, now_us, cost);
  } else {
    polite_gcra copy = *g;
    o->wait_us = polite_gcra_admit(&copy, now_us, cost);
  }
  o->admitted = o->wait_us == 0;
  int64_t tat = g->tat_us > now_us ? g->tat_us : now_us;
  int64_t need = tat - now_us - g->tolerance_us;
  if (!take && o->admitted)
    need = 0; /* a request now would pass: the plan may start at once */
  int64_t gap = need > g->interval_us ? need : g->interval_us;
  int64_t w_us = o->window_s * 1000000;
  if (!o->admitted) {
    plan(o, 0, ceil_div(o->wait_us, 1000000));
  } else if (need >= w_us) {
    plan(o, 0, ceil_div(need, 1000000));
  } else {
    plan(o, gap > 0 ? w_us / gap : o->quota, o->window_s);
  }
  o->reset_us = o->reset_s * 1000000;
  o->units_left = o->remaining;
}

/* ---- Fixed window (Dev Proxy's RateLimitingPlugin) ------------------------
 * The window starts with the first request and restarts with the first
 * request after it ended; each request costs `cost` units; a request that
 * finds too few left is refused and the rest of the window is spent (as
 * Dev Proxy sets the remaining resources to 0). The window ends at
 * reset_at (a request exactly then starts the next one), so waiting the
 * time to reset rounded up is never early. */
static void fixed_admit(px_lim *l, int64_t now_us, int take, px_lim_state *o) {
  const px_lim_cfg *c = l->cfg;
  int64_t left = l->units_left, reset_at = l->reset_at_us;
  if (left < 0 || now_us >= reset_at) {
    left = c->limit;
    reset_at = now_us + c->window_us;
  }
  int64_t after = left - c->cost;
  o->admitted = after >= 0;
  if (take) {
    l->units_left = after >= 0 ? after : 0;
    l->reset_at_us = reset_at;
    left = l->units_left;
  } else if (!o->admitted) {
    left = 0;
  }
  o->units_left = left;
  o->reset_us = reset_at - now_us;
  o->wait_us = o->admitted ? 0 : o->reset_us;
  if (!o->admitted) {
    plan(o, 0, ceil_div(o->reset_us, 1000000));
    return;
  }
  /* Over t = w, the plan's requests before the reset must fit in what is
   * left (L), and those after it start the next window, where up to q fit.
   * The (L+1)-th request lands after the reset when (L+1) * w / r >= reset
   * (with a millisecond to spare). */
  int64_t w_us = o->window_s * 1000000;
  int64_t lreq = left / c->cost;
  int64_t r = (int64_t)((__int128)(lreq + 1) * w_us / (o->reset_us + 1000));
  plan(o, r, o->window_s);
}

/* ---- Sliding log ------------------------------------------------------------
 * The requests admitted in the last w are kept (at most `limit`). A request
 * is admitted when their units plus its cost fit in the limit; when not,
 * the wait is until enough of the oldest have left the window.
 *
 * The plan: r requests spaced w/r over t = w (in whole seconds) is safe
 * when, at each planned time a_k, the units still in the window plus k
 * costs fit. That holds for r when it holds for r + 1, so the largest r is
 * found by bisection, each check walking the log once. */
static const slide_ent *slide_at(const px_lim *l, size_t i) {
  return &l->ring[(l->head + i) % l->cap];
}

static void slide_expire(px_lim *l, int64_t now_us) {
  while (l->n > 0 && slide_at(l, 0)->at_us + l->cfg->window_us <= now_us) {
    l->head = (l->head + 1) % l->cap;
    l->n--;
  }
}

static int64_t slide_units(const px_lim *l, size_t from) {
  int64_t u = 0;
  for (size_t i = from; i < l->n; i++)
    u += slide_at(l, i)->cost;
  return u;
}

/* 1 when r requests spaced span_us / r apart from now all fit. */
static int slide_plan_fits(const px_lim *l, int64_t now_us, int64_t span_us,
                           int64_t r) {
  const px_lim_cfg *c = l->cfg;
  size_t gone = 0;
  int64_t in = slide_units(l, 0);
  for (int64_t k = 1; k <= r; k++) {
    /* Rounded down: an earlier time sees at least as many entries. */
    int64_t at = now_us + (int64_t)((__int128)span_us * k / r);
    while (gone < l->n && slide_at(l, gone)->at_us + c->window_us <= at) {
      in -= slide_at(l, gone)->cost;
      gone++;
    }
    if (in + k * c->cost > c->limit)
      return 0;
  }
  return 1;
}

static void sliding_admit(px_lim *l, int64_t now_us, int take,
                          px_lim_state *o) {
  const px_lim_cfg *c = l->cfg;
  slide_expire(l, now_us);
  int64_t used = slide_units(l, 0);
  o->admitted = used + c->cost <= c->limit && l->n < l->cap;
  o->wait_us = 0;
  if (!o->admitted) {
    /* Until enough of the oldest leave. */
    int64_t freed = 0;
    for (size_t i = 0; i < l->n; i++) {
      freed += slide_at(l, i)->cost;
      if (used - freed + c->cost <= c->limit) {
        o->wait_us = slide_at(l, i)->at_us + c->window_us - now_us;
        break;
      }
    }
    if (o->wait_us < 1)
      o->wait_us = 1;
  } else if (take) {
    slide_ent *e = &l->ring[(l->head + l->n) % l->cap];
    e->at_us = now_us;
    e->cost = c->cost;
    l->n++;
    used += c->cost;
  }
  o->units_left = c->limit - used;
  int64_t span = o->window_s * 1000000;
  int64_t lo = 0, hi = c->limit / c->cost;
  if (!o->admitted)
    hi = 0;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (slide_plan_fits(l, now_us, span, mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  if (lo > 0)
    plan(o, lo, o->window_s);
  else
    plan(o, 0, ceil_div(o->admitted ? slide_at(l, 0)->at_us + c->window_us -
                                          now_us
                                    : o->wait_us,
                        1000000));
  o->reset_us = o->reset_s * 1000000;
}

void polite__px_lim_admit(px_lim *l, int64_t now_us, int take,
                          px_lim_state *out) {
  memset(out, 0, sizeof *out);
  const px_lim_cfg *c = l->cfg;
  out->quota = c->limit / c->cost;
  out->window_s = window_s(c);
  switch (c->mode) {
  case PX_LIM_FIXED: fixed_admit(l, now_us, take, out); break;
  case PX_LIM_SLIDING: sliding_admit(l, now_us, take, out); break;
  case PX_LIM_GCRA:
  default: gcra_admit(l, now_us, take, out); break;
  }
  if (!out->admitted && out->wait_us < 1)
    out->wait_us = 1;
}

/* ---- Quotas ---------------------------------------------------------------- */

#define DAY_MS INT64_C(86400000)

/* The next wall-clock time at `hour`:00 UTC strictly after wall_ms. */
static int64_t next_reset(int64_t wall_ms, int hour) {
  int64_t day = wall_ms / DAY_MS * DAY_MS;
  int64_t at = day + (int64_t)hour * 3600000;
  return at > wall_ms ? at : at + DAY_MS;
}

int polite__px_quota_admit(const px_quota_cfg *c, px_quota *q, int64_t wall_ms,
                           int64_t mono_ms, int64_t *reset_wall_ms) {
  if (reset_wall_ms)
    *reset_wall_ms = -1;
  if (c->limit < 0)
    return 1;
  switch (c->period) {
  case PX_QUOTA_DAY:
    if (q->period_end_ms == 0 || wall_ms >= q->period_end_ms) {
      q->used = 0;
      q->period_end_ms = next_reset(wall_ms, c->reset_hour);
    }
    if (reset_wall_ms)
      *reset_wall_ms = q->period_end_ms;
    break;
  case PX_QUOTA_WINDOW:
    if (q->period_end_ms == 0 || mono_ms >= q->period_end_ms) {
      q->used = 0;
      q->period_end_ms = mono_ms + c->window_ms;
    }
    if (reset_wall_ms)
      *reset_wall_ms = wall_ms + (q->period_end_ms - mono_ms);
    break;
  case PX_QUOTA_TOTAL:
  default: break;
  }
  if (q->used >= c->limit)
    return 0;
  q->used++;
  return 1;
}
