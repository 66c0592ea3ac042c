/* polite: SVG and HTML building blocks (frames, axes, patterns, markers,
 * histogram bins) and the shared page head of every page polite writes. */
#include "report_svg.h"

#include <math.h>
#include <string.h>
#include <time.h>

void rp_esc(FILE *f, const char *s) {
  for (; s && *s; s++) {
    switch (*s) {
    case '&': fputs("&amp;", f); break;
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&#39;", f); break;
    default:
      if ((unsigned char)*s < 0x20)
        fputc(' ', f);
      else
        fputc(*s, f);
    }
  }
}

/* Screen: dark ink on white, thin grid; print: no backgrounds needed (every
 * series also has a pattern or a marker), charts kept whole on a page. */
static const char STYLE[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;"
    "color:#1a1a1a;background:#fff;margin:0 auto;max-width:960px;"
    "padding:16px}\n"
    "h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 6px;"
    "border-bottom:1px solid #ccc}\n"
    "table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid "
    "#bbb;padding:2px 8px;text-align:right;vertical-align:top}"
    "th{background:#f2f2f2}td.l,th.l{text-align:left}\n"
    "figure{margin:8px 0;break-inside:avoid}figcaption{font-size:13px;"
    "color:#333}\n"
    "svg{width:100%;height:auto;font:11px sans-serif}svg text{fill:#1a1a1a}"
    "\n.grid{stroke:#ddd;stroke-width:1}.axis{stroke:#333;stroke-width:1}\n"
    ".first{fill:#3b6ea8;stroke:#1a1a1a;stroke-width:.3}"
    ".retry{fill:url(#p-hatch);stroke:#1a1a1a;stroke-width:.3}\n"
    ".pause{fill:url(#p-cross);opacity:.55}\n"
    ".plan{stroke:#1a1a1a;stroke-width:2;stroke-dasharray:8 4;fill:none}"
    ".learned{stroke:#b35900;stroke-width:2.5;fill:none}\n"
    ".limit{stroke:#8b0000;stroke-width:2;fill:none}"
    ".little{stroke:#1a1a1a;stroke-width:2;stroke-dasharray:2 3;fill:none}\n"
    ".area{fill:#7fa7d1;stroke:#1a4f80;stroke-width:1.2}"
    ".mark{fill:#fff;stroke:#1a1a1a;stroke-width:1.4}\n"
    ".bar{fill:#5b8ec4;stroke:#1a1a1a;stroke-width:.4}"
    ".s0{fill:#3b6ea8}.s1{fill:url(#p-dots)}.s2{fill:url(#p-hatch)}\n"
    ".k0,.k1,.k2,.k3,.k4,.k5,.k6{stroke:#1a1a1a;stroke-width:.3}"
    ".k0{fill:#3b6ea8}.k1{fill:url(#p-dots)}.k2{fill:url(#p-hatch)}"
    ".k3{fill:url(#p-cross)}.k4{fill:#111}.k5{fill:#fff}.k6{fill:#999}\n"
    ".note{background:#fff4d6;border:1px solid #d9b44a;padding:6px 10px}"
    ".bad{background:#fde2e2;border:1px solid #c44;padding:6px 10px}\n"
    "dl.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:4px 0}"
    "dl.legend dt{display:inline}dl.legend dd{display:inline;margin:0 0 0 "
    "4px}\n"
    "svg.defs{position:absolute;width:0;height:0}"
    "code{font-size:13px}.num{font-variant-numeric:tabular-nums}\n"
    "@media print{body{max-width:none;padding:0;font-size:11px}"
    "h2{break-after:avoid}section{break-inside:avoid-page}"
    "a{color:inherit;text-decoration:none}"
    ".first,.area,.s0,.k0{fill:#888}th{background:none}"
    "table.data{font-size:9px}}\n";

void rp_page_head(FILE *f, const char *title) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta "
        "charset=\"utf-8\">\n<meta name=\"viewport\" "
        "content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
        "'none'; style-src 'unsafe-inline'\">\n<title>",
        f);
  rp_esc(f, title);
  fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", STYLE);
}

