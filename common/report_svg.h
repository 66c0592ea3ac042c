/* polite: the HTML and SVG primitives every page polite writes is made of
 * (the run report and the proxy's report): escaping, the page's head, number
 * and time formats, plot frames, axes, markers, histogram bins. */
#ifndef POLITE_REPORT_SVG_H
#define POLITE_REPORT_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 429/503 senders drawn with their own marker; the rest share "other". */
#define RP_MARKED 6
/* Latency and retry-wait histogram bins (1-2-5 series from 1 ms). */
#define RP_HIST 17

/* Writes s HTML-escaped (also safe inside attribute values). */
void rp_esc(FILE *f, const char *s);

/* The shared head of every page polite writes: doctype, <title>, the
 * inline style sheet (screen and print), no script, font or image. */
void rp_page_head(FILE *f, const char *title);
void rp_page_foot(FILE *f);

/* A number with its unit, shortened for axis labels (1.5k, 2M). */
void rp_fmt_count(char *buf, size_t n, double v);
/* A duration: 850 ms, 12.5 s, 3 min 20 s, 1 h 05 min. */
void rp_fmt_ms(char *buf, size_t n, double ms);
/* ISO-8601 UTC with milliseconds. */
void rp_fmt_iso(char *buf, size_t n, int64_t wall_ms);

/* A plot frame: the drawing area and its scales. */
typedef struct {
  double w, h;           /* whole SVG */
  double x0, x1, y0, y1; /* plot area (y0 top, y1 bottom) */
  double vmax;           /* value at the top of the y scale */
  int ticks;             /* grid steps from 0 to vmax */
  int64_t t0, t1;        /* time at x0, x1 (ms) */
} rp_frame;

double rp_x(const rp_frame *fr, double t_ms);
double rp_y(const rp_frame *fr, double v);

/* 1, 2 or 5 times a power of ten, at least v (v <= 0 gives 1). */
double rp_nice(double v);
/* Sets fr's y scale: the lowest top at least v that 3 to 6 steps of a
 * 1-2-5 value reach. */
void rp_scale(rp_frame *fr, double v);

/* Opens <figure><svg ...> with role img, <title> and <desc>; the desc
 * text is given escaped by the caller through desc_fmt. */
void rp_svg_open(FILE *f, const char *id, double w, double h, const char *title,
                 const char *desc);
void rp_svg_close(FILE *f, const char *caption, const char *table_id);

/* The y axis with ticks and grid, and the time axis (seconds from t0). */
void rp_axis_y(FILE *f, const rp_frame *fr, const char *label);
void rp_axis_time(FILE *f, const rp_frame *fr);

/* Shared <defs>: hatch and dot patterns, the sender markers m0..m6. */
void rp_svg_defs(FILE *f);

/* Labels of histogram bin k ("1-2 ms", ">= 100 s"). */
void rp_hist_label(char *buf, size_t n, int k);

/* Lower edge in ms of histogram bin k+1 (bins: < 1 ms, 1-2, 2-5, ...,
 * >= 100 s); -1 past the last. */
int64_t rp_hist_edge(int k);
/* The histogram bin of a duration in ms. */
int rp_hist_bin(int64_t ms);

#endif
