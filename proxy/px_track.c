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

static void map_del(map *m, const char *key, void (*free_value)(void *)) {
  if (m->nb == 0)
    return;
  uint64_t h = hash_str(key);
  for (map_ent **pp = &m->b[h & (m->nb - 1)]; *pp; pp = &(*pp)->next) {
    map_ent *e = *pp;
    if (e->hash == h && strcmp(e->key, key) == 0) {
      *pp = e->next;
      free_value(e->value);
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

#define STATUS_SLOTS 8

typedef struct {
  char *method;
  char *url;
  uint64_t requests;
  uint64_t kinds[PX_KIND__COUNT];
  unsigned max_attempts; /* longest retry chain of one client */
  int status[STATUS_SLOTS];
  uint64_t status_n[STATUS_SLOTS];
  uint64_t status_other;
} url_stats;

typedef struct {
  int64_t wall_ms;
  char *key, *client, *conn, *method, *url;
  int64_t early_ms;
  int guessed; /* the client was recognised on a new connection */
} early_ent;

/* One client's retry chain on one method + URL. */
typedef struct {
  unsigned chain;      /* attempts in the current chain */
  int last_retryable;  /* its previous answer was 429/503 */
} chain_ent;

/* Per client (address + auth hash) counts for the report. */
typedef struct {
  char *who;
  uint64_t requests, early, throttled;
  unsigned max_attempts;
  uint64_t newest_conn; /* sequence number of its newest connection */
  int several;          /* an older connection was used after a newer one
                           appeared: several clients share this address */
} client_stats;

#define CHAINS_MAX 200000
#define CLIENTS_MAX 10000

/* The report keeps this many early retries in full; the count is exact. */
#define EARLY_KEEP 10000

struct px_state {
  map track;   /* key -> track_ent */
  map conns;   /* "ADDR:PORT" -> conn_ent */
  map chains;  /* "CLIENT METHOD URL" -> chain_ent */
  map clients; /* who -> client_stats */
  uint64_t next_client;
  int (*probe)(void *ctx, const char *conn, int handle);
  void *probe_ctx;
  px_metrics metrics;
  map keyed[PX_TAB__COUNT]; /* limiter states etc. per scope key */
  void (*keyed_free[PX_TAB__COUNT])(void *);
  map urls;
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

static void track_ent_free(void *p);

static void client_stats_free(void *p) {
  client_stats *c = p;
  if (c) {
    free(c->who);
    free(c);
  }
}

void polite__px_state_free(px_state *s) {
  if (s == NULL)
    return;
  map_free(&s->track, track_ent_free);
  map_free(&s->conns, free);
  map_free(&s->chains, free);
  map_free(&s->clients, client_stats_free);
  for (int t = 0; t < PX_TAB__COUNT; t++)
    map_free(&s->keyed[t], s->keyed_free[t] ? s->keyed_free[t] : free);
  map_free(&s->urls, url_stats_free);
  for (size_t i = 0; i < s->nearly; i++) {
    free(s->early[i].key);
    free(s->early[i].client);
    free(s->early[i].conn);
    free(s->early[i].method);
    free(s->early[i].url);
  }
  free(s->early);
  free(s);
}

/* ---- The judge ------------------------------------------------------------
 *
 * Two things are kept per tracking key: until when the key is throttled for
 * everybody (set by 429/503 answers that throttle: injected failures,
 * canned answers, the upstream's), and, for each client that was told a
 * wait, the deadline it was told. A request from a client with a deadline
 * still ahead is an early retry; a request from any other client while the
 * key is throttled is a request during a throttle (refused, never flagged).
 * Deadlines are counted from the moment the answer left the proxy.
 *
 * A client is a connection (ADDR:PORT), so that threads of one process
 * sharing an address are told apart. A client that closes its connection
 * and comes back on a fresh one from the same address and credentials is
 * the same client: its pending deadline (and its retry chain) passes to the
 * new connection. */

/* A told client's entry is kept this long past its deadline, so that a
 * compliant return on a new connection still continues its retry chain. */
#define TOLD_GRACE_MS 60000
/* At most this many told clients per key (the oldest deadline goes). */
#define TOLD_MAX 256
/* At most this many live connections tracked (older ones are forgotten). */
#define CONNS_MAX 100000

typedef struct {
  char *conn;        /* told client's connection; "" once orphaned */
  char *who;         /* address + auth hash */
  uint64_t client;   /* logical client id */
  int64_t until_ms;  /* the deadline it was told */
  int64_t wait_ms;   /* the wait it was told (for --penalty) */
} told_ent;

typedef struct {
  int64_t until_ms; /* throttled for everybody until then (0: not) */
  told_ent *told;
  size_t ntold;
} track_ent;

typedef struct {
  uint64_t client; /* the logical client on this connection */
  uint64_t nreq;   /* requests seen on it */
  int handle;      /* the engine's handle for the probe (-1: none) */
  int64_t last_ms; /* its latest request */
  uint64_t seq;    /* order of first sight */
  char who[];      /* the client's address + auth hash */
} conn_ent;

static void told_clear(told_ent *t) {
  free(t->conn);
  free(t->who);
}

static void track_ent_free(void *p) {
  track_ent *e = p;
  if (e == NULL)
    return;
  for (size_t i = 0; i < e->ntold; i++)
    told_clear(&e->told[i]);
  free(e->told);
  free(e);
}

static void told_remove(track_ent *e, size_t i) {
  told_clear(&e->told[i]);
  e->told[i] = e->told[--e->ntold];
}

/* Drops told clients whose deadline is long past (they never came back). */
static void told_prune(track_ent *e, int64_t now_ms) {
  for (size_t i = 0; i < e->ntold;)
    if (e->told[i].until_ms + TOLD_GRACE_MS < now_ms)
      told_remove(e, i);
    else
      i++;
}

/* The connection's entry, created on first sight. *fresh is 1 when this is
 * its first request. NULL when out of memory. */
static conn_ent *conn_see(px_state *s, const char *conn, int handle,
                          const char *who, int64_t now_ms, int *fresh) {
  conn_ent *c = map_get(&s->conns, conn);
  *fresh = c == NULL || c->nreq == 0;
  if (c == NULL) {
    if (s->conns.n >= CONNS_MAX)
      return NULL;
    size_t wl = strlen(who);
    c = calloc(1, sizeof *c + wl + 1);
    if (c == NULL)
      return NULL;
    memcpy(c->who, who, wl + 1);
    c->client = ++s->next_client;
    c->seq = c->client;
    c->handle = handle;
    if (map_put(&s->conns, conn, c) == NULL) {
      free(c);
      return NULL;
    }
  }
  c->nreq++;
  c->last_ms = now_ms;
  return c;
}

/* 1 when the connection is known to be gone: closed as reported, or found
 * closed by the engine's probe (a server may notice a client's close only
 * when it next reads). */
static int conn_closed(px_state *s, const char *conn) {
  conn_ent *c = map_get(&s->conns, conn);
  if (c == NULL)
    return 1;
  if (s->probe && !s->probe(s->probe_ctx, conn, c->handle)) {
    map_del(&s->conns, conn, free);
    return 1;
  }
  return 0;
}

/* 1 when some connection of `who` other than `told` and `self` made a
 * request after since_ms: several clients share the address. */
static int others_active(const px_state *s, const char *who, const char *told,
                         const char *self, int64_t since_ms) {
  for (size_t i = 0; i < s->conns.nb; i++)
    for (map_ent *e = s->conns.b[i]; e; e = e->next) {
      const conn_ent *c = e->value;
      if (c->last_ms > since_ms && strcmp(c->who, who) == 0 &&
          strcmp(e->key, told) != 0 && strcmp(e->key, self) != 0)
        return 1;
    }
  return 0;
}

/* Whether told client t may be the one now asking on the fresh connection
 * `conn`. Never when its address and credentials have shown several
 * clients (an older connection used after a newer one). Else when its
 * connection closed, or when it has been idle since it was told and no
 * other connection from the same address and credentials was used since:
 * one client that opens a connection per request (curl in a loop,
 * requests.get). */
static int adoptable(px_state *s, const told_ent *t, const char *conn,
                     const char *who, const client_stats *cs) {
  if (strcmp(t->who, who) != 0 || (cs && cs->several))
    return 0;
  if (conn_closed(s, t->conn))
    return 1;
  const conn_ent *c = map_get(&s->conns, t->conn);
  int64_t told_ms = t->until_ms - t->wait_ms;
  return c && c->last_ms <= told_ms &&
         !others_active(s, who, t->conn, conn, told_ms);
}

/* Once an address is seen to carry several clients, the early retries that
 * were recognised on a new connection of it were guesses that may have
 * been another client's first request: they are counted again as requests
 * during a throttle (their 429 was the same). */
static void early_unguess(px_state *s, const char *who, client_stats *cs) {
  size_t o = 0;
  for (size_t i = 0; i < s->nearly; i++) {
    early_ent *e = &s->early[i];
    if (!e->guessed || strcmp(e->client, who) != 0) {
      s->early[o++] = *e;
      continue;
    }
    s->early_total--;
    if (s->kinds[PX_KIND_EARLY] > 0) {
      s->kinds[PX_KIND_EARLY]--;
      s->kinds[PX_KIND_THROTTLED]++;
    }
    if (cs->early > 0) {
      cs->early--;
      cs->throttled++;
    }
    size_t n = strlen(e->method) + strlen(e->url) + 2;
    char *k = malloc(n);
    if (k) {
      snprintf(k, n, "%s %s", e->method, e->url);
      url_stats *u = map_get(&s->urls, k);
      if (u && u->kinds[PX_KIND_EARLY] > 0) {
        u->kinds[PX_KIND_EARLY]--;
        u->kinds[PX_KIND_THROTTLED]++;
      }
      free(k);
    }
    free(e->key);
    free(e->client);
    free(e->conn);
    free(e->method);
    free(e->url);
  }
  s->nearly = o;
}

/* Notes which connection of the client's address is newest, and when an
 * older one is used again: then several clients share the address. */
static client_stats *client_get(px_state *s, const char *who);
static client_stats *note_conn(px_state *s, const char *who,
                               const conn_ent *c, int fresh) {
  client_stats *cs = client_get(s, who);
  if (cs == NULL || c == NULL)
    return cs;
  if (fresh && c->seq > cs->newest_conn)
    cs->newest_conn = c->seq;
  else if (!fresh && c->seq < cs->newest_conn && !cs->several) {
    cs->several = 1;
    early_unguess(s, who, cs);
  }
  return cs;
}

/* The told entry of this request's client: the same connection, or, when
 * this request opens a fresh connection, a told client that may have come
 * back on it (the earliest deadline first). */
static told_ent *told_find(px_state *s, track_ent *e, const char *conn,
                           const char *who, int fresh,
                           const client_stats *cs) {
  told_ent *orphan = NULL;
  for (size_t i = 0; i < e->ntold; i++) {
    told_ent *t = &e->told[i];
    if (strcmp(t->conn, conn) == 0 && strcmp(t->who, who) == 0)
      return t;
  }
  if (!fresh)
    return NULL;
  for (size_t i = 0; i < e->ntold; i++) {
    told_ent *t = &e->told[i];
    if ((orphan == NULL || t->until_ms < orphan->until_ms) &&
        adoptable(s, t, conn, who, cs))
      orphan = t;
  }
  return orphan;
}

/* A new told entry for the connection (the oldest deadline makes room when
 * the key has TOLD_MAX). NULL when out of memory. */
static told_ent *told_add(px_state *s, track_ent *e, const char *conn,
                          const char *who) {
  if (e->ntold == TOLD_MAX) {
    size_t oldest = 0;
    for (size_t i = 1; i < e->ntold; i++)
      if (e->told[i].until_ms < e->told[oldest].until_ms)
        oldest = i;
    told_remove(e, oldest);
  }
  if (e->ntold % 8 == 0) {
    told_ent *nt = realloc(e->told, (e->ntold + 8) * sizeof *nt);
    if (nt == NULL)
      return NULL;
    e->told = nt;
  }
  told_ent *t = &e->told[e->ntold];
  memset(t, 0, sizeof *t);
  t->conn = strdup(conn);
  t->who = strdup(who);
  if (t->conn == NULL || t->who == NULL) {
    told_clear(t);
    return NULL;
  }
  conn_ent *c = map_get(&s->conns, conn);
  t->client = c ? c->client : ++s->next_client;
  e->ntold++;
  return t;
}

void polite__px_conn_probe(px_state *s,
                           int (*alive)(void *ctx, const char *conn,
                                        int handle),
                           void *ctx) {
  s->probe = alive;
  s->probe_ctx = ctx;
}

void polite__px_judge(px_state *s, const char *key, const char *conn,
                      int handle, const char *who, int64_t now_ms, int penalty,
                      px_judgement *out) {
  memset(out, 0, sizeof *out);
  int fresh = 0;
  conn_ent *c = conn_see(s, conn, handle, who, now_ms, &fresh);
  const client_stats *cs = note_conn(s, who, c, fresh);
  out->client = c ? c->client : ++s->next_client;
  track_ent *e = map_get(&s->track, key);
  if (e == NULL)
    return;
  told_prune(e, now_ms);
  told_ent *t = told_find(s, e, conn, who, fresh, cs);
  if (t) {
    /* Same client: adopt its identity (retry chain) on this connection. */
    if (strcmp(t->conn, conn) != 0) {
      out->guessed = 1;
      char *nc = strdup(conn);
      if (nc) {
        free(t->conn);
        t->conn = nc;
      }
      if (c)
        c->client = t->client;
    }
    out->client = t->client;
    if (now_ms < t->until_ms) {
      out->verdict = PX_JUDGE_EARLY;
      out->remaining_ms = t->until_ms - now_ms;
      if (penalty)
        out->remaining_ms = t->wait_ms; /* restarted when the answer leaves */
      return;
    }
    /* Came back on time: its wait is settled. */
    told_remove(e, (size_t)(t - e->told));
  }
  if (e->until_ms > now_ms) {
    out->verdict = PX_JUDGE_THROTTLED;
    out->remaining_ms = e->until_ms - now_ms;
    return;
  }
  if (e->ntold == 0)
    map_del(&s->track, key, track_ent_free); /* nothing pending: keep the table small */
}

void polite__px_tell(px_state *s, const char *key, const char *conn,
                     const char *who, int64_t sent_ms, int64_t wait_ms,
                     int flags) {
  if (wait_ms <= 0)
    return;
  int64_t until = sent_ms + wait_ms;
  track_ent *e = map_get(&s->track, key);
  if (e == NULL) {
    e = calloc(1, sizeof *e);
    if (e == NULL || map_put(&s->track, key, e) == NULL) {
      free(e);
      return;
    }
  }
  told_ent *t = NULL;
  for (size_t i = 0; i < e->ntold && t == NULL; i++)
    if (strcmp(e->told[i].conn, conn) == 0 && strcmp(e->told[i].who, who) == 0)
      t = &e->told[i];
  /* The answer to an early request never moves the deadline the client was
   * given, nor the key's throttle; --penalty restarts the client's wait. */
  if (t && t->until_ms > sent_ms && !(flags & PX_TELL_RESTART))
    return;
  if ((flags & PX_TELL_THROTTLE) && until > e->until_ms)
    e->until_ms = until;
  if (t == NULL)
    t = told_add(s, e, conn, who);
  if (t) {
    t->until_ms = until;
    t->wait_ms = wait_ms;
  }
}

void polite__px_conn_closed(px_state *s, const char *conn) {
  map_del(&s->conns, conn, free);
}

void *polite__px_keyed(px_state *s, px_table t, const char *key) {
  return (unsigned)t < PX_TAB__COUNT ? map_get(&s->keyed[t], key) : NULL;
}

void *polite__px_keyed_put(px_state *s, px_table t, const char *key, void *obj,
                           void (*destroy)(void *)) {
  if ((unsigned)t >= PX_TAB__COUNT || obj == NULL ||
      s->keyed[t].n >= PX_KEYED_MAX || map_put(&s->keyed[t], key, obj) == NULL) {
    if (obj)
      destroy(obj);
    return NULL;
  }
  s->keyed_free[t] = destroy;
  return obj;
}

void polite__px_early_record(px_state *s, int64_t wall_ms, const char *key,
                             const char *client, const char *conn,
                             const char *method, const char *url,
                             int64_t early_ms, int guessed) {
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
  e->guessed = guessed;
}

/* The retry chain of `client` on method+url: a request that follows a
 * 429/503 answer to the same client for the same method + URL is one more
 * attempt of the same logical request. Returns the chain's length with this
 * request (1 when it starts a new one, or when the table is full). */
static unsigned chain_step(px_state *s, uint64_t client, const char *mu,
                           int status) {
  size_t n = strlen(mu) + 24;
  char *k = malloc(n);
  if (k == NULL)
    return 1;
  snprintf(k, n, "%llu %s", (unsigned long long)client, mu);
  chain_ent *c = map_get(&s->chains, k);
  if (c == NULL && s->chains.n < CHAINS_MAX) {
    c = calloc(1, sizeof *c);
    if (c && map_put(&s->chains, k, c) == NULL) {
      free(c);
      c = NULL;
    }
  }
  free(k);
  if (c == NULL)
    return 1;
  c->chain = c->last_retryable ? c->chain + 1 : 1;
  c->last_retryable = status == 429 || status == 503;
  return c->chain;
}

static client_stats *client_get(px_state *s, const char *who) {
  client_stats *c = map_get(&s->clients, who);
  if (c || s->clients.n >= CLIENTS_MAX)
    return c;
  c = calloc(1, sizeof *c);
  if (c == NULL || (c->who = strdup(who)) == NULL ||
      map_put(&s->clients, who, c) == NULL) {
    client_stats_free(c);
    return NULL;
  }
  return c;
}

void polite__px_stats_record(px_state *s, const px_record *rec) {
  s->requests++;
  px_kind kind = rec->kind;
  if ((unsigned)kind < PX_KIND__COUNT)
    s->kinds[kind]++;
  size_t n = strlen(rec->method) + strlen(rec->url) + 2;
  char *k = malloc(n);
  if (k == NULL)
    return;
  snprintf(k, n, "%s %s", rec->method, rec->url);
  unsigned chain = chain_step(s, rec->client, k, rec->status);
  if (chain > s->max_attempts)
    s->max_attempts = chain;
  client_stats *cs = client_get(s, rec->who ? rec->who : "-");
  if (cs) {
    cs->requests++;
    cs->early += kind == PX_KIND_EARLY;
    cs->throttled += kind == PX_KIND_THROTTLED;
    if (chain > cs->max_attempts)
      cs->max_attempts = chain;
  }
  url_stats *u = map_get(&s->urls, k);
  if (u == NULL) {
    u = calloc(1, sizeof *u);
    if (u == NULL || (u->method = strdup(rec->method)) == NULL ||
        (u->url = strdup(rec->url)) == NULL || map_put(&s->urls, k, u) == NULL) {
      url_stats_free(u);
      free(k);
      return;
    }
  }
  free(k);
  u->requests++;
  if ((unsigned)kind < PX_KIND__COUNT)
    u->kinds[kind]++;
  if (chain > u->max_attempts)
    u->max_attempts = chain;
  int status = rec->status;
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

px_metrics *polite__px_metrics(px_state *s) {
  return &s->metrics;
}

uint64_t polite__px_kind_count(const px_state *s, px_kind k) {
  return (unsigned)k < PX_KIND__COUNT ? s->kinds[k] : 0;
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
         k[PX_KIND_EARLY] + k[PX_KIND_THROTTLED] + k[PX_KIND_CONCURRENCY];
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
  fprintf(f, "| most attempts of one client for one URL | %u |\n\n", s->max_attempts);
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
