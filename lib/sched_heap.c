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

void *polite__heap_pop(polite__heap *h) {
  if (h->n == 0)
    return NULL;
  void *item = h->v[0].item;
  polite__heap_entry last = h->v[--h->n];
  size_t i = 0, n = h->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n)
      break;
    if (c + 1 < n && before(&h->v[c + 1], &h->v[c]))
      c++;
    if (!before(&h->v[c], &last))
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (n)
    h->v[i] = last;
  return item;
}
