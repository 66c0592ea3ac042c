/* polite proxy: the report of what the proxy saw (JSON and markdown). */
#include "px_track_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- Report ----------------------------------------------------------- */

static void iso_time(int64_t wall_ms, char *buf, size_t size) {
  time_t t = (time_t)(wall_ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, size - n, ".%03dZ", (int)(wall_ms % 1000));
}

static int cmp_urls(const void *a, const void *b) {
  const url_stats *x = *(url_stats *const *)a, *y = *(url_stats *const *)b;
  if (x->requests != y->requests)
    return x->requests < y->requests ? 1 : -1;
  int c = strcmp(x->url, y->url);
  return c ? c : strcmp(x->method, y->method);
}

/* URLs sorted by request count (busiest first), at most `limit`. */
static url_stats **sorted_urls(const px_state *s, size_t *count) {
  /* v is an array of pointers: sizeof *v is meant to be a pointer's size. */
  // NOLINTNEXTLINE(bugprone-sizeof-expression)
  url_stats **v = malloc((s->urls.n ? s->urls.n : 1) * sizeof *v);
  if (v == NULL) {
    *count = 0;
    return NULL;
  }
  size_t n = 0;
  for (size_t i = 0; i < s->urls.nb; i++)
    for (map_ent *e = s->urls.b[i]; e; e = e->next)
      v[n++] = e->value;
  qsort(v, n, sizeof *v, cmp_urls); // NOLINT(bugprone-sizeof-expression)
  *count = n;
  return v;
}

#define REPORT_URLS 1000

static uint64_t injected(const uint64_t *k) {
  return k[PX_KIND_FAILURE] + k[PX_KIND_RATE] + k[PX_KIND_QUOTA] +
         k[PX_KIND_EARLY] + k[PX_KIND_THROTTLED] + k[PX_KIND_CONCURRENCY] +
         k[PX_KIND_TOKENS];
}

/* Per client: requests, early retries (told, came back too soon), requests
 * during a throttle (never told), longest retry chain. At most
 * REPORT_CLIENTS, in no particular order. */
#define REPORT_CLIENTS 1000
static json_t *clients_json(const px_state *s) {
  json_t *a = json_array();
  for (size_t i = 0; i < s->clients.nb; i++) {
    for (map_ent *e = s->clients.b[i]; e; e = e->next) {
      const client_stats *c = e->value;
      if (json_array_size(a) >= REPORT_CLIENTS)
        return a;
      json_t *o = json_object();
      json_object_set_new(o, "client", json_string(c->who));
      json_object_set_new(o, "requests", json_integer((json_int_t)c->requests));
      json_object_set_new(o, "early_retries",
                          json_integer((json_int_t)c->early));
      json_object_set_new(o, "during_throttle",
                          json_integer((json_int_t)c->throttled));
      json_object_set_new(o, "max_attempts", json_integer(c->max_attempts));
      json_array_append_new(a, o);
    }
  }
  return a;
}

char *polite__px_report_json(const px_state *s, int64_t started_wall_ms,
                             int64_t now_wall_ms) {
  json_t *r = json_object();
  char t[40];
  iso_time(started_wall_ms, t, sizeof t);
  json_object_set_new(r, "started", json_string(t));
  iso_time(now_wall_ms, t, sizeof t);
  json_object_set_new(r, "finished", json_string(t));
  json_object_set_new(r, "requests", json_integer((json_int_t)s->requests));
  json_object_set_new(r, "passed",
                      json_integer((json_int_t)s->kinds[PX_KIND_PASSED]));
  json_object_set_new(r, "injected",
                      json_integer((json_int_t)injected(s->kinds)));
  json_object_set_new(r, "failures",
                      json_integer((json_int_t)s->kinds[PX_KIND_FAILURE]));
  json_object_set_new(r, "rate_limited",
                      json_integer((json_int_t)s->kinds[PX_KIND_RATE]));
  json_object_set_new(r, "quota_exceeded",
                      json_integer((json_int_t)s->kinds[PX_KIND_QUOTA]));
  json_object_set_new(r, "upstream_errors",
                      json_integer((json_int_t)s->kinds[PX_KIND_ERROR]));
  json_object_set_new(r, "concurrency_limited",
                      json_integer((json_int_t)s->kinds[PX_KIND_CONCURRENCY]));
  json_object_set_new(r, "tokens_limited",
                      json_integer((json_int_t)s->kinds[PX_KIND_TOKENS]));
  json_object_set_new(r, "early_retries",
                      json_integer((json_int_t)s->early_total));
  json_object_set_new(r, "during_throttle",
                      json_integer((json_int_t)s->kinds[PX_KIND_THROTTLED]));
  json_object_set_new(r, "max_attempts", json_integer(s->max_attempts));
  json_object_set_new(r, "clients", clients_json(s));
  json_t *early = json_array();
  for (size_t i = 0; i < s->nearly; i++) {
    const early_ent *e = &s->early[i];
    json_t *o = json_object();
    iso_time(e->wall_ms, t, sizeof t);
    json_object_set_new(o, "time", json_string(t));
    json_object_set_new(o, "key", json_string(e->key));
    json_object_set_new(o, "client", json_string(e->client));
    json_object_set_new(o, "connection", json_string(e->conn));
    json_object_set_new(o, "method", json_string(e->method));
    json_object_set_new(o, "url", json_string(e->url));
    json_object_set_new(o, "early_ms", json_integer(e->early_ms));
    json_array_append_new(early, o);
  }
  json_object_set_new(r, "early", early);
  json_object_set_new(r, "early_truncated",
                      json_boolean(s->early_total > s->nearly));
  size_t n;
  url_stats **v = sorted_urls(s, &n);
  json_t *urls = json_array();
  for (size_t i = 0; i < n && i < REPORT_URLS; i++) {
    const url_stats *u = v[i];
    json_t *o = json_object();
    json_object_set_new(o, "method", json_string(u->method));
    json_object_set_new(o, "url", json_string(u->url));
    json_object_set_new(o, "requests", json_integer((json_int_t)u->requests));
    json_object_set_new(o, "passed",
                        json_integer((json_int_t)u->kinds[PX_KIND_PASSED]));
    json_object_set_new(o, "injected",
                        json_integer((json_int_t)injected(u->kinds)));
    json_object_set_new(o, "early_retries",
                        json_integer((json_int_t)u->kinds[PX_KIND_EARLY]));
    json_object_set_new(o, "max_attempts", json_integer(u->max_attempts));
    json_t *st = json_object();
    for (int j = 0; j < STATUS_SLOTS && u->status[j]; j++) {
      char code[16];
      snprintf(code, sizeof code, "%d", u->status[j]);
      json_object_set_new(st, code, json_integer((json_int_t)u->status_n[j]));
    }
    if (u->status_other)
      json_object_set_new(st, "other",
                          json_integer((json_int_t)u->status_other));
    json_object_set_new(o, "statuses", st);
    json_array_append_new(urls, o);
  }
  free(v);
  json_object_set_new(r, "urls", urls);
  json_object_set_new(r, "urls_truncated", json_boolean(n > REPORT_URLS));
  char *text = json_dumps(r, JSON_INDENT(2));
  json_decref(r);
  return text;
}

