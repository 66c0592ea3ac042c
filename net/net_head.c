/* polite net: writing message heads for the proxies: the request a proxy
 * sends upstream (the client's fields less the hop-by-hop ones, its own
 * Host, Via and framing) and the Via line, gathered in one buffer so that
 * a head is one evbuffer_add, not four per field. */
#include "net_head.h"

#include "http_syntax.h"

#include <event2/buffer.h>
#include <string.h>

void polite__net_wbuf_put_long(net_wbuf *w, const char *p, size_t n) {
  polite__net_wbuf_flush(w);
  if (n > sizeof w->buf) { /* a long value: as it is */
    evbuffer_add(w->out, p, n);
    return;
  }
  memcpy(w->buf, p, n);
  w->n = n;
}

void polite__net_wbuf_flush(net_wbuf *w) {
  if (w->n)
    evbuffer_add(w->out, w->buf, w->n);
  w->n = 0;
}

void polite__net_wbuf_uint(net_wbuf *w, uint64_t v) {
  char tmp[20];
  size_t n = sizeof tmp;
  do {
    tmp[--n] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  polite__net_wbuf_put(w, tmp + n, sizeof tmp - n);
}

/* Appends n bytes of p to buf at *o (buf has room: see via_line). */
static void put(char *buf, size_t *o, const char *p, size_t n) {
  memcpy(buf + *o, p, n);
  *o += n;
}

size_t polite__net_via_line(char *buf, const char *old, int minor) {
  size_t o = 0;
  put(buf, &o, "Via: ", 5);
  if (old) {
    size_t n = strlen(old);
    put(buf, &o, old, n > NET_VIA_OLD_MAX ? NET_VIA_OLD_MAX : n);
    put(buf, &o, ", ", 2);
  }
  put(buf, &o, "1.", 2);
  buf[o++] = (char)('0' + (minor >= 0 && minor <= 9 ? minor : 1));
  put(buf, &o, " polite\r\n", 9);
  buf[o] = '\0';
  return o;
}

int polite__net_answer_skip(const char *name, size_t n, void *connection) {
  return polite__net_hop_by_hop_n(name, n, connection) ||
         polite__ci_eq(name, n, "Via");
}

/* The client's fields a proxy writes itself (Host, the body's framing) or
 * does not pass on: Expect: 100-continue was answered by the server side,
 * the body is here already. */
static int own_field(const char *name, size_t n) {
  return polite__ci_eq(name, n, "Host") ||
         polite__ci_eq(name, n, "Content-Length") ||
         polite__ci_eq(name, n, "Expect");
}

void polite__net_request_head(struct evbuffer *out, const net_req_line *rl) {
  net_wbuf w;
  w.out = out;
  w.n = 0;
  polite__net_wbuf_str(&w, rl->method);
  polite__net_wbuf_put(&w, " ", 1);
  if (rl->prefix)
    polite__net_wbuf_str(&w, rl->prefix);
  polite__net_wbuf_str(&w, rl->path);
  polite__net_wbuf_put(&w, " HTTP/1.1\r\nHost: ", 17);
  polite__net_wbuf_str(&w, rl->authority);
  polite__net_wbuf_put(&w, "\r\n", 2);
  const char *conn = polite__net_find(rl->in, "Connection");
  const char *via = NULL;
  for (const struct evkeyval *h = rl->in->tqh_first; h; h = h->next.tqe_next) {
    size_t n = strlen(h->key); /* once, for the four looks at it */
    if (polite__net_hop_by_hop_n(h->key, n, conn) || own_field(h->key, n))
      continue;
    if (polite__ci_eq(h->key, n, "Via"))
      via = h->value; /* extended below */
    else
      polite__net_wbuf_field_n(&w, h->key, n, h->value);
  }
  if (rl->extra_name)
    polite__net_wbuf_field(&w, rl->extra_name, rl->extra_value);
  char line[NET_VIA_LINE_MAX];
  size_t vl = polite__net_via_line(line, via, rl->minor); /* before the put */
  polite__net_wbuf_put(&w, line, vl);
  if (rl->length >= 0) {
    polite__net_wbuf_put(&w, "Content-Length: ", 16);
    polite__net_wbuf_uint(&w, (uint64_t)rl->length);
    polite__net_wbuf_put(&w, "\r\n", 2);
  }
  polite__net_wbuf_put(&w, "\r\n", 2);
  polite__net_wbuf_flush(&w);
}
