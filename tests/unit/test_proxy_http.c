/* Unit tests of the proxy's HTTP/1.1 parsers (net/net_http.c): responses
 * fed whole and byte by byte; request heads against the smuggling shapes of
 * RFC 9112 and the bounds; request bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net_http.h"

typedef struct {
  int heads;
  int status, minor;
  char reason[64];
  char headers[4096];
  char body[70000];
  size_t body_len;
  int result; /* 1 done, 0 incomplete, -1 error */
  int keepalive;
  size_t leftover;
} got;

static int on_header(void *arg, const char *n, size_t nl, const char *v,
                     size_t vl) {
  got *g = arg;
  size_t o = strlen(g->headers);
  snprintf(g->headers + o, sizeof g->headers - o, "%.*s=%.*s|", (int)nl, n,
           (int)vl, v);
  return 0;
}

static int on_head(void *arg, int status, const char *reason, size_t rlen,
                   int minor) {
  got *g = arg;
  g->heads++;
  g->status = status;
  g->minor = minor;
  snprintf(g->reason, sizeof g->reason, "%.*s", (int)rlen, reason);
  return 0;
}

static int on_body(void *arg, const char *d, size_t n) {
  got *g = arg;
  assert_true(g->body_len + n <= sizeof g->body);
  memcpy(g->body + g->body_len, d, n);
  g->body_len += n;
  return 0;
}

static const net_http_cb cb = {on_header, on_head, on_body};

/* Feeds `text` in pieces of `step` bytes (0 = all at once), the way the
 * upstream layer does: unconsumed bytes are fed again with the next piece.
 * `eof` closes the connection afterwards. */
static void run(got *g, const char *text, size_t len, size_t step, int is_head,
                int eof) {
  memset(g, 0, sizeof *g);
  net_http_parser p;
  polite__net_http_init(&p, is_head);
  char *pending = malloc(len + 1);
  size_t np = 0, off = 0;
  g->result = 0;
  while (off < len || np > 0) {
    size_t take = step ? step : len;
    if (take > len - off)
      take = len - off;
    memcpy(pending + np, text + off, take);
    np += take;
    off += take;
    ssize_t used = polite__net_http_feed(&p, pending, np, &cb, g);
    if (used < 0) {
      g->result = -1;
      break;
    }
    memmove(pending, pending + used, np - (size_t)used);
    np -= (size_t)used;
    if (p.state == NET_HTTP_DONE)
      break;
    if (take == 0)
      break; /* nothing new and nothing consumed */
  }
  if (g->result == 0) {
    if (p.state == NET_HTTP_DONE)
      g->result = 1;
    else if (eof && polite__net_http_eof(&p))
      g->result = 1;
  }
  g->keepalive = p.keepalive;
  g->leftover = np + (len - off);
  free(pending);
}

/* Both ways of feeding must agree exactly. */
static void both(got *g, const char *text, int is_head, int eof) {
  got one;
  size_t len = strlen(text);
  run(&one, text, len, 1, is_head, eof);
  run(g, text, len, 0, is_head, eof);
  assert_int_equal(one.result, g->result);
  assert_int_equal(one.status, g->status);
  assert_string_equal(one.headers, g->headers);
  assert_int_equal(one.body_len, g->body_len);
  assert_memory_equal(one.body, g->body, g->body_len);
  assert_int_equal(one.keepalive, g->keepalive);
}

static void fixed_length(void **state) {
  (void)state;
  got g;
  both(&g,
       "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
       "5\r\nX-A:  b c  \r\n\r\nhello",
       0, 0);
  assert_int_equal(g.result, 1);
  assert_int_equal(g.status, 200);
  assert_string_equal(g.reason, "OK");
  assert_int_equal(g.minor, 1);
  assert_string_equal(g.headers,
                      "Content-Type=text/plain|Content-Length=5|X-A=b c|");
  assert_int_equal(g.body_len, 5);
  assert_memory_equal(g.body, "hello", 5);
  assert_true(g.keepalive);
  /* Bytes after the response are left for the caller. */
  const char *extra = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiEXTRA";
  run(&g, extra, strlen(extra), 0, 0, 0);
  assert_int_equal(g.result, 1);
  assert_int_equal(g.leftover, 5);
}

