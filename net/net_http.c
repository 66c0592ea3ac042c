/* polite proxy: HTTP/1.1 parsers (RFC 9112 framing) for responses, request
 * heads and bodies; pure: no sockets, no allocation. */
#include "net_http.h"

#include "http_syntax.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void polite__net_http_init(net_http_parser *p, int is_head) {
  memset(p, 0, sizeof *p);
  p->is_head = is_head;
  p->content_length = -1;
  p->state = NET_HTTP_STATUS;
}

static int http_fail(net_http_parser *p, const char *why) {
  p->error = why;
  return -1;
}

/* VCHAR, SP, HTAB and obs-text: what a field value may hold (RFC 9110
 * §5.5). Everything else (NUL, CR, LF, other controls, DEL) is refused. */
static int value_byte_ok(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* 1 when no byte of the word w is below 0x20 or is DEL (bit tricks exact
 * as a yes/no: a borrow starts only at a byte that is below). */
static int word_plain(uint64_t w) {
  const uint64_t ones = UINT64_C(0x0101010101010101);
  const uint64_t d = w ^ (ones * 0x7f);
  return ((((w - ones * 0x20) & ~w) | ((d - ones) & ~d)) &
          UINT64_C(0x8080808080808080)) == 0;
}

/* 1 when every byte of p[0..n) may stand in a field value. Eight bytes a
 * step (the last word overlapping the one before, a short value padded
 * with spaces); a value with a tab, or one to refuse, is then walked byte
 * by byte. */
static int value_ok(const char *p, size_t n) {
  uint64_t w = UINT64_C(0x2020202020202020);
  int plain = 1;
  if (n < 8) {
    memcpy(&w, p, n);
    plain = word_plain(w);
  }
  for (size_t i = 0; plain && n >= 8 && i < n; i += 8) {
    memcpy(&w, p + (i + 8 <= n ? i : n - 8), 8);
    plain = word_plain(w);
  }
  if (plain)
    return 1;
  for (size_t i = 0; i < n; i++)
    if (!value_byte_ok((unsigned char)p[i]))
      return 0;
  return 1;
}

/* The value of the field line l[0..n) whose colon is at l[c], trimmed of
 * OWS, into *v / *vn. Returns 0 when it holds a byte no field value may
 * (responses and requests alike). */
static int field_value(const char *l, size_t n, size_t c, const char **v,
                       size_t *vn) {
  const char *p = l + c + 1;
  size_t m = n - c - 1;
  while (m && (*p == ' ' || *p == '\t')) {
    p++;
    m--;
  }
  while (m && (p[m - 1] == ' ' || p[m - 1] == '\t'))
    m--;
  if (!value_ok(p, m))
    return 0;
  *v = p;
  *vn = m;
  return 1;
}

/* Calls f(token) for each comma-separated token of a list value. */
static void each_token(void *ctx, const char *v, size_t n,
                       void (*f)(void *, const char *, size_t)) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
      i++;
    size_t s = i;
    while (i < n && v[i] != ',')
      i++;
    size_t e = i;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
      e--;
    if (e > s)
      f(ctx, v + s, e - s);
  }
}

static void conn_token(void *ctx, const char *t, size_t n) {
  net_http_parser *p = ctx;
  if (polite__ci_eq(t, n, "close"))
    p->conn_close = 1;
  else if (polite__ci_eq(t, n, "keep-alive"))
    p->conn_keep_alive = 1;
}

static void te_token(void *ctx, const char *t, size_t n) {
  net_http_parser *p = ctx;
  /* Only the last coding matters: chunked must be last to frame the body. */
  p->chunked = polite__ci_eq(t, n, "chunked");
}

static int status_line(net_http_parser *p, const char *l, size_t n,
                       const char **reason, size_t *rlen) {
  if (n < 12 || memcmp(l, "HTTP/1.", 7) != 0 || (l[7] != '0' && l[7] != '1') ||
      l[8] != ' ')
    return http_fail(p, "bad status line");
  const char *s = l + 9;
  if (s[0] < '1' || s[0] > '5' || s[1] < '0' || s[1] > '9' || s[2] < '0' ||
      s[2] > '9' || (n > 12 && s[3] != ' '))
    return http_fail(p, "bad status code");
  p->minor = l[7] - '0';
  p->status = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
  *reason = n > 13 ? s + 4 : s + 3;
  *rlen = n > 13 ? n - 13 : 0;
  return 0;
}

