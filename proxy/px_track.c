/* polite proxy: Retry-After tracking per key, early-retry records, per-URL
 * stats and the report. */
#include "px.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- A small string-keyed hash map (chaining, power-of-two buckets) ---- */

typedef struct map_ent {
  struct map_ent *next;
  uint64_t hash;
  void *value;
  char key[]; /* NUL-terminated */
} map_ent;

typedef struct {
  map_ent **b;
  size_t nb, n;
} map;

static uint64_t hash_str(const char *s) {
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

static map_ent *map_find(const map *m, const char *key, uint64_t h) {
  if (m->nb == 0)
    return NULL;
  for (map_ent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
    if (e->hash == h && strcmp(e->key, key) == 0)
      return e;
  return NULL;
}

static void *map_get(const map *m, const char *key) {
  map_ent *e = map_find(m, key, hash_str(key));
  return e ? e->value : NULL;
}

/* Inserts key (copied) with value; the key must not be present. Returns the
 * value, or NULL when out of memory (then the caller keeps ownership). */
static void *map_put(map *m, const char *key, void *value) {
  if (m->n >= m->nb) {
    size_t nb = m->nb ? m->nb * 2 : 64;
    /* An array of pointers, so the pointer size is the one wanted. */
    map_ent **b = calloc(nb, sizeof *b); // NOLINT(bugprone-sizeof-expression)
    if (b == NULL)
      return NULL;
    for (size_t i = 0; i < m->nb; i++) {
      for (map_ent *e = m->b[i], *next; e; e = next) {
        next = e->next;
        e->next = b[e->hash & (nb - 1)];
        b[e->hash & (nb - 1)] = e;
      }
    }
    free(m->b);
    m->b = b;
    m->nb = nb;
  }
  size_t k = strlen(key);
  map_ent *e = malloc(sizeof *e + k + 1);
  if (e == NULL)
    return NULL;
  memcpy(e->key, key, k + 1);
  e->hash = hash_str(key);
  e->value = value;
  e->next = m->b[e->hash & (m->nb - 1)];
  m->b[e->hash & (m->nb - 1)] = e;
  m->n++;
  return value;
}

static void map_del(map *m, const char *key) {
  if (m->nb == 0)
    return;
  uint64_t h = hash_str(key);
  for (map_ent **pp = &m->b[h & (m->nb - 1)]; *pp; pp = &(*pp)->next) {
    map_ent *e = *pp;
    if (e->hash == h && strcmp(e->key, key) == 0) {
      *pp = e->next;
      free(e->value);
      free(e);
      m->n--;
      return;
    }
  }
}

static void map_free(map *m, void (*free_value)(void *)) {
  for (size_t i = 0; i < m->nb; i++) {
    for (map_ent *e = m->b[i], *next; e; e = next) {
      next = e->next;
      free_value(e->value);
      free(e);
    }
  }
  free(m->b);
  memset(m, 0, sizeof *m);
}

/* ---- State ----------------------------------------------------------------
 */

typedef struct {
  int64_t until_ms; /* monotonic: not before this */
  int64_t wait_ms;  /* the wait that was announced (for --penalty) */
} track_ent;

#define STATUS_SLOTS 8

typedef struct {
  char *method;
  char *url;
  uint64_t requests;
  uint64_t kinds[PX_KIND__COUNT];
  unsigned chain;        /* attempts in the current retry chain */
  unsigned max_attempts; /* longest chain seen */
  int last_retryable;    /* previous answer was 429/503 */
  int status[STATUS_SLOTS];
  uint64_t status_n[STATUS_SLOTS];
  uint64_t status_other;
} url_stats;

typedef struct {
  int64_t wall_ms;
  char *key, *client, *method, *url;
  int64_t early_ms;
} early_ent;

/* The report keeps this many early retries in full; the count is exact. */
#define EARLY_KEEP 10000

struct px_state {
  map track;
  map gcra;
  map urls;
  int64_t quota_used;
  uint64_t requests;
  uint64_t kinds[PX_KIND__COUNT];
  unsigned max_attempts;
  early_ent *early;
  size_t nearly, capearly;
  uint64_t early_total;
};

px_state *polite__px_state_new(void) {
  return calloc(1, sizeof(px_state));
}

static void url_stats_free(void *p) {
  url_stats *u = p;
  if (u) {
    free(u->method);
    free(u->url);
    free(u);
  }
}

void polite__px_state_free(px_state *s) {
  if (s == NULL)
    return;
  map_free(&s->track, free);
  map_free(&s->gcra, free);
  map_free(&s->urls, url_stats_free);
  for (size_t i = 0; i < s->nearly; i++) {
    free(s->early[i].key);
    free(s->early[i].client);
    free(s->early[i].method);
    free(s->early[i].url);
  }
  free(s->early);
  free(s);
}

int64_t polite__px_track_check(px_state *s, const char *key, int64_t now_ms,
                               int penalty) {
  track_ent *t = map_get(&s->track, key);
  if (t == NULL)
    return 0;
  if (now_ms >= t->until_ms) {
    /* The wait is over: a compliant retry. Forget it so the table only
     * holds pending waits. */
    map_del(&s->track, key);
    return 0;
  }
  if (penalty) {
    /* Microsoft Graph's rule: retrying early restarts the wait. */
    t->until_ms = now_ms + t->wait_ms;
  }
  return t->until_ms - now_ms;
}

void polite__px_track_set(px_state *s, const char *key, int64_t now_ms,
                          int64_t wait_ms) {
  if (wait_ms <= 0)
    return;
  int64_t until = now_ms + wait_ms;
  track_ent *t = map_get(&s->track, key);
  if (t) {
    if (until > t->until_ms) {
      t->until_ms = until;
      t->wait_ms = wait_ms;
    }
    return;
  }
  t = malloc(sizeof *t);
  if (t == NULL)
    return;
  t->until_ms = until;
  t->wait_ms = wait_ms;
  if (map_put(&s->track, key, t) == NULL)
    free(t);
}

polite_gcra *polite__px_gcra_get(px_state *s, const char *key,
                                 double rate_per_s, unsigned burst) {
  polite_gcra *g = map_get(&s->gcra, key);
  if (g)
    return g;
  g = calloc(1, sizeof *g);
  if (g == NULL)
    return NULL;
  if (polite_gcra_init(g, rate_per_s, burst) != 0 ||
      map_put(&s->gcra, key, g) == NULL) {
    free(g);
    return NULL;
  }
  return g;
}

int polite__px_quota_take(px_state *s, int64_t quota) {
  if (quota < 0)
    return 1;
  if (s->quota_used >= quota)
    return 0;
  s->quota_used++;
  return 1;
}

void polite__px_early_record(px_state *s, int64_t wall_ms, const char *key,
                             const char *client, const char *method,
                             const char *url, int64_t early_ms) {
  s->early_total++;
  if (s->nearly >= EARLY_KEEP)
    return;
  if (s->nearly == s->capearly) {
    size_t cap = s->capearly ? s->capearly * 2 : 64;
    early_ent *e = realloc(s->early, cap * sizeof *e);
    if (e == NULL)
      return;
    s->early = e;
    s->capearly = cap;
  }
  early_ent *e = &s->early[s->nearly++];
  e->wall_ms = wall_ms;
  e->key = strdup(key);
  e->client = strdup(client);
  e->method = strdup(method);
  e->url = strdup(url);
  e->early_ms = early_ms;
}

void polite__px_stats_record(px_state *s, const char *method, const char *url,
                             int status, px_kind kind) {
  s->requests++;
  if ((unsigned)kind < PX_KIND__COUNT)
    s->kinds[kind]++;
  size_t n = strlen(method) + strlen(url) + 2;
  char *k = malloc(n);
  if (k == NULL)
    return;
  snprintf(k, n, "%s %s", method, url);
  url_stats *u = map_get(&s->urls, k);
  if (u == NULL) {
    u = calloc(1, sizeof *u);
    if (u == NULL || (u->method = strdup(method)) == NULL ||
        (u->url = strdup(url)) == NULL || map_put(&s->urls, k, u) == NULL) {
      url_stats_free(u);
      free(k);
      return;
    }
  }
  free(k);
  u->requests++;
  if ((unsigned)kind < PX_KIND__COUNT)
    u->kinds[kind]++;
  /* A retry chain: each request that follows a 429/503 for the same
   * method+URL is one more attempt of the same logical request. */
  u->chain = u->last_retryable ? u->chain + 1 : 1;
  if (u->chain > u->max_attempts)
    u->max_attempts = u->chain;
  if (u->max_attempts > s->max_attempts)
    s->max_attempts = u->max_attempts;
  u->last_retryable = status == 429 || status == 503;
  for (int i = 0; i < STATUS_SLOTS; i++) {
    if (u->status[i] == status) {
      u->status_n[i]++;
      return;
    }
    if (u->status[i] == 0) {
      u->status[i] = status;
      u->status_n[i] = 1;
      return;
    }
  }
  u->status_other++;
}

uint64_t polite__px_requests(const px_state *s) {
  return s->requests;
}

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
         k[PX_KIND_EARLY];
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
  json_object_set_new(r, "early_retries",
                      json_integer((json_int_t)s->early_total));
  json_object_set_new(r, "max_attempts", json_integer(s->max_attempts));
  json_t *early = json_array();
  for (size_t i = 0; i < s->nearly; i++) {
    const early_ent *e = &s->early[i];
    json_t *o = json_object();
    iso_time(e->wall_ms, t, sizeof t);
    json_object_set_new(o, "time", json_string(t));
    json_object_set_new(o, "key", json_string(e->key));
    json_object_set_new(o, "client", json_string(e->client));
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
  fprintf(f, "| **early retries** | %llu |\n",
          (unsigned long long)s->early_total);
  fprintf(f, "| most attempts for one URL | %u |\n\n", s->max_attempts);
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
