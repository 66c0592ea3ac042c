/* libFuzzer target for the proxy's HTML report's reader of its request log
 * (proxy/px_report_html.c): any bytes, split into lines, into the page's view.
 * No crash, no undefined behaviour, and counts that keep their promises:
 * every line is either drawn, skipped as not understood, left out as no
 * request (CONNECT, /__polite/) or as an older run's, and what is drawn
 * adds up per kind and per bucket. */
#include "../../proxy/px_report_html.c"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void feed(px_view *v, const uint8_t *data, size_t size, int pass,
                 int64_t from_ms, uint64_t *lines) {
  for (size_t i = 0; i < size;) {
    const uint8_t *nl = memchr(data + i, '\n', size - i);
    size_t len = nl ? (size_t)(nl - (data + i)) : size - i;
    char *line = malloc(len + 1);
    if (line == NULL)
      return;
    memcpy(line, data + i, len);
    line[len] = '\0';
    take_line(v, line, pass, from_ms);
    free(line);
    (*lines)++;
    i += len + 1;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  px_view *v = calloc(1, sizeof *v);
  if (v == NULL)
    return 0;
  /* From 2026-01-01: lines dated before are an older run's. */
  const int64_t from = INT64_C(1767225600000);
  uint64_t lines = 0, again = 0;
  v->t0 = -1;
  feed(v, data, size, 0, from, &lines);
  if (v->t0 >= 0) {
    v->width = 1000;
    while (v->width * PX_BUCKETS < v->t1 - v->t0 + 1)
      v->width *= 2;
    feed(v, data, size, 1, from, &again);
    uint64_t drawn = 0, kinds = 0;
    for (int b = 0; b < PX_BUCKETS; b++)
      for (int k = 0; k < NK; k++)
        drawn += v->n[b][k];
    for (int k = 0; k < NK; k++)
      kinds += v->kinds[k];
    if (drawn != v->lines || kinds != v->lines ||
        v->lines + v->bad + v->not_requests + v->other_runs != again)
      abort();
    for (int b = 0; b < PX_BUCKETS; b++)
      if (v->ra_max_ms[b] < 0)
        abort();
  }
  free(v);
  return 0;
}
