/* polite proxy --report-html: the server's side of a test as one
 * self-contained page. Its counts are the proxy's JSON report (requests
 * only, each section adding up to the same total); its timeline is the
 * request log's lines of this run's requests (CONNECTs, calls to the
 * proxy's own endpoints and older runs' lines in an appended log left
 * out). */
#define _GNU_SOURCE
#include "px_report_html.h"

#include "px.h"
#include "report_svg.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The kinds of px.h, and one more for a log word this version does not
 * know. */
#define K_OTHER PX_KIND__COUNT
#define NK (PX_KIND__COUNT + 1)

/* The charts draw seven looks (report_svg.c's fills k0..k6, readable
 * without colour); kinds of one family share one. */
static const struct {
  const char *look, *look_name, *what;
} LOOKS[7] = {
    {"k0", "solid", "passed"},
    {"k1", "dotted", "random failure"},
    {"k2", "hatched", "rate, concurrency or token limit"},
    {"k3", "cross-hatched", "quota spent"},
    {"k4", "black", "early retry"},
    {"k5", "white", "upstream error or refused"},
    {"k6", "grey", "during a throttle, or other"},
};
static const int LOOK_OF[NK] = {
    [PX_KIND_PASSED] = 0,    [PX_KIND_FAILURE] = 1,     [PX_KIND_RATE] = 2,
    [PX_KIND_QUOTA] = 3,     [PX_KIND_EARLY] = 4,       [PX_KIND_ERROR] = 5,
    [PX_KIND_THROTTLED] = 6, [PX_KIND_CONCURRENCY] = 2, [PX_KIND_TOKENS] = 2,
    [K_OTHER] = 6,
};

#define NLOOKS 7
#define PX_BUCKETS 240
#define PX_EARLY_ROWS 200
#define PX_URL_ROWS 50
#define PX_CLIENT_ROWS 256

typedef struct {
  int64_t t0, t1, width;
  uint64_t n[PX_BUCKETS][NK];
  int64_t ra_max_ms[PX_BUCKETS]; /* largest Retry-After announced */
  uint64_t lines, bad, kinds[NK];
  uint64_t not_requests; /* CONNECTs and own endpoint calls */
  uint64_t other_runs;   /* lines before this run (an appended log) */
  int have_log;
} px_view;

/* One parsed log line (pointers into the line). */
typedef struct {
  int64_t t;
  const char *method, *url;
  int kind;
  int64_t retry_after_ms;
} px_line;

static const char *key_of(int k) {
  return k == K_OTHER ? "other" : polite__px_kind_info((px_kind)k)->key;
}

static const char *label_of(int k) {
  return k == K_OTHER ? "other (a kind this version does not know)"
                      : polite__px_kind_info((px_kind)k)->label;
}

static int64_t parse_iso(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *p = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
  if (p == NULL)
    return -1;
  int ms = 0;
  if (*p == '.')
    ms = (int)strtol(p + 1, NULL, 10);
  return (int64_t)timegm(&tm) * 1000 + ms;
}

/* A duration with its unit ("90000ms", "90s"; a bare number is seconds, as
 * Retry-After is) in ms, or -1. */
static int64_t duration_ms(const char *v) {
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (end == v || n < 0 || errno)
    return -1;
  if (strcmp(end, "ms") == 0)
    return n;
  if (*end && strcmp(end, "s") != 0)
    return -1;
  return n > INT64_MAX / 1000 ? INT64_MAX : n * 1000;
}

/* "TIME CLIENT [auth:HASH] METHOD URL STATUS KIND [NOTES...] DURms"
 * (docs/proxy.md). Returns 0, or -1 for a line of another shape. */