static int header_line(net_http_parser *p, const char *l, size_t n,
                       const net_http_cb *cb, void *arg) {
  if (l[0] == ' ' || l[0] == '\t')
    return http_fail(p, "obsolete line folding");
  size_t c = 0;
  while (c < n && l[c] != ':') {
    if (!polite__is_tchar((unsigned char)l[c]))
      return http_fail(p, "bad header name");
    c++;
  }
  if (c == 0 || c == n)
    return http_fail(p, "header without a name or a colon");
  const char *v;
  size_t vn;
  if (!field_value(l, n, c, &v, &vn))
    return http_fail(p, "control character in a header value");
  if (polite__ci_eq(l, c, "Content-Length")) {
    int64_t len = 0;
    if (vn == 0)
      return http_fail(p, "empty Content-Length");
    for (size_t i = 0; i < vn; i++) {
      if (v[i] < '0' || v[i] > '9' || len > (INT64_MAX - 9) / 10)
        return http_fail(p, "bad Content-Length");
      len = len * 10 + (v[i] - '0');
    }
    if (p->content_length >= 0 && p->content_length != len)
      return http_fail(p, "conflicting Content-Length values");
    p->content_length = len;
  } else if (polite__ci_eq(l, c, "Transfer-Encoding")) {
    p->has_te = 1;
    each_token(p, v, vn, te_token);
  } else if (polite__ci_eq(l, c, "Connection")) {
    each_token(p, v, vn, conn_token);
  }
  if (cb->on_header && cb->on_header(arg, l, c, v, vn) < 0)
    return http_fail(p, "header refused");
  return 0;
}

/* The head is complete: decide the framing (RFC 9112 §6.3). */
static int end_of_head(net_http_parser *p) {
  p->keepalive = p->minor >= 1 ? !p->conn_close : p->conn_keep_alive;
  if (p->status == 101)
    return http_fail(p, "protocol upgrade is not supported");
  if (p->is_head || p->status == 204 || p->status == 304) {
    p->state = NET_HTTP_DONE;
  } else if (p->has_te) {
    p->content_length = -1; /* Transfer-Encoding overrides it */
    if (p->chunked) {
      p->state = NET_HTTP_CHUNK_SIZE;
    } else {
      p->state = NET_HTTP_CLOSE;
      p->keepalive = 0;
    }
  } else if (p->content_length >= 0) {
    p->remaining = p->content_length;
    p->state = p->remaining > 0 ? NET_HTTP_FIXED : NET_HTTP_DONE;
  } else {
    p->state = NET_HTTP_CLOSE;
    p->keepalive = 0;
  }
  return 0;
}

static int chunk_size(net_http_parser *p, const char *l, size_t n) {
  size_t i = 0;
  int64_t v = 0;
  while (i < n) {
    char c = l[i];
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0)
      break;
    if (v > ((int64_t)1 << 40))
      return http_fail(p, "chunk too large");
    v = v * 16 + d;
    i++;
  }
  if (i == 0 || (i < n && l[i] != ';' && l[i] != ' ' && l[i] != '\t'))
    return http_fail(p, "bad chunk size");
  if (v == 0) {
    p->state = NET_HTTP_TRAILERS;
  } else {
    p->remaining = v;
    p->state = NET_HTTP_CHUNK_DATA;
  }
  return 0;
}

