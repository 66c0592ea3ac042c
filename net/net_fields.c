/* polite net: header lists, as libevent's evkeyvalq (so that
 * evhttp_find_header reads them): one allocation per field for the lists an
 * owner builds, and one block per parsed message (net_fields) on the
 * request path, where a proxied request carries a dozen fields twice. */
#include "net_http.h"

#include "http_syntax.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- One block per message ---------------------------------------------- */

void polite__net_fields_init(net_fields *f, char *block, size_t cap) {
  f->list.tqh_first = NULL;
  f->list.tqh_last = &f->list.tqh_first;
  f->used = 0;
  f->cap = cap;
  f->block = block;
}

/* Empty again, on the same block. */
static void fields_empty(net_fields *f) {
  polite__net_fields_init(f, f->block, f->cap);
}

/* 1 when p was carved from f's block (else it was allocated). */
static int in_block(const net_fields *f, const void *p) {
  uintptr_t a = (uintptr_t)p, lo = (uintptr_t)f->block;
  return a >= lo && a < lo + f->cap;
}

/* n bytes of f's block, aligned for a struct evkeyval; NULL when the rest
 * of the block is too small. */
static void *carve(net_fields *f, size_t n) {
  size_t at = (f->used + (_Alignof(struct evkeyval) - 1)) &
              ~(size_t)(_Alignof(struct evkeyval) - 1);
  if (at > f->cap || f->cap - at < n)
    return NULL;
  f->used = at + n;
  return f->block + at;
}

static void append(struct evkeyvalq *h, struct evkeyval *kv) {
  kv->next.tqe_next = NULL;
  kv->next.tqe_prev = h->tqh_last;
  *h->tqh_last = kv;
  h->tqh_last = &kv->next.tqe_next;
}

/* kv (with room for name and value after it) filled in. */
static struct evkeyval *fill(struct evkeyval *kv, const char *name, size_t nlen,
                             const char *value, size_t vlen) {
  kv->key = (char *)(kv + 1);
  kv->value = kv->key + nlen + 1;
  memcpy(kv->key, name, nlen);
  kv->key[nlen] = '\0';
  memcpy(kv->value, value, vlen);
  kv->value[vlen] = '\0';
  return kv;
}

int polite__net_fields_add(net_fields *f, const char *name, size_t nlen,
                           const char *value, size_t vlen) {
  size_t n = sizeof(struct evkeyval) + nlen + vlen + 2;
  struct evkeyval *kv = carve(f, n);
  if (kv == NULL && (kv = malloc(n)) == NULL)
    return -1;
  append(&f->list, fill(kv, name, nlen, value, vlen));
  return 0;
}

char *polite__net_fields_str(net_fields *f, const char *s, size_t n) {
  char *out = carve(f, n + 1);
  if (out == NULL && (out = malloc(n + 1)) == NULL)
    return NULL;
  memcpy(out, s, n);
  out[n] = '\0';
  return out;
}

void polite__net_fields_free_str(net_fields *f, char *s) {
  if (s && !in_block(f, s))
    free(s);
}

/* Unlinks every field of h called name, and frees it unless it lives in
 * f's block (f NULL: every field was allocated). */
static void remove_named(struct evkeyvalq *h, const char *name,
                         const net_fields *f) {
  size_t n = strlen(name);
  struct evkeyval *kv = h->tqh_first;
  while (kv) {
    struct evkeyval *next = kv->next.tqe_next;
    if (polite__ci_eqn(kv->key, strlen(kv->key), name, n)) {
      if (next)
        next->next.tqe_prev = kv->next.tqe_prev;
      else
        h->tqh_last = kv->next.tqe_prev;
      *kv->next.tqe_prev = next;
      if (f == NULL || !in_block(f, kv))
        free(kv);
    }
    kv = next;
  }
}

void polite__net_fields_remove(net_fields *f, const char *name) {
  remove_named(&f->list, name, f);
}

void polite__net_fields_reset(net_fields *f) {
  struct evkeyval *kv = f->list.tqh_first;
  while (kv) {
    struct evkeyval *next = kv->next.tqe_next;
    if (!in_block(f, kv))
      free(kv);
    kv = next;
  }
  fields_empty(f);
}

/* ---- One allocation per field -------------------------------------------- */

int polite__net_field_add(struct evkeyvalq *h, const char *name, size_t nlen,
                          const char *value, size_t vlen) {
  struct evkeyval *kv = malloc(sizeof *kv + nlen + vlen + 2);
  if (kv == NULL)
    return -1;
  append(h, fill(kv, name, nlen, value, vlen));
  return 0;
}

void polite__net_field_remove(struct evkeyvalq *h, const char *name) {
  remove_named(h, name, NULL);
}

void polite__net_fields_clear(struct evkeyvalq *h) {
  struct evkeyval *kv = h->tqh_first;
  while (kv) {
    struct evkeyval *next = kv->next.tqe_next;
    free(kv);
    kv = next;
  }
  h->tqh_first = NULL;
  h->tqh_last = &h->tqh_first;
}

const char *polite__net_find(const struct evkeyvalq *h, const char *name) {
  size_t n = strlen(name);
  unsigned first = (unsigned char)name[0] | 32u;
  /* Folded first bytes that differ tell most names apart before strlen. */
  for (const struct evkeyval *kv = h ? h->tqh_first : NULL; kv;
       kv = kv->next.tqe_next)
    if (((unsigned char)kv->key[0] | 32u) == first &&
        polite__ci_eqn(kv->key, strlen(kv->key), name, n))
      return kv->value;
  return NULL;
}
