/* polite net: writing message heads (net_head.c): the request a proxy
 * sends upstream, the Via line, and a small write buffer in front of an
 * evbuffer. */
#ifndef POLITE_NET_HEAD_H
#define POLITE_NET_HEAD_H

#include "net_http.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct evbuffer;

/* Bytes gathered on the stack and added to out in a few large pieces: an
 * evbuffer_add per piece of a head costs a lock, a chain check and the
 * buffer's callbacks each. */
typedef struct {
  struct evbuffer *out;
  size_t n;
  char buf[2048];
} net_wbuf;
/* Adds what is gathered to w->out. */
void polite__net_wbuf_flush(net_wbuf *w);
/* What polite__net_wbuf_put does when p does not fit: flush, then gather
 * p, or add it as it is when it is longer than the buffer. */
void polite__net_wbuf_put_long(net_wbuf *w, const char *p, size_t n);
/* Gathers p[0..n). Inline: a head is some forty pieces, and the call was
 * a third of the copying. */
static inline void polite__net_wbuf_put(net_wbuf *w, const char *p, size_t n) {
  if (n > sizeof w->buf - w->n) {
    polite__net_wbuf_put_long(w, p, n);
    return;
  }
  memcpy(w->buf + w->n, p, n);
  w->n += n;
}
static inline void polite__net_wbuf_str(net_wbuf *w, const char *s) {
  polite__net_wbuf_put(w, s, strlen(s));
}
/* "k: v\r\n", k of kn bytes. */
static inline void polite__net_wbuf_field_n(net_wbuf *w, const char *k,
                                            size_t kn, const char *v) {
  polite__net_wbuf_put(w, k, kn);
  polite__net_wbuf_put(w, ": ", 2);
  polite__net_wbuf_str(w, v);
  polite__net_wbuf_put(w, "\r\n", 2);
}
/* "k: v\r\n". */
static inline void polite__net_wbuf_field(net_wbuf *w, const char *k,
                                          const char *v) {
  polite__net_wbuf_str(w, k);
  polite__net_wbuf_put(w, ": ", 2);
  polite__net_wbuf_str(w, v);
  polite__net_wbuf_put(w, "\r\n", 2);
}
/* v in decimal. */
void polite__net_wbuf_uint(net_wbuf *w, uint64_t v);

/* The Via received is kept to its first NET_VIA_OLD_MAX bytes (a hostile
 * chain of proxies cannot grow a head without bound); a Via line fits in
 * NET_VIA_LINE_MAX bytes. */
#define NET_VIA_OLD_MAX 1000
#define NET_VIA_LINE_MAX 1100
/* "Via: OLD, 1.MINOR polite\r\n" (no OLD: "Via: 1.MINOR polite\r\n") into
 * buf (NET_VIA_LINE_MAX bytes), NUL-terminated. Returns its length. */
size_t polite__net_via_line(char *buf, const char *old, int minor);

/* The skip function of polite__net_req_head_fwd for a forwarded answer:
 * the upstream's fields the client does not get, hop-by-hop ones
 * (connection: the answer's Connection field, may be NULL) and Via, which
 * is written anew. */
int polite__net_answer_skip(const char *name, size_t n, void *connection);

/* The request a proxy sends upstream for a client's request. */
typedef struct {
  const char *method;
  const char *prefix; /* the upstream's path prefix, or NULL */
  const char *path;   /* origin-form, from '/' */
  const char *authority;
  const struct evkeyvalq *in; /* the client's fields */
  const char *extra_name;     /* one more field (NULL: none), */
  const char *extra_value;    /* e.g. an Idempotency-Key added */
  int minor;                  /* the client's HTTP/1.minor, for Via */
  int64_t length;             /* Content-Length to send, -1: none */
} net_req_line;
/* Writes rl's head to out: "METHOD PREFIXPATH HTTP/1.1", Host: authority,
 * the client's fields but the hop-by-hop ones (those its Connection names
 * too), Host, Content-Length, Expect and Via, the extra field, Via (the
 * client's, extended), Content-Length, and the empty line. */
void polite__net_request_head(struct evbuffer *out, const net_req_line *rl);

#endif