static int parse_line(char *line, px_line *out) {
  char *tok[24];
  int n = 0;
  for (char *sv = NULL, *t = strtok_r(line, " \n", &sv); t && n < 24;
       t = strtok_r(NULL, " \n", &sv))
    tok[n++] = t;
  int i = n > 2 && strncmp(tok[2], "auth:", 5) == 0 ? 3 : 2;
  if (n < i + 5 || (out->t = parse_iso(tok[0])) < 0)
    return -1;
  out->method = tok[i];
  out->url = tok[i + 1];
  px_kind k = polite__px_kind_of_word(tok[i + 3]);
  out->kind = k < PX_KIND__COUNT ? (int)k : K_OTHER;
  out->retry_after_ms = -1;
  for (int j = i + 4; j < n - 1; j++) {
    const char *v = NULL;
    if (strncmp(tok[j], "retry_after=", 12) == 0)
      v = tok[j] + 12;
    else if (strncmp(tok[j], "upstream_retry_after=", 21) == 0)
      v = tok[j] + 21;
    int64_t ms = v ? duration_ms(v) : -1;
    if (ms > out->retry_after_ms)
      out->retry_after_ms = ms;
  }
  return 0;
}

/* One line into the view (pass 0: the span only). Lines that are no request
 * of this run are counted apart. */
static void take_line(px_view *v, char *line, int pass, int64_t from_ms) {
  px_line l;
  if (parse_line(line, &l) != 0) {
    v->bad += pass;
    return;
  }
  if (l.t < from_ms) {
    v->other_runs += pass;
    return;
  }
  if (polite__px_record_class(l.method, l.url) != PX_REC_REQUEST) {
    v->not_requests += pass;
    return;
  }
  if (pass == 0) {
    v->t0 = v->t0 < 0 || l.t < v->t0 ? l.t : v->t0;
    v->t1 = l.t > v->t1 ? l.t : v->t1;
    return;
  }
  int b = (int)((l.t - v->t0) / v->width);
  b = b < 0 ? 0 : b >= PX_BUCKETS ? PX_BUCKETS - 1 : b;
  v->lines++;
  v->n[b][l.kind]++;
  v->kinds[l.kind]++;
  if (l.retry_after_ms > v->ra_max_ms[b])
    v->ra_max_ms[b] = l.retry_after_ms;
}

/* Reads the log twice: once for the time span (so buckets are fixed), once
 * to count. from_ms: this run's start (the proxy appends to its log). */
static void read_log(px_view *v, const char *path, int64_t from_ms) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (f == NULL)
    return;
  char *line = NULL;
  size_t cap = 0;
  v->t0 = -1;
  for (int pass = 0; pass < 2; pass++) {
    rewind(f);
    while (getline(&line, &cap, f) > 0)
      take_line(v, line, pass, from_ms);
    if (pass == 0) {
      if (v->t0 < 0)
        break;
      int64_t span = v->t1 - v->t0 + 1;
      v->width = 1000;
      while (v->width * PX_BUCKETS < span)
        v->width *= 2;
    }
  }
  v->have_log = v->lines > 0;
  free(line);
  fclose(f);
}

static uint64_t jint(const json_t *o, const char *k) {
  json_int_t v = json_integer_value(json_object_get(o, k));
  return v > 0 ? (uint64_t)v : 0;
}

/* A Retry-After in seconds as clients read it: "90 s", "1.5 s". */
static void ra_text(char *buf, size_t n, int64_t ms) {
  if (ms % 1000 == 0)
    snprintf(buf, n, "%lld s", (long long)(ms / 1000));
  else
    snprintf(buf, n, "%.3g s", (double)ms / 1000);
}

static void row(FILE *f, const char *label, const char *key, uint64_t v) {
  fputs("<tr><th class=\"l\" scope=\"row\">", f);
  rp_esc(f, label);
  fprintf(f,
          "</th><td class=\"num\" data-key=\"%s\" data-value=\"%llu\">"
          "%llu</td></tr>\n",
          key, (unsigned long long)v, (unsigned long long)v);
}

