/* polite net: upstreams whose host name is resolved with evdns when the
 * first exchange starts (the forward proxy's pool), never blocking the loop,
 * and upstreams whose connections go elsewhere (--connect-to). */
#include "net_up_int.h"

#include <arpa/inet.h>
#include <event2/dns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

net_upstream *polite__net_up_new_dns(struct event_base *base,
                                     struct evdns_base *dns, const char *host,
                                     int port, SSL_CTX *tls, char *err,
                                     size_t errlen) {
  return polite__net_up_new_via(base, dns, host, port, host, port, tls, err,
                                errlen);
}

net_upstream *polite__net_up_new_via(struct event_base *base,
                                     struct evdns_base *dns, const char *host,
                                     int port, const char *dial_host,
                                     int dial_port, SSL_CTX *tls, char *err,
                                     size_t errlen) {
  net_upstream *u = polite__net_up_alloc(base, host, port, tls, err, errlen);
  if (u == NULL)
    return NULL;
  snprintf(u->dial, sizeof u->dial, "%s", dial_host);
  u->port = dial_port;
  if (strcmp(dial_host, host) != 0 || dial_port != port) {
    char w[300];
    snprintf(w, sizeof w, strchr(dial_host, ':') ? "[%s]:%d" : "%s:%d",
             dial_host, dial_port);
    size_t n = strlen(u->where);
    snprintf(u->where + n, sizeof u->where - n, " (via %s)", w);
  }
  unsigned char bin[16];
  if (dns == NULL || inet_pton(AF_INET, dial_host, bin) == 1 ||
      inet_pton(AF_INET6, dial_host, bin) == 1) {
    if (polite__net_up_resolve_now(u, err, errlen) < 0) {
      polite__net_up_free(u);
      return NULL;
    }
    return u;
  }
  u->dns = dns;
  u->dns_ev = event_new(base, -1, 0, polite__net_up_dns_done, u);
  if (u->dns_ev == NULL) {
    snprintf(err, errlen, "out of memory");
    polite__net_up_free(u);
    return NULL;
  }
  return u;
}

/* evdns's answer. It may come before evdns_getaddrinfo returns (hosts file,
 * cache), so the queue is run from dns_ev, never from here: a failure then
 * reaches on_done from the loop, not from inside polite__net_up_send. */
static void dns_answer(int rc, struct evutil_addrinfo *res, void *arg) {
  dns_ticket *t = arg;
  net_upstream *u = t->u;
  if (u) {
    u->lookup = NULL;
    u->dns_rc = rc != 0 ? rc : res == NULL ? EVUTIL_EAI_FAIL : 0;
    if (u->dns_rc == 0 && res->ai_addrlen <= sizeof u->addr) {
      memcpy(&u->addr, res->ai_addr, res->ai_addrlen);
      u->addrlen = (socklen_t)res->ai_addrlen;
    } else if (u->dns_rc == 0) {
      u->dns_rc = EVUTIL_EAI_FAIL;
    }
    u->dns_ready = 1;
    event_active(u->dns_ev, EV_TIMEOUT, 1);
  }
  if (res)
    evutil_freeaddrinfo(res);
  free(t);
}

int polite__net_up_queue(net_upstream *u, exch *x, struct evbuffer *req) {
  if (x->held == NULL && (x->held = evbuffer_new()) == NULL) {
    polite__net_up_set_error(u, "out of memory");
    return -1;
  }
  evbuffer_add_buffer(x->held, req);
  x->c = NULL;
  x->qnext = NULL;
  *u->queue_tail = x;
  u->queue_tail = &x->qnext;
  if (u->lookup || u->dns_ready)
    return 0; /* an answer is on its way, for the whole queue */
  dns_ticket *t = calloc(1, sizeof *t);
  if (t == NULL) {
    u->dns_rc = EVUTIL_EAI_MEMORY;
    u->dns_ready = 1;
    event_active(u->dns_ev, EV_TIMEOUT, 1);
    return 0;
  }
  t->u = u;
  u->lookup = t;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", u->port);
  struct evutil_addrinfo hints = {0};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = EVUTIL_AI_ADDRCONFIG;
  struct evdns_getaddrinfo_request *r =
      evdns_getaddrinfo(u->dns, u->dial, ps, &hints, dns_answer, t);
  if (u->lookup == t) /* not answered yet: t is still ours to cancel */
    t->req = r;
  return 0;
}

/* Runs the exchanges that waited for the address, or fails them all. */
void polite__net_up_dns_done(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  net_upstream *u = arg;
  u->dns_ready = 0;
  u->resolved = u->dns_rc == 0;
  exch *q = u->queue;
  u->queue = NULL;
  u->queue_tail = &u->queue;
  int rc = u->dns_rc;
  u->dns_rc = 0; /* a failed lookup is tried again by the next exchange */
  while (q) {
    exch *x = q;
    q = x->qnext;
    struct evbuffer *req = x->held;
    x->held = NULL;
    if (rc != 0)
      polite__net_up_set_error(u, "cannot resolve the host: %s",
                               evutil_gai_strerror(rc));
    if (rc != 0 || polite__net_up_start(u, x, req) != 0) {
      const net_up_handler *h = x->h;
      void *harg = x->arg;
      polite__net_up_exch_free(x);
      u->active--;
      h->on_done(harg, 0);
    }
    evbuffer_free(req);
  }
}
