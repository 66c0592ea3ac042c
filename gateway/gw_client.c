/* polite gateway: the client's own retries. The total number of attempts
 * over every layer is what the gateway reports (issue 22 #6), so it counts
 * the retries the client makes on its own: those its SDK says it makes
 * (retry-count headers, one table row each), and a request for the same
 * method and URL that comes back after the gateway answered it a 429 or
 * 503 (early when it comes before the Retry-After it was told). */
#include "gateway.h"

#include "http_syntax.h"

#include <stdlib.h>
#include <string.h>

/* ---- retry-count headers ------------------------------------------------- */

typedef enum {
  RETRIES,    /* the value is the number of retries already made: 0 first */
  ATTEMPT,    /* the value is the attempt number: 1 first */
  AMZ_ATTEMPT /* "attempt=N; max=M" (AWS SDKs): N is the attempt number */
} count_kind;

/* The name's length is kept: every field of every request is looked up
 * here, and most differ from every name in length alone. */
#define COUNT_ROW(name, kind)                                                  \
  { (name), sizeof(name) - 1, (kind) }
static const struct {
  const char *name;
  size_t len;
  count_kind kind;
} count_headers[] = {
    /* OpenAI, Anthropic (Stainless) */
    COUNT_ROW("X-Stainless-Retry-Count", RETRIES),
    COUNT_ROW("X-Retry-Count", RETRIES),
    COUNT_ROW("Grpc-Previous-Rpc-Attempts", RETRIES), /* gRPC's design */
    COUNT_ROW("X-Envoy-Attempt-Count", ATTEMPT),
    COUNT_ROW("Amz-Sdk-Request", AMZ_ATTEMPT), /* AWS SDKs */
};

/* A plain decimal number of at most 6 digits in v[0..n), or -1. */
static long number(const char *v, size_t n) {
  polite__trim_ows(&v, &n);
  if (n == 0 || n > 6)
    return -1;
  long x = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] < '0' || v[i] > '9')
      return -1;
    x = x * 10 + (v[i] - '0');
  }
  return x;
}

/* The attempt number in "attempt=N; max=M" (the parameters in any order,
 * names in any case), or -1. */
static long amz_attempt(const char *v, size_t n) {
  while (n > 0) {
    const char *semi = memchr(v, ';', n);
    size_t len = semi ? (size_t)(semi - v) : n;
    const char *p = v;
    size_t pl = len;
    polite__trim_ows(&p, &pl);
    if (pl > 8 && polite__ci_prefix(p, pl, "attempt="))
      return number(p + 8, pl - 8);
    if (semi == NULL)
      break;
    v = semi + 1;
    n -= len + 1;
  }
  return -1;
}

/* The retries one header says were made before, or -1. */
static long retries_of(count_kind k, const char *v, size_t n) {
  long x = k == AMZ_ATTEMPT ? amz_attempt(v, n) : number(v, n);
  if (x < 0)
    return -1;
  if (k != RETRIES) {
    if (x == 0)
      return -1; /* attempts count from 1 */
    x--;
  }
  return x > GW_CLIENT_RETRIES_MAX ? GW_CLIENT_RETRIES_MAX : x;
}

int polite__gw_client_retries(const polite_header_field *fields, size_t n) {
  long best = -1;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < sizeof count_headers / sizeof count_headers[0];
         k++) {
      if (!polite__ci_eqn(fields[i].name, fields[i].name_len,
                          count_headers[k].name, count_headers[k].len))
        continue;
      long x = retries_of(count_headers[k].kind, fields[i].value,
                          fields[i].value_len);
      if (x > best)
        best = x;
    }
  return (int)best;
}

/* ---- the answers the gateway gave ---------------------------------------- */

typedef struct {
  uint64_t h;        /* FNV-1a of "METHOD URL" */
  int64_t until_us;  /* the end of the Retry-After given */
  int64_t expire_us; /* forgotten after it */
  uint32_t next;     /* next in its bucket, index + 1; 0: none */
  int live;
} entry;

