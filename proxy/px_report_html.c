/* polite proxy --report-html: the server's side of a test as one
 * self-contained page, built from the proxy's JSON report and its request
 * log (what it did over time, per client, per rule, every early retry). */
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

/* What the proxy did to a request: the log's kind word. */
enum { K_PASSED, K_INJECTED, K_RATE, K_QUOTA, K_EARLY, K_ERROR, K_OTHER, NK };
static const struct {
  const char *word;  /* in the log */
  const char *label; /* on the page */
  const char *look;  /* class: fill pattern, for no-colour reading */
  const char *look_name;
} KINDS[NK] = {
    {"passed", "passed to the upstream or a mock", "k0", "solid"},
    {"injected", "random failure (--failure-rate, errors file)", "k1",
     "dotted"},
    {"rate_limited", "rate limit (--rate-limit)", "k2", "hatched"},
    {"quota", "quota spent (--quota)", "k3", "cross-hatched"},
    {"EARLY", "early retry caught", "k4", "black"},
    {"upstream_error", "upstream error (502)", "k5", "white"},
    {"", "other", "k6", "grey"},
};

#define PX_BUCKETS 240
#define PX_CLIENTS 256
#define PX_EARLY_ROWS 200
#define PX_URL_ROWS 50

typedef struct {
  char name[72];
  uint64_t n[NK];
  uint64_t early;
  int64_t early_max_ms;
} px_client;

typedef struct {
  int64_t t0, t1, width;
  uint64_t n[PX_BUCKETS][NK];
  int64_t ra_max[PX_BUCKETS];        /* largest Retry-After announced, s */
  px_client clients[PX_CLIENTS + 1]; /* the last one: "other clients" */
  int nclients;
  uint64_t lines, bad, kinds[NK];
  int have_log;
} px_view;

/* One parsed log line (pointers into the line). */
typedef struct {
  int64_t t;
  char client[72];
  int kind;
  int64_t early_ms, retry_after_s;
} px_line;

static int64_t parse_iso(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
  if (p == NULL)
    return -1;
  int ms = 0;
  if (*p == '.')
    ms = (int)strtol(p + 1, NULL, 10);
  return (int64_t)timegm(&tm) * 1000 + ms;
}

/* "TIME CLIENT [auth:HASH] METHOD URL STATUS KIND [NOTES...] DURms"
 * (docs/proxy.md). Returns 0, or -1 for a line of another shape. */
/* A duration of the log in whole seconds: "90000ms" (what the log writes)
 * or "90s" (logs of earlier versions). */
static int64_t log_seconds(const char *v) {
  char *end;
  long long n = strtoll(v, &end, 10);
  return strncmp(end, "ms", 2) == 0 ? n / 1000 : n;
}

static int parse_line(char *line, px_line *out) {
  char *tok[24];
  int n = 0;
  for (char *sv = NULL, *t = strtok_r(line, " \n", &sv); t && n < 24;
       t = strtok_r(NULL, " \n", &sv))
    tok[n++] = t;
  int i = n > 2 && strncmp(tok[2], "auth:", 5) == 0 ? 3 : 2;
  if (n < i + 5 || (out->t = parse_iso(tok[0])) < 0)
    return -1;
  snprintf(out->client, sizeof out->client, "%s%s%s", tok[1], i == 3 ? " " : "",
           i == 3 ? tok[2] : "");
  out->kind = K_OTHER;
  for (int k = 0; k < K_OTHER; k++)
    if (strcmp(tok[i + 3], KINDS[k].word) == 0)
      out->kind = k;
  out->early_ms = out->retry_after_s = -1;
  for (int k = i + 4; k < n; k++) {
    if (strncmp(tok[k], "early_by=", 9) == 0)
      out->early_ms = strtoll(tok[k] + 9, NULL, 10);
    else if (strncmp(tok[k], "retry_after=", 12) == 0)
      out->retry_after_s = log_seconds(tok[k] + 12);
  }
  return 0;
}

static px_client *client_of(px_view *v, const char *name) {
  for (int i = 0; i < v->nclients; i++)
    if (strcmp(v->clients[i].name, name) == 0)
      return &v->clients[i];
  if (v->nclients == PX_CLIENTS) {
    px_client *o = &v->clients[PX_CLIENTS];
    snprintf(o->name, sizeof o->name, "other clients");
    return o;
  }
  px_client *c = &v->clients[v->nclients++];
  snprintf(c->name, sizeof c->name, "%s", name);
  return c;
}

