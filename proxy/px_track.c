/* polite proxy: the judge (who was told to wait, who came back too soon),
 * early-retry records, per-URL and per-client stats, keyed limit states.
 * The report is in px_track_report.c. */
#include "px_track_int.h"

#include "http_syntax.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s) {
  return polite__fnv1a(s, strlen(s));
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
  char *conn;       /* told client's connection; "" once orphaned */
  char *who;        /* address + auth hash */
  uint64_t client;  /* logical client id */
  int64_t until_ms; /* the deadline it was told */
  int64_t wait_ms;  /* the wait it was told (for --penalty) */
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

/* Removes entry i; the last one takes its place, and the freed slot holds
 * no pointers. */
static void told_remove(track_ent *e, size_t i) {
  told_clear(&e->told[i]);
  size_t last = --e->ntold;
  if (i != last)
    e->told[i] = e->told[last];
  e->told[last].conn = NULL;
  e->told[last].who = NULL;
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
static client_stats *note_conn(px_state *s, const char *who, const conn_ent *c,
                               int fresh) {
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
                           const char *who, int fresh, const client_stats *cs) {
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
    map_del(&s->track, key,
            track_ent_free); /* nothing pending: keep the table small */
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
      s->keyed[t].n >= PX_KEYED_MAX ||
      map_put(&s->keyed[t], key, obj) == NULL) {
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
        (u->url = strdup(rec->url)) == NULL ||
        map_put(&s->urls, k, u) == NULL) {
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
