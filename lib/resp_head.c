/* polite: one answer's head collected for the scheduler (see resp_head.h).
 * Every field is read once, as it arrives: the rate-limit headers into one
 * polite_headers, a 429/503's evidence into its diagnosis, and the few raw
 * values the attempt log keeps (Retry-After, the request id, Location). */
#include "resp_head.h"

#include "http_syntax.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void polite__head_begin(polite__head *h, int status, int64_t wall_ms) {
  h->status = status;
  polite_headers_init(&h->ph, wall_ms);
  h->has_retry_after = 0;
  h->retry_after[0] = '\0';
  h->reqid[0] = h->reqid_name[0] = '\0';
  free(h->location);
  h->location = NULL;
  h->diag_on = 0;
  if (status != 429 && status != 503)
    return;
  if (h->diag == NULL && (h->diag = malloc(sizeof *h->diag)) == NULL)
    return; /* not diagnosed: counted as unknown */
  polite_diagnosis_init(h->diag, status, wall_ms);
  h->diag_on = 1;
}

void polite__head_field(polite__head *h, const char *name, size_t nlen,
                        const char *value, size_t vlen) {
  if (!polite__is_token(name, nlen))
    return;
  polite__trim_ows(&value, &vlen);
  if (h->diag_on)
    polite_diagnosis_feed_header(h->diag, name, nlen, value, vlen);
  if (polite_headers_feed(&h->ph, name, nlen, value, vlen) == 1) {
    snprintf(h->reqid_name, sizeof h->reqid_name, "%.*s", (int)nlen, name);
    snprintf(h->reqid, sizeof h->reqid, "%.*s", (int)vlen, value);
  }
  if (polite__ci_eq(name, nlen, "retry-after")) {
    snprintf(h->retry_after, sizeof h->retry_after, "%.*s", (int)vlen, value);
    h->has_retry_after = 1;
  } else if (polite__ci_eq(name, nlen, "location")) {
    free(h->location);
    h->location = strndup(value, vlen < POLITE__HEAD_MAX_LOCATION
                                     ? vlen
                                     : POLITE__HEAD_MAX_LOCATION);
  }
}

void polite__head_line(polite__head *h, const char *line, size_t len) {
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
    len--;
  const char *colon = memchr(line, ':', len);
  if (colon == NULL)
    return;
  size_t nlen = (size_t)(colon - line);
  polite__head_field(h, line, nlen, colon + 1, len - nlen - 1);
}

void polite__head_response(polite__head *h, polite__response *r) {
  r->status = h->status;
  r->headers = &h->ph;
  r->retry_after = h->has_retry_after ? h->retry_after : NULL;
  r->request_id = h->reqid[0] ? h->reqid : NULL;
  r->request_id_header = h->reqid_name[0] ? h->reqid_name : NULL;
  r->location = h->location;
  r->diag = h->diag_on ? h->diag : NULL;
}

void polite__head_free(polite__head *h) {
  free(h->location);
  h->location = NULL;
  free(h->diag);
  h->diag = NULL;
}