static void chunked_with_extensions_and_trailers(void **state) {
  (void)state;
  got g;
  both(&g,
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: "
       "999\r\n\r\n"
       "5;name=val\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: "
       "t\r\n\r\n",
       0, 0);
  assert_int_equal(g.result, 1);
  assert_int_equal(g.body_len, 16);
  assert_memory_equal(g.body, "hello 0123456789", 16);
  assert_true(g.keepalive);
  /* Bare LF line ends are accepted. */
  both(&g, "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n3\nabc\n0\n\n", 0,
       0);
  assert_int_equal(g.result, 1);
  assert_memory_equal(g.body, "abc", 3);
}

static void binary_body_with_nul_and_crlf(void **state) {
  (void)state;
  got g;
  static const char text[] =
      "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n\0\r\n\0\n\xff";
  run(&g, text, sizeof text - 1, 1, 0, 0);
  assert_int_equal(g.result, 1);
  assert_int_equal(g.body_len, 6);
  assert_memory_equal(g.body, "\0\r\n\0\n\xff", 6);
}

static void interim_responses_skipped(void **state) {
  (void)state;
  got g;
  both(&g,
       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: "
       "</a>\r\n\r\n"
       "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
       0, 0);
  assert_int_equal(g.result, 1);
  assert_int_equal(g.status, 201);
  assert_string_equal(g.reason, "Created");
  assert_string_equal(g.headers,
                      "Content-Length=2|"); /* not the interim Link */
}

