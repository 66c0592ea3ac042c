/* polite report: aggregation of attempts into bounded time buckets, server
 * pauses, senders, histograms and the figures of the summary table. */
#include "report_model.h"

#include <polite/batch.h>
#include <stdlib.h>
#include <string.h>

/* ---- The start-order window --------------------------------------------
 * The log is written in completion order; the peak in flight and the gaps
 * between starts need start order. Attempts wait in a min-heap keyed by
 * start (at most SWEEP_MAX, about 1 MiB) and are swept in start order, the
 * ends still running in a second heap. An attempt that arrives after the
 * sweep has passed its start is swept at once (counted as it comes). */
#define SWEEP_MAX 65536

typedef struct {
  int64_t s, e;
} iv;

typedef struct {
  iv *pend; /* min-heap by s */
  size_t npend;
  iv *act; /* min-heap by e: the attempts in flight */
  size_t nact, capact;
  int64_t prev_start; /* last swept start; -1 none */
  unsigned peak;
} sweep;

/* The key of a heap of intervals: the start (pend) or the end (act). */
static int64_t key_of(const iv *x, int by_end) {
  return by_end ? x->e : x->s;
}

/* A min-heap of intervals by key_of(by_end): the entry at i moves up, or
 * (of n) down, to its place. */
static void heap_up(iv *h, size_t i, int by_end) {
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (key_of(&h[p], by_end) <= key_of(&h[i], by_end))
      break;
    iv t = h[p];
    h[p] = h[i];
    h[i] = t;
    i = p;
  }
}

static void heap_down(iv *h, size_t n, size_t i, int by_end) {
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && key_of(&h[l], by_end) < key_of(&h[m], by_end))
      m = l;
    if (r < n && key_of(&h[r], by_end) < key_of(&h[m], by_end))
      m = r;
    if (m == i)
      return;
    iv t = h[m];
    h[m] = h[i];
    h[i] = t;
    i = m;
  }
}

static rp_source *cur(rp_model *m) {
  return m->nsrc > 0 ? &m->src[m->nsrc - 1] : NULL;
}

/* The end of the last server pause that began at or before t (pauses are
 * sorted and disjoint), or -1. */
