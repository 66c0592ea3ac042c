/* polite report: the run page — header, summary table, the plan's
 * arithmetic, the charts and their data tables. */
#include "report_html.h"

#include <string.h>

/* A summary row whose value is also machine-readable: data-key names the
 * `polite run --summary-json` key, data-value holds the exact number. */
static void row_num(FILE *f, const char *label, const char *key, double v,
                    const char *shown) {
  fputs("<tr><th class=\"l\" scope=\"row\">", f);
  rp_esc(f, label);
  fprintf(f, "</th><td class=\"num\" data-key=\"%s\" data-value=\"%.15g\">",
          key, v);
  rp_esc(f, shown);
  fputs("</td></tr>\n", f);
}

static void row_count(FILE *f, const char *label, const char *key, uint64_t v) {
  char b[32];
  snprintf(b, sizeof b, "%llu", (unsigned long long)v);
  row_num(f, label, key, (double)v, b);
}

static void summary_counts(FILE *f, const rp_model *m, const rp_derived *d) {
  const uint64_t *o = rp_outcomes(m);
  uint64_t failed = 0;
  for (int i = 1; i < RP_OUTCOMES; i++)
    failed += o[i];
  row_count(f,
            d->have_results ? "requests"
                            : "requests (first attempts; the "
                              "log has no result lines)",
            "requests", d->have_results ? m->results : m->first_attempts);
  row_count(f, "first attempts", "first_attempts", m->first_attempts);
  row_count(f, "retries", "retries", m->retries);
  row_count(f, "network attempts", "network_attempts", m->attempts);
  row_count(f, "ok", "ok", o[0]);
  row_count(f, "did not end ok", "failed", failed);
  char key[64], lab[96];
  for (int i = 1; i < RP_OUTCOMES; i++)
    if (o[i]) {
      snprintf(key, sizeof key, "failures.%s", rp_outcome_name(i));
      snprintf(lab, sizeof lab, "  outcome %s", rp_outcome_name(i));
      row_count(f, lab, key, o[i]);
    }
  row_count(f, "429 answers", "status_429", m->n429);
  row_count(f, "503 answers", "status_503", m->n503);
  for (size_t i = 0; i < m->npairs; i++) {
    const rp_pair *p = &m->pairs[i];
    snprintf(key, sizeof key, "throttled_by.%s.%s", p->component, p->limit);
    snprintf(lab, sizeof lab, "  429/503 from %s (%s limit)", p->component,
             p->limit);
    row_count(f, lab, key, p->count);
  }
}

static void summary_times(FILE *f, const rp_model *m, const rp_derived *d) {
  char b[96], t[32];
  rp_fmt_ms(b, sizeof b, (double)m->retry_wait_ms);
  row_num(f, "time waited between attempts", "retry_wait_ms",
          (double)m->retry_wait_ms, b);
  rp_fmt_ms(b, sizeof b, (double)d->paused_ms);
  row_num(f, "budget paused by the server", "paused_ms", (double)d->paused_ms,
          b);
  rp_fmt_ms(b, sizeof b, d->run_s * 1000);
  row_num(f, "first start to end of run", "active_ms", d->run_s * 1000, b);
  snprintf(b, sizeof b, "%.2f/s (gaps with a server pause left out%s)",
           d->measured_rate, m->nsrc > 1 ? "; the logs' rates added" : "");
  row_num(f, "start rate measured", "rate_measured", d->measured_rate, b);
  if (d->planned_rate > 0) {
    snprintf(b, sizeof b, "%.2f units/s", d->planned_rate);
    row_num(f, "rate planned (--rate)", "rate_target", d->planned_rate, b);
    snprintf(b, sizeof b, "%.2f/s (mean cost %.2f units per attempt)",
             d->start_plan, d->mean_cost);
    row_num(f, "start rate planned", "start_plan", d->start_plan, b);
  } else if (m->rate_events) {
    snprintf(b, sizeof b, "learned: %.2f/s last (%.2f..%.2f/s)", m->rate_last,
             m->rate_min, m->rate_max);
    row_num(f, "start rate planned", "rate_learned_last", m->rate_last, b);
  }
  snprintf(b, sizeof b, "%.2f", d->mean_in_flight);
  row_num(f, "in flight, mean", "in_flight_mean", d->mean_in_flight, b);
  snprintf(b, sizeof b, "%u", d->peak_in_flight);
  row_num(f, "in flight, peak", "in_flight_peak", d->peak_in_flight, b);
  if (d->concurrency > 0) {
    snprintf(b, sizeof b, "%ld", d->concurrency);
    row_num(f, "concurrency limit", "concurrency", (double)d->concurrency, b);
  }
  snprintf(b, sizeof b, "%.1f ms", d->mean_latency_ms);
  row_num(f, "mean attempt latency", "latency_mean_ms", d->mean_latency_ms, b);
  rp_fmt_ms(t, sizeof t, d->mean_latency_ms);
  snprintf(b, sizeof b, "%.2f = %.2f/s x %s", d->little, d->measured_rate, t);
  row_num(f, "Little's law (measured rate x mean latency)",
          "littles_law_in_flight", d->little, b);
  if (m->units)
    row_count(f, "rate units spent", "units", m->units);
}