void rp_page_foot(FILE *f) {
  fputs("<footer><p>Written by polite report. Self-contained: no script, "
        "font or image is loaded.</p></footer>\n</body>\n</html>\n",
        f);
}

void rp_fmt_count(char *buf, size_t n, double v) {
  double a = fabs(v);
  if (a >= 1e9)
    snprintf(buf, n, "%.3gG", v / 1e9);
  else if (a >= 1e6)
    snprintf(buf, n, "%.3gM", v / 1e6);
  else if (a >= 1e4)
    snprintf(buf, n, "%.3gk", v / 1e3);
  else
    snprintf(buf, n, "%.4g", v);
}

void rp_fmt_ms(char *buf, size_t n, double ms) {
  if (ms < 0 || ms != ms)
    snprintf(buf, n, "-");
  else if (ms < 1000)
    snprintf(buf, n, "%.0f ms", ms);
  else if (ms < 60000)
    snprintf(buf, n, "%.1f s", ms / 1000);
  else if (ms < 3600000)
    snprintf(buf, n, "%d min %02d s", (int)(ms / 60000),
             (int)fmod(ms / 1000, 60));
  else
    snprintf(buf, n, "%d h %02d min", (int)(ms / 3600000),
             (int)fmod(ms / 60000, 60));
}

void rp_fmt_iso(char *buf, size_t n, int64_t wall_ms) {
  time_t t = (time_t)(wall_ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + k, n - k, ".%03dZ", (int)(wall_ms % 1000));
}

double rp_x(const rp_frame *fr, double t) {
  double span = (double)(fr->t1 - fr->t0);
  if (span <= 0)
    return fr->x0;
  double x = fr->x0 + (t - (double)fr->t0) / span * (fr->x1 - fr->x0);
  return x < fr->x0 ? fr->x0 : x > fr->x1 ? fr->x1 : x;
}

double rp_y(const rp_frame *fr, double v) {
  if (fr->vmax <= 0)
    return fr->y1;
  double y = fr->y1 - v / fr->vmax * (fr->y1 - fr->y0);
  return y < fr->y0 ? fr->y0 : y;
}

double rp_nice(double v) {
  if (!(v > 0))
    return 1;
  double p = pow(10, floor(log10(v)));
  for (int k = 0; k < 3; k++) {
    double c = p * (k == 0 ? 1 : k == 1 ? 2 : 5);
    if (c >= v * 0.999999)
      return c;
  }
  return p * 10;
}

void rp_scale(rp_frame *fr, double v) {
  fr->vmax = 4 * rp_nice(v / 4);
  fr->ticks = 4;
  for (int n = 3; n <= 6; n++) {
    double top = n * rp_nice(v / n);
    if (top < fr->vmax - 1e-9) {
      fr->vmax = top;
      fr->ticks = n;
    }
  }
}

void rp_svg_open(FILE *f, const char *id, double w, double h, const char *title,
                 const char *desc) {
  fprintf(f,
          "<figure>\n<svg id=\"%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
          "aria-labelledby=\"%s-t %s-d\" xmlns=\"http://www.w3.org/2000/svg\">"
          "\n<title id=\"%s-t\">",
          id, w, h, id, id, id);
  rp_esc(f, title);
  fprintf(f, "</title>\n<desc id=\"%s-d\">", id);
  rp_esc(f, desc);
  fputs("</desc>\n", f);
}

void rp_svg_close(FILE *f, const char *caption, const char *table_id) {
  fputs("</svg>\n<figcaption>", f);
  rp_esc(f, caption);
  if (table_id)
    fprintf(f, " <a href=\"#%s\">The numbers as a table.</a>", table_id);
  fputs("</figcaption>\n</figure>\n", f);
}

void rp_axis_y(FILE *f, const rp_frame *fr, const char *label) {
  char b[32];
  int n = fr->ticks > 0 ? fr->ticks : 4;
  for (int k = 0; k <= n; k++) {
    double v = fr->vmax * k / n, y = rp_y(fr, v);
    fprintf(f,
            "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/>",
            fr->x0, y, fr->x1, y);
    rp_fmt_count(b, sizeof b, v);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
            fr->x0 - 4, y + 4, b);
  }
  fprintf(f,
          "<text transform=\"translate(12 %.1f) rotate(-90)\" "
          "text-anchor=\"middle\">",
          (fr->y0 + fr->y1) / 2);
  rp_esc(f, label);
  fprintf(f,
          "</text>\n<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" "
          "x2=\"%.1f\" y2=\"%.1f\"/>\n",
          fr->x0, fr->y1, fr->x1, fr->y1);
}