static int64_t pause_end_before(const rp_model *m, int64_t t) {
  size_t lo = 0, hi = m->npause;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (m->pause[mid].from <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? m->pause[lo - 1].to : -1;
}

/* One attempt in start order: ends up to its start leave, it enters, and
 * the gap from the previous start counts unless a server pause fell in it
 * (polite run's rule for the measured rate). */
static void sweep_one(rp_model *m, sweep *w, iv x) {
  while (w->nact > 0 && w->act[0].e <= x.s) {
    w->act[0] = w->act[--w->nact];
    heap_down(w->act, w->nact, 0, 1);
  }
  if (w->nact == w->capact) {
    size_t cap = w->capact ? w->capact * 2 : 256;
    iv *a = realloc(w->act, cap * sizeof *a);
    if (a == NULL)
      return;
    w->act = a;
    w->capact = cap;
  }
  w->act[w->nact] = x;
  heap_up(w->act, w->nact++, 1);
  if (w->nact > w->peak)
    w->peak = (unsigned)w->nact;
  if (w->prev_start >= 0) {
    int64_t gap = x.s - w->prev_start;
    if (pause_end_before(m, x.s) > w->prev_start) {
      m->paused_gaps++;
    } else if (gap >= 0) {
      m->gaps++;
      m->gap_sum_ms += (double)gap;
      if (cur(m)) {
        cur(m)->gaps++;
        cur(m)->gap_sum_ms += (double)gap;
      }
    }
  }
  if (x.s > w->prev_start)
    w->prev_start = x.s;
}

static void sweep_pop(rp_model *m, sweep *w) {
  iv x = w->pend[0];
  w->pend[0] = w->pend[--w->npend];
  heap_down(w->pend, w->npend, 0, 0);
  sweep_one(m, w, x);
}

static void sweep_add(rp_model *m, int64_t s, int64_t e) {
  sweep *w = m->sweep;
  if (w->npend == SWEEP_MAX)
    sweep_pop(m, w);
  w->pend[w->npend] = (iv){s, e};
  heap_up(w->pend, w->npend++, 0);
}

static void sweep_reset(sweep *w) {
  w->npend = 0;
  w->nact = 0;
  w->prev_start = -1;
  w->peak = 0;
}

/* ---- Lifetime and sources ---------------------------------------------- */

rp_model *rp_model_new(void) {
  rp_model *m = calloc(1, sizeof *m);
  sweep *w = calloc(1, sizeof *w);
  iv *pend = malloc(SWEEP_MAX * sizeof *pend);
  if (m == NULL || w == NULL || pend == NULL) {
    free(m);
    free(w);
    free(pend);
    return NULL;
  }
  w->pend = pend;
  sweep_reset(w);
  m->sweep = w;
  m->width = RP_BASE_WIDTH_MS;
  m->first_start = m->last_start = m->last_end = -1;
  return m;
}

void rp_model_free(rp_model *m) {
  if (m == NULL)
    return;
  sweep *w = m->sweep;
  if (w) {
    free(w->pend);
    free(w->act);
    free(w);
  }
  free(m);
}

void rp_model_source_end(rp_model *m) {
  sweep *w = m->sweep;
  while (w->npend > 0)
    sweep_pop(m, w);
  rp_source *s = cur(m);
  if (s && w->peak > s->peak_in_flight)
    s->peak_in_flight = w->peak;
  sweep_reset(w);
}

int rp_model_source(rp_model *m, const char *name) {
  rp_model_source_end(m);
  if (m->nsrc == RP_SOURCES)
    return -1;
  rp_source *s = &m->src[m->nsrc++];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->first_ms = s->last_ms = s->end_ms = -1;
  s->run.deadline_ms = -1;
  return 0;
}

/* ---- The timeline ------------------------------------------------------- */

static int64_t floor_to(int64_t t, int64_t w) {
  return t - t % w;
}

/* Adds src (a bucket delta ms earlier-ending than dst) into dst. */
static void bucket_merge(rp_bucket *dst, const rp_bucket *src, int64_t delta) {
  dst->first += src->first;
  dst->retry += src->retry;
  for (int k = 0; k <= RP_MARKED; k++)
    dst->thr[k] += src->thr[k];
  dst->n429 += src->n429;
  dst->n503 += src->n503;
  dst->off_start += src->off_start + (double)src->iv_start * (double)delta;
  dst->off_end += src->off_end + (double)src->iv_end * (double)delta;
  dst->iv_start += src->iv_start;
  dst->iv_end += src->iv_end;
  if (src->has_rate && (!dst->has_rate || src->rate_ms >= dst->rate_ms)) {
    dst->rate = src->rate;
    dst->rate_ms = src->rate_ms;
    dst->has_rate = 1;
  }
}

/* Doubles the bucket width, merging neighbours (in place: a bucket only
 * moves down). */
static void coarsen(rp_model *m) {
  int64_t w = m->width, w2 = w * 2, o2 = floor_to(m->origin, w2);
  int nb = m->nb;
  for (int i = 0; i < nb; i++) {
    rp_bucket src = m->b[i];
    memset(&m->b[i], 0, sizeof m->b[i]);
    int64_t t = m->origin + (int64_t)i * w;
    int j = (int)((t - o2) / w2);
    int64_t delta = (o2 + (int64_t)(j + 1) * w2) - (t + w);
    bucket_merge(&m->b[j], &src, delta);
  }
  int64_t hi = m->origin + (int64_t)nb * w;
  m->nb = (int)((hi - o2 + w2 - 1) / w2);
  m->origin = o2;
  m->width = w2;
}

/* Makes the timeline cover time t (growing either end, coarsening when the
 * span would need more than RP_BUCKETS). */
static void cover(rp_model *m, int64_t t) {
  if (t < 0)
    t = 0;
  if (m->nb == 0) {
    m->origin = floor_to(t, m->width);
    m->nb = 1;
    return;
  }
  for (;;) {
    int64_t w = m->width, lo = m->origin, hi = lo + (int64_t)m->nb * w;
    int64_t nlo = t < lo ? floor_to(t, w) : lo;
    int64_t nhi = t >= hi ? floor_to(t, w) + w : hi;
    if ((nhi - nlo) / w <= RP_BUCKETS) {
      if (nlo < lo) {
        int shift = (int)((lo - nlo) / w);
        memmove(&m->b[shift], &m->b[0], (size_t)m->nb * sizeof m->b[0]);
        memset(&m->b[0], 0, (size_t)shift * sizeof m->b[0]);
        m->origin = nlo;
      }
      m->nb = (int)((nhi - nlo) / w);
      return;
    }
    coarsen(m);
  }
}

static int bucket_of(const rp_model *m, int64_t t) {
  if (t < m->origin)
    return 0;
  int64_t i = (t - m->origin) / m->width;
  return i >= m->nb ? m->nb - 1 : (int)i;
}

static double bucket_end(const rp_model *m, int i) {
  return (double)(m->origin + (int64_t)(i + 1) * m->width);
}

void rp_model_coarsen_to(rp_model *m, int64_t min_width_ms) {
  while (m->nb > 1 && m->width < min_width_ms)
    coarsen(m);
}

double rp_bucket_in_flight(const rp_model *m, int i, double *active) {
  const rp_bucket *b = &m->b[i];
  double integral = *active * (double)m->width + b->off_start - b->off_end;
  *active += (double)b->iv_start - (double)b->iv_end;
  return integral / (double)m->width;
}

/* ---- Pauses ------------------------------------------------------------- */

/* Adds [from, to) to the sorted, disjoint pause list, joining overlaps;
 * when the list is full the two closest pauses are joined (the page says
 * so). */
static void pause_add(rp_model *m, int64_t from, int64_t to) {
  size_t i = 0;
  while (i < m->npause && m->pause[i].to < from)
    i++;
  if (i < m->npause && m->pause[i].from <= to) {
    if (from < m->pause[i].from)
      m->pause[i].from = from;
    if (to > m->pause[i].to)
      m->pause[i].to = to;
    while (i + 1 < m->npause && m->pause[i + 1].from <= m->pause[i].to) {
      if (m->pause[i + 1].to > m->pause[i].to)
        m->pause[i].to = m->pause[i + 1].to;
      memmove(&m->pause[i + 1], &m->pause[i + 2],
              (m->npause - i - 2) * sizeof m->pause[0]);
      m->npause--;
    }
    return;
  }
  if (m->npause == RP_PAUSES) {
    size_t best = 0;
    for (size_t k = 1; k + 1 < m->npause; k++)
      if (m->pause[k + 1].from - m->pause[k].to <
          m->pause[best + 1].from - m->pause[best].to)
        best = k;
    m->pause[best].to = m->pause[best + 1].to;
    memmove(&m->pause[best + 1], &m->pause[best + 2],
            (m->npause - best - 2) * sizeof m->pause[0]);
    m->npause--;
    m->pauses_merged = 1;
    if (i > best + 1)
      i--;
  }
  memmove(&m->pause[i + 1], &m->pause[i], (m->npause - i) * sizeof m->pause[0]);
  m->pause[i] = (rp_span){from, to};
  m->npause++;
}

/* ---- Senders, outcomes, histograms --------------------------------------- */

static int marker_of(rp_model *m, const char *component) {
  for (int k = 0; k < m->nmarked; k++)
    if (strcmp(m->marked[k], component) == 0)
      return k;
  if (m->nmarked == RP_MARKED)
    return RP_MARKED;
  snprintf(m->marked[m->nmarked], sizeof m->marked[0], "%s", component);
  return m->nmarked++;
}

/* Counts a 429/503 under its sender and limit kind; pairs beyond the table
 * are counted as "other" (polite run's rule). */
static void pair_count(rp_model *m, const char *comp, const char *lim) {
  for (size_t i = 0; i < m->npairs; i++)
    if (strcmp(m->pairs[i].component, comp) == 0 &&
        strcmp(m->pairs[i].limit, lim) == 0) {
      m->pairs[i].count++;
      return;
    }
  if (m->npairs == RP_PAIRS) {
    m->pairs[RP_PAIRS - 1].count++;
    return;
  }
  if (m->npairs == RP_PAIRS - 1) {
    comp = "other";
    lim = "unknown";
  }
  rp_pair *p = &m->pairs[m->npairs++];
  snprintf(p->component, sizeof p->component, "%s", comp);
  snprintf(p->limit, sizeof p->limit, "%s", lim);
  p->count = 1;
}

int rp_outcome_index(const char *name) {
  for (int i = 0; i < POLITE_OUT_COUNT && i < RP_OUTCOMES - 1; i++)
    if (name && strcmp(polite_outcome_name((polite_outcome)i), name) == 0)
      return i;
  return RP_OUTCOMES - 1;
}

const char *rp_outcome_name(int i) {
  return i < RP_OUTCOMES - 1 ? polite_outcome_name((polite_outcome)i)
                             : "unknown";
}

static int reason_index(const char *r) {
  if (r == NULL)
    return -1;
  if (strcmp(r, "server") == 0)
    return 0;
  if (strcmp(r, "prompt") == 0)
    return 1;
  if (strcmp(r, "backoff") == 0)
    return 2;
  return -1;
}

/* ---- Feeding ------------------------------------------------------------ */

void rp_model_attempt(rp_model *m, const rp_attempt *a) {
  int64_t s = a->start_ms,
          e = a->end_ms < a->start_ms ? a->start_ms : a->end_ms;
  rp_source *src = cur(m);
  if (src) {
    src->attempts++;
    if (src->first_ms < 0 || s < src->first_ms)
      src->first_ms = s;
    if (e > src->last_ms)
      src->last_ms = e;
  }
  int64_t pause_ms = -1;
  if (a->account_pause && a->server_wait_ms > 0) {
    pause_ms = a->action == RP_ACT_RETRY && a->wait_ms > a->server_wait_ms
                   ? a->wait_ms
                   : a->server_wait_ms;
    cover(m, e + pause_ms);
  }
  cover(m, s);
  cover(m, e);
  int bs = bucket_of(m, s), be = bucket_of(m, e);
  rp_bucket *b = &m->b[bs];
  if (a->attempt <= 1) {
    b->first++;
    m->first_attempts++;
  } else {
    b->retry++;
    m->retries++;
  }
  b->iv_start++;
  b->off_start += bucket_end(m, bs) - (double)s;
  m->b[be].iv_end++;
  m->b[be].off_end += bucket_end(m, be) - (double)e;
  m->attempts++;
  m->latency_sum_ms += (double)(e - s);
  m->lat_hist[rp_hist_bin(e - s)]++;
  if (m->first_start < 0 || s < m->first_start)
    m->first_start = s;
  if (s > m->last_start)
    m->last_start = s;
  if (e > m->last_end)
    m->last_end = e;
  if (a->status == 429 || a->status == 503) {
    const char *comp = a->component ? a->component : "unknown";
    m->b[be].thr[marker_of(m, comp)]++;
    pair_count(m, comp, a->limit ? a->limit : "unknown");
    if (a->status == 429) {
      m->n429++;
      m->b[be].n429++;
    } else {
      m->n503++;
      m->b[be].n503++;
    }
  }
  if (a->action == RP_ACT_RETRY) {
    int64_t wait = a->wait_ms > 0 ? a->wait_ms : 0;
    int r = reason_index(a->reason);
    m->retry_wait_ms += wait;
    if (r >= 0) {
      m->retry_by_reason[r]++;
      m->wait_by_reason[r] += wait;
      m->wait_hist[r][rp_hist_bin(wait)]++;
    }
  } else {
    m->final_by_outcome[rp_outcome_index(a->reason)]++;
  }
  if (pause_ms > 0)
    pause_add(m, e, e + pause_ms);
  sweep_add(m, s, e);
}

void rp_model_result(rp_model *m, const rp_result *r) {
  m->results++;
  m->by_outcome[rp_outcome_index(r->outcome)]++;
  m->units += (uint64_t)(r->cost ? r->cost : 1) * r->attempts;
  if (cur(m))
    cur(m)->results++;
}

void rp_model_run(rp_model *m, const rp_run *r) {
  rp_source *s = cur(m);
  if (s) {
    s->run = *r;
    s->has_run = 1;
  }
}

void rp_model_rate(rp_model *m, int64_t t, double rate) {
  cover(m, t);
  rp_bucket *b = &m->b[bucket_of(m, t)];
  if (!b->has_rate || t >= b->rate_ms) {
    b->rate = rate;
    b->rate_ms = t;
    b->has_rate = 1;
  }
  if (m->rate_events == 0 || rate < m->rate_min)
    m->rate_min = rate;
  if (m->rate_events == 0 || rate > m->rate_max)
    m->rate_max = rate;
  m->rate_last = rate;
  m->rate_events++;
}

void rp_model_end(rp_model *m, int64_t t) {
  rp_source *s = cur(m);
  if (s)
    s->end_ms = t;
  cover(m, t);
}

void rp_model_bad_line(rp_model *m, long lineno, const char *why) {
  const char *name = cur(m) ? cur(m)->name : "-";
  m->bad_lines++;
  if (cur(m))
    cur(m)->bad++;
  fprintf(stderr, "polite report: %s:%ld: %s\n", name, lineno, why);
  if (m->nbad_quoted < RP_BAD_QUOTED)
    snprintf(m->bad_quoted[m->nbad_quoted++], sizeof m->bad_quoted[0],
             "%s:%ld: %s", name, lineno, why);
}

/* ---- Derived figures ---------------------------------------------------- */

void rp_model_derive(const rp_model *m, rp_derived *d) {
  memset(d, 0, sizeof *d);
  int64_t end = m->last_end;
  for (int i = 0; i < m->nsrc; i++) {
    const rp_source *s = &m->src[i];
    if (s->end_ms > end)
      end = s->end_ms;
    if (s->has_run && s->run.rate_per_s > d->planned_rate)
      d->planned_rate = s->run.rate_per_s;
    if (s->has_run && s->run.concurrency > d->concurrency)
      d->concurrency = s->run.concurrency;
    if (s->peak_in_flight > d->peak_in_flight)
      d->peak_in_flight = s->peak_in_flight;
  }
  double active_ms = m->first_start >= 0 && end > m->first_start
                         ? (double)(end - m->first_start)
                         : 0;
  d->run_s = active_ms / 1000.0;
  /* Each log's own spacing; logs of hosts sharing a budget ran at the same
   * time, so their rates add up. */
  for (int i = 0; i < m->nsrc; i++)
    if (m->src[i].gaps > 0 && m->src[i].gap_sum_ms > 0)
      d->measured_rate +=
          (double)m->src[i].gaps / (m->src[i].gap_sum_ms / 1000.0);
  if (m->attempts > 0)
    d->mean_latency_ms = m->latency_sum_ms / (double)m->attempts;
  if (active_ms > 0)
    d->mean_in_flight = m->latency_sum_ms / active_ms;
  d->little = d->measured_rate * d->mean_latency_ms / 1000.0;
  d->mean_cost = m->attempts > 0 && m->units > m->attempts
                     ? (double)m->units / (double)m->attempts
                     : 1.0;
  if (d->planned_rate > 0)
    d->start_plan = d->planned_rate / d->mean_cost;
  for (size_t i = 0; i < m->npause; i++)
    d->paused_ms += m->pause[i].to - m->pause[i].from;
  d->have_results = m->results > 0;
}