static void summary_table(FILE *f, const rp_model *m, const rp_derived *d) {
  fputs("<section id=\"t-summary\"><h2>Summary</h2>\n<table "
        "class=\"summary\"><caption class=\"l\">The run in numbers (the "
        "same keys as <code>polite run --summary-json</code>)</caption>\n",
        f);
  summary_counts(f, m, d);
  summary_times(f, m, d);
  fputs("</table>\n</section>\n", f);
}

/* The plan's arithmetic, in words: what the rate means, what Little's law
 * expects, whether the concurrency leaves room. */
static void plan_text(FILE *f, const rp_model *m, const rp_derived *d) {
  char a[32], b[32];
  fputs("<section id=\"plan\"><h2>The plan's arithmetic</h2>\n", f);
  double rate = d->start_plan > 0 ? d->start_plan : d->measured_rate;
  if (d->start_plan > 0) {
    rp_fmt_ms(a, sizeof a, 1000.0 / d->start_plan);
    fprintf(f,
            "<p>Planned: %.2f units/s &divide; %.2f units per attempt = "
            "<b>%.2f starts/s</b>, one start every %s.",
            d->planned_rate, d->mean_cost, d->start_plan, a);
  } else if (m->rate_events) {
    fprintf(f,
            "<p>No fixed rate: the rate was learned (%llu changes, from "
            "%.2f to %.2f/s, last %.2f/s); the figures below use the "
            "measured %.2f/s.",
            (unsigned long long)m->rate_events, m->rate_min, m->rate_max,
            m->rate_last, d->measured_rate);
  } else {
    fprintf(f,
            "<p>No planned rate in the log; the figures below use the "
            "measured %.2f starts/s.",
            d->measured_rate);
  }
  if (rate > 0) {
    rp_fmt_ms(a, sizeof a, (double)m->attempts / rate * 1000.0);
    fprintf(f, " %llu attempts at that rate take at least %s.",
            (unsigned long long)m->attempts, a);
  }
  fputs("</p>\n", f);
  double little = rate * d->mean_latency_ms / 1000.0;
  rp_fmt_ms(b, sizeof b, d->mean_latency_ms);
  fprintf(f,
          "<p>Little's law: %.2f starts/s &times; %s mean latency = <b>%.2f "
          "requests in flight</b> on average (measured: %.2f, peak %u).",
          rate, b, little, d->mean_in_flight, d->peak_in_flight);
  if (d->concurrency > 0 && little > (double)d->concurrency)
    fprintf(f,
            " The concurrency limit %ld is <b>below</b> that: the rate "
            "cannot be reached.",
            d->concurrency);
  else if (d->concurrency > 0)
    fprintf(f, " The concurrency limit %ld leaves room for it.",
            d->concurrency);
  fputs("</p>\n", f);
  long max_att = 0;
  for (int i = 0; i < m->nsrc; i++)
    if (m->src[i].run.max_attempts > max_att)
      max_att = m->src[i].run.max_attempts;
  if (max_att > 0 && d->have_results)
    fprintf(f,
            "<p>At most %ld network attempts per request: %llu requests "
            "could make up to %llu; they made %llu.</p>\n",
            max_att, (unsigned long long)m->results,
            (unsigned long long)m->results * (unsigned long long)max_att,
            (unsigned long long)m->attempts);
  fputs("</section>\n", f);
}