static void summary(FILE *f, const json_t *r) {
  fprintf(f,
          "<section id=\"t-summary\"><h2>Summary</h2>\n<p>From %s to "
          "%s.</p>\n<table><caption class=\"l\">The proxy's counts of "
          "requests (the keys of its JSON report); the kinds add up to the "
          "requests</caption>\n",
          json_string_value(json_object_get(r, "started")),
          json_string_value(json_object_get(r, "finished")));
  row(f, "requests", "requests", jint(r, "requests"));
  for (int k = 0; k < PX_KIND__COUNT; k++)
    row(f, label_of(k), key_of(k), jint(r, key_of(k)));
  row(f, "(every answer the proxy made up)", "injected", jint(r, "injected"));
  row(f, "longest retry chain of one client for one URL", "max_attempts",
      jint(r, "max_attempts"));
  row(f, "CONNECTs (not requests: the requests inside are counted)", "connects",
      jint(r, "connects"));
  row(f, "calls to the proxy's own endpoints (not requests)",
      "own_endpoint_calls", jint(r, "own_endpoint_calls"));
  fputs("</table>\n", f);
  if (json_is_false(json_object_get(r, "judge")))
    fputs("<p class=\"note\">The early-retry judge was off: the devproxyrc "
          "does not enable RetryAfterPlugin, so early retries were not "
          "looked for.</p>\n",
          f);
  else if (jint(r, "early_retries") == 0)
    fputs("<p>No client retried before its Retry-After had passed.</p>\n", f);
  if (jint(r, "shared_identities"))
    fprintf(f,
            "<p>%llu client identities (address, credentials, user agent) "
            "showed several clients; from then on each of their connections "
            "was judged as a client of its own.</p>\n",
            (unsigned long long)jint(r, "shared_identities"));
  fputs("</section>\n", f);
}

static int buckets(const px_view *v) {
  int nb = (int)((v->t1 - v->t0) / v->width) + 1;
  return nb > PX_BUCKETS ? PX_BUCKETS : nb;
}

static void frame(rp_frame *fr, const px_view *v, int nb, double h) {
  memset(fr, 0, sizeof *fr);
  fr->w = 900;
  fr->h = h;
  fr->x0 = 64;
  fr->x1 = 770;
  fr->y0 = h > 280 ? 16 : 30;
  fr->y1 = h - 44;
  fr->t0 = v->t0;
  fr->t1 = v->t0 + (int64_t)nb * v->width;
}

/* The requests of bucket b in look l. */
static uint64_t look_n(const px_view *v, int b, int l) {
  uint64_t n = 0;
  for (int k = 0; k < NK; k++)
    n += LOOK_OF[k] == l ? v->n[b][k] : 0;
  return n;
}

static void legend(FILE *f, const px_view *v) {
  fputs("<dl class=\"legend\">", f);
  for (int l = 0; l < NLOOKS; l++) {
    uint64_t n = 0;
    for (int k = 0; k < NK; k++)
      n += LOOK_OF[k] == l ? v->kinds[k] : 0;
    if (n == 0)
      continue;
    fprintf(f,
            "<dt><svg width=\"18\" height=\"12\" aria-hidden=\"true\"><rect "
            "class=\"%s\" width=\"18\" height=\"12\"/></svg></dt><dd>",
            LOOKS[l].look);
    rp_esc(f, LOOKS[l].what);
    fprintf(f, " (%s)</dd>", LOOKS[l].look_name);
  }
  fputs("</dl>\n", f);
}

