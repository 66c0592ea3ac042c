/* polite net: one name lookup with evdns that never blocks the loop and can
 * be cancelled whenever its asker goes away (the upstream pool's hosts, a
 * CONNECT tunnel's destination). */
#include "net_upstream.h"

#include <event2/dns.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The argument of the evdns callback: it outlives a cancelled lookup (the
 * callback then finds l NULL and only frees this). */
typedef struct ticket {
  net_lookup *l;
  struct evdns_getaddrinfo_request *req;
} ticket;

struct net_lookup {
  ticket *t;        /* in flight, or NULL once answered */
  struct event *ev; /* runs done from the loop */
  int rc;
  struct sockaddr_storage addr;
  socklen_t addrlen;
  net_lookup_cb done;
  void *arg;
};

/* evdns's answer; it may come before evdns_getaddrinfo returns (hosts
 * file, cache), so it is only stored here and done runs from the loop. */
static void answer(int rc, struct evutil_addrinfo *res, void *arg) {
  ticket *t = arg;
  net_lookup *l = t->l;
  if (l) {
    l->t = NULL;
    l->rc = rc != 0 ? rc : res == NULL ? EVUTIL_EAI_FAIL : 0;
    if (l->rc == 0 && res->ai_addrlen <= sizeof l->addr) {
      memcpy(&l->addr, res->ai_addr, res->ai_addrlen);
      l->addrlen = (socklen_t)res->ai_addrlen;
    } else if (l->rc == 0) {
      l->rc = EVUTIL_EAI_FAIL;
    }
    event_active(l->ev, EV_TIMEOUT, 1);
  }
  if (res)
    evutil_freeaddrinfo(res);
  free(t);
}

static void run_done(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  net_lookup *l = arg;
  net_lookup_cb done = l->done;
  void *darg = l->arg;
  int rc = l->rc;
  struct sockaddr_storage addr = l->addr;
  socklen_t len = l->addrlen;
  event_free(l->ev);
  free(l);
  done(darg, rc, rc == 0 ? (struct sockaddr *)&addr : NULL, len);
}

net_lookup *polite__net_lookup(struct event_base *base, struct evdns_base *dns,
                               const char *host, int port, net_lookup_cb done,
                               void *arg) {
  net_lookup *l = calloc(1, sizeof *l);
  ticket *t = calloc(1, sizeof *t);
  if (l)
    l->ev = event_new(base, -1, 0, run_done, l);
  if (l == NULL || t == NULL || l->ev == NULL) {
    if (l && l->ev)
      event_free(l->ev);
    free(l);
    free(t);
    return NULL;
  }
  l->done = done;
  l->arg = arg;
  t->l = l;
  l->t = t;
  char ps[16];
  snprintf(ps, sizeof ps, "%d", port);
  struct evutil_addrinfo hints = {0};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = EVUTIL_AI_ADDRCONFIG;
  struct evdns_getaddrinfo_request *r =
      evdns_getaddrinfo(dns, host, ps, &hints, answer, t);
  if (l->t == t) /* not answered yet: t is still ours to cancel */
    t->req = r;
  return l;
}

void polite__net_lookup_cancel(net_lookup *l) {
  if (l == NULL)
    return;
  if (l->t) {
    l->t->l = NULL; /* the callback frees the ticket */
    evdns_getaddrinfo_cancel(l->t->req);
  }
  event_free(l->ev);
  free(l);
}
