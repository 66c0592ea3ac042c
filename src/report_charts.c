/* polite report: the five charts of the run page (inline SVG, each with a
 * title, a description and patterns or markers besides colour). */
#include "report_html.h"

#include <string.h>

#define W 900.0
#define PX0 64.0
#define PX1 770.0

static rp_frame timeline_frame(const rp_model *m, double top, double h) {
  rp_frame fr;
  memset(&fr, 0, sizeof fr);
  fr.w = W;
  fr.h = h;
  fr.x0 = PX0;
  fr.x1 = PX1;
  fr.y0 = top;
  fr.y1 = h - 44;
  fr.t0 = m->origin;
  fr.t1 = m->origin + (int64_t)m->nb * m->width;
  return fr;
}

/* Server pauses as shaded bands; pauses closer than 2 px are drawn as one
 * so the page stays small however many there were. */
static void draw_pauses(FILE *f, const rp_model *m, const rp_frame *fr) {
  double open_x = -1, close_x = -1;
  for (size_t i = 0; i <= m->npause; i++) {
    double a = -1, b = -1;
    if (i < m->npause) {
      a = rp_x(fr, (double)m->pause[i].from);
      b = rp_x(fr, (double)m->pause[i].to);
      if (open_x >= 0 && a - close_x < 2) {
        close_x = b;
        continue;
      }
    }
    if (open_x >= 0) {
      double w = close_x - open_x < 1 ? 1 : close_x - open_x;
      fprintf(f,
              "<rect class=\"pause\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\"/>\n",
              open_x, fr->y0, w, fr->y1 - fr->y0);
    }
    open_x = a;
    close_x = b;
  }
}

/* A horizontal reference line with its label at the right edge. */
static void ref_line(FILE *f, const rp_frame *fr, const char *cls, double v,
                     const char *label) {
  double y = rp_y(fr, v);
  fprintf(f,
          "<line class=\"%s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
          "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\">",
          cls, fr->x0, y, fr->x1, y, fr->x1 + 4, y + 4);
  rp_esc(f, label);
  fputs("</text>\n", f);
}

/* The learned rate as a step line (carried forward from each change);
 * `scale` turns it into what the chart shows (1, or x latency). */
static void learned_line(FILE *f, const rp_model *m, const rp_frame *fr,
                         double scale, const char *cls) {
  int have = 0;
  double v = 0;
  for (int i = 0; i < m->nb; i++) {
    const rp_bucket *b = &m->b[i];
    double x = rp_x(fr, (double)(m->origin + (int64_t)i * m->width));
    if (b->has_rate) {
      double x2 = rp_x(fr, (double)b->rate_ms);
      if (!have)
        fprintf(f, "<path class=\"%s\" d=\"M%.1f %.1f", cls, x2,
                rp_y(fr, b->rate * scale));
      else
        fprintf(f, "H%.1fV%.1f", x2, rp_y(fr, b->rate * scale));
      v = b->rate * scale;
      have = 1;
    } else if (have) {
      fprintf(f, "H%.1f", x);
    }
  }
  if (have)
    fprintf(f, "H%.1f\"/>\n", fr->x1);
  (void)v;
}

static double learned_max(const rp_model *m) {
  return m->rate_events ? m->rate_max : 0;
}

/* Rows of the 429/503 band: senders that have a marker. */
static int marker_rows(const rp_model *m, int *rows) {
  int n = 0;
  for (int k = 0; k <= RP_MARKED; k++) {
    uint64_t c = 0;
    for (int i = 0; i < m->nb; i++)
      c += m->b[i].thr[k];
    if (c)
      rows[n++] = k;
  }
  return n;
}

static const char *marker_name(const rp_model *m, int k) {
  return k < m->nmarked ? m->marked[k] : "other senders";
}

static const char *const SHAPES[RP_MARKED + 1] = {
    "circle", "triangle", "square",       "diamond",
    "cross",  "plus",     "open triangle"};

static void draw_markers(FILE *f, const rp_model *m, const rp_frame *fr,
                         const int *rows, int nrows) {
  char t[32];
  for (int r = 0; r < nrows; r++) {
    int k = rows[r];
    double y = 14 + 14.0 * r;
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", fr->x1 + 4, y + 4);
    rp_esc(f, marker_name(m, k));
    fputs("</text>\n", f);
    /* Markers at least 12 px apart: neighbouring buckets share one. */
    double bw = (fr->x1 - fr->x0) / (m->nb ? m->nb : 1);
    int group = bw >= 12 ? 1 : (int)(12 / bw) + 1;
    for (int i = 0; i < m->nb; i += group) {
      uint64_t c = 0;
      for (int j = i; j < i + group && j < m->nb; j++)
        c += m->b[j].thr[k];
      if (!c)
        continue;
      int n = i + group <= m->nb ? group : m->nb - i;
      double x = rp_x(fr, (double)m->origin +
                              ((double)i + n / 2.0) * (double)m->width);
      rp_fmt_ms(t, sizeof t, (double)((int64_t)i * m->width));
      fprintf(f,
              "<use href=\"#m%d\" x=\"%.1f\" y=\"%.1f\"><title>%llu x "
              "429/503 from ",
              k, x, y, (unsigned long long)c);
      rp_esc(f, marker_name(m, k));
      fprintf(f, " at +%s</title></use>\n", t);
    }
  }
}

