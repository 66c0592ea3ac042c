/* polite proxy: the tracking state shared by px_track.c (the judge),
 * px_track_stats.c (the counts), px_track_report.c (the reports) and
 * px_track_map.c (the tables). Internal to those four. */
#ifndef POLITE_PX_TRACK_INT_H
#define POLITE_PX_TRACK_INT_H

#include "px.h"

#include <stdint.h>

/* ---- Tables: string keys, chaining, entries in order of use --------------
 *
 * Every table of the state is one of these, and each has a bound: past it,
 * the entry used longest ago goes (what it counted is kept in an aggregate
 * where the report needs it to add up). */

typedef struct map_ent {
  struct map_ent *next;          /* in its bucket */
  struct map_ent *older, *newer; /* in the order of use */
  uint64_t hash;
  void *value;
  char key[]; /* NUL-terminated */
} map_ent;

typedef struct {
  map_ent **b;
  size_t nb, n;
  map_ent *newest, *oldest;
  void (*free_value)(void *); /* NULL: values are not freed */
} map;

void polite__px_map_init(map *m, void (*free_value)(void *));
/* The value of key, or NULL; the order of use is left as it is. */
void *polite__px_map_get(const map *m, const char *key);
/* Same, and the entry counts as used now. */
void *polite__px_map_use(map *m, const char *key);
/* Inserts key (copied; it must not be present) as the newest entry.
 * Returns value, or NULL out of memory (the caller keeps the value). */
void *polite__px_map_put(map *m, const char *key, void *value);
/* Removes key and frees its value. */
void polite__px_map_del(map *m, const char *key);
/* Removes the entry used longest ago and returns its value (the caller
 * owns it), or NULL when the map is empty. */
void *polite__px_map_take_oldest(map *m);
/* The value of key, used now; when absent a new zeroed value of `size`
 * bytes (freed with the map's free_value), after the entries used longest
 * ago made room when the map holds `max`. NULL when out of memory. */
void *polite__px_map_entry(map *m, const char *key, size_t size, size_t max);
void polite__px_map_free(map *m);

/* ---- What is counted ------------------------------------------------------
 */

/* Requests and what the proxy did to them. */
typedef struct {
  uint64_t requests;
  uint64_t kinds[PX_KIND__COUNT];
} px_counts;

#define STATUS_SLOTS 8

/* One method + URL; its table key is "METHOD URL". */
typedef struct {
  px_counts n;
  unsigned max_attempts; /* longest retry chain of one client */
  int status[STATUS_SLOTS];
  uint64_t status_n[STATUS_SLOTS];
  uint64_t status_other;
} url_stats;

/* One early retry, for the report's list. */
typedef struct {
  int64_t wall_ms;
  char *key, *client, *conn, *method, *url;
  int64_t early_ms;
  int across; /* its wait was told on another connection of the client */
} early_ent;

/* One client (the report's: address + credentials hash); key: that. */
typedef struct {
  px_counts n;
  unsigned max_attempts;
} client_stats;

/* The bounds of the tables that are not options (docs/proxy.md, "Bounds
 * of the tracking state"). */
#define TRACK_MAX 100000  /* keys with a throttle or a told wait */
#define CONNS_MAX 100000  /* connections the judge remembers */
#define IDENTS_MAX 10000  /* client identities (address, credentials, UA) */
#define CHAINS_MAX 100000 /* retry chains waiting for their next attempt */
#define CLIENTS_MAX 10000 /* clients of the report's per-client table */
#define EARLY_KEEP                                                             \
  10000 /* early retries the report lists (the count is                        \
           exact) */

struct px_state {
  /* The judge (px_track.c). */
  map track;  /* key -> track_ent */
  map conns;  /* "ADDR:PORT" -> conn_ent */
  map idents; /* identity -> ident_ent */
  uint64_t next_client;
  int (*probe)(void *ctx, const char *conn, int handle);
  void *probe_ctx;
  int judge_off;
  uint64_t shared_identities; /* identities found to hold several clients */
  uint64_t waits_forgotten;   /* told waits dropped with a key past TRACK_MAX */
  /* The counts (px_track_stats.c). */
  px_metrics metrics;
  map keyed[PX_TAB__COUNT]; /* limiter states etc. per scope key */
  px_counts all;            /* every request */
  unsigned max_attempts;
  uint64_t connects;  /* CONNECTs: not requests */
  uint64_t own_calls; /* calls to /__polite/...: not requests */
  map urls;
  size_t max_urls;
  uint64_t urls_evicted;
  px_counts urls_gone; /* what the evicted URLs had counted */
  map chains;          /* "CLIENT METHOD URL" -> chain_ent */
  map clients;         /* who -> client_stats */
  uint64_t clients_evicted;
  client_stats clients_gone;
  early_ent *early;
  size_t nearly, capearly;
  uint64_t early_total;
};

/* The made-up answers among k (every kind but passed and upstream error). */
uint64_t polite__px_injected(const uint64_t *k);

#endif
