/* polite report: the HTML page and its inline SVG charts (internal). */
#ifndef POLITE_REPORT_HTML_H
#define POLITE_REPORT_HTML_H

#include "report_model.h"
#include "report_svg.h"

#include <stdio.h>

/* Timeline charts (report_charts.c). */
void rp_chart_rate(FILE *f, rp_model *m, const rp_derived *d);
void rp_chart_inflight(FILE *f, rp_model *m, const rp_derived *d);
void rp_chart_waits(FILE *f, const rp_model *m);
void rp_chart_outcomes(FILE *f, const rp_model *m);
void rp_chart_latency(FILE *f, const rp_model *m);

/* Outcome counts the page shows (result lines, else last attempts). */
const uint64_t *rp_outcomes(const rp_model *m);

/* The whole run page. Returns 0, or -1 when writing failed. */
int rp_write_page(FILE *f, rp_model *m);

#endif