ssize_t polite__net_http_feed(net_http_parser *p, const char *data, size_t len,
                              const net_http_cb *cb, void *arg) {
  size_t used = 0;
  while (used < len && p->state != NET_HTTP_DONE) {
    const char *d = data + used;
    size_t avail = len - used;
    switch (p->state) {
    case NET_HTTP_FIXED:
    case NET_HTTP_CHUNK_DATA: {
      size_t n = avail < (uint64_t)p->remaining ? avail : (size_t)p->remaining;
      if (cb->on_body && cb->on_body(arg, d, n) < 0)
        return http_fail(p, "body refused");
      used += n;
      p->remaining -= (int64_t)n;
      if (p->remaining == 0)
        p->state =
            p->state == NET_HTTP_FIXED ? NET_HTTP_DONE : NET_HTTP_CHUNK_END;
      continue;
    }
    case NET_HTTP_CLOSE:
      if (cb->on_body && cb->on_body(arg, d, avail) < 0)
        return http_fail(p, "body refused");
      used += avail;
      continue;
    default: break;
    }
    /* Line states: a whole line (LF or CRLF) or nothing. */
    const char *nl = memchr(d, '\n', avail);
    int in_head = p->state == NET_HTTP_STATUS || p->state == NET_HTTP_HEADERS;
    if (nl == NULL) {
      if ((in_head && p->head_bytes + avail > NET_HTTP_HEAD_MAX) ||
          (!in_head && avail > 4096))
        return http_fail(p,
                         in_head ? "response head too large" : "line too long");
      break;
    }
    size_t n = (size_t)(nl - d);
    used += n + 1;
    if (n > 0 && d[n - 1] == '\r')
      n--;
    if (in_head) {
      p->head_bytes += n + 2;
      if (p->head_bytes > NET_HTTP_HEAD_MAX)
        return http_fail(p, "response head too large");
    }
    switch (p->state) {
    case NET_HTTP_STATUS: {
      const char *reason;
      size_t rlen;
      if (status_line(p, d, n, &reason, &rlen) < 0)
        return -1;
      /* Kept (truncated) for on_head: these bytes may be gone by then. */
      if (rlen >= sizeof p->reason)
        rlen = sizeof p->reason - 1;
      for (size_t i = 0; i < rlen; i++)
        p->reason[i] = (unsigned char)reason[i] < 0x20 ? ' ' : reason[i];
      p->reason[rlen] = '\0';
      p->state = NET_HTTP_HEADERS;
      break;
    }
    case NET_HTTP_HEADERS:
      if (n == 0) {
        if (p->status < 200 && p->status != 101) {
          /* Interim response (100 Continue, 103 Early Hints): skipped. */
          net_http_parser fresh;
          polite__net_http_init(&fresh, p->is_head);
          fresh.head_bytes = p->head_bytes;
          *p = fresh;
          break;
        }
        if (end_of_head(p) < 0)
          return -1;
        if (cb->on_head && cb->on_head(arg, p->status, p->reason,
                                       strlen(p->reason), p->minor) < 0)
          return http_fail(p, "head refused");
        break;
      }
      if (p->status >= 200 || p->status == 101) {
        if (header_line(p, d, n, cb, arg) < 0)
          return -1;
      } else {
        /* Headers of an interim response are checked, not reported. */
        net_http_cb none = {NULL, NULL, NULL};
        if (header_line(p, d, n, &none, NULL) < 0)
          return -1;
        p->content_length = -1;
        p->has_te = p->chunked = p->conn_close = p->conn_keep_alive = 0;
      }
      break;
    case NET_HTTP_CHUNK_SIZE:
      if (chunk_size(p, d, n) < 0)
        return -1;
      break;
    case NET_HTTP_CHUNK_END:
      if (n != 0)
        return http_fail(p, "chunk data longer than its size");
      p->state = NET_HTTP_CHUNK_SIZE;
      break;
    case NET_HTTP_TRAILERS:
      /* Trailer fields are dropped: the client side is re-chunked. They
       * count against the head limit, so that endless trailers end. */
      p->head_bytes += n + 2;
      if (p->head_bytes > NET_HTTP_HEAD_MAX)
        return http_fail(p, "trailer section too large");
      if (n == 0)
        p->state = NET_HTTP_DONE;
      break;
    default: break;
    }
  }
  return (ssize_t)used;
}

int polite__net_http_eof(net_http_parser *p) {
  if (p->state == NET_HTTP_CLOSE) {
    p->state = NET_HTTP_DONE;
    p->keepalive = 0;
    return 1;
  }
  return p->state == NET_HTTP_DONE;
}

void polite__net_http_body_init(net_http_parser *p, int chunked,
                                int64_t length) {
  polite__net_http_init(p, 0);
  p->status = 200;
  if (chunked) {
    p->chunked = 1;
    p->state = NET_HTTP_CHUNK_SIZE;
  } else {
    p->content_length = length;
    p->remaining = length;
    p->state = length > 0 ? NET_HTTP_FIXED : NET_HTTP_DONE;
  }
}

/* ---- Request heads ------------------------------------------------------- */