static void sources_table(FILE *f, const rp_model *m) {
  char a[40], b[40];
  fputs("<section id=\"t-sources\"><h2>Logs</h2>\n<table><tr><th "
        "class=\"l\">log</th><th>lines</th><th>attempts</th><th>results</th>"
        "<th>bad lines</th><th>rate planned</th><th>concurrency</th>"
        "<th>peak in flight</th><th class=\"l\">first start</th></tr>\n",
        f);
  for (int i = 0; i < m->nsrc; i++) {
    const rp_source *s = &m->src[i];
    fputs("<tr><td class=\"l\">", f);
    rp_esc(f, s->name);
    if (s->has_run && s->run.rate_per_s > 0)
      snprintf(a, sizeof a, "%.2f/s", s->run.rate_per_s);
    else
      snprintf(a, sizeof a, "%s", s->has_run ? "none/learned" : "-");
    if (s->first_ms >= 0)
      rp_fmt_iso(b, sizeof b, s->first_ms);
    else
      snprintf(b, sizeof b, "-");
    fprintf(f,
            "</td><td>%llu</td><td>%llu</td><td>%llu</td><td>%llu</td>"
            "<td>%s</td><td>%ld</td><td>%u</td><td class=\"l\">%s</td></tr>\n",
            (unsigned long long)s->lines, (unsigned long long)s->attempts,
            (unsigned long long)s->results, (unsigned long long)s->bad, a,
            s->run.concurrency, s->peak_in_flight, b);
  }
  fputs("</table>\n", f);
  if (m->nsrc > 1)
    fputs("<p>The charts add the logs together on one time axis (wall "
          "clock); the peak in flight is the largest of one log.</p>\n",
          f);
  fputs("</section>\n", f);
}

static void bad_lines(FILE *f, const rp_model *m) {
  if (m->bad_lines == 0)
    return;
  fprintf(f,
          "<section class=\"bad\" id=\"bad\"><h2>Malformed lines: %llu</h2>"
          "<p>These lines were skipped; the rest of the report is built from "
          "the others.</p><ul>\n",
          (unsigned long long)m->bad_lines);
  for (int i = 0; i < m->nbad_quoted; i++) {
    fputs("<li><code>", f);
    rp_esc(f, m->bad_quoted[i]);
    fputs("</code></li>\n", f);
  }
  if (m->bad_lines > (uint64_t)m->nbad_quoted)
    fprintf(f, "<li>and %llu more (all listed on stderr)</li>\n",
            (unsigned long long)(m->bad_lines - (uint64_t)m->nbad_quoted));
  fputs("</ul></section>\n", f);
}

/* Milliseconds of bucket i covered by a server pause. */
static int64_t paused_in(const rp_model *m, int i) {
  int64_t a = m->origin + (int64_t)i * m->width, b = a + m->width, sum = 0;
  for (size_t k = 0; k < m->npause; k++) {
    int64_t lo = m->pause[k].from > a ? m->pause[k].from : a;
    int64_t hi = m->pause[k].to < b ? m->pause[k].to : b;
    if (hi > lo)
      sum += hi - lo;
  }
  return sum;
}

static void timeline_table(FILE *f, rp_model *m) {
  fputs("<section id=\"t-timeline\"><h2>Timeline data</h2>\n<table "
        "class=\"data\"><tr><th>from (s)</th><th>first attempts</th>"
        "<th>retries</th><th>starts/s</th><th>429</th><th>503</th>"
        "<th>paused (ms)</th><th>mean in flight</th><th>learned rate</th>"
        "</tr>\n",
        f);
  double active = 0, ws = (double)m->width / 1000.0;
  for (int i = 0; i < m->nb; i++) {
    const rp_bucket *b = &m->b[i];
    double inflight = rp_bucket_in_flight(m, i, &active);
    char rate[32] = "";
    if (b->has_rate)
      snprintf(rate, sizeof rate, "%.2f", b->rate);
    fprintf(f,
            "<tr><td>%.1f</td><td>%llu</td><td>%llu</td><td>%.2f</td>"
            "<td>%llu</td><td>%llu</td><td>%lld</td><td>%.2f</td>"
            "<td>%s</td></tr>\n",
            (double)i * ws, (unsigned long long)b->first,
            (unsigned long long)b->retry, (double)(b->first + b->retry) / ws,
            (unsigned long long)b->n429, (unsigned long long)b->n503,
            (long long)paused_in(m, i), inflight, rate);
  }
  fputs("</table>\n</section>\n", f);
}

