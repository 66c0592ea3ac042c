/* polite proxy: the report of what the proxy saw (JSON and markdown). It
 * counts requests only (CONNECTs and calls to its own endpoints apart), and
 * its parts add up: the kinds to the requests, the clients and the URLs
 * (with what their bounded tables let go of) to the same total. */
#include "px_track_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const px_kind_info KINDS[PX_KIND__COUNT] = {
    [PX_KIND_PASSED] = {"passed", "passed", "passed to the upstream or a mock",
                        "passed", NULL},
    [PX_KIND_FAILURE] = {"injected", "failures",
                         "random failure (--failure-rate, errors file)",
                         "failure", "failure_rate"},
    [PX_KIND_RATE] = {"rate_limited", "rate_limited", "rate limit 429",
                      "rate_limited", "rate_limit"},
    [PX_KIND_QUOTA] = {"quota", "quota_exceeded", "quota spent",
                       "quota_exceeded", "quota"},
    [PX_KIND_EARLY] = {"EARLY", "early_retries",
                       "early retry (told to wait, came back too soon)",
                       "early_retry", "retry_after"},
    [PX_KIND_ERROR] = {"upstream_error", "upstream_errors",
                       "upstream error or refused by the proxy",
                       "upstream_error", NULL},
    [PX_KIND_THROTTLED] = {"throttled", "during_throttle",
                           "during a throttle (never told, refused)",
                           "during_throttle", "retry_after"},
    [PX_KIND_CONCURRENCY] = {"concurrency", "concurrency_limited",
                             "over the concurrency limit",
                             "concurrency_limited", "concurrency"},
    [PX_KIND_TOKENS] = {"tokens", "tokens_limited", "token window spent",
                        "tokens_limited", "tokens"},
};

const px_kind_info *polite__px_kind_info(px_kind k) {
  return &KINDS[(unsigned)k < PX_KIND__COUNT ? k : PX_KIND_PASSED];
}

px_kind polite__px_kind_of_word(const char *word) {
  for (int k = 0; k < PX_KIND__COUNT; k++)
    if (strcmp(KINDS[k].word, word) == 0)
      return (px_kind)k;
  return PX_KIND__COUNT;
}

static void iso_time(int64_t wall_ms, char *buf, size_t size) {
  time_t t = (time_t)(wall_ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, size - n, ".%03dZ", (int)(wall_ms % 1000));
}

static json_t *jint(uint64_t v) {
  return json_integer((json_int_t)v);
}

/* Every count of n into o: requests, passed, injected and each kind's key. */
static void counts_json(json_t *o, const px_counts *n) {
  json_object_set_new(o, "requests", jint(n->requests));
  json_object_set_new(o, "injected", jint(polite__px_injected(n->kinds)));
  for (int k = 0; k < PX_KIND__COUNT; k++)
    json_object_set_new(o, KINDS[k].key, jint(n->kinds[k]));
}

static int cmp_urls(const void *a, const void *b) {
  const map_ent *x = *(map_ent *const *)a, *y = *(map_ent *const *)b;
  const url_stats *u = x->value, *v = y->value;
  if (u->n.requests != v->n.requests)
    return u->n.requests < v->n.requests ? 1 : -1;
  return strcmp(x->key, y->key);
}

/* The URL table's entries sorted by request count (busiest first). */
static map_ent **sorted_urls(const px_state *s, size_t *count) {
  /* v is an array of pointers: sizeof *v is meant to be a pointer's size. */
  // NOLINTNEXTLINE(bugprone-sizeof-expression)
  map_ent **v = malloc((s->urls.n ? s->urls.n : 1) * sizeof *v);
  size_t n = 0;
  for (const map_ent *e = s->urls.newest; v && e; e = e->older)
    v[n++] = (map_ent *)e;
  if (v)
    qsort(v, n, sizeof *v, cmp_urls); // NOLINT(bugprone-sizeof-expression)
  *count = n;
  return v;
}

/* A table key "METHOD URL" split into its two parts (method into buf). */
static const char *split_key(const char *key, char *method, size_t size) {
  const char *sp = strchr(key, ' ');
  size_t n = sp ? (size_t)(sp - key) : strlen(key);
  snprintf(method, size, "%.*s", (int)n, key);
  return sp ? sp + 1 : "";
}

#define REPORT_URLS 1000
#define REPORT_CLIENTS 1000

/* Per client, the most recently active first, at most REPORT_CLIENTS; the
 * rest (and the clients the table let go of) in one last row, so that the
 * rows add up to the requests. */
