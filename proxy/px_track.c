/* polite proxy: the judge (who was told to wait, who came back too soon),
 * its clients and connections, and the state's life. The counts are in
 * px_track_stats.c, the reports in px_track_report.c. */
#include "px_track_int.h"

#include "http_syntax.h"

#include <stdlib.h>
#include <string.h>

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
 * Who is a client. An identity is an address, a hash of the credentials and
 * a hash of the User-Agent: two programs that differ in any of them are
 * never one client. Within an identity a client is a connection, and a
 * told wait follows it to the identity's next fresh connection (the wait
 * is copied: the old connection stays bound) when
 * - the told connection has closed: a reconnect (curl in a loop), or
 * - the identity opens a connection per request (none of its connections
 *   has carried two requests), the fresh connection was opened after the
 *   wait was told, its first request is the identity's next after one on
 *   the told connection, and either the identity has shown that it lets go
 *   of connections (one that carried a single request has closed) or the
 *   request comes GUESS_GAP_MS or more after the wait was told:
 *   requests.get, whose sockets close only when Python frees them, and a
 *   pool's second connection (undici opens one when the first is busy).
 *   Threads starting together look the same for their first requests, but
 *   within milliseconds of each other and without a closed connection, so
 *   a new connection right after a 429 is judged another client until the
 *   identity's habit is known.
 * An identity whose requests move back and forth between its open
 * connections (SEVERAL_MOVES of its last MOVE_WINDOW) holds several
 * clients, threads each on its own connection: that is counted as an event
 * of its own, and from then on nothing follows. Keep-alive connections of
 * one identity are never one client: a thread each and a pool look alike
 * (threads run in bursts under Python's GIL), and blaming a thread for
 * another's wait is the error the judge must not make (issue 13).
 * Nothing already found is taken back (issue 20): a finding is a fact of
 * the moment it was made, and later evidence is counted as what it is. */

/* A told client's entry is kept this long past its deadline, so that a
 * compliant return on a new connection still continues its retry chain. */
#define TOLD_GRACE_MS 60000
/* At most this many told clients per key (the oldest deadline goes). */
#define TOLD_MAX 256

#define GUESS_GAP_MS 100
#define MOVE_WINDOW 16
#define SEVERAL_MOVES 4

typedef struct {
  char *conn;       /* the connection it was told on, or followed to */
  char *ident;      /* its identity */
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
  uint64_t client;   /* the logical client on this connection */
  uint64_t nreq;     /* requests judged on it */
  int64_t opened_ms; /* when it was accepted (-1: not known) */
  int handle;        /* the engine's handle for the probe (-1: none) */
  char *ident;       /* the identity that uses it ("": none yet) */
} conn_ent;

static void conn_ent_free(void *p) {
  conn_ent *c = p;
  if (c) {
    free(c->ident);
    free(c);
  }
}

typedef struct {
  uint64_t arrivals;  /* its requests */
  uint32_t moves;     /* bit i: its i-th latest request moved between open
                         connections it had used before */
  int several;        /* it showed several clients */
  int keeps_alive;    /* one of its connections carried two requests */
  int lets_go;        /* one that carried a single request has closed */
  char last_conn[96]; /* the connection of its latest request */
} ident_ent;

static void told_clear(told_ent *t) {
  free(t->conn);
  free(t->ident);
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

px_state *polite__px_state_new(void) {
  px_state *s = calloc(1, sizeof *s);
  if (s == NULL)
    return NULL;
  polite__px_map_init(&s->track, track_ent_free);
  polite__px_map_init(&s->conns, conn_ent_free);
  polite__px_map_init(&s->idents, free);
  polite__px_map_init(&s->urls, free);
  polite__px_map_init(&s->chains, free);
  polite__px_map_init(&s->clients, free);
  for (int t = 0; t < PX_TAB__COUNT; t++)
    polite__px_map_init(&s->keyed[t], free);
  s->max_urls = PX_MAX_URLS_DEFAULT;
  return s;
}

void polite__px_track_setup(px_state *s, const px_track_opts *o) {
  s->judge_off = o->judge == 0;
  s->max_urls = o->max_urls > 0 ? (size_t)o->max_urls : PX_MAX_URLS_DEFAULT;
}

void polite__px_state_free(px_state *s) {
  if (s == NULL)
    return;
  polite__px_map_free(&s->track);
  polite__px_map_free(&s->conns);
  polite__px_map_free(&s->idents);
  polite__px_map_free(&s->urls);
  polite__px_map_free(&s->chains);
  polite__px_map_free(&s->clients);
  for (int t = 0; t < PX_TAB__COUNT; t++)
    polite__px_map_free(&s->keyed[t]);
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

/* Removes entry i; the last one takes its place, and the freed slot holds
 * no pointers. */
static void told_remove(track_ent *e, size_t i) {
  told_clear(&e->told[i]);
  size_t last = --e->ntold;
  if (i != last)
    e->told[i] = e->told[last];
  e->told[last].conn = NULL;
  e->told[last].ident = NULL;
}

/* Drops told clients whose deadline is long past (they never came back). */
static void told_prune(track_ent *e, int64_t now_ms) {
  for (size_t i = 0; i < e->ntold;)
    if (e->told[i].until_ms + TOLD_GRACE_MS < now_ms)
      told_remove(e, i);
    else
      i++;
}

/* Copies src into dst (size bytes, > 0) as snprintf("%s") would, cut to
 * fit and NUL-terminated; returns the length copied. */
static size_t copy_cut(char *dst, size_t size, const char *src) {
  size_t n = strnlen(src, size - 1);
  memcpy(dst, src, n);
  dst[n] = '\0';
  return n;
}

/* The identity key: who, then a hash of the User-Agent (any length, never
 * stored). */
static void ident_key(char *out, size_t size, const char *who, const char *ua) {
  uint64_t h = ua ? polite__fnv1a(ua, strlen(ua)) : 0;
  /* "WHO\nHASH" as snprintf would cut it, without printf: per request. */
  char tail[18];
  tail[0] = '\n';
  for (int i = 16; i >= 1; i--) {
    tail[i] = "0123456789abcdef"[h & 15];
    h >>= 4;
  }
  tail[17] = '\0';
  size_t n = copy_cut(out, size, who);
  copy_cut(out + n, size - n, tail);
}

/* Forgets a closed connection; one that carried a single request shows
 * that its identity lets go of connections. */
static void conn_forget(px_state *s, const char *conn) {
  const conn_ent *c = polite__px_map_get(&s->conns, conn);
  if (c && c->nreq == 1 && c->ident[0]) {
    ident_ent *id = polite__px_map_get(&s->idents, c->ident);
    if (id)
      id->lets_go = 1;
  }
  polite__px_map_del(&s->conns, conn);
}

/* 1 when the connection is known to be gone: closed as reported, forgotten,
 * or found closed by the engine's probe (a server may notice a client's
 * close only when it next reads). */
static int conn_closed(px_state *s, const char *conn) {
  conn_ent *c = polite__px_map_get(&s->conns, conn);
  if (c == NULL)
    return 1;
  if (s->probe && !s->probe(s->probe_ctx, conn, c->handle)) {
    conn_forget(s, conn);
    return 1;
  }
  return 0;
}

/* A new entry for conn (opened at opened_ms, -1: not known), the one used
 * longest ago making room past CONNS_MAX; NULL when out of memory. */
static conn_ent *conn_new(px_state *s, const char *conn, int64_t opened_ms) {
  polite__px_map_del(&s->conns, conn);
  conn_ent *c = polite__px_map_entry(&s->conns, conn, sizeof *c, CONNS_MAX);
  if (c == NULL)
    return NULL;
  if ((c->ident = strdup("")) == NULL) {
    polite__px_map_del(&s->conns, conn);
    return NULL;
  }
  c->client = ++s->next_client;
  c->opened_ms = opened_ms;
  c->handle = -1;
  return c;
}

void polite__px_conn_opened(px_state *s, const char *conn, int64_t now_ms) {
  conn_new(s, conn, now_ms);
}

/* The connection's entry for identity `ident` (made on first sight); NULL
 * when out of memory. A connection reused by another identity (a port
 * reused after a close the server missed) starts afresh. */
static conn_ent *conn_see(px_state *s, const char *conn, int handle,
                          const char *ident) {
  conn_ent *c = polite__px_map_use(&s->conns, conn);
  if (c && c->ident[0] && strcmp(c->ident, ident) != 0)
    c = NULL;
  if (c == NULL && (c = conn_new(s, conn, -1)) == NULL)
    return NULL;
  if (c->ident[0] == '\0') {
    char *id = strdup(ident);
    if (id == NULL)
      return NULL;
    free(c->ident);
    c->ident = id;
  }
  c->handle = handle;
  return c;
}

static int popcount_window(uint32_t v) {
  int n = 0;
  for (v &= (1u << MOVE_WINDOW) - 1; v; v &= v - 1)
    n++;
  return n;
}

/* Notes a request of identity id on conn (fresh: its first): whether it
 * moved from another open connection the identity used, and whether that
 * makes the identity several clients. */
static void ident_arrive(px_state *s, ident_ent *id, const char *conn,
                         int fresh) {
  int moved = 0;
  if (id->arrivals > 0 && !fresh && !id->several &&
      strcmp(id->last_conn, conn) != 0)
    moved = !conn_closed(s, id->last_conn); /* a reconnect is no move */
  id->arrivals++;
  id->moves = (id->moves << 1) | (uint32_t)moved;
  copy_cut(id->last_conn, sizeof id->last_conn, conn);
  if (!id->several && popcount_window(id->moves) >= SEVERAL_MOVES) {
    id->several = 1;
    s->shared_identities++;
  }
}

/* The told entry of the client asking on conn: its own; else, for a fresh
 * connection (`fresh`) opened at opened_ms (-1: not known) of an identity
 * not known to hold several clients, the entry of a closed connection of
 * the identity, or of `prev` (the connection of a connection-per-request
 * identity's previous request; NULL: none), told before the connection was
 * opened (one already open is another client's: threads starting
 * together), the earliest deadline first. */
static told_ent *told_find(px_state *s, track_ent *e, const char *conn,
                           const char *ident, int fresh, const char *prev,
                           int64_t opened_ms, int64_t guess_before) {
  for (size_t i = 0; i < e->ntold; i++) {
    told_ent *t = &e->told[i];
    if (strcmp(t->conn, conn) == 0 && strcmp(t->ident, ident) == 0)
      return t;
  }
  told_ent *best = NULL;
  for (size_t i = 0; i < e->ntold && fresh; i++) {
    told_ent *t = &e->told[i];
    if (strcmp(t->ident, ident) == 0 &&
        (best == NULL || t->until_ms < best->until_ms) &&
        (opened_ms < 0 || t->until_ms - t->wait_ms <= opened_ms) &&
        ((prev && strcmp(t->conn, prev) == 0 &&
          t->until_ms - t->wait_ms <= guess_before) ||
         conn_closed(s, t->conn)))
      best = t;
  }
  return best;
}

/* A new told entry (the oldest deadline makes room when the key has
 * TOLD_MAX). NULL when out of memory. */
static told_ent *told_add(track_ent *e, const char *conn, const char *ident,
                          uint64_t client) {
  if (e->ntold == TOLD_MAX) {
    size_t oldest = 0;
    for (size_t i = 1; i < e->ntold; i++)
      if (e->told[i].until_ms < e->told[oldest].until_ms)
        oldest = i;
    told_remove(e, oldest);
  }
  /* Capacity doubles from one: most keys have one told client. */
  if ((e->ntold & (e->ntold - 1)) == 0) {
    told_ent *nt = realloc(e->told, (e->ntold ? e->ntold * 2 : 1) * sizeof *nt);
    if (nt == NULL)
      return NULL;
    e->told = nt;
  }
  told_ent *t = &e->told[e->ntold];
  memset(t, 0, sizeof *t);
  t->conn = strdup(conn);
  t->ident = strdup(ident);
  if (t->conn == NULL || t->ident == NULL) {
    told_clear(t);
    return NULL;
  }
  t->client = client;
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

/* The verdict on key e for the client (told entry t, may be NULL). */
static void verdict(px_state *s, const char *key, track_ent *e, told_ent *t,
                    int64_t now_ms, int penalty, px_judgement *out) {
  if (t) {
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
  if (e->ntold == 0) /* nothing pending: keep the table small */
    polite__px_map_del(&s->track, key);
}

void polite__px_judge(px_state *s, const char *key, const char *conn,
                      int handle, const char *who, const char *ua,
                      int64_t now_ms, int penalty, px_judgement *out) {
  memset(out, 0, sizeof *out);
  char ident[256], prev[96] = "";
  ident_key(ident, sizeof ident, who, ua);
  ident_ent *id =
      polite__px_map_entry(&s->idents, ident, sizeof *id, IDENTS_MAX);
  conn_ent *c = conn_see(s, conn, handle, ident);
  int fresh = c == NULL || c->nreq++ == 0;
  if (id) {
    copy_cut(prev, sizeof prev, id->last_conn);
    ident_arrive(s, id, conn, fresh);
    id->keeps_alive |= c && c->nreq >= 2;
  }
  out->client = c ? c->client : ++s->next_client;
  if (s->judge_off || key == NULL)
    return;
  track_ent *e = polite__px_map_use(&s->track, key);
  if (e == NULL)
    return;
  told_prune(e, now_ms);
  /* Following is for fresh connections of an identity with one client. */
  int follow = fresh && id && !id->several;
  /* A guess needs the identity's habit, or a pause since the wait. */
  int64_t guess_before = id && id->lets_go ? now_ms : now_ms - GUESS_GAP_MS;
  told_ent *t = told_find(s, e, conn, ident, follow,
                          follow && !id->keeps_alive && prev[0] ? prev : NULL,
                          c ? c->opened_ms : -1, guess_before);
  if (t && strcmp(t->conn, conn) != 0) {
    /* The same client on a new connection: its wait binds this one too,
     * and its retry chain goes on. */
    out->across = 1;
    if (c)
      c->client = t->client;
    out->client = t->client;
    int64_t until = t->until_ms, wait = t->wait_ms;
    t = told_add(e, conn, ident, out->client); /* NULL: out of memory */
    if (t) {
      t->until_ms = until;
      t->wait_ms = wait;
    }
  }
  verdict(s, key, e, t, now_ms, penalty, out);
}

/* The key's entry, made when absent; past TRACK_MAX keys the one used
 * longest ago goes, and its pending waits are counted as forgotten. */
static track_ent *track_entry(px_state *s, const char *key, int64_t now_ms) {
  track_ent *e = polite__px_map_use(&s->track, key);
  if (e)
    return e;
  while (s->track.n >= TRACK_MAX) {
    track_ent *old = polite__px_map_take_oldest(&s->track);
    for (size_t i = 0; old && i < old->ntold; i++)
      s->waits_forgotten += old->told[i].until_ms > now_ms;
    track_ent_free(old);
  }
  e = calloc(1, sizeof *e);
  if (e && polite__px_map_put(&s->track, key, e) == NULL) {
    free(e);
    e = NULL;
  }
  return e;
}

void polite__px_tell(px_state *s, const char *key, const char *conn,
                     const char *who, int64_t sent_ms, int64_t wait_ms,
                     int flags) {
  if (wait_ms <= 0 || s->judge_off)
    return;
  int64_t until = sent_ms + wait_ms;
  /* The identity is the one the judge saw on this connection. */
  const conn_ent *c = polite__px_map_get(&s->conns, conn);
  char fallback[256];
  if (c == NULL)
    ident_key(fallback, sizeof fallback, who, NULL);
  const char *ident = c && c->ident[0] ? c->ident : fallback;
  track_ent *e = track_entry(s, key, sent_ms);
  if (e == NULL)
    return;
  /* Its own entry (the judge bound a followed one to this connection). */
  told_ent *t = told_find(s, e, conn, ident, 0, NULL, -1, 0);
  /* The answer to an early request never moves the deadline the client was
   * given, nor the key's throttle; --penalty restarts the client's wait. */
  if (t && t->until_ms > sent_ms && !(flags & PX_TELL_RESTART))
    return;
  if ((flags & PX_TELL_THROTTLE) && until > e->until_ms)
    e->until_ms = until;
  if (t == NULL)
    t = told_add(e, conn, ident, c ? c->client : ++s->next_client);
  if (t) {
    t->until_ms = until;
    t->wait_ms = wait_ms;
  }
}

void polite__px_conn_closed(px_state *s, const char *conn) {
  conn_forget(s, conn);
}
