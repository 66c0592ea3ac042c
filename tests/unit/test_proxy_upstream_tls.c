/* Tests of the upstream pool over TLS in one event loop: a TLS server on
 * 127.0.0.1 presenting a leaf from the local CA, reached through
 * polite__net_up_pool_get (proxy/net_up_pool.c, net_upstream.c, net_ca.c). */
/* The code under test first: it sets _GNU_SOURCE, and cmocka's fail()
 * macro would clash with net_upstream.c's fail(). */
#include "net_ca.c"
#include "net_http.c"
#include "net_tls.c"
#include "net_up_pool.c"
#include "net_up_dns.c"
#include "net_upstream.c"

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
  net_upstream *up;
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
    snprintf(r->err, sizeof r->err, "%s", polite__net_up_error(r->up));
  event_base_loopbreak(r->base);
}

static const net_up_handler handler = {on_head, on_body, on_done, NULL};

static void give_up(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  event_base_loopbreak(arg);
}

/* Runs the loop until a callback breaks it or secs pass. The limit is a
 * timer of its own, removed on return: a loopexit left behind by a loop
 * that a callback ended first would end the next one early (after 1 s,
 * while a lookup still waited for a slow nameserver). */
static void run_for(struct event_base *base, int secs) {
  struct event *limit = evtimer_new(base, give_up, base);
  assert_non_null(limit);
  struct timeval t = {secs, 0};
  evtimer_add(limit, &t);
  event_base_dispatch(base);
  event_free(limit);
}

