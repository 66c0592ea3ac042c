/* libFuzzer target: reading a results file back (polite_results_scan, what
 * --resume does), on arbitrary bytes: the scan ends at a line boundary,
 * never past the data, and every line it hands over ends in a newline. */
#define _GNU_SOURCE
#include <polite/results.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const uint8_t *data;
  size_t size, at;
} walk;

static int check_line(void *ud, const char *id, const char *outcome,
                      const char *line, size_t len) {
  walk *w = ud;
  if (id == NULL || outcome == NULL || len == 0 || line[len - 1] != '\n')
    abort();
  /* Lines come in order and are the file's own bytes. */
  if (w->at + len > w->size || memcmp(w->data + w->at, line, len) != 0)
    abort();
  w->at += len;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  FILE *f = fmemopen((void *)data, size, "r");
  if (f == NULL)
    return 0;
  walk w = {data, size, 0};
  long long end = -1;
  long rc = polite_results_scan(f, check_line, &w, &end);
  fclose(f);
  if (rc < -1 || end < 0 || (size_t)end > size || (size_t)end != w.at)
    abort();
  if (end > 0 && data[end - 1] != '\n')
    abort(); /* the caller truncates here: only at a line boundary */
  return 0;
}