/* Requests per second, stacked by what the proxy did. */
static void chart_traffic(FILE *f, const px_view *v) {
  int nb = buckets(v);
  rp_frame fr;
  frame(&fr, v, nb, 300);
  double ws = (double)v->width / 1000, peak = 0;
  for (int b = 0; b < nb; b++) {
    uint64_t s = 0;
    for (int k = 0; k < NK; k++)
      s += v->n[b][k];
    peak = (double)s / ws > peak ? (double)s / ws : peak;
  }
  rp_scale(&fr, peak * 1.1);
  char desc[1400], w[32];
  rp_fmt_ms(w, sizeof w, (double)v->width);
  int n = snprintf(desc, sizeof desc,
                   "Requests per second the proxy answered, in %s buckets, "
                   "stacked by what it did (peak %.2f/s): ",
                   w, peak);
  for (int k = 0; k < NK; k++)
    if (v->kinds[k] && n < (int)sizeof desc)
      n += snprintf(desc + n, sizeof desc - (size_t)n, "%s %llu (%s); ",
                    key_of(k), (unsigned long long)v->kinds[k],
                    LOOKS[LOOK_OF[k]].look_name);
  rp_svg_open(f, "c-traffic", fr.w, fr.h, "What the proxy did over time", desc);
  rp_axis_y(f, &fr, "requests per second");
  rp_axis_time(f, &fr);
  double bw = (fr.x1 - fr.x0) / nb;
  for (int b = 0; b < nb; b++) {
    double base = 0;
    for (int l = 0; l < NLOOKS; l++) {
      uint64_t c = look_n(v, b, l);
      if (c == 0)
        continue;
      double y0 = rp_y(&fr, base / ws), y1;
      base += (double)c;
      y1 = rp_y(&fr, base / ws);
      fprintf(f,
              "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\"/>",
              LOOKS[l].look, fr.x0 + bw * b, y1, bw, y0 - y1);
    }
  }
  rp_svg_close(f, "Requests per second by the rule that answered them.",
               "t-timeline");
  legend(f, v);
}

/* The limits as clients saw them: the largest Retry-After the proxy sent
 * (or passed on) per bucket, in seconds, with the early retries above. */
static void chart_limits(FILE *f, const px_view *v) {
  int nb = buckets(v);
  rp_frame fr;
  frame(&fr, v, nb, 260);
  int64_t top = 0;
  uint64_t early = 0, limited = 0;
  for (int b = 0; b < nb; b++) {
    top = v->ra_max_ms[b] > top ? v->ra_max_ms[b] : top;
    early += v->n[b][PX_KIND_EARLY];
    limited += v->ra_max_ms[b] > 0;
  }
  rp_scale(&fr, (double)top / 1000 * 1.1);
  char desc[400], most[32];
  ra_text(most, sizeof most, top);
  snprintf(desc, sizeof desc,
           "The largest Retry-After the proxy sent per bucket (bars, "
           "seconds): up to %s, in %llu of %d buckets. %llu early retries "
           "caught, marked with crosses above the bars.",
           most, (unsigned long long)limited, nb, (unsigned long long)early);
  rp_svg_open(f, "c-limits", fr.w, fr.h, "Retry-After sent over time", desc);
  rp_axis_y(f, &fr, "Retry-After sent (s)");
  rp_axis_time(f, &fr);
  double bw = (fr.x1 - fr.x0) / nb;
  for (int b = 0; b < nb; b++) {
    if (v->ra_max_ms[b] > 0) {
      double y = rp_y(&fr, (double)v->ra_max_ms[b] / 1000);
      fprintf(f,
              "<rect class=\"k2\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\"/>",
              fr.x0 + bw * b, y, bw, fr.y1 - y);
    }
    if (v->n[b][PX_KIND_EARLY])
      fprintf(f,
              "<use href=\"#m4\" x=\"%.1f\" y=\"16\"><title>%llu early "
              "retries</title></use>\n",
              fr.x0 + bw * (b + 0.5),
              (unsigned long long)v->n[b][PX_KIND_EARLY]);
  }
  rp_svg_close(f, "The Retry-After clients were told, and the early retries.",
               "t-timeline");
}

/* The early retries the JSON report lists: how early (a histogram) and the
 * first PX_EARLY_ROWS in a table. */