long polite__net_req_head_end(const char *data, size_t len, size_t *scan,
                              const net_limits *lim) {
  /* The head ends at an LF followed by an empty line (CRLF or a bare LF).
   * Every byte is looked at once: the search resumes at *scan, which is
   * left on the last LF whose successors were not all there yet. */
  size_t i = *scan;
  while (i < len) {
    const char *nl = memchr(data + i, '\n', len - i);
    if (nl == NULL) {
      i = len;
      break;
    }
    i = (size_t)(nl - data);
    if (i + 1 >= len || (data[i + 1] == '\r' && i + 2 >= len))
      break; /* wait for what follows this LF */
    if (data[i + 1] == '\n')
      return (long)(i + 2);
    if (data[i + 1] == '\r' && data[i + 2] == '\n')
      return (long)(i + 3);
    i++;
  }
  *scan = i;
  return len > lim->head_max ? -1 : 0;
}

static int req_fail(net_req_head *h, int status, const char *why) {
  h->status = status;
  h->error = why;
  return -1;
}

/* "HTTP/1.x". A well-formed version of another major answers 505. */
static int req_version(net_req_head *h, const char *v, size_t n) {
  if (n != 8 || memcmp(v, "HTTP/", 5) != 0 || v[6] != '.' || v[5] < '0' ||
      v[5] > '9' || v[7] < '0' || v[7] > '9')
    return req_fail(h, 400, "bad HTTP version");
  if (v[5] != '1')
    return req_fail(h, 505, "HTTP version not supported");
  h->minor = v[7] == '0' ? 0 : 1; /* 1.2 and later minors speak 1.1 */
  return 0;
}

/* The target's form must fit the method (RFC 9112 §3.2): origin-form
 * "/...", absolute-form "http(s)://...", authority-form only for CONNECT,
 * "*" only for OPTIONS. Only visible ASCII: a space means two targets. */
static int req_target(net_req_head *h, const char *t, size_t n) {
  if (n == 0)
    return req_fail(h, 400, "empty request target");
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)t[i] <= 0x20 || (unsigned char)t[i] >= 0x7f)
      return req_fail(h, 400, "bad byte in the request target");
  int connect = strcmp(h->method, "CONNECT") == 0;
  if (connect)
    return t[0] == '/' || memchr(t, ':', n) == NULL || memchr(t, '/', n)
               ? req_fail(h, 400, "CONNECT needs host:port")
               : 0;
  if (t[0] == '/')
    return 0;
  if (n == 1 && t[0] == '*')
    return strcmp(h->method, "OPTIONS") == 0
               ? 0
               : req_fail(h, 400, "'*' target outside OPTIONS");
  if ((n > 7 && polite__ci_prefix(t, n, "http://")) ||
      (n > 8 && polite__ci_prefix(t, n, "https://")))
    return 0;
  return req_fail(h, 400, "bad request target");
}

static int request_line(net_req_head *h, const char *l, size_t n) {
  const char *sp1 = memchr(l, ' ', n);
  if (sp1 == NULL)
    return req_fail(h, 400, "bad request line");
  size_t ml = (size_t)(sp1 - l);
  if (ml == 0 || ml >= sizeof h->method)
    return req_fail(h, ml ? 501 : 400, "bad method");
  for (size_t i = 0; i < ml; i++)
    if (!polite__is_tchar((unsigned char)l[i]))
      return req_fail(h, 400, "bad method");
  memcpy(h->method, l, ml);
  h->method[ml] = '\0';
  const char *t = sp1 + 1;
  const char *sp2 = memchr(t, ' ', (size_t)(l + n - t));
  if (sp2 == NULL)
    return req_fail(h, 400, "bad request line");
  const char *ver = sp2 + 1;
  size_t vn = (size_t)(l + n - ver);
  if (memchr(ver, ' ', vn))
    return req_fail(h, 400, "space in the request target");
  h->target = t;
  h->target_len = (size_t)(sp2 - t);
  if (req_version(h, ver, vn) < 0)
    return -1;
  return req_target(h, h->target, h->target_len);
}

/* Flags met while reading the header lines; the framing is decided once
 * they are all read. */
typedef struct {
  int te_seen, cl_seen, host_seen, conn_close, conn_keep_alive, te_bad;
  int te_unknown, chunked_count;
} req_flags;

