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
  return u;
}

/* The lookup's answer (from the loop): the exchanges that waited for the
 * address start, or all fail. A failed lookup is tried again by the next
 * exchange. */
static void resolved(void *arg, int rc, const struct sockaddr *addr,
                     socklen_t len) {
  net_upstream *u = arg;
  u->lookup = NULL;
  if (rc == 0 && len <= sizeof u->addr) {
    memcpy(&u->addr, addr, len);
    u->addrlen = len;
  } else if (rc == 0) {
    rc = EVUTIL_EAI_FAIL;
  }
  u->resolved = rc == 0;
  exch *q = u->queue;
  u->queue = NULL;
  u->queue_tail = &u->queue;
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
  if (u->lookup)
    return 0; /* an answer is on its way, for the whole queue */
  u->lookup =
      polite__net_lookup(u->base, u->dns, u->dial, u->port, resolved, u);
  if (u->lookup == NULL) {
    /* With no lookup in flight x was alone in the queue: take it back. */
    polite__net_up_set_error(u, "out of memory");
    u->queue = NULL;
    u->queue_tail = &u->queue;
    return -1;
  }
  return 0;
}