static void early_section(FILE *f, const json_t *r) {
  const json_t *early = json_object_get(r, "early");
  size_t n = json_array_size(early);
  uint64_t total = jint(r, "early_retries");
  fprintf(f, "<section id=\"t-early\"><h2>Early retries: %llu</h2>\n",
          (unsigned long long)total);
  if (n == 0) {
    fputs("<p>None.</p>\n</section>\n", f);
    return;
  }
  uint64_t hist[RP_HIST] = {0};
  for (size_t i = 0; i < n; i++)
    hist[rp_hist_bin((int64_t)jint(json_array_get(early, i), "early_ms"))]++;
  fputs("<table class=\"data\"><caption class=\"l\">How early they came "
        "(before the Retry-After had passed)</caption><tr><th "
        "class=\"l\">early by</th><th>retries</th></tr>\n",
        f);
  char lab[48];
  for (int k = 0; k < RP_HIST; k++)
    if (hist[k]) {
      rp_hist_label(lab, sizeof lab, k);
      fprintf(f, "<tr><td class=\"l\">%s</td><td>%llu</td></tr>\n", lab,
              (unsigned long long)hist[k]);
    }
  fputs("</table>\n<table class=\"data\"><caption class=\"l\">Each early "
        "retry</caption><tr><th class=\"l\">time</th><th "
        "class=\"l\">client</th><th class=\"l\">request</th><th>early by "
        "(ms)</th></tr>\n",
        f);
  for (size_t i = 0; i < n && i < PX_EARLY_ROWS; i++) {
    const json_t *e = json_array_get(early, i);
    fputs("<tr><td class=\"l\">", f);
    rp_esc(f, json_string_value(json_object_get(e, "time")));
    fputs("</td><td class=\"l\">", f);
    rp_esc(f, json_string_value(json_object_get(e, "client")));
    fputs("</td><td class=\"l\">", f);
    rp_esc(f, json_string_value(json_object_get(e, "method")));
    fputs(" ", f);
    rp_esc(f, json_string_value(json_object_get(e, "url")));
    fprintf(f, "</td><td>%llu</td></tr>\n",
            (unsigned long long)jint(e, "early_ms"));
  }
  fputs("</table>\n", f);
  if (total > PX_EARLY_ROWS)
    fprintf(f,
            "<p>%llu more in the JSON report (it lists the first "
            "10,000).</p>\n",
            (unsigned long long)(total - PX_EARLY_ROWS));
  fputs("</section>\n", f);
}

static void kind_header(FILE *f, const char *first) {
  fprintf(f, "<tr><th class=\"l\">%s</th>", first);
  for (int k = 0; k < PX_KIND__COUNT; k++)
    fprintf(f, "<th>%s</th>", key_of(k));
}

/* The most early retry of `client` the JSON report lists, in ms. */
static uint64_t most_early(const json_t *r, const char *client) {
  uint64_t most = 0;
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(r, "early"), i, e) {
    const char *c = json_string_value(json_object_get(e, "client"));
    if (c && client && strcmp(c, client) == 0 && jint(e, "early_ms") > most)
      most = jint(e, "early_ms");
  }
  return most;
}

/* Per rule and per client, both from the JSON report: each adds up to its
 * requests. */