static json_t *clients_json(const px_state *s) {
  json_t *a = json_array();
  client_stats other = s->clients_gone;
  uint64_t nother = s->clients_evicted;
  for (const map_ent *e = s->clients.newest; e; e = e->older) {
    const client_stats *c = e->value;
    if (json_array_size(a) >= REPORT_CLIENTS) {
      for (int k = 0; k < PX_KIND__COUNT; k++)
        other.n.kinds[k] += c->n.kinds[k];
      other.n.requests += c->n.requests;
      if (c->max_attempts > other.max_attempts)
        other.max_attempts = c->max_attempts;
      nother++;
      continue;
    }
    json_t *o = json_object();
    json_object_set_new(o, "client", json_string(e->key));
    counts_json(o, &c->n);
    json_object_set_new(o, "max_attempts", json_integer(c->max_attempts));
    json_array_append_new(a, o);
  }
  if (nother) {
    json_t *o = json_object();
    json_object_set_new(o, "client", json_string("(other clients)"));
    json_object_set_new(o, "clients", jint(nother));
    counts_json(o, &other.n);
    json_object_set_new(o, "max_attempts", json_integer(other.max_attempts));
    json_array_append_new(a, o);
  }
  return a;
}

static json_t *early_json(const px_state *s) {
  json_t *early = json_array();
  char t[40];
  for (size_t i = 0; i < s->nearly; i++) {
    const early_ent *e = &s->early[i];
    json_t *o = json_object();
    iso_time(e->wall_ms, t, sizeof t);
    json_object_set_new(o, "time", json_string(t));
    json_object_set_new(o, "key", json_string(e->key));
    json_object_set_new(o, "client", json_string(e->client));
    json_object_set_new(o, "connection", json_string(e->conn));
    json_object_set_new(o, "across_connections", json_boolean(e->across));
    json_object_set_new(o, "method", json_string(e->method));
    json_object_set_new(o, "url", json_string(e->url));
    json_object_set_new(o, "early_ms", json_integer(e->early_ms));
    json_array_append_new(early, o);
  }
  return early;
}

static json_t *url_json(const map_ent *e) {
  const url_stats *u = e->value;
  char method[32];
  const char *url = split_key(e->key, method, sizeof method);
  json_t *o = json_object();
  json_object_set_new(o, "method", json_string(method));
  json_object_set_new(o, "url", json_string(url));
  counts_json(o, &u->n);
  json_object_set_new(o, "max_attempts", json_integer(u->max_attempts));
  json_t *st = json_object();
  for (int j = 0; j < STATUS_SLOTS && u->status[j]; j++) {
    char code[16];
    snprintf(code, sizeof code, "%d", u->status[j]);
    json_object_set_new(st, code, jint(u->status_n[j]));
  }
  if (u->status_other)
    json_object_set_new(st, "other", jint(u->status_other));
  json_object_set_new(o, "statuses", st);
  return o;
}

/* The busiest REPORT_URLS URLs, and in "url_table" the bound and what is
 * not listed: URLs past the list, and those the table let go of. */
static void urls_json(json_t *r, const px_state *s) {
  size_t n;
  map_ent **v = sorted_urls(s, &n);
  json_t *urls = json_array();
  uint64_t unlisted = 0;
  for (size_t i = 0; v && i < n; i++) {
    if (i < REPORT_URLS)
      json_array_append_new(urls, url_json(v[i]));
    else
      unlisted += ((const url_stats *)v[i]->value)->n.requests;
  }
  free(v);
  json_object_set_new(r, "urls", urls);
  json_object_set_new(r, "urls_truncated",
                      json_boolean(n > REPORT_URLS || s->urls_evicted > 0));
  json_t *t = json_object();
  json_object_set_new(t, "max_urls", jint(s->max_urls));
  json_object_set_new(t, "tracked", jint(s->urls.n));
  json_object_set_new(t, "unlisted_requests", jint(unlisted));
  json_object_set_new(t, "evicted", jint(s->urls_evicted));
  json_object_set_new(t, "evicted_requests", jint(s->urls_gone.requests));
  json_object_set_new(r, "url_table", t);
}

char *polite__px_report_json(const px_state *s, int64_t started_wall_ms,
                             int64_t now_wall_ms) {
  json_t *r = json_object();
  char t[40];
  iso_time(started_wall_ms, t, sizeof t);
  json_object_set_new(r, "started", json_string(t));
  iso_time(now_wall_ms, t, sizeof t);
  json_object_set_new(r, "finished", json_string(t));
  counts_json(r, &s->all);
  json_object_set_new(r, "max_attempts", json_integer(s->max_attempts));
  json_object_set_new(r, "connects", jint(s->connects));
  json_object_set_new(r, "own_endpoint_calls", jint(s->own_calls));
  json_object_set_new(r, "judge", json_boolean(!s->judge_off));
  json_object_set_new(r, "shared_identities", jint(s->shared_identities));
  json_object_set_new(r, "waits_forgotten", jint(s->waits_forgotten));
  json_object_set_new(r, "clients", clients_json(s));
  json_object_set_new(r, "early", early_json(s));
  json_object_set_new(r, "early_truncated",
                      json_boolean(s->early_total > s->nearly));
  urls_json(r, s);
  char *text = json_dumps(r, JSON_INDENT(2));
  json_decref(r);
  return text;
}

