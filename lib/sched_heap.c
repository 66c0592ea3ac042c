/* polite scheduler: the waiting set as a binary min-heap, so 100k waiting
 * retries cost O(log n) each to add and to take (a sorted list cost O(n)). */
#include "sched_heap.h"

#include <stdlib.h>

static int before(const polite__heap_entry *a, const polite__heap_entry *b) {
  return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

void polite__heap_free(polite__heap *h) {
  free(h->v);
  h->v = NULL;
  h->n = h->cap = 0;
}

int polite__heap_push(polite__heap *h, int64_t due, uint64_t seq, void *item) {
  if (h->n == h->cap) {
    size_t nc = h->cap ? 2 * h->cap : 64;
    polite__heap_entry *nv = realloc(h->v, nc * sizeof *nv);
    if (nv == NULL)
      return -1;
    h->v = nv;
    h->cap = nc;
  }
  polite__heap_entry e = {due, seq, item};
  size_t i = h->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(&e, &h->v[parent]))
      break;
    h->v[i] = h->v[parent];
    i = parent;
  }
  h->v[i] = e;
  return 0;
}

const polite__heap_entry *polite__heap_top(const polite__heap *h) {
  return h->n ? &h->v[0] : NULL;
}

/* Puts e at position i (a hole) of the heap's first n entries, moving it
 * down until its children are not before it. */
static void sift_down(polite__heap *h, size_t i, polite__heap_entry e) {
  size_t n = h->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && before(&h->v[c + 1], &h->v[c]))
      c++;
    if (!before(&h->v[c], &e))
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  h->v[i] = e;
}

void *polite__heap_pop(polite__heap *h) {
  if (h->n == 0)
    return NULL;
  void *item = h->v[0].item;
  polite__heap_entry last = h->v[--h->n];
  if (h->n)
    sift_down(h, 0, last);
  return item;
}

int polite__heap_remove(polite__heap *h, const void *item) {
  size_t i = 0;
  while (i < h->n && h->v[i].item != item)
    i++;
  if (i == h->n)
    return -1;
  polite__heap_entry last = h->v[--h->n];
  if (i == h->n)
    return 0; /* it was the last entry */
  /* The last entry fills the hole: up when it is before the hole's
   * parent, else down. */
  while (i > 0 && before(&last, &h->v[(i - 1) / 2])) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  sift_down(h, i, last);
  return 0;
}
