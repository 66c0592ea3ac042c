/* libFuzzer target: an answer's head collected for the scheduler
 * (lib/resp_head.c), fed as libcurl gives it (raw lines) and as the
 * engine's transports give it (split fields), which must agree. */
#include "resp_head.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check(const polite__head *h) {
  polite__response r;
  memset(&r, 0, sizeof r);
  polite__head_response((polite__head *)h, &r);
  if (r.retry_after && strlen(r.retry_after) >= sizeof h->retry_after)
    abort();
  if (r.request_id && strlen(r.request_id) >= sizeof h->reqid)
    abort();
  if (r.location && strlen(r.location) > POLITE__HEAD_MAX_LOCATION)
    abort();
  if ((r.diag != NULL) != (h->status == 429 || h->status == 503))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  int status = size ? (data[0] % 2 ? 429 : 200) : 503;
  polite__head a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  polite__head_begin(&a, status, 1700000000000);
  polite__head_begin(&b, status, 1700000000000);
  size_t start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i < size && s[i] != '\n')
      continue;
    const char *line = s + start;
    size_t len = i - start;
    polite__head_line(&a, line, len);
    size_t l = len;
    while (l > 0 && (line[l - 1] == '\r' || line[l - 1] == '\n'))
      l--;
    const char *colon = memchr(line, ':', l);
    if (colon)
      polite__head_field(&b, line, (size_t)(colon - line), colon + 1,
                         l - (size_t)(colon - line) - 1);
    start = i + 1;
  }
  check(&a);
  check(&b);
  /* Lines and fields read the same. */
  if (a.ph.retry_after_ms != b.ph.retry_after_ms ||
      a.ph.remaining != b.ph.remaining ||
      a.has_retry_after != b.has_retry_after ||
      strcmp(a.retry_after, b.retry_after) != 0 ||
      strcmp(a.reqid, b.reqid) != 0 ||
      (a.location == NULL) != (b.location == NULL))
    abort();
  polite__head_free(&a);
  polite__head_free(&b);
  return 0;
}