/* Transfer-Encoding tokens: chunked must come once and last. */
static void req_te_token(void *ctx, const char *t, size_t n) {
  req_flags *f = ctx;
  if (f->chunked_count > 0)
    f->te_bad = 1; /* anything after chunked */
  if (polite__ci_eq(t, n, "chunked"))
    f->chunked_count++;
  else
    f->te_unknown = 1;
}

static void req_conn_token(void *ctx, const char *t, size_t n) {
  req_flags *f = ctx;
  if (polite__ci_eq(t, n, "close"))
    f->conn_close = 1;
  else if (polite__ci_eq(t, n, "keep-alive"))
    f->conn_keep_alive = 1;
}

/* The header fields that frame the message or route it. */
static int req_special(net_req_head *h, req_flags *f, const char *name,
                       size_t nl, const char *v, size_t vn) {
  if (polite__ci_eq(name, nl, "Content-Length")) {
    /* One field with 1*DIGIT: no sign, no list, no second field (even with
     * the same value: the shapes parsers disagree on are refused). */
    if (f->cl_seen++)
      return req_fail(h, 400, "more than one Content-Length");
    if (vn == 0 || vn > 18)
      return req_fail(h, 400, "bad Content-Length");
    int64_t len = 0;
    for (size_t i = 0; i < vn; i++) {
      if (v[i] < '0' || v[i] > '9')
        return req_fail(h, 400, "bad Content-Length");
      len = len * 10 + (v[i] - '0');
    }
    h->content_length = len;
  } else if (polite__ci_eq(name, nl, "Transfer-Encoding")) {
    f->te_seen = 1;
    each_token(f, v, vn, req_te_token);
  } else if (polite__ci_eq(name, nl, "Host")) {
    if (f->host_seen++)
      return req_fail(h, 400, "more than one Host");
    for (size_t i = 0; i < vn; i++)
      if (!polite__is_tchar((unsigned char)v[i]) && !strchr(":[]", v[i]))
        return req_fail(h, 400, "bad Host");
  } else if (polite__ci_eq(name, nl, "Connection")) {
    each_token(f, v, vn, req_conn_token);
  } else if (polite__ci_eq(name, nl, "Expect")) {
    if (!polite__ci_eq(v, vn, "100-continue"))
      return req_fail(h, 417, "unsupported expectation");
    h->expect_continue = 1;
  }
  return 0;
}

static int req_header(net_req_head *h, req_flags *f, const char *l, size_t n,
                      int (*on_header)(void *, const char *, size_t,
                                       const char *, size_t),
                      void *arg) {
  if (l[0] == ' ' || l[0] == '\t')
    return req_fail(h, 400, "obsolete line folding");
  size_t c = 0;
  while (c < n && l[c] != ':') {
    if (!polite__is_tchar((unsigned char)l[c]))
      return req_fail(h, 400,
                      c < n && (l[c] == ' ' || l[c] == '\t')
                          ? "whitespace before a header's colon"
                          : "bad header name");
    c++;
  }
  if (c == 0)
    return req_fail(h, 400, "empty header name");
  if (c == n)
    return req_fail(h, 400, "header without a colon");
  const char *v;
  size_t vn;
  if (!field_value(l, n, c, &v, &vn))
    return req_fail(h, 400, "control character in a header value");
  if (req_special(h, f, l, c, v, vn) < 0)
    return -1;
  if (on_header && on_header(arg, l, c, v, vn) < 0)
    return req_fail(h, 500, "header refused");
  return 0;
}

/* The framing, once every header line is read (RFC 9112 §6.1-6.3). */
static int req_framing(net_req_head *h, const req_flags *f) {
  if (f->te_seen) {
    if (f->cl_seen)
      return req_fail(h, 400, "both Content-Length and Transfer-Encoding");
    if (h->minor == 0)
      return req_fail(h, 400, "Transfer-Encoding in an HTTP/1.0 request");
    if (f->te_bad || f->chunked_count > 1 ||
        (f->chunked_count == 0 && !f->te_unknown))
      return req_fail(h, 400, "chunked must be the last transfer coding");
    if (f->te_unknown)
      return req_fail(h, 501, "transfer coding not implemented");
    h->chunked = 1;
  }
  if (h->minor >= 1 && !f->host_seen)
    return req_fail(h, 400, "HTTP/1.1 request without Host");
  h->keepalive =
      h->minor >= 1 ? !f->conn_close : f->conn_keep_alive && !f->conn_close;
  return 0;
}