/* Reads the log twice: once for the time span (so buckets are fixed), once
 * to count. Lines of another shape are counted and skipped. */
static void read_log(px_view *v, const char *path) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (f == NULL)
    return;
  char *line = NULL;
  size_t cap = 0;
  px_line l;
  v->t0 = -1;
  for (int pass = 0; pass < 2; pass++) {
    rewind(f);
    while (getline(&line, &cap, f) > 0) {
      if (parse_line(line, &l) != 0) {
        if (pass)
          v->bad++;
        continue;
      }
      if (pass == 0) {
        v->t0 = v->t0 < 0 || l.t < v->t0 ? l.t : v->t0;
        v->t1 = l.t > v->t1 ? l.t : v->t1;
        continue;
      }
      int b = (int)((l.t - v->t0) / v->width);
      b = b < 0 ? 0 : b >= PX_BUCKETS ? PX_BUCKETS - 1 : b;
      v->lines++;
      v->n[b][l.kind]++;
      v->kinds[l.kind]++;
      if (l.retry_after_s > v->ra_max[b])
        v->ra_max[b] = l.retry_after_s;
      px_client *c = client_of(v, l.client);
      c->n[l.kind]++;
      if (l.early_ms >= 0) {
        c->early++;
        c->early_max_ms =
            l.early_ms > c->early_max_ms ? l.early_ms : c->early_max_ms;
      }
    }
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

static void row(FILE *f, const char *label, const char *key, uint64_t v) {
  fputs("<tr><th class=\"l\" scope=\"row\">", f);
  rp_esc(f, label);
  fprintf(f,
          "</th><td class=\"num\" data-key=\"%s\" data-value=\"%llu\">"
          "%llu</td></tr>\n",
          key, (unsigned long long)v, (unsigned long long)v);
}

static void summary(FILE *f, const json_t *r) {
  static const struct {
    const char *key, *label;
  } ROWS[] = {{"requests", "requests"},
              {"passed", "passed (upstream or mock answered)"},
              {"injected", "injected (every failure the proxy made up)"},
              {"failures", "  random failures"},
              {"rate_limited", "  rate limit 429s"},
              {"quota_exceeded", "  quota 429s"},
              {"early_retries", "  early retries caught"},
              {"upstream_errors", "upstream errors"},
              {"max_attempts", "longest retry chain for one URL"}};
  fprintf(f,
          "<section id=\"t-summary\"><h2>Summary</h2>\n<p>From %s to "
          "%s.</p>\n<table><caption class=\"l\">The proxy's counts (the "
          "keys of its JSON report)</caption>\n",
          json_string_value(json_object_get(r, "started")),
          json_string_value(json_object_get(r, "finished")));
  for (size_t i = 0; i < sizeof ROWS / sizeof ROWS[0]; i++)
    row(f, ROWS[i].label, ROWS[i].key, jint(r, ROWS[i].key));
  fputs("</table>\n", f);
  if (jint(r, "early_retries") == 0)
    fputs("<p>No client retried before its Retry-After had passed.</p>\n", f);
  fputs("</section>\n", f);
}

/* Answers per bucket stacked by what the proxy did. */
static void chart_traffic(FILE *f, const px_view *v) {
  int nb = (int)((v->t1 - v->t0) / v->width) + 1;
  nb = nb > PX_BUCKETS ? PX_BUCKETS : nb;
  rp_frame fr;
  memset(&fr, 0, sizeof fr);
  fr.w = 900;
  fr.h = 300;
  fr.x0 = 64;
  fr.x1 = 770;
  fr.y0 = 16;
  fr.y1 = 256;
  fr.t0 = v->t0;
  fr.t1 = v->t0 + (int64_t)nb * v->width;
  double ws = (double)v->width / 1000, peak = 0;
  for (int b = 0; b < nb; b++) {
    uint64_t s = 0;
    for (int k = 0; k < NK; k++)
      s += v->n[b][k];
    peak = (double)s / ws > peak ? (double)s / ws : peak;
  }
  rp_scale(&fr, peak * 1.1);
  char desc[900], w[32];
  rp_fmt_ms(w, sizeof w, (double)v->width);
  int n = snprintf(desc, sizeof desc,
                   "Requests per second the proxy answered, in %s buckets, "
                   "stacked by what it did (peak %.2f/s): ",
                   w, peak);
  for (int k = 0; k < NK; k++)
    if (v->kinds[k])
      n += snprintf(desc + n, sizeof desc - (size_t)n, "%s %llu (%s); ",
                    KINDS[k].word[0] ? KINDS[k].word : "other",
                    (unsigned long long)v->kinds[k], KINDS[k].look_name);
  rp_svg_open(f, "c-traffic", fr.w, fr.h, "What the proxy did over time", desc);
  rp_axis_y(f, &fr, "requests per second");
  rp_axis_time(f, &fr);
  double bw = (fr.x1 - fr.x0) / nb;
  for (int b = 0; b < nb; b++) {
    double base = 0;
    for (int k = 0; k < NK; k++) {
      if (!v->n[b][k])
        continue;
      double y0 = rp_y(&fr, base / ws), y1;
      base += (double)v->n[b][k];
      y1 = rp_y(&fr, base / ws);
      fprintf(f,
              "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\"/>",
              KINDS[k].look, fr.x0 + bw * b, y1, bw, y0 - y1);
    }
  }
  rp_svg_close(f, "Requests per second by the rule that answered them.",
               "t-timeline");
  fputs("<dl class=\"legend\">", f);
  for (int k = 0; k < NK; k++)
    if (v->kinds[k]) {
      fprintf(f,
              "<dt><svg width=\"18\" height=\"12\" aria-hidden=\"true\"><rect "
              "class=\"%s\" width=\"18\" height=\"12\"/></svg></dt><dd>",
              KINDS[k].look);
      rp_esc(f, KINDS[k].label);
      fprintf(f, " (%s)</dd>", KINDS[k].look_name);
    }
  fputs("</dl>\n", f);
}

/* The limits' state as clients saw it: the largest Retry-After the proxy
 * sent in each bucket (bars), with the early retries it caught marked
 * above. */
static void chart_limits(FILE *f, const px_view *v) {
  int nb = (int)((v->t1 - v->t0) / v->width) + 1;
  nb = nb > PX_BUCKETS ? PX_BUCKETS : nb;
  rp_frame fr;
  memset(&fr, 0, sizeof fr);
  fr.w = 900;
  fr.h = 260;
  fr.x0 = 64;
  fr.x1 = 770;
  fr.y0 = 30;
  fr.y1 = 216;
  fr.t0 = v->t0;
  fr.t1 = v->t0 + (int64_t)nb * v->width;
  int64_t top = 0;
  uint64_t early = 0, limited = 0;
  for (int b = 0; b < nb; b++) {
    top = v->ra_max[b] > top ? v->ra_max[b] : top;
    early += v->n[b][K_EARLY];
    limited += v->ra_max[b] > 0;
  }
  rp_scale(&fr, (double)top * 1.1);
  char desc[400];
  snprintf(desc, sizeof desc,
           "The largest Retry-After the proxy sent per bucket (bars, "
           "seconds): up to %lld s, in %llu of %d buckets. %llu early "
           "retries caught, marked with crosses above the bars.",
           (long long)top, (unsigned long long)limited, nb,
           (unsigned long long)early);
  rp_svg_open(f, "c-limits", fr.w, fr.h, "Retry-After sent over time", desc);
  rp_axis_y(f, &fr, "Retry-After sent (s)");
  rp_axis_time(f, &fr);
  double bw = (fr.x1 - fr.x0) / nb;
  for (int b = 0; b < nb; b++) {
    if (v->ra_max[b] > 0) {
      double y = rp_y(&fr, (double)v->ra_max[b]);
      fprintf(f,
              "<rect class=\"k2\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
              "height=\"%.1f\"/>",
              fr.x0 + bw * b, y, bw, fr.y1 - y);
    }
    if (v->n[b][K_EARLY])
      fprintf(f,
              "<use href=\"#m4\" x=\"%.1f\" y=\"16\"><title>%llu early "
              "retries</title></use>\n",
              fr.x0 + bw * (b + 0.5), (unsigned long long)v->n[b][K_EARLY]);
  }
  rp_svg_close(f, "The Retry-After clients were told, and the early retries.",
               "t-timeline");
}

/* Every early retry the JSON report keeps: how early, as a histogram, and
 * the first PX_EARLY_ROWS in a table. */
static void early_section(FILE *f, const json_t *r) {
  const json_t *early = json_object_get(r, "early");
  size_t n = json_array_size(early);
  fprintf(f, "<section id=\"t-early\"><h2>Early retries: %llu</h2>\n",
          (unsigned long long)jint(r, "early_retries"));
  if (n == 0) {
    fputs("<p>None.</p>\n</section>\n", f);
    return;
  }
  uint64_t hist[RP_HIST] = {0};
  for (size_t i = 0; i < n; i++)
    hist[rp_hist_bin(jint(json_array_get(early, i), "early_ms"))]++;
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
  if (jint(r, "early_retries") > PX_EARLY_ROWS)
    fprintf(f,
            "<p>%llu more in the JSON report (it keeps the first "
            "10,000).</p>\n",
            (unsigned long long)(jint(r, "early_retries") - PX_EARLY_ROWS));
  fputs("</section>\n", f);
}

static void kind_header(FILE *f, const char *first) {
  fprintf(f, "<tr><th class=\"l\">%s</th>", first);
  for (int k = 0; k < NK; k++)
    fprintf(f, "<th>%s</th>", KINDS[k].word[0] ? KINDS[k].word : "other");
}

static void rules_and_clients(FILE *f, const px_view *v) {
  fputs("<section id=\"t-rules\"><h2>Per rule</h2>\n<table><tr><th "
        "class=\"l\">rule that answered</th><th>requests</th><th>share</th>"
        "</tr>\n",
        f);
  for (int k = 0; k < NK; k++) {
    fputs("<tr><td class=\"l\">", f);
    rp_esc(f, KINDS[k].label);
    fprintf(f,
            "</td><td data-key=\"log.%s\" data-value=\"%llu\">%llu</td>"
            "<td>%.1f%%</td></tr>\n",
            KINDS[k].word[0] ? KINDS[k].word : "other",
            (unsigned long long)v->kinds[k], (unsigned long long)v->kinds[k],
            v->lines ? 100.0 * (double)v->kinds[k] / (double)v->lines : 0);
  }
  fputs("</table>\n</section>\n<section id=\"t-clients\"><h2>Per client</h2>"
        "\n<p>Clients are told apart by address and, when they sent one, a "
        "salted hash of their Authorization header (never the header).</p>"
        "\n<table class=\"data\">",
        f);
  kind_header(f, "client");
  fputs("<th>most early (ms)</th></tr>\n", f);
  for (int i = 0; i <= v->nclients && i <= PX_CLIENTS; i++) {
    const px_client *c = &v->clients[i];
    if (i == v->nclients && (i < PX_CLIENTS || c->name[0] == '\0'))
      break;
    fputs("<tr><td class=\"l\">", f);
    rp_esc(f, c->name);
    fputs("</td>", f);
    for (int k = 0; k < NK; k++)
      fprintf(f, "<td>%llu</td>", (unsigned long long)c->n[k]);
    fprintf(f, "<td>%lld</td></tr>\n",
            c->early ? (long long)c->early_max_ms : 0LL);
  }
  fputs("</table>\n</section>\n", f);
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
  if (json_array_size(urls) > PX_URL_ROWS)
    fprintf(f, "<p>%zu more URLs in the JSON report.</p>\n",
            json_array_size(urls) - PX_URL_ROWS);
  fputs("</section>\n", f);
}

static void timeline_table(FILE *f, const px_view *v) {
  int nb = (int)((v->t1 - v->t0) / v->width) + 1;
  nb = nb > PX_BUCKETS ? PX_BUCKETS : nb;
  fputs("<section id=\"t-timeline\"><h2>Timeline data</h2>\n<table "
        "class=\"data\">",
        f);
  kind_header(f, "from (s)");
  fputs("<th>largest Retry-After sent (s)</th></tr>\n", f);
  for (int b = 0; b < nb; b++) {
    fprintf(f, "<tr><td class=\"l\">%.1f</td>",
            (double)b * (double)v->width / 1000);
    for (int k = 0; k < NK; k++)
      fprintf(f, "<td>%llu</td>", (unsigned long long)v->n[b][k]);
    if (v->ra_max[b] > 0)
      fprintf(f, "<td>%lld</td></tr>\n", (long long)v->ra_max[b]);
    else
      fputs("<td></td></tr>\n", f);
  }
  fputs("</table>\n</section>\n", f);
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
          "and the per-client and per-rule tables.</p>\n",
          f);
  }
  early_section(f, r);
  if (v->have_log)
    rules_and_clients(f, v);
  urls_table(f, r);
  if (v->have_log)
    timeline_table(f, v);
  if (v->bad)
    fprintf(f,
            "<p class=\"bad\">%llu lines of the log %s were not "
            "understood and were skipped.</p>\n",
            (unsigned long long)v->bad, log_path);
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
    read_log(v, log_path);
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