static void rules_and_clients(FILE *f, const json_t *r) {
  uint64_t all = jint(r, "requests");
  fputs("<section id=\"t-rules\"><h2>Per rule</h2>\n<table><tr><th "
        "class=\"l\">rule that answered</th><th>requests</th><th>share</th>"
        "</tr>\n",
        f);
  for (int k = 0; k < PX_KIND__COUNT; k++) {
    uint64_t n = jint(r, key_of(k));
    fputs("<tr><td class=\"l\">", f);
    rp_esc(f, label_of(k));
    fprintf(f,
            "</td><td data-key=\"rule.%s\" data-value=\"%llu\">%llu</td>"
            "<td>%.1f%%</td></tr>\n",
            key_of(k), (unsigned long long)n, (unsigned long long)n,
            all ? 100.0 * (double)n / (double)all : 0);
  }
  fputs("</table>\n</section>\n<section id=\"t-clients\"><h2>Per client</h2>"
        "\n<p>Clients are told apart by address and, when they sent one, a "
        "salted hash of their Authorization header (never the header).</p>"
        "\n<table class=\"data\">",
        f);
  kind_header(f, "client");
  fputs("<th>most early (ms)</th></tr>\n", f);
  size_t i;
  const json_t *c;
  json_array_foreach(json_object_get(r, "clients"), i, c) {
    if (i >= PX_CLIENT_ROWS)
      break;
    const char *name = json_string_value(json_object_get(c, "client"));
    fputs("<tr><td class=\"l\">", f);
    rp_esc(f, name ? name : "?");
    fputs("</td>", f);
    for (int k = 0; k < PX_KIND__COUNT; k++)
      fprintf(f, "<td>%llu</td>", (unsigned long long)jint(c, key_of(k)));
    fprintf(f, "<td>%llu</td></tr>\n", (unsigned long long)most_early(r, name));
  }
  fputs("</table>\n", f);
  if (json_array_size(json_object_get(r, "clients")) > PX_CLIENT_ROWS)
    fputs("<p>More clients in the JSON report.</p>\n", f);
  fputs("</section>\n", f);
}

static void urls_table(FILE *f, const json_t *r) {
  const json_t *urls = json_object_get(r, "urls");
  fputs("<section id=\"t-urls\"><h2>Busiest URLs</h2>\n<table "
        "class=\"data\"><tr><th class=\"l\">request</th><th>requests</th>"
        "<th>passed</th><th>injected</th><th>early</th><th>longest retry "
        "chain</th><th class=\"l\">statuses</th></tr>\n",
        f);
  for (size_t i = 0; i < json_array_size(urls) && i < PX_URL_ROWS; i++) {
    const json_t *u = json_array_get(urls, i);
    fputs("<tr><td class=\"l\">", f);
    rp_esc(f, json_string_value(json_object_get(u, "method")));
    fputs(" ", f);
    rp_esc(f, json_string_value(json_object_get(u, "url")));
    fprintf(f,
            "</td><td>%llu</td><td>%llu</td><td>%llu</td><td>%llu</td>"
            "<td>%llu</td><td class=\"l\">",
            (unsigned long long)jint(u, "requests"),
            (unsigned long long)jint(u, "passed"),
            (unsigned long long)jint(u, "injected"),
            (unsigned long long)jint(u, "early_retries"),
            (unsigned long long)jint(u, "max_attempts"));
    const char *code;
    const json_t *cnt;
    json_object_foreach(json_object_get(u, "statuses"), code, cnt) {
      rp_esc(f, code);
      fprintf(f, " x %lld; ", (long long)json_integer_value(cnt));
    }
    fputs("</td></tr>\n", f);
  }
  fputs("</table>\n", f);
  const json_t *t = json_object_get(r, "url_table");
  if (json_array_size(urls) > PX_URL_ROWS)
    fprintf(f, "<p>%zu more URLs in the JSON report.</p>\n",
            json_array_size(urls) - PX_URL_ROWS);
  if (jint(t, "evicted"))
    fprintf(f,
            "<p>%llu URLs (%llu requests) were let go of to keep the table "
            "within --max-urls %llu; their requests are in the totals.</p>\n",
            (unsigned long long)jint(t, "evicted"),
            (unsigned long long)jint(t, "evicted_requests"),
            (unsigned long long)jint(t, "max_urls"));
  fputs("</section>\n", f);
}

static void timeline_table(FILE *f, const px_view *v) {
  int nb = buckets(v);
  fputs("<section id=\"t-timeline\"><h2>Timeline data</h2>\n<table "
        "class=\"data\">",
        f);
  kind_header(f, "from (s)");
  fputs("<th>other</th><th>largest Retry-After sent</th></tr>\n", f);
  char ra[32];
  for (int b = 0; b < nb; b++) {
    fprintf(f, "<tr><td class=\"l\">%.1f</td>",
            (double)b * (double)v->width / 1000);
    for (int k = 0; k < NK; k++)
      fprintf(f, "<td>%llu</td>", (unsigned long long)v->n[b][k]);
    ra_text(ra, sizeof ra, v->ra_max_ms[b]);
    fprintf(f, "<td>%s</td></tr>\n", v->ra_max_ms[b] > 0 ? ra : "");
  }
  fputs("</table>\n</section>\n", f);
}