void rp_axis_time(FILE *f, const rp_frame *fr) {
  double span = (double)(fr->t1 - fr->t0);
  double step = rp_nice(span / 6);
  char b[32];
  for (int k = 0; k * step <= span + 0.5 && k <= 20; k++) {
    double t = k * step;
    double x = rp_x(fr, (double)fr->t0 + t);
    rp_fmt_ms(b, sizeof b, t);
    fprintf(f,
            "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\">+%s</text>\n",
            x, fr->y1, x, fr->y1 + 4, x, fr->y1 + 16, b);
  }
  fprintf(f,
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time since the "
          "first start</text>\n",
          (fr->x0 + fr->x1) / 2, fr->y1 + 30);
}

/* Marker shapes, one per sender (m6 = other), distinguishable without
 * colour. */
static const char *const MARKERS[RP_MARKED + 1] = {
    "<circle r=\"4.5\"/>",
    "<path d=\"M0-5L5 4H-5Z\"/>",
    "<rect x=\"-4\" y=\"-4\" width=\"8\" height=\"8\"/>",
    "<path d=\"M0-5.5L5.5 0L0 5.5L-5.5 0Z\"/>",
    "<path d=\"M-4-4L4 4M4-4L-4 4\" stroke-width=\"2.2\"/>",
    "<path d=\"M0-5V5M-5 0H5\" stroke-width=\"2.2\"/>",
    "<path d=\"M-5 4L5 4L0-5Z M-2 1h4\" />"};

void rp_svg_defs(FILE *f) {
  fputs("<defs>\n"
        "<pattern id=\"p-hatch\" width=\"6\" height=\"6\" "
        "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">"
        "<rect width=\"6\" height=\"6\" fill=\"#fff\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#c0392b\" "
        "stroke-width=\"3\"/></pattern>\n"
        "<pattern id=\"p-cross\" width=\"8\" height=\"8\" "
        "patternUnits=\"userSpaceOnUse\"><rect width=\"8\" height=\"8\" "
        "fill=\"#e6e6e6\"/><path d=\"M0 0L8 8M8 0L0 8\" stroke=\"#777\" "
        "stroke-width=\"1\"/></pattern>\n"
        "<pattern id=\"p-dots\" width=\"5\" height=\"5\" "
        "patternUnits=\"userSpaceOnUse\"><rect width=\"5\" height=\"5\" "
        "fill=\"#fff\"/><circle cx=\"2.5\" cy=\"2.5\" r=\"1.4\" "
        "fill=\"#2d7d46\"/></pattern>\n",
        f);
  for (int k = 0; k <= RP_MARKED; k++)
    fprintf(f, "<g id=\"m%d\" class=\"mark\">%s</g>\n", k, MARKERS[k]);
  fputs("</defs>\n", f);
}

void rp_hist_label(char *buf, size_t n, int k) {
  char a[24], b[24];
  int64_t lo = k > 0 ? rp_hist_edge(k - 1) : 0, hi = rp_hist_edge(k);
  rp_fmt_ms(a, sizeof a, (double)lo);
  if (hi < 0) {
    snprintf(buf, n, ">= %s", a);
    return;
  }
  rp_fmt_ms(b, sizeof b, (double)hi);
  if (k == 0)
    snprintf(buf, n, "< %s", b);
  else
    snprintf(buf, n, "%s-%s", a, b);
}

static const int64_t HIST_EDGES[RP_HIST - 1] = {
    1,   2,    5,    10,   20,    50,    100,   200,
    500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};

int rp_hist_bin(int64_t ms) {
  int k = 0;
  while (k < RP_HIST - 1 && ms >= HIST_EDGES[k])
    k++;
  return k;
}

int64_t rp_hist_edge(int k) {
  return k >= 0 && k < RP_HIST - 1 ? HIST_EDGES[k] : -1;
}
