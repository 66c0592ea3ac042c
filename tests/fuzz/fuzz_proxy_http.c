/* libFuzzer target for the proxy's HTTP/1.1 response parser: no crash, and
 * feeding the same bytes whole or in pieces gives the same head, body and
 * outcome (the parser keeps no hidden copy of partial input). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "px_http.h"

typedef struct {
  int status, heads;
  uint64_t hsum; /* order-sensitive checksum of the headers */
  uint64_t bsum; /* of the body */
  size_t body_len;
} sink;

static uint64_t mix(uint64_t h, const char *d, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)d[i]) * UINT64_C(0x100000001b3);
  return h * 31 + n;
}

static int on_header(void *arg, const char *n, size_t nl, const char *v,
                     size_t vl) {
  sink *s = arg;
  if (nl == 0)
    abort(); /* names are never empty */
  s->hsum = mix(mix(s->hsum, n, nl), v, vl);
  return 0;
}

static int on_head(void *arg, int status, const char *reason, size_t rlen,
                   int minor) {
  sink *s = arg;
  if (status < 100 || status > 599 || (minor != 0 && minor != 1) ||
      strlen(reason) != rlen)
    abort();
  s->status = status;
  s->heads++;
  return 0;
}

static int on_body(void *arg, const char *d, size_t n) {
  sink *s = arg;
  if (s->heads != 1)
    abort(); /* body only after the head */
  /* Byte by byte, so that the sum does not depend on how it was split. */
  for (size_t i = 0; i < n; i++)
    s->bsum = (s->bsum ^ (unsigned char)d[i]) * UINT64_C(0x100000001b3);
  s->body_len += n;
  return 0;
}

static const px_http_cb cb = {on_header, on_head, on_body};

/* Returns 1 done, 0 incomplete, -1 error. */
static int run(const uint8_t *data, size_t size, size_t step, int is_head,
               sink *s) {
  memset(s, 0, sizeof *s);
  px_http_parser p;
  polite__px_http_init(&p, is_head);
  char *pending = malloc(size + 1);
  size_t np = 0, off = 0;
  int rc = 0;
  while (off < size) {
    size_t take = size - off < step ? size - off : step;
    memcpy(pending + np, data + off, take);
    np += take;
    off += take;
    ssize_t used = polite__px_http_feed(&p, pending, np, &cb, s);
    if (used < 0) {
      if (p.error == NULL)
        abort();
      rc = -1;
      break;
    }
    if ((size_t)used > np)
      abort();
    memmove(pending, pending + used, np - (size_t)used);
    np -= (size_t)used;
    if (p.state == PX_HTTP_DONE)
      break;
  }
  if (rc == 0)
    rc = polite__px_http_eof(&p) ? 1 : 0;
  if (rc == 1 && p.content_length >= 0 && s->heads == 1 && !is_head &&
      s->status >= 200 && s->status != 204 && s->status != 304 &&
      s->body_len != (size_t)p.content_length)
    abort(); /* a complete fixed-length body has exactly its length */
  free(pending);
  return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int is_head = data[0] & 1;
  size_t step = (data[0] >> 1) % 17 + 1;
  sink a, b;
  int ra = run(data + 1, size - 1, size, is_head, &a);
  int rb = run(data + 1, size - 1, step, is_head, &b);
  /* Pieces may stop earlier (an error is found once the bad line is
   * whole), but what both saw must agree. */
  if (ra != rb || a.status != b.status || a.heads != b.heads ||
      a.hsum != b.hsum || a.body_len != b.body_len || a.bsum != b.bsum)
    abort();
  return 0;
}
