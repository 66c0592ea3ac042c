/* polite proxy: the string-keyed hash map every table of the tracking state
 * is made of, with its entries kept in order of use, so that a table past
 * its bound lets go of the entry used longest ago (LRU). */
#include "px_track_int.h"

#include "http_syntax.h"

#include <stdlib.h>
#include <string.h>

/* The key's hash, eight bytes a step (FNV-1a's byte a step was a tenth of
 * the proxy's work on a request: five lookups of "METHOD URL"-long keys).
 * Not collision-resistant: every table has a bound (LRU). */
static uint64_t hash_str(const char *s) {
  return polite__hash_words(0, s, strlen(s));
}

static map_ent *find(const map *m, const char *key, uint64_t h) {
  if (m->nb == 0)
    return NULL;
  for (map_ent *e = m->b[h & (m->nb - 1)]; e; e = e->next)
    if (e->hash == h && strcmp(e->key, key) == 0)
      return e;
  return NULL;
}

/* Unlinks e from the use order. The ends are moved by identity, not by
 * e's links, so a map's ends never point at an unlinked entry. */
static void order_cut(map *m, map_ent *e) {
  if (e->older)
    e->older->newer = e->newer;
  if (e->newer)
    e->newer->older = e->older;
  if (m->oldest == e)
    m->oldest = e->newer;
  if (m->newest == e)
    m->newest = e->older;
  e->older = e->newer = NULL;
}

/* Links e in as the newest. */
static void order_push(map *m, map_ent *e) {
  e->older = m->newest;
  e->newer = NULL;
  if (m->newest)
    m->newest->newer = e;
  else
    m->oldest = e;
  m->newest = e;
}

void polite__px_map_init(map *m, void (*free_value)(void *)) {
  memset(m, 0, sizeof *m);
  m->free_value = free_value;
}

void *polite__px_map_get(const map *m, const char *key) {
  map_ent *e = find(m, key, hash_str(key));
  return e ? e->value : NULL;
}

void *polite__px_map_use(map *m, const char *key) {
  map_ent *e = find(m, key, hash_str(key));
  if (e == NULL)
    return NULL;
  if (m->newest != e) {
    order_cut(m, e);
    order_push(m, e);
  }
  return e->value;
}

/* Doubles the bucket array; 0, or -1 out of memory (the map unchanged). */
static int grow(map *m) {
  size_t nb = m->nb ? m->nb * 2 : 64;
  /* An array of pointers, so the pointer size is the one wanted. */
  map_ent **b = calloc(nb, sizeof *b); // NOLINT(bugprone-sizeof-expression)
  if (b == NULL)
    return -1;
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
  return 0;
}

void *polite__px_map_put(map *m, const char *key, void *value) {
  if (m->n >= m->nb && grow(m) < 0)
    return NULL;
  size_t k = strlen(key);
  map_ent *e = malloc(sizeof *e + k + 1);
  if (e == NULL)
    return NULL;
  memcpy(e->key, key, k + 1);
  e->hash = hash_str(key);
  e->value = value;
  e->next = m->b[e->hash & (m->nb - 1)];
  m->b[e->hash & (m->nb - 1)] = e;
  order_push(m, e);
  m->n++;
  return value;
}

/* Removes entry e (found in its bucket) and frees it; its value is returned,
 * not freed. */
static void *unlink_ent(map *m, map_ent *e) {
  for (map_ent **pp = &m->b[e->hash & (m->nb - 1)]; *pp; pp = &(*pp)->next) {
    if (*pp == e) {
      *pp = e->next;
      break;
    }
  }
  order_cut(m, e);
  void *v = e->value;
  free(e);
  m->n--;
  return v;
}

void polite__px_map_del(map *m, const char *key) {
  map_ent *e = find(m, key, hash_str(key));
  if (e) {
    void *v = unlink_ent(m, e);
    if (m->free_value)
      m->free_value(v);
  }
}

void *polite__px_map_take_oldest(map *m) {
  return m->oldest ? unlink_ent(m, m->oldest) : NULL;
}

void *polite__px_map_entry(map *m, const char *key, size_t size, size_t max) {
  void *v = polite__px_map_use(m, key);
  if (v)
    return v;
  while (m->n >= max && m->n > 0) {
    void *old = polite__px_map_take_oldest(m);
    if (m->free_value)
      m->free_value(old);
  }
  v = calloc(1, size);
  if (v && polite__px_map_put(m, key, v) == NULL) {
    free(v);
    v = NULL;
  }
  return v;
}

void polite__px_map_free(map *m) {
  for (map_ent *e = m->oldest, *next; e; e = next) {
    next = e->newer;
    if (m->free_value)
      m->free_value(e->value);
    free(e);
  }
  free(m->b);
  void (*fv)(void *) = m->free_value;
  memset(m, 0, sizeof *m);
  m->free_value = fv;
}
