/* polite scheduler: the waiting set, a binary min-heap ordered by due time
 * then sequence number (internal; not installed). */
#ifndef POLITE_SCHED_HEAP_H
#define POLITE_SCHED_HEAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int64_t due;  /* when the item may start (monotonic us) */
  uint64_t seq; /* tie-break: first read, first served */
  void *item;   /* borrowed */
} polite__heap_entry;

typedef struct {
  polite__heap_entry *v;
  size_t n, cap;
} polite__heap;

/* An empty heap needs no allocation: zero it. */
void polite__heap_free(polite__heap *h);
/* Adds an item in O(log n). Returns 0 or -1 when out of memory (the heap
 * is unchanged). */
int polite__heap_push(polite__heap *h, int64_t due, uint64_t seq, void *item);
/* The earliest entry, or NULL when empty (valid until the next change). */
const polite__heap_entry *polite__heap_top(const polite__heap *h);
/* Removes the earliest entry in O(log n) and returns its item (NULL when
 * empty). */
void *polite__heap_pop(polite__heap *h);
/* Removes the entry of item (looked for in O(n): a client that gave up
 * waiting, rare next to pushes and pops) and restores the order in
 * O(log n). Returns 0, or -1 when item is not in the heap. */
int polite__heap_remove(polite__heap *h, const void *item);

#ifdef __cplusplus
}
#endif

#endif