/* What of the log was left out, and whether its requests are the report's. */
static void log_notes(FILE *f, const json_t *r, const px_view *v,
                      const char *log_path) {
  if (v->have_log && v->lines != jint(r, "requests"))
    fprintf(f,
            "<p class=\"bad\">The log %s holds %llu requests of this run and "
            "the report counts %llu: another process writes to the same log, "
            "or lines were lost. The timeline shows the log's.</p>\n",
            log_path, (unsigned long long)v->lines,
            (unsigned long long)jint(r, "requests"));
  if (v->bad)
    fprintf(f,
            "<p class=\"bad\">%llu lines of the log %s were not "
            "understood and were skipped.</p>\n",
            (unsigned long long)v->bad, log_path);
}

static void write_page(FILE *f, const json_t *r, const px_view *v,
                       const char *log_path) {
  rp_page_head(f, "polite proxy report");
  fputs("<header><h1>polite proxy report</h1>\n<nav><a "
        "href=\"#t-summary\">Summary</a> · <a href=\"#c-traffic\">Over time"
        "</a> · <a href=\"#t-early\">Early retries</a> · <a "
        "href=\"#t-rules\">Per rule</a> · <a href=\"#t-clients\">Per client"
        "</a> · <a href=\"#t-urls\">URLs</a></nav>\n</header>\n"
        "<svg class=\"defs\" width=\"0\" height=\"0\" aria-hidden=\"true\">",
        f);
  rp_svg_defs(f);
  fputs("</svg>\n", f);
  summary(f, r);
  if (v->have_log) {
    fputs("<section><h2>What the proxy did over time</h2>\n", f);
    chart_traffic(f, v);
    chart_limits(f, v);
    fputs("</section>\n", f);
  } else {
    fputs("<p class=\"note\">No request log to read (the proxy logged to "
          "stderr): start it with <code>--log FILE</code> for the timeline "
          "of what it did.</p>\n",
          f);
  }
  early_section(f, r);
  rules_and_clients(f, r);
  urls_table(f, r);
  if (v->have_log)
    timeline_table(f, v);
  log_notes(f, r, v, log_path);
  rp_page_foot(f);
}

int polite__px_report_html(const px_config *cfg, const px_state *st,
                           int64_t started_wall_ms, int64_t now_wall_ms,
                           FILE *log) {
  char *text = polite__px_report_json(st, started_wall_ms, now_wall_ms);
  json_t *r = text ? json_loads(text, 0, NULL) : NULL;
  free(text);
  px_view *v = calloc(1, sizeof *v);
  const char *log_path =
      cfg->log && strcmp(cfg->log, "-") != 0 && strcmp(cfg->log, "none") != 0
          ? cfg->log
          : NULL;
  if (log && log != stderr)
    fflush(log);
  int rc = -1;
  if (r && v) {
    read_log(v, log_path, started_wall_ms);
    size_t n = strlen(cfg->report_html) + 24;
    char *tmp = malloc(n);
    FILE *f = NULL;
    if (tmp) {
      snprintf(tmp, n, "%s.tmp%ld", cfg->report_html, (long)getpid());
      f = fopen(tmp, "w");
    }
    if (f) {
      write_page(f, r, v, log_path ? log_path : "");
      int bad = ferror(f);
      if (fclose(f) == 0 && !bad && rename(tmp, cfg->report_html) == 0)
        rc = 0;
      else
        unlink(tmp);
    }
    free(tmp);
  }
  if (rc != 0)
    fprintf(stderr, "polite proxy: cannot write report %s: %s\n",
            cfg->report_html, strerror(errno));
  json_decref(r);
  free(v);
  return rc;
}