/* Markdown text may not break the table: '|' and newlines are replaced. */
static void md_cell(FILE *f, const char *s) {
  for (; *s; s++)
    fputc(*s == '|' ? '/' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

void polite__px_report_md(const px_state *s, FILE *f, int64_t started_wall_ms,
                          int64_t now_wall_ms) {
  char a[40], b[40];
  iso_time(started_wall_ms, a, sizeof a);
  iso_time(now_wall_ms, b, sizeof b);
  fprintf(f, "# polite proxy report\n\n%s to %s\n\n", a, b);
  fprintf(f, "| | count |\n|---|---:|\n");
  fprintf(f, "| requests | %llu |\n", (unsigned long long)s->requests);
  fprintf(f, "| passed | %llu |\n",
          (unsigned long long)s->kinds[PX_KIND_PASSED]);
  fprintf(f, "| injected (all proxy-made failures) | %llu |\n",
          (unsigned long long)injected(s->kinds));
  fprintf(f, "| random failures | %llu |\n",
          (unsigned long long)s->kinds[PX_KIND_FAILURE]);
  fprintf(f, "| rate limited | %llu |\n",
          (unsigned long long)s->kinds[PX_KIND_RATE]);
  fprintf(f, "| quota exceeded | %llu |\n",
          (unsigned long long)s->kinds[PX_KIND_QUOTA]);
  fprintf(f, "| upstream errors | %llu |\n",
          (unsigned long long)s->kinds[PX_KIND_ERROR]);
  fprintf(f, "| concurrency limited | %llu |\n",
          (unsigned long long)s->kinds[PX_KIND_CONCURRENCY]);
  fprintf(f, "| **early retries** | %llu |\n",
          (unsigned long long)s->early_total);
  fprintf(f, "| requests during a throttle (never told) | %llu |\n",
          (unsigned long long)s->kinds[PX_KIND_THROTTLED]);
  fprintf(f, "| most attempts of one client for one URL | %u |\n\n",
          s->max_attempts);
  if (s->early_total == 0) {
    fprintf(f, "No client retried before its Retry-After had passed.\n\n");
  } else {
    fprintf(f, "## Early retries\n\nEach of these arrived before the time its "
               "Retry-After allowed.\n\n");
    fprintf(f, "| time | client | request | early by |\n|---|---|---|---:|\n");
    for (size_t i = 0; i < s->nearly && i < 100; i++) {
      const early_ent *e = &s->early[i];
      iso_time(e->wall_ms, a, sizeof a);
      fprintf(f, "| %s | ", a);
      md_cell(f, e->client);
      fprintf(f, " | %s ", e->method);
      md_cell(f, e->url);
      fprintf(f, " | %lld ms |\n", (long long)e->early_ms);
    }
    if (s->early_total > 100)
      fprintf(f, "\n(%llu more in the JSON report)\n",
              (unsigned long long)(s->early_total - 100));
    fprintf(f, "\n");
  }
  size_t n;
  url_stats **v = sorted_urls(s, &n);
  if (n) {
    fprintf(f, "## URLs\n\n| method | url | requests | passed | injected | "
               "early | max attempts |\n|---|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < n && i < 50; i++) {
      const url_stats *u = v[i];
      fprintf(f, "| %s | ", u->method);
      md_cell(f, u->url);
      fprintf(f, " | %llu | %llu | %llu | %llu | %u |\n",
              (unsigned long long)u->requests,
              (unsigned long long)u->kinds[PX_KIND_PASSED],
              (unsigned long long)injected(u->kinds),
              (unsigned long long)u->kinds[PX_KIND_EARLY], u->max_attempts);
    }
    if (n > 50)
      fprintf(f, "\n(%zu more URLs in the JSON report)\n", n - 50);
  }
  free(v);
}