static void no_body_cases(void **state) {
  (void)state;
  got g;
  both(&g, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", 1, 0); /* HEAD */
  assert_int_equal(g.result, 1);
  assert_int_equal(g.body_len, 0);
  both(&g, "HTTP/1.1 204 No Content\r\n\r\n", 0, 0);
  assert_int_equal(g.result, 1);
  both(&g, "HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n", 0, 0);
  assert_int_equal(g.result, 1);
  both(&g, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, 0);
  assert_int_equal(g.result, 1);
  both(&g, "HTTP/1.1 429\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n", 0, 0);
  assert_int_equal(g.status, 429);
  assert_string_equal(g.reason, "");
}

static void close_delimited_and_keepalive(void **state) {
  (void)state;
  got g;
  both(&g, "HTTP/1.1 200 OK\r\n\r\nuntil the end", 0, 1);
  assert_int_equal(g.result, 1);
  assert_false(g.keepalive);
  assert_memory_equal(g.body, "until the end", 13);
  both(&g, "HTTP/1.1 200 OK\r\n\r\nuntil the end", 0, 0);
  assert_int_equal(g.result, 0); /* not complete before the close */
  both(&g, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nxx", 0,
       1);
  assert_int_equal(g.result, 1);
  assert_false(g.keepalive);
  both(&g,
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, "
       "chunked\r\n\r\n2\r\nxx\r\n0\r\n\r\n",
       0, 0);
  assert_int_equal(g.result, 1);
  assert_true(g.keepalive);
  both(&g,
       "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: "
       "0\r\n\r\n",
       0, 0);
  assert_false(g.keepalive);
  both(&g, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 0, 0);
  assert_false(g.keepalive);
  assert_int_equal(g.minor, 0);
  both(&g,
       "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
       0, 0);
  assert_true(g.keepalive);
  /* A truncated fixed body is not complete at the close. */
  both(&g, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 0, 1);
  assert_int_equal(g.result, 0);
  both(&g, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 0,
       1);
  assert_int_equal(g.result, 0);
}

static void malformed_responses(void **state) {
  (void)state;
  const char *bad[] = {
      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nx",
      "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
      "HTTP/2 200 OK\r\n\r\n",
      "HTTP/1.1 2000 OK\r\n\r\n",
      "HTTP/1.1 099 Low\r\n\r\n",
      "HTTP/1.1 600 High\r\n\r\n",
      "ICY 200 OK\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n",
      "HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
      "HTTP/1.1 200 OK\r\n: empty\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX-A: a\001b\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
      "chunked\r\n\r\nFFFFFFFFFFFFFFFF\r\n",
      "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    got g;
    both(&g, bad[i], 0, 1);
    if (g.result != -1)
      fail_msg("case %zu accepted: %s", i, bad[i]);
  }
}

static void head_size_is_bounded(void **state) {
  (void)state;
  size_t n = NET_HTTP_HEAD_MAX + 100;
  char *t = malloc(n + 64);
  strcpy(t, "HTTP/1.1 200 OK\r\nX-Big: ");
  size_t o = strlen(t);
  memset(t + o, 'a', n - o);
  t[n] = '\0';
  got g;
  run(&g, t, n, 0, 0, 0); /* no line end at all */
  assert_int_equal(g.result, -1);
  strcpy(t + n - 4, "\r\n\r\n");
  run(&g, t, n, 4096, 0, 0);
  assert_int_equal(g.result, -1);
  free(t);
}

/* ---- Request heads ------------------------------------------------------- */

static const net_limits lim = {64 * 1024, 100};

/* Parses a complete head; returns 0 or the refusal's status. */
static int req_status(const char *text, net_req_head *h) {
  size_t scan = 0;
  size_t len = strlen(text);
  long end = polite__net_req_head_end(text, len, &scan, &lim);
  assert_int_equal(end, (long)len); /* every case is one whole head */
  return polite__net_req_parse(h, text, len, &lim, NULL, NULL) == 0 ? 0
                                                                    : h->status;
}

/* Each row: a request head and what the proxy must answer (0: accepted).
 * The refusals are RFC 9112's for shapes two parsers could frame or route
 * differently (request smuggling). */
static const struct {
  const char *head;
  int status;
} req_cases[] = {
    {"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
    {"GET / HTTP/1.1\nHost: a\n\n", 0}, /* bare LF */
    {"GET http://a.example/x?q=1 HTTP/1.1\r\nHost: a.example\r\n\r\n", 0},
    {"CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n", 0},
    {"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 0},
    {"GET / HTTP/1.0\r\n\r\n", 0}, /* 1.0 needs no Host */
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n", 0},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", 0},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-Obs: caf\xc3\xa9\r\n\r\n", 0},
    /* Values are checked eight bytes a step: a tab, obs-text, DEL or a
     * control byte in every place of a word, and in the tail after it. */
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: 0123456\t89abcdef\tx\r\n\r\n", 0},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: \xff\x80\xfe 4567 9abcdef\r\n\r\n", 0},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: 0123456\x7f"
     "89abcdef\r\n\r\n",
     400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: 01234567\x01"
     "9abcdef\r\n\r\n",
     400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: 0123456789abcdef\x1f"
     "x\r\n\r\n",
     400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: 0123456789ab\x7f\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: a\tb\r\n\r\n", 0},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-V: a\x02"
     "b\r\n\r\n",
     400},
    /* smuggling shapes */
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: "
     "5\r\n\r\n",
     400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: "
     "50\r\n\r\n",
     400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n"
     "Content-Length: 0\r\n\r\n",
     400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: "
     "chunked\r\n\r\n",
     400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
     "Content-Length: 4\r\n\r\n",
     400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n"
     "\r\n",
     400},
    {"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\n: empty\r\nHost: a\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x01 2\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x7f\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n", 400},
    {"GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\n\r\n", 400}, /* 1.1 without Host */
    {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-Fold: a\r\n b\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n", 400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
     400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
     "Transfer-Encoding: chunked\r\n\r\n",
     400},
    {"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
    {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
    {"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
    {"GET / HTTP/1\r\nHost: a\r\n\r\n", 400},
    {"GET / FOO/1.1\r\nHost: a\r\n\r\n", 400},
    {"G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET a.example HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET * HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"CONNECT /x HTTP/1.1\r\nHost: a\r\n\r\n", 400},
    {"GET / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n", 417},
};

static void request_heads(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof req_cases / sizeof req_cases[0]; i++) {
    net_req_head h;
    int st = req_status(req_cases[i].head, &h);
    if (st != req_cases[i].status)
      fail_msg("case %zu (%s): got %d (%s), want %d", i, req_cases[i].head, st,
               h.error ? h.error : "-", req_cases[i].status);
  }
}

static void request_framing(void **state) {
  (void)state;
  net_req_head h;
  assert_int_equal(req_status("POST /u HTTP/1.1\r\nHost: a\r\nContent-Length: "
                              "12\r\nConnection: close\r\n\r\n",
                              &h),
                   0);
  assert_string_equal(h.method, "POST");
  assert_int_equal(h.target_len, 2);
  assert_memory_equal(h.target, "/u", 2);
  assert_int_equal(h.content_length, 12);
  assert_false(h.chunked);
  assert_false(h.keepalive);
  assert_int_equal(req_status("GET / HTTP/1.0\r\nConnection: keep-alive\r\n"
                              "\r\n",
                              &h),
                   0);
  assert_true(h.keepalive);
  assert_int_equal(h.minor, 0);
  assert_int_equal(req_status("PUT / HTTP/1.1\r\nHost: a\r\nExpect: "
                              "100-continue\r\nTransfer-Encoding: chunked\r\n"
                              "\r\n",
                              &h),
                   0);
  assert_true(h.chunked && h.expect_continue && h.keepalive);
  assert_int_equal(h.content_length, -1);
}

/* The search for the end of a head resumes where it stopped: fed one byte
 * at a time it finds the same end, and refuses a head over the limit. */
static void request_head_end_is_incremental(void **state) {
  (void)state;
  const char *t = "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\nGET /next";
  size_t want = strlen("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n");
  size_t scan = 0;
  long end = 0;
  for (size_t n = 1; n <= strlen(t) && end == 0; n++) {
    end = polite__net_req_head_end(t, n, &scan, &lim);
    assert_true(scan <= n);
  }
  assert_int_equal(end, (long)want);
  /* Bare LF ends too. */
  scan = 0;
  assert_int_equal(
      polite__net_req_head_end("GET / HTTP/1.0\n\n", 16, &scan, &lim), 16);
  /* Over the limit with no end: -1; just under: 0. */
  net_limits small = {32, 10};
  char big[64];
  memset(big, 'a', sizeof big);
  scan = 0;
  assert_int_equal(polite__net_req_head_end(big, 32, &scan, &small), 0);
  assert_int_equal(polite__net_req_head_end(big, 33, &scan, &small), -1);
  /* A complete head over the limit is refused by the parser (431). */
  net_req_head h;
  const char *head = "GET / HTTP/1.1\r\nHost: a\r\nX-Long: aaaaaaaaaa\r\n\r\n";
  assert_int_equal(
      polite__net_req_parse(&h, head, strlen(head), &small, NULL, NULL), -1);
  assert_int_equal(h.status, 431);
}

static void request_header_count_is_bounded(void **state) {
  (void)state;
  char head[4096] = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 100; i++)
    snprintf(head + strlen(head), sizeof head - strlen(head), "X%d: v\r\n", i);
  strcat(head, "\r\n");
  net_req_head h;
  assert_int_equal(
      polite__net_req_parse(&h, head, strlen(head), &lim, NULL, NULL), -1);
  assert_int_equal(h.status, 431); /* 101 fields > 100 */
  net_limits more = {64 * 1024, 101};
  assert_int_equal(
      polite__net_req_parse(&h, head, strlen(head), &more, NULL, NULL), 0);
}

/* Request bodies through the body decoder: chunked de-chunked, trailers
 * dropped; a bad chunk size refused. */
static void request_bodies(void **state) {
  (void)state;
  got g;
  memset(&g, 0, sizeof g);
  net_http_parser p;
  polite__net_http_body_init(&p, 1, -1);
  const char *b = "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-T: 1\r\n\r\nNEXT";
  ssize_t used = polite__net_http_feed(&p, b, strlen(b), &cb, &g);
  assert_int_equal(p.state, NET_HTTP_DONE);
  assert_int_equal(used, (ssize_t)strlen(b) - 4);
  assert_int_equal(g.body_len, 5);
  assert_memory_equal(g.body, "abcde", 5);
  polite__net_http_body_init(&p, 1, -1);
  assert_int_equal(polite__net_http_feed(&p, "zz\r\n", 4, &cb, &g), -1);
  polite__net_http_body_init(&p, 0, 0);
  assert_int_equal(p.state, NET_HTTP_DONE);
}

/* "name=value|" for each field of h, in order. */
static void fields_text(const struct evkeyvalq *h, char *out, size_t size) {
  out[0] = '\0';
  for (const struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next)
    snprintf(out + strlen(out), size - strlen(out), "%s=%.8s|", kv->key,
             kv->value);
}

static int in_block(const net_fields *f, const void *p) {
  return (const char *)p >= f->block && (const char *)p < f->block + f->cap;
}

/* One block per message: fields are carved from it until it is full, then
 * allocated one by one (ASan's leak check sees a reset that forgets
 * them); removal unlinks every field of a name in any case and leaves the
 * list appendable; the target string is carved too. */
static void fields_in_one_block(void **state) {
  (void)state;
  static net_fields f;
  static _Alignas(void *) char block[1024];
  char text[512], big[2000];
  polite__net_fields_init(&f, block, sizeof block);
  memset(big, 'v', sizeof big);
  assert_int_equal(polite__net_fields_add(&f, "Host", 4, "a", 1), 0);
  char *target = polite__net_fields_str(&f, "/path?q=1", 5);
  assert_string_equal(target, "/path");
  assert_true(in_block(&f, target));
  assert_int_equal(polite__net_fields_add(&f, "X-Big", 5, big, sizeof big), 0);
  assert_int_equal(polite__net_fields_add(&f, "Content-Length", 14, "5", 1), 0);
  assert_int_equal(polite__net_fields_add(&f, "content-length", 14, "6", 1), 0);
  fields_text(&f.list, text, sizeof text);
  assert_string_equal(
      text, "Host=a|X-Big=vvvvvvvv|Content-Length=5|content-length=6|");
  assert_true(in_block(&f, f.list.tqh_first));
  assert_false(in_block(&f, f.list.tqh_first->next.tqe_next)); /* spilled */
  polite__net_fields_remove(&f, "CONTENT-LENGTH");
  assert_int_equal(polite__net_fields_add(&f, "Via", 3, "1.1 p", 5), 0);
  fields_text(&f.list, text, sizeof text);
  assert_string_equal(text, "Host=a|X-Big=vvvvvvvv|Via=1.1 p|");
  polite__net_fields_remove(&f, "X-Big");
  polite__net_fields_remove(&f, "Via"); /* the last one: tqh_last moves */
  assert_int_equal(polite__net_fields_add(&f, "Z", 1, "z", 1), 0);
  fields_text(&f.list, text, sizeof text);
  assert_string_equal(text, "Host=a|Z=z|");
  /* Fill the block: the fields that do not fit are allocated. */
  int n = 0;
  while (in_block(&f, f.list.tqh_last) || n < 3) {
    char name[16];
    snprintf(name, sizeof name, "F%d", n++);
    assert_int_equal(polite__net_fields_add(&f, name, strlen(name), big, 40),
                     0);
  }
  char *late = polite__net_fields_str(&f, big, 600);
  assert_false(in_block(&f, late));
  polite__net_fields_free_str(&f, late);
  polite__net_fields_free_str(&f, target); /* carved: a no-op */
  size_t count = 0;
  for (struct evkeyval *kv = f.list.tqh_first; kv; kv = kv->next.tqe_next)
    count++;
  assert_int_equal(count, 2 + (size_t)n);
  polite__net_fields_reset(&f);
  assert_null(f.list.tqh_first);
  assert_int_equal(f.used, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fixed_length),
      cmocka_unit_test(chunked_with_extensions_and_trailers),
      cmocka_unit_test(binary_body_with_nul_and_crlf),
      cmocka_unit_test(interim_responses_skipped),
      cmocka_unit_test(no_body_cases),
      cmocka_unit_test(close_delimited_and_keepalive),
      cmocka_unit_test(malformed_responses),
      cmocka_unit_test(head_size_is_bounded),
      cmocka_unit_test(request_heads),
      cmocka_unit_test(request_framing),
      cmocka_unit_test(request_head_end_is_incremental),
      cmocka_unit_test(request_header_count_is_bounded),
      cmocka_unit_test(request_bodies),
      cmocka_unit_test(fields_in_one_block),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
