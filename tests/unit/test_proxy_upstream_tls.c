/* Tests of the upstream pool over TLS in one event loop: a TLS server on
 * 127.0.0.1 presenting a leaf from the local CA, reached through
 * polite__px_up_pool_get (proxy/px_up_pool.c, px_upstream.c, px_ca.c). */
/* The code under test first: it sets _GNU_SOURCE, and cmocka's fail()
 * macro would clash with px_upstream.c's fail(). */
#include "px_ca.c"
#include "px_http.c"
#include "px_tls.c"
#include "px_up_pool.c"
#include "px_upstream.c"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char tmpdir[256];

typedef struct {
  struct event_base *base;
  SSL_CTX *sctx;
  int accepted;
  int port;
} server;

/* Answers every request head with a fixed 200 (keep-alive). */
static void srv_read(struct bufferevent *bev, void *arg) {
  (void)arg;
  struct evbuffer *in = bufferevent_get_input(bev);
  struct evbuffer_ptr end;
  while ((end = evbuffer_search(in, "\r\n\r\n", 4, NULL)).pos >= 0) {
    evbuffer_drain(in, (size_t)end.pos + 4);
    bufferevent_write(
        bev, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello tls\r\n", 50);
  }
}

static void srv_event(struct bufferevent *bev, short what, void *arg) {
  (void)arg;
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
    bufferevent_free(bev);
}

static void srv_accept(struct evconnlistener *l, evutil_socket_t fd,
                       struct sockaddr *sa, int len, void *arg) {
  (void)l;
  (void)sa;
  (void)len;
  server *s = arg;
  s->accepted++;
  SSL *ssl = SSL_new(s->sctx);
  struct bufferevent *bev = bufferevent_openssl_socket_new(
      s->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
  bufferevent_setcb(bev, srv_read, NULL, srv_event, s);
  bufferevent_enable(bev, EV_READ | EV_WRITE);
}

typedef struct {
  struct event_base *base;
  int status;
  int done, ok;
  char body[64];
  size_t blen;
  char err[512];
  px_upstream *up;
} result;

static void on_head(void *arg, int status, const char *reason, int minor,
                    struct evkeyvalq *h) {
  (void)reason;
  (void)minor;
  (void)h;
  ((result *)arg)->status = status;
}

static void on_body(void *arg, struct evbuffer *data) {
  result *r = arg;
  size_t n = evbuffer_get_length(data);
  if (r->blen + n < sizeof r->body)
    evbuffer_remove(data, r->body + r->blen, n);
  r->blen += n;
}

static void on_done(void *arg, int ok) {
  result *r = arg;
  r->done = 1;
  r->ok = ok;
  if (!ok)
    snprintf(r->err, sizeof r->err, "%s", polite__px_up_error(r->up));
  event_base_loopbreak(r->base);
}

static const px_up_handler handler = {on_head, on_body, on_done, NULL};

/* Sends GET / on up and runs the loop until it ends (at most 15 s). */
static void exchange(struct event_base *base, px_upstream *up, result *r) {
  memset(r, 0, sizeof *r);
  r->base = base;
  r->up = up;
  struct evbuffer *req = evbuffer_new();
  evbuffer_add_printf(req, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(polite__px_up_send(up, req, 0, 1, &handler, r), 0);
  evbuffer_free(req);
  struct timeval limit = {15, 0};
  event_base_loopexit(base, &limit);
  event_base_dispatch(base);
  assert_true(r->done);
}

/* Lets the server see its clients' connections close (and free them). */
static void settle(struct event_base *base) {
  struct timeval t = {0, 100000};
  event_base_loopexit(base, &t);
  event_base_dispatch(base);
}

static void pool_reaches_a_tls_server_and_reuses(void **state) {
  (void)state;
  char err[512];
  px_ca *ca = NULL;
  char d[300];
  snprintf(d, sizeof d, "%s/ca", tmpdir);
  assert_int_equal(polite__px_ca_open(d, 1, &ca, err, sizeof err), 0);
  server s = {0};
  s.base = event_base_new();
  s.sctx = polite__px_ca_ctx_for(ca, "127.0.0.1", err, sizeof err);
  assert_non_null(s.sctx);
  struct sockaddr_in sin = {0};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct evconnlistener *l = evconnlistener_new_bind(
      s.base, srv_accept, &s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
      (struct sockaddr *)&sin, sizeof sin);
  assert_non_null(l);
  struct sockaddr_in bound;
  socklen_t bl = sizeof bound;
  getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&bound, &bl);
  s.port = ntohs(bound.sin_port);

  /* Trusting the local CA: 200, twice on one connection. */
  px_up_pool *pool =
      polite__px_up_pool_new(s.base, polite__px_ca_cert_path(ca), 0);
  px_upstream *up =
      polite__px_up_pool_get(pool, 1, "127.0.0.1", s.port, err, sizeof err);
  assert_non_null(up);
  assert_ptr_equal(
      polite__px_up_pool_get(pool, 1, "127.0.0.1", s.port, err, sizeof err),
      up);
  px_upstream *plain =
      polite__px_up_pool_get(pool, 0, "127.0.0.1", s.port, err, sizeof err);
  assert_non_null(plain);
  assert_ptr_not_equal(plain, up);
  result r;
  exchange(s.base, up, &r);
  assert_true(r.ok);
  assert_int_equal(r.status, 200);
  assert_int_equal(r.blen, 11);
  assert_memory_equal(r.body, "hello tls\r\n", 11);
  exchange(s.base, up, &r);
  assert_true(r.ok);
  assert_int_equal(s.accepted, 1);
  assert_int_equal(polite__px_up_active(up), 0);
  polite__px_up_pool_free(pool);
  settle(s.base);

  /* The system store does not know the local CA: refused, with the reason. */
  pool = polite__px_up_pool_new(s.base, NULL, 0);
  up = polite__px_up_pool_get(pool, 1, "127.0.0.1", s.port, err, sizeof err);
  assert_non_null(up);
  exchange(s.base, up, &r);
  assert_false(r.ok);
  assert_non_null(strstr(r.err, "certificate verify failed"));
  assert_non_null(strstr(r.err, "127.0.0.1:"));
  polite__px_up_pool_free(pool);
  settle(s.base);

  /* A name the certificate does not carry: refused as a mismatch. */
  pool = polite__px_up_pool_new(s.base, polite__px_ca_cert_path(ca), 0);
  up = polite__px_up_pool_get(pool, 1, "localhost", s.port, err, sizeof err);
  assert_non_null(up);
  exchange(s.base, up, &r);
  assert_false(r.ok);
  assert_non_null(strstr(r.err, "name mismatch"));
  polite__px_up_pool_free(pool);
  settle(s.base);

  evconnlistener_free(l);
  event_base_free(s.base);
  polite__px_ca_free(ca);
}

static void pool_reports_unresolvable_hosts(void **state) {
  (void)state;
  char err[512] = "";
  struct event_base *base = event_base_new();
  px_up_pool *pool = polite__px_up_pool_new(base, NULL, 0);
  assert_null(polite__px_up_pool_get(pool, 1, "no-such-host.invalid", 443, err,
                                     sizeof err));
  assert_non_null(strstr(err, "no-such-host.invalid"));
  polite__px_up_pool_free(pool);
  event_base_free(base);
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/polite-uptls-test-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pool_reaches_a_tls_server_and_reuses),
      cmocka_unit_test(pool_reports_unresolvable_hosts),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