/* The rate chart's description: its numbers in words, senders included. */
static void rate_desc(char *desc, size_t size, const rp_model *m,
                      const rp_derived *d, double peak, double mean) {
  char a[32], b[32];
  rp_fmt_ms(a, sizeof a, (double)m->width);
  rp_fmt_ms(b, sizeof b, (double)d->paused_ms);
  int n = snprintf(desc, size,
                   "Network attempts started per second in %s buckets: peak "
                   "%.2f/s, mean %.2f/s over %d buckets. First attempts are "
                   "solid bars, retries hatched bars on top. ",
                   a, peak, mean, m->nb);
  if (d->start_plan > 0)
    n += snprintf(desc + n, size - (size_t)n,
                  "Planned start rate %.2f/s (dashed line). ", d->start_plan);
  if (m->rate_events)
    n += snprintf(desc + n, size - (size_t)n,
                  "Learned rate (solid step line): %llu changes, from %.2f "
                  "to %.2f/s, last %.2f/s. ",
                  (unsigned long long)m->rate_events, m->rate_min, m->rate_max,
                  m->rate_last);
  n += snprintf(desc + n, size - (size_t)n,
                "Server pauses are cross-hatched bands (%zu, %s in all). "
                "%llu answers 429 and %llu 503 are marked above the plot, one "
                "row and marker shape per sender",
                m->npause, b, (unsigned long long)m->n429,
                (unsigned long long)m->n503);
  for (size_t i = 0; i < m->npairs && n > 0 && (size_t)n < size; i++)
    n += snprintf(desc + n, size - (size_t)n, "%s %s %s limit %llu",
                  i ? "," : ":", m->pairs[i].component, m->pairs[i].limit,
                  (unsigned long long)m->pairs[i].count);
  if (n > 0 && (size_t)n < size)
    snprintf(desc + n, size - (size_t)n, ".");
}

/* First attempts (solid) and retries (hatched, on top) per bucket. */
static void start_bars(FILE *f, const rp_model *m, const rp_frame *fr) {
  double ws = (double)m->width / 1000.0;
  double bw = (fr->x1 - fr->x0) / (m->nb ? m->nb : 1);
  for (int i = 0; i < m->nb; i++) {
    const rp_bucket *bk = &m->b[i];
    double x = fr->x0 + bw * i, y1 = rp_y(fr, (double)bk->first / ws);
    double y2 = rp_y(fr, (double)(bk->first + bk->retry) / ws);
    if (bk->first)
      fprintf(f,
              "<rect class=\"first\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\"/>",
              x, y1, bw, fr->y1 - y1);
    if (bk->retry)
      fprintf(f,
              "<rect class=\"retry\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\"/>",
              x, y2, bw, y1 - y2);
    if (bk->first || bk->retry)
      fputc('\n', f);
  }
}

/* The planned rate (dashed) and the learned one (step line), labelled at
 * the right without the labels overlapping. */
static void rate_lines(FILE *f, const rp_model *m, const rp_derived *d,
                       const rp_frame *fr) {
  char a[48];
  if (d->start_plan > 0) {
    snprintf(a, sizeof a, "planned %.2f/s", d->start_plan);
    ref_line(f, fr, "plan", d->start_plan, a);
  }
  learned_line(f, m, fr, 1.0, "learned");
  if (m->rate_events) {
    double y = rp_y(fr, m->rate_last) + 4, yp = rp_y(fr, d->start_plan) + 4;
    if (d->start_plan > 0 && y > yp - 14 && y < yp + 14)
      y = y <= yp ? yp - 14 : yp + 14;
    snprintf(a, sizeof a, "learned %.2f/s", m->rate_last);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", fr->x1 + 4, y, a);
  }
}

static void rate_legend(FILE *f, const rp_model *m, const int *rows,
                        int nrows) {
  fputs("<dl class=\"legend\">", f);
  fputs("<dt><svg width=\"18\" height=\"12\" aria-hidden=\"true\"><rect "
        "class=\"first\" width=\"18\" height=\"12\"/></svg></dt><dd>first "
        "attempts</dd><dt><svg width=\"18\" height=\"12\" "
        "aria-hidden=\"true\"><rect class=\"retry\" width=\"18\" "
        "height=\"12\"/></svg></dt><dd>retries</dd>",
        f);
  fputs("<dt><svg width=\"18\" height=\"12\" aria-hidden=\"true\"><rect "
        "class=\"pause\" width=\"18\" height=\"12\"/></svg></dt><dd>server "
        "pause</dd>",
        f);
  for (int r = 0; r < nrows; r++) {
    fprintf(f,
            "<dt><svg width=\"14\" height=\"14\" viewBox=\"-7 -7 14 14\" "
            "aria-hidden=\"true\"><use href=\"#m%d\"/></svg></dt><dd>",
            rows[r]);
    rp_esc(f, marker_name(m, rows[r]));
    fprintf(f, " (%s)</dd>", SHAPES[rows[r]]);
  }
  fputs("</dl>\n", f);
}

