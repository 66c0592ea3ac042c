/* Stable request ids: "line-N" becomes "line-N-XXXXXXXX" from the request's
 * content, so records kept across runs (the journal, the work queue) never
 * match an edited line to another request. */
#define _GNU_SOURCE
#include <polite/request.h>
#include <polite/journal.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An id the input gave that equals "line-N" for its own line N is treated
 * like a default one. */
int polite_request_stable_id(polite_request *q) {
  char want[32];
  snprintf(want, sizeof want, "line-%ld", q->line);
  if (q->line <= 0 || strcmp(q->id, want) != 0)
    return 0;
  const char *parts[4] = {polite_request_method(q), q->url ? q->url : "",
                          q->body ? q->body : "", q->error ? q->error : ""};
  size_t lens[4] = {strlen(parts[0]), strlen(parts[1]),
                    q->body ? q->body_len : 0, strlen(parts[3])};
  size_t len = lens[0] + lens[1] + lens[2] + lens[3] + 3, o = 0;
  char *buf = malloc(len), hex[65];
  if (buf == NULL)
    return POLITE_ENOMEM;
  for (int i = 0; i < 4; i++) {
    memcpy(buf + o, parts[i], lens[i]);
    o += lens[i];
    if (i < 3)
      buf[o++] = '\0';
  }
  polite_sha256_hex(buf, o, hex);
  free(buf);
  char *id = NULL;
  if (asprintf(&id, "line-%ld-%.8s", q->line, hex) < 0)
    return POLITE_ENOMEM;
  free(q->id);
  q->id = id;
  return 0;
}
