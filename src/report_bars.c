/* polite report: the bar charts of the run page (retry waits by kind,
 * outcomes, latency histogram), each labelled with its numbers. */
#include "report_html.h"

#include <string.h>

static const char *const WAIT_KIND[3] = {"server-given wait", "prompt retry",
                                         "backoff"};
static const char *const WAIT_LOOK[3] = {"solid", "dotted", "hatched"};

/* First and last non-empty bins of up to three histograms. */
static int bin_range(const uint64_t (*h)[RP_HIST], int nh, int *lo, int *hi) {
  *lo = RP_HIST;
  *hi = -1;
  for (int r = 0; r < nh; r++)
    for (int k = 0; k < RP_HIST; k++)
      if (h[r][k]) {
        if (k < *lo)
          *lo = k;
        if (k > *hi)
          *hi = k;
      }
  return *hi >= *lo;
}

/* Vertical bars over histogram bins lo..hi, one bar per series in each
 * bin, with the count above each bar and the bin's label below. */
static void hist_bars(FILE *f, const uint64_t (*h)[RP_HIST], int nh, int lo,
                      int hi, const char *ylabel) {
  uint64_t top = 0;
  for (int r = 0; r < nh; r++)
    for (int k = lo; k <= hi; k++)
      top = h[r][k] > top ? h[r][k] : top;
  rp_frame fr;
  memset(&fr, 0, sizeof fr);
  fr.x0 = 64;
  fr.x1 = 880;
  fr.y0 = 16;
  fr.y1 = 200;
  rp_scale(&fr, (double)top * 1.15);
  rp_axis_y(f, &fr, ylabel);
  double gw = (fr.x1 - fr.x0) / (hi - lo + 1), bw = (gw - 8) / nh;
  if (bw > 60) /* a lone bin stays a bar, not a wall */
    bw = 60;
  char lab[48];
  for (int k = lo; k <= hi; k++) {
    double gx = fr.x0 + gw * (k - lo) + 4;
    for (int r = 0; r < nh; r++) {
      uint64_t c = h[r][k];
      double y = rp_y(&fr, (double)c);
      if (c)
        fprintf(f,
                "<rect class=\"bar s%d\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                "height=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\" "
                "text-anchor=\"middle\">%llu</text>\n",
                nh > 1 ? r : 0, gx + bw * r, y, bw, fr.y1 - y,
                gx + bw * (r + 0.5), y - 3, (unsigned long long)c);
    }
    rp_hist_label(lab, sizeof lab, k);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
            gx + bw * nh / 2, fr.y1 + 14, lab);
  }
}

void rp_chart_waits(FILE *f, const rp_model *m) {
  int lo, hi;
  if (!bin_range(m->wait_hist, 3, &lo, &hi)) {
    fputs("<p>No retries: every request ended with its first attempt "
          "decision.</p>\n",
          f);
    return;
  }
  char desc[768], a[32];
  int n = snprintf(desc, sizeof desc,
                   "Retries by how long polite waited before each, in "
                   "duration bins, one bar per kind of wait: ");
  for (int r = 0; r < 3; r++) {
    rp_fmt_ms(a, sizeof a, (double)m->wait_by_reason[r]);
    n += snprintf(desc + n, sizeof desc - (size_t)n,
                  "%s%s (%s bars) %llu retries, %s in all", r ? "; " : "",
                  WAIT_KIND[r], WAIT_LOOK[r],
                  (unsigned long long)m->retry_by_reason[r], a);
  }
  snprintf(desc + n, sizeof desc - (size_t)n, ".");
  rp_svg_open(f, "c-waits", 900, 236, "Retries and their waits", desc);
  hist_bars(f, m->wait_hist, 3, lo, hi, "retries");
  rp_svg_close(f,
               "Waits before retries: the server's own time (Retry-After "
               "and rate-limit headers, plus spread) against backoff.",
               "t-waits");
  fputs("<dl class=\"legend\">", f);
  for (int r = 0; r < 3; r++)
    fprintf(f,
            "<dt><svg width=\"18\" height=\"12\" aria-hidden=\"true\"><rect "
            "class=\"bar s%d\" width=\"18\" height=\"12\"/></svg></dt><dd>%s "
            "(%s)</dd>",
            r, WAIT_KIND[r], WAIT_LOOK[r]);
  fputs("</dl>\n", f);
}

/* Outcome counts: from result lines when the log has them, else from the
 * decision of each request's last attempt. */
const uint64_t *rp_outcomes(const rp_model *m) {
  return m->results ? m->by_outcome : m->final_by_outcome;
}

void rp_chart_outcomes(FILE *f, const rp_model *m) {
  const uint64_t *o = rp_outcomes(m);
  uint64_t top = 0;
  int rows = 0;
  for (int i = 0; i < RP_OUTCOMES; i++) {
    top = o[i] > top ? o[i] : top;
    rows += o[i] > 0;
  }
  if (rows == 0) {
    fputs("<p>No request finished in these logs.</p>\n", f);
    return;
  }
  char desc[768];
  int n = snprintf(desc, sizeof desc, "Requests by outcome: ");
  for (int i = 0, first = 1; i < RP_OUTCOMES; i++)
    if (o[i]) {
      n += snprintf(desc + n, sizeof desc - (size_t)n, "%s%s %llu",
                    first ? "" : ", ", rp_outcome_name(i),
                    (unsigned long long)o[i]);
      first = 0;
    }
  double h = 24.0 * rows + 24;
  rp_svg_open(f, "c-outcomes", 900, h, "Outcomes", desc);
  double x0 = 170, x1 = 800, y = 12;
  for (int i = 0; i < RP_OUTCOMES; i++) {
    if (!o[i])
      continue;
    double w = top ? (double)o[i] / (double)top * (x1 - x0) : 0;
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>"
            "<rect class=\"bar%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
            "height=\"16\"/><text x=\"%.1f\" y=\"%.1f\">%llu</text>\n",
            x0 - 6, y + 12, rp_outcome_name(i), i == 0 ? " s0" : " s2", x0, y,
            w < 1 ? 1 : w, x0 + w + 4, y + 12, (unsigned long long)o[i]);
    y += 24;
  }
  rp_svg_close(f, "Requests by outcome (ok is solid, failures hatched).",
               "t-summary");
}

void rp_chart_latency(FILE *f, const rp_model *m) {
  int lo, hi;
  const uint64_t(*h)[RP_HIST] = (const uint64_t(*)[RP_HIST])m->lat_hist;
  if (!bin_range(h, 1, &lo, &hi)) {
    fputs("<p>No attempts.</p>\n", f);
    return;
  }
  char desc[1024], lab[48];
  int n = snprintf(desc, sizeof desc,
                   "Attempt latency (start to end of each network attempt) "
                   "in duration bins: ");
  for (int k = lo; k <= hi; k++) {
    rp_hist_label(lab, sizeof lab, k);
    n += snprintf(desc + n, sizeof desc - (size_t)n, "%s%s %llu",
                  k > lo ? ", " : "", lab, (unsigned long long)h[0][k]);
  }
  rp_svg_open(f, "c-latency", 900, 236, "Latency histogram", desc);
  hist_bars(f, h, 1, lo, hi, "attempts");
  rp_svg_close(f, "Attempts by latency.", "t-latency");
}