void rp_chart_rate(FILE *f, rp_model *m, const rp_derived *d) {
  int rows[RP_MARKED + 1];
  int nrows = marker_rows(m, rows);
  double band = nrows ? 14.0 * nrows + 8 : 0;
  rp_frame fr = timeline_frame(m, 16 + band, 320 + band);
  double ws = (double)m->width / 1000.0, peak = 0, sum = 0;
  for (int i = 0; i < m->nb; i++) {
    double r = (double)(m->b[i].first + m->b[i].retry) / ws;
    peak = r > peak ? r : peak;
    sum += r;
  }
  double top = peak > d->start_plan ? peak : d->start_plan;
  if (learned_max(m) > top)
    top = learned_max(m);
  rp_scale(&fr, top * 1.1);
  char desc[2048];
  rate_desc(desc, sizeof desc, m, d, peak, m->nb ? sum / m->nb : 0);
  rp_svg_open(f, "c-rate", fr.w, fr.h, "Request starts per second", desc);
  draw_pauses(f, m, &fr);
  rp_axis_y(f, &fr, "starts per second");
  rp_axis_time(f, &fr);
  start_bars(f, m, &fr);
  rate_lines(f, m, d, &fr);
  draw_markers(f, m, &fr, rows, nrows);
  rp_svg_close(f,
               "Starts per second, with the planned or learned rate, "
               "server pauses and 429/503 answers by sender.",
               "t-timeline");
  rate_legend(f, m, rows, nrows);
}

void rp_chart_inflight(FILE *f, rp_model *m, const rp_derived *d) {
  rp_frame fr = timeline_frame(m, 16, 300);
  double active = 0, peak = 0;
  for (int i = 0; i < m->nb; i++) {
    double v = rp_bucket_in_flight(m, i, &active);
    peak = v > peak ? v : peak;
  }
  double rate = d->start_plan > 0 ? d->start_plan : d->measured_rate;
  double little = rate * d->mean_latency_ms / 1000.0;
  double top = peak > little ? peak : little;
  if (learned_max(m) * d->mean_latency_ms / 1000.0 > top)
    top = learned_max(m) * d->mean_latency_ms / 1000.0;
  /* A limit far above what was in flight would flatten the area: it is
   * then named at the top instead of drawn. */
  int limit_drawn =
      d->concurrency > 0 && (double)d->concurrency <= 3 * (top > 1 ? top : 1);
  if (limit_drawn && (double)d->concurrency > top)
    top = (double)d->concurrency;
  rp_scale(&fr, top * 1.1);
  char desc[768], a[48];
  int n = snprintf(desc, sizeof desc,
                   "Mean requests in flight per bucket (filled area): "
                   "highest bucket %.2f, mean %.2f over the run, peak %u. ",
                   peak, d->mean_in_flight, d->peak_in_flight);
  if (d->concurrency > 0)
    n += snprintf(desc + n, sizeof desc - (size_t)n,
                  "Concurrency limit %ld (solid line). ", d->concurrency);
  snprintf(desc + n, sizeof desc - (size_t)n,
           "Little's law expectation %.2f = %.2f/s x %.0f ms mean latency "
           "(dotted line)%s. Server pauses are cross-hatched.",
           little, rate, d->mean_latency_ms,
           m->rate_events ? "; with a learned rate it follows that rate" : "");
  rp_svg_open(f, "c-inflight", fr.w, fr.h, "Requests in flight", desc);
  draw_pauses(f, m, &fr);
  rp_axis_y(f, &fr, "requests in flight");
  rp_axis_time(f, &fr);
  double bw = (fr.x1 - fr.x0) / (m->nb ? m->nb : 1);
  fprintf(f, "<path class=\"area\" d=\"M%.1f %.1f", fr.x0, fr.y1);
  active = 0;
  for (int i = 0; i < m->nb; i++) {
    double v = rp_bucket_in_flight(m, i, &active);
    fprintf(f, "V%.1fH%.1f", rp_y(&fr, v), fr.x0 + bw * (i + 1));
  }
  fprintf(f, "V%.1fZ\"/>\n", fr.y1);
  if (limit_drawn) {
    snprintf(a, sizeof a, "limit %ld", d->concurrency);
    ref_line(f, &fr, "limit", (double)d->concurrency, a);
  } else if (d->concurrency > 0) {
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\">limit %ld (above the "
            "scale)</text>\n",
            fr.x1 + 4, fr.y0 + 4, d->concurrency);
  }
  if (m->rate_events) {
    learned_line(f, m, &fr, d->mean_latency_ms / 1000.0, "little");
  } else if (little > 0) {
    snprintf(a, sizeof a, "Little's law %.2f", little);
    ref_line(f, &fr, "little", little, a);
  }
  rp_svg_close(f,
               "Requests in flight against the concurrency limit and the "
               "Little's-law expectation (rate x mean latency).",
               "t-timeline");
}
