/* polite proxy: the counts: requests by what the proxy did to them, per URL
 * and per client (bounded tables whose evicted entries are kept in
 * aggregates, so the report adds up), retry chains, early retries, and the
 * keyed states of the limits. */
#include "px_track_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t polite__px_injected(const uint64_t *k) {
  return k[PX_KIND_FAILURE] + k[PX_KIND_RATE] + k[PX_KIND_QUOTA] +
         k[PX_KIND_EARLY] + k[PX_KIND_THROTTLED] + k[PX_KIND_CONCURRENCY] +
         k[PX_KIND_TOKENS];
}

px_rec_class polite__px_record_class(const char *method, const char *url) {
  if (method && strcmp(method, "CONNECT") == 0)
    return PX_REC_CONNECT;
  const char *p = url ? url : "";
  const char *sep = strstr(p, "://");
  if (sep && (p = strchr(sep + 3, '/')) == NULL)
    return PX_REC_REQUEST;
  return strncmp(p, "/__polite/", 10) == 0 ? PX_REC_OWN : PX_REC_REQUEST;
}

void *polite__px_keyed(px_state *s, px_table t, const char *key) {
  return (unsigned)t < PX_TAB__COUNT ? polite__px_map_get(&s->keyed[t], key)
                                     : NULL;
}

void *polite__px_keyed_put(px_state *s, px_table t, const char *key, void *obj,
                           void (*destroy)(void *)) {
  if ((unsigned)t >= PX_TAB__COUNT || obj == NULL ||
      s->keyed[t].n >= PX_KEYED_MAX ||
      polite__px_map_put(&s->keyed[t], key, obj) == NULL) {
    if (obj)
      destroy(obj);
    return NULL;
  }
  s->keyed[t].free_value = destroy;
  return obj;
}

void polite__px_early_record(px_state *s, int64_t wall_ms, const char *key,
                             const char *client, const char *conn,
                             const char *method, const char *url,
                             int64_t early_ms, int across) {
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
  e->conn = strdup(conn);
  e->method = strdup(method);
  e->url = strdup(url);
  e->early_ms = early_ms;
  e->across = across;
}

/* "A B" (or "N B" for a number) into buf (size bytes), or a new string when
 * it does not fit (*heap set, the caller frees); NULL out of memory. */
static char *pair_key(char *buf, size_t size, const char *a, uint64_t num,
                      const char *b, int *heap) {
  char n[24];
  if (a == NULL) { /* the number in decimal, without printf */
    size_t at = sizeof n - 1;
    n[at] = '\0';
    do {
      n[--at] = (char)('0' + num % 10);
      num /= 10;
    } while (num);
    a = n + at;
  }
  size_t la = strlen(a), lb = strlen(b), len = la + lb + 2;
  *heap = len > size;
  char *k = *heap ? malloc(len) : buf;
  if (k) { /* pieces, not printf: twice per request */
    memcpy(k, a, la);
    k[la] = ' ';
    memcpy(k + la + 1, b, lb + 1);
  }
  return k;
}

typedef struct {
  unsigned chain; /* attempts so far; the last was answered 429/503 */
} chain_ent;

/* The retry chain of `client` on method+url (mu): a request that follows a
 * 429/503 answer to the same client for the same method + URL is one more
 * attempt of the same logical request. A chain is kept only while its last
 * answer asks for a retry, so the table holds chains in progress only (at
 * most CHAINS_MAX; the one used longest ago goes). Returns the chain's
 * length with this request. */
static unsigned chain_step(px_state *s, uint64_t client, const char *mu,
                           int status) {
  char buf[512];
  int heap;
  char *k = pair_key(buf, sizeof buf, NULL, client, mu, &heap);
  if (k == NULL)
    return 1;
  chain_ent *c = polite__px_map_use(&s->chains, k);
  unsigned n = c ? c->chain + 1 : 1;
  if (status == 429 || status == 503) {
    if (c == NULL)
      c = polite__px_map_entry(&s->chains, k, sizeof *c, CHAINS_MAX);
    if (c)
      c->chain = n;
  } else if (c) {
    polite__px_map_del(&s->chains, k);
  }
  if (heap)
    free(k);
  return n;
}

static void counts_add(px_counts *n, px_kind kind) {
  n->requests++;
  if ((unsigned)kind < PX_KIND__COUNT)
    n->kinds[kind]++;
}

static void counts_merge(px_counts *into, const px_counts *from) {
  into->requests += from->requests;
  for (int k = 0; k < PX_KIND__COUNT; k++)
    into->kinds[k] += from->kinds[k];
}

/* The per-client row of `who`; past CLIENTS_MAX the one used longest ago
 * is added to the "other clients" row. */
static client_stats *client_row(px_state *s, const char *who) {
  client_stats *c = polite__px_map_use(&s->clients, who);
  if (c)
    return c;
  while (s->clients.n >= CLIENTS_MAX) {
    client_stats *old = polite__px_map_take_oldest(&s->clients);
    counts_merge(&s->clients_gone.n, &old->n);
    if (old->max_attempts > s->clients_gone.max_attempts)
      s->clients_gone.max_attempts = old->max_attempts;
    s->clients_evicted++;
    free(old);
  }
  return polite__px_map_entry(&s->clients, who, sizeof *c, CLIENTS_MAX);
}

/* The row of "METHOD URL"; past --max-urls the one used longest ago goes,
 * its counts added to the evicted URLs' aggregate. */
static url_stats *url_row(px_state *s, const char *key) {
  url_stats *u = polite__px_map_use(&s->urls, key);
  if (u)
    return u;
  while (s->urls.n >= s->max_urls) {
    url_stats *old = polite__px_map_take_oldest(&s->urls);
    counts_merge(&s->urls_gone, &old->n);
    s->urls_evicted++;
    free(old);
  }
  return polite__px_map_entry(&s->urls, key, sizeof *u, s->max_urls);
}

static void url_status(url_stats *u, int status) {
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

void polite__px_stats_record(px_state *s, const px_record *rec) {
  px_rec_class cls = polite__px_record_class(rec->method, rec->url);
  if (cls != PX_REC_REQUEST) {
    if (cls == PX_REC_CONNECT)
      s->connects++;
    else
      s->own_calls++;
    return;
  }
  px_kind kind = rec->kind;
  counts_add(&s->all, kind);
  char buf[512];
  int heap;
  char *k = pair_key(buf, sizeof buf, rec->method, 0, rec->url, &heap);
  if (k == NULL)
    return;
  unsigned chain = chain_step(s, rec->client, k, rec->status);
  if (chain > s->max_attempts)
    s->max_attempts = chain;
  client_stats *cs = client_row(s, rec->who ? rec->who : "-");
  if (cs) {
    counts_add(&cs->n, kind);
    if (chain > cs->max_attempts)
      cs->max_attempts = chain;
  }
  url_stats *u = url_row(s, k);
  if (heap)
    free(k);
  if (u) {
    counts_add(&u->n, kind);
    if (chain > u->max_attempts)
      u->max_attempts = chain;
    url_status(u, rec->status);
  }
}

px_metrics *polite__px_metrics(px_state *s) {
  return &s->metrics;
}

uint64_t polite__px_kind_count(const px_state *s, px_kind k) {
  return (unsigned)k < PX_KIND__COUNT ? s->all.kinds[k] : 0;
}

uint64_t polite__px_requests(const px_state *s) {
  return s->all.requests;
}