int polite__net_req_parse(net_req_head *h, const char *data, size_t len,
                          const net_limits *lim,
                          int (*on_header)(void *, const char *, size_t,
                                           const char *, size_t),
                          void *arg) {
  memset(h, 0, sizeof *h);
  h->content_length = -1;
  if (len > lim->head_max)
    return req_fail(h, 431, "request head too large");
  req_flags f;
  memset(&f, 0, sizeof f);
  size_t off = 0;
  int first = 1;
  while (off < len) {
    const char *l = data + off;
    const char *nl = memchr(l, '\n', len - off);
    size_t n = nl ? (size_t)(nl - l) : len - off;
    off += n + 1;
    if (n > 0 && l[n - 1] == '\r')
      n--;
    if (memchr(l, '\r', n) || memchr(l, '\0', n))
      return req_fail(h, 400, "stray CR or NUL in the head");
    if (n == 0) {
      if (first)
        return req_fail(h, 400, "empty request line");
      break; /* the end of the head */
    }
    if (first) {
      if (request_line(h, l, n) < 0)
        return -1;
      first = 0;
      continue;
    }
    if (++h->nheaders > lim->headers_max)
      return req_fail(h, 431, "too many header fields");
    if (req_header(h, &f, l, n, on_header, arg) < 0)
      return -1;
  }
  if (first)
    return req_fail(h, 400, "empty request");
  return req_framing(h, &f);
}

/* Hop-by-hop fields (RFC 9110 7.6.1) are for one connection only; so is
 * every field the Connection field names, and any Proxy-* field. */
int polite__net_hop_by_hop(const char *name, const char *connection) {
  return polite__net_hop_by_hop_n(name, strlen(name), connection);
}

int polite__net_hop_by_hop_n(const char *name, size_t n,
                             const char *connection) {
  static const char *const hop[] = {"Connection",
                                    "Keep-Alive",
                                    "Proxy-Connection",
                                    "Proxy-Authenticate",
                                    "Proxy-Authorization",
                                    "TE",
                                    "Trailer",
                                    "Transfer-Encoding",
                                    "Upgrade",
                                    NULL};
  /* Every name above starts with c, k, p, t or u: most fields are told
   * apart by their first byte. */
  char first = (char)(name[0] | 32);
  if (first == 'c' || first == 'k' || first == 'p' || first == 't' ||
      first == 'u') {
    for (int i = 0; hop[i]; i++)
      if (polite__ci_eq(name, n, hop[i]))
        return 1;
    if (polite__ci_prefix(name, n, "Proxy-"))
      return 1;
  }
  for (const char *p = connection; p && *p;) {
    while (*p == ' ' || *p == ',' || *p == '\t')
      p++;
    const char *e = p;
    while (*e && *e != ',' && *e != ' ' && *e != '\t')
      e++;
    if (e > p && polite__ci_eqn(p, (size_t)(e - p), name, n))
      return 1;
    p = e;
  }
  return 0;
}

const char *polite__net_reason(int status) {
  static const struct {
    int status;
    const char *text;
  } table[] = {
      {100, "Continue"},
      {200, "OK"},
      {201, "Created"},
      {202, "Accepted"},
      {204, "No Content"},
      {206, "Partial Content"},
      {301, "Moved Permanently"},
      {302, "Found"},
      {304, "Not Modified"},
      {400, "Bad Request"},
      {401, "Unauthorized"},
      {403, "Forbidden"},
      {404, "Not Found"},
      {405, "Method Not Allowed"},
      {408, "Request Timeout"},
      {409, "Conflict"},
      {413, "Content Too Large"},
      {417, "Expectation Failed"},
      {418, "I'm a teapot"},
      {422, "Unprocessable Content"},
      {429, "Too Many Requests"},
      {431, "Request Header Fields Too Large"},
      {451, "Unavailable For Legal Reasons"},
      {500, "Internal Server Error"},
      {501, "Not Implemented"},
      {502, "Bad Gateway"},
      {503, "Service Unavailable"},
      {504, "Gateway Timeout"},
      {505, "HTTP Version Not Supported"},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (table[i].status == status)
      return table[i].text;
  return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
}
