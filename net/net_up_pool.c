/* polite net: the upstreams a forward proxy reaches, one per scheme, host
 * and port, each with its own keep-alive connections. */
#include "net_tls.h"
#include "net_upstream.h"

#include <event2/dns.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct pool_entry {
  int https;
  int port;
  char host[256];
  net_upstream *up;
  struct pool_entry *next; /* most recently used first */
} pool_entry;

struct net_up_pool {
  struct event_base *base;
  char *cafile;
  int insecure;
  SSL_CTX *tls;           /* made on the first https upstream */
  struct evdns_base *dns; /* made on the first host name */
  int dns_failed;         /* evdns could not start: resolve with getaddrinfo */
  const net_connect_to *cto;
  pool_entry *list;
  size_t n;
};

net_up_pool *polite__net_up_pool_new(struct event_base *base,
                                     const char *cafile, int insecure,
                                     const net_connect_to *cto) {
  net_up_pool *p = calloc(1, sizeof *p);
  if (p == NULL)
    return NULL;
  p->base = base;
  p->insecure = insecure;
  p->cto = cto;
  if (cafile && (p->cafile = strdup(cafile)) == NULL) {
    free(p);
    return NULL;
  }
  return p;
}

void polite__net_up_pool_free(net_up_pool *p) {
  if (p == NULL)
    return;
  while (p->list) {
    pool_entry *e = p->list;
    p->list = e->next;
    polite__net_up_free(e->up);
    free(e);
  }
  SSL_CTX_free(p->tls);
  if (p->dns)
    evdns_base_free(p->dns, 0); /* the upstreams cancelled their lookups */
  free(p->cafile);
  free(p);
}

/* Drops the least recently used upstream with nothing in flight. Returns 0,
 * or -1 when every one is busy. */
static int evict_one(net_up_pool *p) {
  pool_entry **victim = NULL;
  for (pool_entry **pp = &p->list; *pp; pp = &(*pp)->next)
    if (polite__net_up_active((*pp)->up) == 0)
      victim = pp;
  if (victim == NULL)
    return -1;
  pool_entry *e = *victim;
  *victim = e->next;
  polite__net_up_free(e->up);
  free(e);
  p->n--;
  return 0;
}

net_upstream *polite__net_up_pool_get(net_up_pool *p, int https,
                                      const char *host, int port, char *err,
                                      size_t errlen) {
  char h[256];
  size_t hl = strlen(host);
  if (hl >= sizeof h || hl == 0) {
    snprintf(err, errlen, "bad upstream host name");
    return NULL;
  }
  /* Sockets and certificates want IPv6 literals bare. */
  if (hl > 2 && host[0] == '[' && host[hl - 1] == ']') {
    memcpy(h, host + 1, hl - 2);
    h[hl - 2] = '\0';
  } else {
    memcpy(h, host, hl + 1);
  }
  https = https != 0;
  for (pool_entry **pp = &p->list; *pp; pp = &(*pp)->next) {
    pool_entry *e = *pp;
    if (e->https == https && e->port == port && strcasecmp(e->host, h) == 0) {
      *pp = e->next; /* move to the front */
      e->next = p->list;
      p->list = e;
      return e->up;
    }
  }
  if (https && p->tls == NULL &&
      (p->tls = polite__net_tls_client_ctx(p->cafile, p->insecure, err,
                                           errlen)) == NULL)
    return NULL;
  if (p->n >= NET_UP_POOL_MAX && evict_one(p) < 0) {
    snprintf(err, errlen, "too many upstream hosts in use at once (%d)",
             NET_UP_POOL_MAX);
    return NULL;
  }
  pool_entry *e = calloc(1, sizeof *e);
  if (e == NULL) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  char dial[256];
  int dial_port = port;
  polite__net_connect_to_map(p->cto, h, port, dial, sizeof dial, &dial_port);
  e->up =
      polite__net_up_new_via(p->base, polite__net_up_pool_dns(p), h, port, dial,
                             dial_port, https ? p->tls : NULL, err, errlen);
  if (e->up == NULL) {
    free(e);
    return NULL;
  }
  e->https = https;
  e->port = port;
  memcpy(e->host, h, strlen(h) + 1);
  e->next = p->list;
  p->list = e;
  p->n++;
  return e->up;
}

struct evdns_base *polite__net_up_pool_dns(net_up_pool *p) {
  if (p->dns == NULL && !p->dns_failed) {
    /* Only nameservers and the hosts file: no search domains to try. */
    p->dns = evdns_base_new(p->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                         EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (p->dns) {
      evdns_base_set_option(p->dns, "timeout:", "5");
      evdns_base_set_option(p->dns, "attempts:", "2");
    }
    p->dns_failed = p->dns == NULL;
  }
  return p->dns;
}