/* Markdown text may not break the table: '|' and newlines are replaced. */
static void md_cell(FILE *f, const char *s) {
  for (; *s; s++)
    fputc(*s == '|' ? '/' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static void md_summary(const px_state *s, FILE *f) {
  fprintf(f, "| | count |\n|---|---:|\n");
  fprintf(f, "| requests | %llu |\n", (unsigned long long)s->all.requests);
  for (int k = 0; k < PX_KIND__COUNT; k++)
    fprintf(f, k == PX_KIND_EARLY ? "| **%s** | %llu |\n" : "| %s | %llu |\n",
            KINDS[k].label, (unsigned long long)s->all.kinds[k]);
  fprintf(f, "| (all answers the proxy made up) | %llu |\n",
          (unsigned long long)polite__px_injected(s->all.kinds));
  fprintf(f, "| most attempts of one client for one URL | %u |\n",
          s->max_attempts);
  fprintf(f, "| CONNECTs (not requests) | %llu |\n",
          (unsigned long long)s->connects);
  fprintf(f, "| calls to the proxy's own endpoints (not requests) | %llu |\n\n",
          (unsigned long long)s->own_calls);
  if (s->judge_off)
    fprintf(f, "The early-retry judge was off (the devproxyrc does not enable "
               "RetryAfterPlugin): early retries were not looked for.\n\n");
  if (s->shared_identities)
    fprintf(f,
            "%llu client identities (address, credentials, user agent) "
            "showed several clients; from then on each of their connections "
            "was judged as a client of its own.\n\n",
            (unsigned long long)s->shared_identities);
}

static void md_early(const px_state *s, FILE *f) {
  uint64_t early = s->all.kinds[PX_KIND_EARLY];
  if (early == 0) {
    if (!s->judge_off)
      fprintf(f, "No client retried before its Retry-After had passed.\n\n");
    return;
  }
  fprintf(f, "## Early retries\n\nEach of these arrived before the time its "
             "Retry-After allowed.\n\n");
  fprintf(f, "| time | client | request | early by |\n|---|---|---|---:|\n");
  char a[40];
  for (size_t i = 0; i < s->nearly && i < 100; i++) {
    const early_ent *e = &s->early[i];
    iso_time(e->wall_ms, a, sizeof a);
    fprintf(f, "| %s | ", a);
    md_cell(f, e->client);
    fprintf(f, " | %s ", e->method);
    md_cell(f, e->url);
    fprintf(f, " | %lld ms |\n", (long long)e->early_ms);
  }
  if (early > 100)
    fprintf(f, "\n(%llu more in the JSON report)\n",
            (unsigned long long)(early - 100));
  fprintf(f, "\n");
}

static void md_urls(const px_state *s, FILE *f) {
  size_t n;
  map_ent **v = sorted_urls(s, &n);
  if (n) {
    fprintf(f, "## URLs\n\n| method | url | requests | passed | injected | "
               "early | max attempts |\n|---|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; v && i < n && i < 50; i++) {
      const url_stats *u = v[i]->value;
      char method[32];
      const char *url = split_key(v[i]->key, method, sizeof method);
      fprintf(f, "| %s | ", method);
      md_cell(f, url);
      fprintf(f, " | %llu | %llu | %llu | %llu | %u |\n",
              (unsigned long long)u->n.requests,
              (unsigned long long)u->n.kinds[PX_KIND_PASSED],
              (unsigned long long)polite__px_injected(u->n.kinds),
              (unsigned long long)u->n.kinds[PX_KIND_EARLY], u->max_attempts);
    }
    if (n > 50)
      fprintf(f, "\n(%zu more URLs in the JSON report)\n", n - 50);
  }
  if (s->urls_evicted)
    fprintf(f,
            "\n%llu URLs (%llu requests) were let go of to keep the table "
            "within --max-urls %zu; their requests are in the totals.\n",
            (unsigned long long)s->urls_evicted,
            (unsigned long long)s->urls_gone.requests, s->max_urls);
  free(v);
}

void polite__px_report_md(const px_state *s, FILE *f, int64_t started_wall_ms,
                          int64_t now_wall_ms) {
  char a[40], b[40];
  iso_time(started_wall_ms, a, sizeof a);
  iso_time(now_wall_ms, b, sizeof b);
  fprintf(f, "# polite proxy report\n\n%s to %s\n\n", a, b);
  md_summary(s, f);
  md_early(s, f);
  md_urls(s, f);
}