struct gw_seen {
  entry *e;
  size_t cap;
  size_t head, used; /* the ring of slots: oldest at head */
  size_t live;
  uint32_t *bucket; /* index + 1 of a chain's first entry; 0: empty */
  size_t nb;        /* a power of two >= cap */
  int64_t keep_us;
};

gw_seen *polite__gw_seen_new(size_t cap, int64_t keep_us) {
  if (cap == 0 || cap > (1u << 24))
    return NULL;
  gw_seen *t = calloc(1, sizeof *t);
  if (t == NULL)
    return NULL;
  t->cap = cap;
  t->nb = 1;
  while (t->nb < cap)
    t->nb *= 2;
  t->e = calloc(cap, sizeof *t->e);
  t->bucket = calloc(t->nb, sizeof *t->bucket);
  t->keep_us = keep_us > 0 ? keep_us : 0;
  if (t->e == NULL || t->bucket == NULL) {
    polite__gw_seen_free(t);
    return NULL;
  }
  return t;
}

void polite__gw_seen_free(gw_seen *t) {
  if (t == NULL)
    return;
  free(t->e);
  free(t->bucket);
  free(t);
}

size_t polite__gw_seen_count(const gw_seen *t) {
  return t->live;
}

static uint64_t hash_of(const char *method, const char *url) {
  uint64_t h = polite__fnv1a(method, strlen(method));
  h = polite__fnv1a_more(h, " ", 1);
  return polite__fnv1a_more(h, url, strlen(url));
}

/* Takes entry i out of its bucket's chain. */
static void unlink_entry(gw_seen *t, size_t i) {
  uint32_t *p = &t->bucket[t->e[i].h & (t->nb - 1)];
  while (*p && *p != i + 1)
    p = &t->e[*p - 1].next;
  if (*p)
    *p = t->e[i].next;
  if (t->e[i].live)
    t->live--;
  t->e[i].live = 0;
}

/* The live entry of h, or -1. */
static long find(const gw_seen *t, uint64_t h) {
  for (uint32_t k = t->bucket[h & (t->nb - 1)]; k; k = t->e[k - 1].next)
    if (t->e[k - 1].h == h && t->e[k - 1].live)
      return (long)k - 1;
  return -1;
}

void polite__gw_seen_note(gw_seen *t, const char *method, const char *url,
                          int status, int64_t retry_after_ms, int64_t now) {
  if (t == NULL || method == NULL || url == NULL ||
      (status != 429 && status != 503))
    return;
  uint64_t h = hash_of(method, url);
  int64_t until = now + (retry_after_ms > 0 ? retry_after_ms * 1000 : 0);
  long i = find(t, h);
  if (i < 0) {
    if (t->used == t->cap) { /* full: the oldest slot goes */
      unlink_entry(t, t->head);
      i = (long)t->head;
      t->head = (t->head + 1) % t->cap;
    } else {
      i = (long)((t->head + t->used++) % t->cap);
    }
    entry *e = &t->e[i];
    e->h = h;
    e->live = 1;
    uint32_t *b = &t->bucket[h & (t->nb - 1)];
    e->next = *b;
    *b = (uint32_t)i + 1;
    t->live++;
  }
  t->e[i].until_us = until;
  t->e[i].expire_us = until + t->keep_us;
}

int polite__gw_seen_retry(gw_seen *t, const char *method, const char *url,
                          int64_t now, int64_t *early_us) {
  *early_us = 0;
  if (t == NULL || method == NULL || url == NULL || t->live == 0)
    return 0; /* nothing noted (the common case): no hash to compute */
  long i = find(t, hash_of(method, url));
  if (i < 0)
    return 0;
  entry *e = &t->e[i];
  int hit = now <= e->expire_us;
  if (hit && now < e->until_us)
    *early_us = e->until_us - now;
  unlink_entry(t, (size_t)i); /* used up, or forgotten */
  return hit;
}
