/* polite net: warm upstream connections, opened ahead of requests that
 * wait for their time (a paced start sends at once, not a connect later). */
#include "net_up_int.h"

#include <event2/event.h>

/* The deferred check: spare connections for the requests announced. */
static void on_warm(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  net_upstream *u = arg;
  if (!u->resolved)
    return; /* the first exchange starts the lookup; nothing to dial yet */
  unsigned want =
      u->expected < NET_UP_SPARE_MAX ? u->expected : NET_UP_SPARE_MAX;
  while (u->n_idle < want && u->n_idle < NET_UP_IDLE_MAX) {
    upconn *c = polite__net_up_conn_new(u);
    if (c == NULL)
      return; /* the request will try (and report) its own connect */
    /* Idle before its first use, like a kept-alive one: the upstream may
     * close it first, and then the request is sent again once. */
    c->reused = 1;
    polite__net_up_idle_push(c);
    polite__net_up_arm(c);
    event_add(c->wev, NULL); /* on_write sees the connect end */
  }
}

void polite__net_up_expect(net_upstream *u, int delta) {
  if (delta < 0 && u->expected < (unsigned)-delta)
    u->expected = 0;
  else
    u->expected = (unsigned)((int)u->expected + delta);
  if (u->expected == 0)
    return;
  if (u->warm_ev == NULL &&
      (u->warm_ev = event_new(u->base, -1, 0, on_warm, u)) == NULL)
    return; /* out of memory: requests connect when they are sent */
  event_active(u->warm_ev, EV_TIMEOUT, 1);
}
