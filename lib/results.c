/* polite results files: reading back what `polite run --out` wrote. */
#define _GNU_SOURCE
#include <polite/results.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* 1 when a bad last line is what a write cut short leaves (a full disk, a
 * crash, or a file system that extended the file but never wrote its
 * blocks): the start of a result line, or only NUL bytes. Anything else is
 * not ours, and is not removed. */
static int torn_tail(const char *line, size_t n) {
  static const char head[] = "{\"id\":";
  if (n > 0 && line[n - 1] == '\n')
    n--;
  size_t k = n < sizeof head - 1 ? n : sizeof head - 1;
  if (memcmp(line, head, k) == 0)
    return 1;
  for (size_t i = 0; i < n; i++)
    if (line[i] != '\0')
      return 0;
  return 1;
}

long polite_results_scan(FILE *f, polite_results_line_fn fn, void *ud,
                         long long *end) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  long no = 0, badno = 0;
  long long off = 0;
  *end = 0;
  rewind(f);
  while ((n = getline(&line, &cap, f)) > 0) {
    if (line[n - 1] != '\n')
      break; /* torn tail: no newline */
    no++;
    json_t *o = json_loadb(line, (size_t)n, JSON_ALLOW_NUL, NULL);
    json_t *id = o ? json_object_get(o, "id") : NULL;
    json_t *oc = o ? json_object_get(o, "outcome") : NULL;
    if (!json_is_string(id)) {
      json_decref(o);
      int c = getc(f);
      if (c == EOF && !ferror(f) && torn_tail(line, (size_t)n))
        break; /* the last line, cut short: repaired like a torn tail */
      badno = no;
      break;
    }
    int rc =
        fn(ud, json_string_value(id),
           json_is_string(oc) ? json_string_value(oc) : "", line, (size_t)n);
    json_decref(o);
    if (rc != 0) {
      free(line);
      return -1;
    }
    off += n;
  }
  int err = ferror(f);
  free(line);
  *end = off;
  if (err)
    return -1;
  return badno;
}