static void hist_table(FILE *f, const char *id, const char *title,
                       const uint64_t *const *cols, const char *const *names,
                       int ncols) {
  char lab[48];
  fprintf(f,
          "<section id=\"%s\"><h2>%s</h2>\n<table class=\"data\"><tr>"
          "<th class=\"l\">duration</th>",
          id, title);
  for (int c = 0; c < ncols; c++)
    fprintf(f, "<th>%s</th>", names[c]);
  fputs("</tr>\n", f);
  for (int k = 0; k < RP_HIST; k++) {
    uint64_t any = 0;
    for (int c = 0; c < ncols; c++)
      any += cols[c][k];
    if (!any)
      continue;
    rp_hist_label(lab, sizeof lab, k);
    fprintf(f, "<tr><td class=\"l\">%s</td>", lab);
    for (int c = 0; c < ncols; c++)
      fprintf(f, "<td>%llu</td>", (unsigned long long)cols[c][k]);
    fputs("</tr>\n", f);
  }
  fputs("</table>\n</section>\n", f);
}

static void header(FILE *f, const rp_model *m, const rp_derived *d) {
  char a[40], b[40], c[40];
  fputs("<header><h1>polite run report</h1>\n", f);
  if (m->first_start >= 0) {
    rp_fmt_iso(a, sizeof a, m->first_start);
    rp_fmt_iso(b, sizeof b, m->first_start + (int64_t)(d->run_s * 1000));
    rp_fmt_ms(c, sizeof c, d->run_s * 1000);
    fprintf(f,
            "<p>From %s to %s (%s), %d log%s. Times on the charts are "
            "counted from the first start.</p>\n",
            a, b, c, m->nsrc, m->nsrc == 1 ? "" : "s");
  } else {
    fputs("<p class=\"note\">No attempts in these logs.</p>\n", f);
  }
  if (m->bad_lines)
    fprintf(f,
            "<p class=\"bad\"><a href=\"#bad\">%llu malformed line%s "
            "skipped</a>.</p>\n",
            (unsigned long long)m->bad_lines, m->bad_lines == 1 ? "" : "s");
  if (m->pauses_merged)
    fputs("<p class=\"note\">More server pauses than the page keeps: close "
          "ones were joined, so the paused time is an upper bound.</p>\n",
          f);
  fputs("<nav><a href=\"#t-summary\">Summary</a> · <a href=\"#plan\">Plan"
        "</a> · <a href=\"#c-rate\">Starts</a> · <a href=\"#c-inflight\">In "
        "flight</a> · <a href=\"#c-waits\">Retries</a> · <a "
        "href=\"#c-outcomes\">Outcomes</a> · <a href=\"#c-latency\">Latency"
        "</a> · <a href=\"#t-timeline\">Data</a></nav>\n</header>\n",
        f);
}

int rp_write_page(FILE *f, rp_model *m) {
  /* Buckets of at least a second: "starts per second" reads as such. */
  rp_model_coarsen_to(m, 1000);
  rp_derived d;
  rp_model_derive(m, &d);
  rp_page_head(f, "polite run report");
  header(f, m, &d);
  /* Patterns and markers once, referenced by every chart. */
  fputs("<svg class=\"defs\" width=\"0\" height=\"0\" aria-hidden=\"true\">",
        f);
  rp_svg_defs(f);
  fputs("</svg>\n", f);
  summary_table(f, m, &d);
  plan_text(f, m, &d);
  fputs("<section><h2>Request starts per second</h2>\n", f);
  rp_chart_rate(f, m, &d);
  fputs("</section>\n<section><h2>Requests in flight</h2>\n", f);
  rp_chart_inflight(f, m, &d);
  fputs("</section>\n<section><h2>Retries and their waits</h2>\n", f);
  rp_chart_waits(f, m);
  fputs("</section>\n<section><h2>Outcomes</h2>\n", f);
  rp_chart_outcomes(f, m);
  fputs("</section>\n<section><h2>Latency</h2>\n", f);
  rp_chart_latency(f, m);
  fputs("</section>\n", f);
  sources_table(f, m);
  bad_lines(f, m);
  timeline_table(f, m);
  const uint64_t *waits[3] = {m->wait_hist[0], m->wait_hist[1],
                              m->wait_hist[2]};
  const char *const wn[3] = {"server-given", "prompt", "backoff"};
  hist_table(f, "t-waits", "Retry waits data", waits, wn, 3);
  const uint64_t *lat[1] = {m->lat_hist};
  const char *const ln[1] = {"attempts"};
  hist_table(f, "t-latency", "Latency data", lat, ln, 1);
  rp_page_foot(f);
  return ferror(f) ? -1 : 0;
}