/* Sends GET / on up and runs the loop until it ends (at most 15 s). */
static void exchange(struct event_base *base, net_upstream *up, result *r) {
  memset(r, 0, sizeof *r);
  r->base = base;
  r->up = up;
  struct evbuffer *req = evbuffer_new();
  evbuffer_add_printf(req, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_non_null(polite__net_up_send(up, req, 0, 1, &handler, r));
  evbuffer_free(req);
  run_for(base, 15);
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
  net_ca *ca = NULL;
  char d[300];
  snprintf(d, sizeof d, "%s/ca", tmpdir);
  assert_int_equal(polite__net_ca_open(d, 1, &ca, err, sizeof err), 0);
  server s = {0};
  s.base = event_base_new();
  /* A plain server context from an issued leaf for 127.0.0.1 (not the
   * CA's own contexts, which would switch certificates on SNI). */
  char cp[400], kp[400];
  snprintf(cp, sizeof cp, "%s/leaf.pem", tmpdir);
  snprintf(kp, sizeof kp, "%s/leaf.key", tmpdir);
  assert_int_equal(
      polite__net_ca_issue(ca, "127.0.0.1", cp, kp, err, sizeof err), 0);
  s.sctx = SSL_CTX_new(TLS_server_method());
  assert_int_equal(SSL_CTX_use_certificate_chain_file(s.sctx, cp), 1);
  assert_int_equal(SSL_CTX_use_PrivateKey_file(s.sctx, kp, SSL_FILETYPE_PEM),
                   1);
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
  net_up_pool *pool =
      polite__net_up_pool_new(s.base, polite__net_ca_cert_path(ca), 0, NULL);
  net_upstream *up =
      polite__net_up_pool_get(pool, 1, "127.0.0.1", s.port, err, sizeof err);
  assert_non_null(up);
  assert_ptr_equal(
      polite__net_up_pool_get(pool, 1, "127.0.0.1", s.port, err, sizeof err),
      up);
  net_upstream *plain =
      polite__net_up_pool_get(pool, 0, "127.0.0.1", s.port, err, sizeof err);
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
  assert_int_equal(polite__net_up_active(up), 0);
  /* A new connection (the idle one dropped) resumes the TLS session. */
  assert_non_null(up->idle);
  assert_non_null(up->session);
  conn_close(up->idle);
  exchange(s.base, up, &r);
  assert_true(r.ok);
  assert_int_equal(s.accepted, 2);
  assert_non_null(up->idle);
  assert_int_equal(SSL_session_reused(up->idle->ssl), 1);
  polite__net_up_pool_free(pool);
  settle(s.base);

  /* The system store does not know the local CA: refused, with the reason. */
  pool = polite__net_up_pool_new(s.base, NULL, 0, NULL);
  up = polite__net_up_pool_get(pool, 1, "127.0.0.1", s.port, err, sizeof err);
  assert_non_null(up);
  exchange(s.base, up, &r);
  assert_false(r.ok);
  assert_non_null(strstr(r.err, "certificate verify failed"));
  assert_non_null(strstr(r.err, "127.0.0.1:"));
  polite__net_up_pool_free(pool);
  settle(s.base);

  /* A name the certificate does not carry: refused as a mismatch. */
  pool = polite__net_up_pool_new(s.base, polite__net_ca_cert_path(ca), 0, NULL);
  up = polite__net_up_pool_get(pool, 1, "localhost", s.port, err, sizeof err);
  assert_non_null(up);
  exchange(s.base, up, &r);
  assert_false(r.ok);
  assert_non_null(strstr(r.err, "name mismatch"));
  polite__net_up_pool_free(pool);
  settle(s.base);

  evconnlistener_free(l);
  SSL_CTX_free(s.sctx);
  event_base_free(s.base);
  polite__net_ca_free(ca);
}

/* A plain HTTP server for the name tests: the same fixed answer. */
static void plain_accept(struct evconnlistener *l, evutil_socket_t fd,
                         struct sockaddr *sa, int len, void *arg) {
  (void)l;
  (void)sa;
  (void)len;
  server *s = arg;
  s->accepted++;
  struct bufferevent *bev =
      bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
  bufferevent_setcb(bev, srv_read, NULL, srv_event, s);
  bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/* A nameserver on 127.0.0.1 that answers every question NXDOMAIN (with
 * libevent's own evdns server), and an evdns base that asks only it. */
typedef struct {
  evutil_socket_t fd;
  struct evdns_server_port *port;
  struct evdns_base *dns;
  int asked; /* questions answered (an A, and an AAAA with an IPv6 route) */
} nxdomain_server;

static void nxdomain_answer(struct evdns_server_request *req, void *arg) {
  ((nxdomain_server *)arg)->asked++;
  evdns_server_request_respond(req, DNS_ERR_NOTEXIST);
}

static void nxdomain_start(struct event_base *base, nxdomain_server *nx) {
  memset(nx, 0, sizeof *nx);
  nx->fd = socket(AF_INET, SOCK_DGRAM, 0);
  assert_true(nx->fd >= 0);
  struct sockaddr_in sin = {0};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(nx->fd, (struct sockaddr *)&sin, sizeof sin), 0);
  socklen_t sl = sizeof sin;
  assert_int_equal(getsockname(nx->fd, (struct sockaddr *)&sin, &sl), 0);
  assert_int_equal(evutil_make_socket_nonblocking(nx->fd), 0);
  nx->port =
      evdns_add_server_port_with_base(base, nx->fd, 0, nxdomain_answer, nx);
  assert_non_null(nx->port);
  nx->dns = evdns_base_new(base, 0);
  assert_non_null(nx->dns);
  assert_int_equal(evdns_base_nameserver_sockaddr_add(
                       nx->dns, (struct sockaddr *)&sin, sizeof sin, 0),
                   0);
}

static void nxdomain_stop(nxdomain_server *nx) {
  evdns_close_server_port(nx->port);
  evutil_closesocket(nx->fd);
}

static void pool_resolves_names_without_blocking(void **state) {
  (void)state;
  char err[512] = "";
  server s = {0};
  s.base = event_base_new();
  struct sockaddr_in sin = {0};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct evconnlistener *l = evconnlistener_new_bind(
      s.base, plain_accept, &s, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
      (struct sockaddr *)&sin, sizeof sin);
  assert_non_null(l);
  struct sockaddr_in bound;
  socklen_t bl = sizeof bound;
  getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&bound, &bl);
  int port = ntohs(bound.sin_port);
  net_up_pool *pool = polite__net_up_pool_new(s.base, NULL, 0, NULL);
  /* localhost comes from the hosts file, through evdns: not resolved until
   * the first exchange, which waits for it. */
  net_upstream *up =
      polite__net_up_pool_get(pool, 0, "localhost", port, err, sizeof err);
  assert_non_null(up);
  assert_false(up->resolved);
  result r;
  exchange(s.base, up, &r);
  assert_true(r.ok);
  assert_int_equal(r.status, 200);
  assert_true(up->resolved);
  exchange(s.base, up, &r);
  assert_true(r.ok);
  assert_int_equal(s.accepted, 1);
  assert_ptr_equal(
      polite__net_up_pool_get(pool, 0, "LOCALHOST", port, err, sizeof err), up);
  /* Two exchanges queued behind one lookup (a new pool: nothing resolved)
   * both run, on two connections. */
  net_up_pool *pool2 = polite__net_up_pool_new(s.base, NULL, 0, NULL);
  net_upstream *fresh =
      polite__net_up_pool_get(pool2, 0, "localhost", port, err, sizeof err);
  result r1 = {0}, r2 = {0};
  r1.base = r2.base = s.base;
  r1.up = r2.up = fresh;
  for (int i = 0; i < 2; i++) {
    struct evbuffer *req = evbuffer_new();
    evbuffer_add_printf(req, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_non_null(
        polite__net_up_send(fresh, req, 0, 1, &handler, i ? &r2 : &r1));
    evbuffer_free(req);
  }
  assert_false(fresh->resolved);
  for (int i = 0; i < 2 && !(r1.done && r2.done); i++)
    run_for(s.base, 15);
  assert_true(r1.ok && r2.ok);
  assert_int_equal(r1.status, 200);
  assert_int_equal(r2.status, 200);
  assert_int_equal(s.accepted, 3);
  polite__net_up_pool_free(pool2);
  /* A name that does not resolve fails the exchange, saying so. The
   * answer comes from a nameserver of the test's own (NXDOMAIN at once),
   * not the machine's, which may be slow or absent (10 s of evdns
   * timeouts, longer than the exchange's limit on a loaded machine). */
  nxdomain_server nx;
  nxdomain_start(s.base, &nx);
  net_up_pool *pool3 = polite__net_up_pool_new(s.base, NULL, 0, NULL);
  pool3->dns = nx.dns; /* the pool frees it */
  net_upstream *bad = polite__net_up_pool_get(pool3, 1, "no-such-host.invalid",
                                              443, err, sizeof err);
  assert_non_null(bad);
  exchange(s.base, bad, &r);
  assert_false(r.ok);
  assert_non_null(strstr(r.err, "cannot resolve the host"));
  assert_non_null(strstr(r.err, "no-such-host.invalid:443"));
  assert_int_equal(polite__net_up_active(bad), 0);
  assert_true(nx.asked >= 1); /* ours, not the machine's nameserver */
  polite__net_up_pool_free(pool3);
  nxdomain_stop(&nx);
  polite__net_up_pool_free(pool);
  settle(s.base);
  evconnlistener_free(l);
  event_base_free(s.base);
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
      cmocka_unit_test(pool_resolves_names_without_blocking),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
