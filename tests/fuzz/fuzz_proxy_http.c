/* libFuzzer target for the proxy's HTTP/1.1 parsers. A first byte below 0x80
 * fuzzes the response parser: no crash, and feeding the same bytes whole or
 * in pieces gives the same head, body and outcome (the parser keeps no
 * hidden copy of partial input). From 0x80 it fuzzes the request side: the
 * head's end found whole or piece by piece agrees, a head the parser accepts
 * has one framing only (never Content-Length and chunked), and the body that
 * follows decodes the same whole or in pieces; its fields kept in one block
 * (net_fields.c) are the same as kept one allocation each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_http.h"

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

static const net_http_cb cb = {on_header, on_head, on_body};

/* Returns 1 done, 0 incomplete, -1 error. */
static int run(const uint8_t *data, size_t size, size_t step, int is_head,
               sink *s) {
  memset(s, 0, sizeof *s);
  net_http_parser p;
  polite__net_http_init(&p, is_head);
  char *pending = malloc(size + 1);
  size_t np = 0, off = 0;
  int rc = 0;
  while (off < size) {
    size_t take = size - off < step ? size - off : step;
    memcpy(pending + np, data + off, take);
    np += take;
    off += take;
    ssize_t used = polite__net_http_feed(&p, pending, np, &cb, s);
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
    if (p.state == NET_HTTP_DONE)
      break;
  }
  if (rc == 0)
    rc = polite__net_http_eof(&p) ? 1 : 0;
  if (rc == 1 && p.content_length >= 0 && s->heads == 1 && !is_head &&
      s->status >= 200 && s->status != 204 && s->status != 304 &&
      s->body_len != (size_t)p.content_length)
    abort(); /* a complete fixed-length body has exactly its length */
  free(pending);
  return rc;
}

static int no_header(void *arg, const char *n, size_t nl, const char *v,
                     size_t vl) {
  (void)arg;
  (void)v;
  for (size_t i = 0; i < nl; i++)
    if (n[i] == ':' || n[i] == ' ' || (unsigned char)n[i] < 0x21)
      abort(); /* names are tokens */
  for (size_t i = 0; i < vl; i++)
    if (v[i] == '\r' || v[i] == '\n' || v[i] == '\0')
      abort(); /* values never carry a line break or NUL onward */
  return nl == 0 ? (abort(), -1) : 0;
}

/* Decodes a request body; returns 1 done, 0 incomplete, -1 error. */
static int run_body(const uint8_t *data, size_t size, size_t step, int chunked,
                    int64_t length, sink *s) {
  memset(s, 0, sizeof *s);
  s->heads = 1;
  net_http_parser p;
  polite__net_http_body_init(&p, chunked, length);
  char *pending = malloc(size + 1);
  size_t np = 0, off = 0;
  int rc = 0;
  while (off < size && p.state != NET_HTTP_DONE) {
    size_t take = size - off < step ? size - off : step;
    memcpy(pending + np, data + off, take);
    np += take;
    off += take;
    ssize_t used = polite__net_http_feed(&p, pending, np, &cb, s);
    if (used < 0) {
      rc = -1;
      break;
    }
    memmove(pending, pending + used, np - (size_t)used);
    np -= (size_t)used;
  }
  if (rc == 0 && p.state == NET_HTTP_DONE)
    rc = 1;
  if (rc == 1 && !chunked && s->body_len != (size_t)length)
    abort();
  free(pending);
  return rc;
}

/* The parsed fields go into two lists: one block per message (net_fields,
 * spilling past its block) and one allocation per field. Both must hold
 * the same fields in the same order, before and after removing one name;
 * ASan watches the block's bounds. */
static int to_block(void *arg, const char *n, size_t nl, const char *v,
                    size_t vl) {
  no_header(NULL, n, nl, v, vl);
  return polite__net_fields_add(arg, n, nl, v, vl);
}

static int to_list(void *arg, const char *n, size_t nl, const char *v,
                   size_t vl) {
  return polite__net_field_add(arg, n, nl, v, vl);
}

static void same_fields(const struct evkeyvalq *a, const struct evkeyvalq *b) {
  const struct evkeyval *x = a->tqh_first, *y = b->tqh_first;
  for (; x && y; x = x->next.tqe_next, y = y->next.tqe_next)
    if (strcmp(x->key, y->key) != 0 || strcmp(x->value, y->value) != 0)
      abort();
  if (x || y)
    abort();
}

static void fields_agree(const char *text, size_t len, const net_limits *lim) {
  static net_fields f;
  static _Alignas(void *) char block[512];
  struct evkeyvalq list = {NULL, &list.tqh_first};
  net_req_head h;
  polite__net_fields_init(&f, block, sizeof block);
  int ra = polite__net_req_parse(&h, text, len, lim, to_block, &f);
  int rb = polite__net_req_parse(&h, text, len, lim, to_list, &list);
  if (ra != rb)
    abort();
  char *t = polite__net_fields_str(&f, text, len < 40 ? len : 40);
  if (t == NULL || memcmp(t, text, strlen(t)) != 0)
    abort();
  same_fields(&f.list, &list);
  if (f.list.tqh_first) {
    char name[64];
    snprintf(name, sizeof name, "%s", f.list.tqh_first->key);
    polite__net_fields_remove(&f, name);
    polite__net_field_remove(&list, name);
    same_fields(&f.list, &list);
  }
  polite__net_fields_free_str(&f, t);
  polite__net_fields_reset(&f);
  polite__net_fields_clear(&list);
}

static void request_side(const uint8_t *data, size_t size, uint8_t mode) {
  net_limits lim = {256 + (size_t)(mode & 0x3f) * 64, 4 + (mode & 7)};
  const char *text = (const char *)data;
  size_t scan = 0;
  long whole = polite__net_req_head_end(text, size, &scan, &lim);
  size_t step = (mode >> 3) % 7 + 1;
  long piece = 0;
  scan = 0;
  for (size_t n = step < size ? step : size; n <= size; n += step) {
    piece = polite__net_req_head_end(text, n, &scan, &lim);
    if (scan > n)
      abort();
    if (piece != 0 || n == size)
      break;
    if (n + step > size)
      n = size - step;
  }
  if (piece > 0 && piece != whole)
    abort(); /* found piece by piece: the same end as found whole */
  if (whole <= 0)
    return;
  net_req_head h;
  fields_agree(text, (size_t)whole, &lim);
  if (polite__net_req_parse(&h, text, (size_t)whole, &lim, no_header, NULL) <
      0) {
    if (h.error == NULL ||
        (h.status != 400 && h.status != 417 && h.status != 431 &&
         h.status != 501 && h.status != 505))
      abort();
    return;
  }
  if ((h.chunked && h.content_length >= 0) || h.target_len == 0 ||
      h.method[0] == '\0' || h.nheaders > lim.headers_max ||
      (size_t)whole > lim.head_max)
    abort();
  if (!h.chunked && h.content_length < 0)
    return;
  sink a, b;
  const uint8_t *body = data + whole;
  size_t blen = size - (size_t)whole;
  int ra =
      run_body(body, blen, blen ? blen : 1, h.chunked, h.content_length, &a);
  int rb = run_body(body, blen, step, h.chunked, h.content_length, &b);
  if (ra != rb || a.body_len != b.body_len || a.bsum != b.bsum)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  if (data[0] & 0x80) {
    request_side(data + 1, size - 1, data[0]);
    return 0;
  }
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
