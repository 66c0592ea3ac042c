/* polite proxy: the tracking state shared by px_track.c (the judge and the
 * stats) and px_track_report.c (the report). Internal to those two. */
#ifndef POLITE_PX_TRACK_INT_H
#define POLITE_PX_TRACK_INT_H

#include "px.h"

#include <stdint.h>

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
  unsigned chain;     /* attempts in the current chain */
  int last_retryable; /* its previous answer was 429/503 */
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

#endif
