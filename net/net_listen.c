/* polite net: the event base, the listening socket of a server, and what
 * it does when the process runs out of descriptors. */
#define _GNU_SOURCE
#include "net_conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

struct event_base *polite__net_base_new(void) {
  struct event_base *base = NULL;
  struct event_config *cfg = event_config_new();
  if (cfg) {
    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    /* Timers to the microsecond (epoll's own timeout is whole ms, rounded
     * up): a wake-up for a budget's next start came up to 1 ms late, past
     * the Redis budget's 1 ms catch-up slack, and two gateways on one
     * budget started 3-5% below the shared rate. */
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    base = event_base_new_with_config(cfg);
    event_config_free(cfg);
  }
  return base ? base : event_base_new();
}

int polite__net_event_add_ms(struct event_base *base, struct event *ev,
                             int ms) {
  struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
  /* The base keeps one queue per duration (found by a walk of the few it
   * has: a handful of fixed bounds), up to libevent's 256. */
  const struct timeval *common = event_base_init_common_timeout(base, &tv);
  return event_add(ev, common ? common : &tv);
}

/* Out of descriptors (EMFILE/ENFILE): stop accepting for 100 ms instead of
 * spinning on a listener that stays readable, and say so once a second. */
static void accept_error(struct evconnlistener *l, void *arg) {
  net_server *s = arg;
  int err = EVUTIL_SOCKET_ERROR();
  int64_t now = polite_env_mono_us(s->env) / 1000;
  if (now - s->accept_warned_ms >= 1000) {
    fprintf(stderr,
            "polite: cannot accept connections: %s; retrying in 100 ms\n",
            strerror(err));
    s->accept_warned_ms = now;
  }
  struct timeval tv = {0, 100000};
  if (s->resume && evconnlistener_disable(l) == 0)
    event_add(s->resume, &tv);
}

static void resume_accept(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  net_server *s = arg;
  evconnlistener_enable(s->listener);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *addr, int addrlen, void *arg) {
  (void)l;
  (void)addrlen;
  polite__net_conn_accept(arg, fd, addr);
}

/* "ADDR:PORT" of a bound socket (IPv6 bracketed) into out. */
static void bound_name(int fd, char *out, size_t size) {
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  /* Zeroed first: if getsockname fails the family reads as AF_UNSPEC and
     the "?" address is shown, not stack garbage. */
  memset(&ss, 0, sizeof ss);
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  char addr[INET6_ADDRSTRLEN] = "?";
  snprintf(out, size, "?");
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &in4->sin_addr, addr, sizeof addr);
    snprintf(out, size, "%s:%d", addr, ntohs(in4->sin_port));
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof addr);
    snprintf(out, size, "[%s]:%d", addr, ntohs(in6->sin6_port));
  }
}

/* A bound, listening socket for where, or -1 with err. */
static int bind_socket(const char *where, char *err, size_t errlen) {
  char host[256];
  const char *colon = strrchr(where, ':');
  size_t hl = colon ? (size_t)(colon - where) : 0;
  if (colon == NULL || hl >= sizeof host) {
    snprintf(err, errlen, "%s: expected ADDR:PORT", where);
    return -1;
  }
  memcpy(host, where, hl);
  host[hl] = '\0';
  char *h = host;
  if (h[0] == '[' && hl > 1 && h[hl - 1] == ']') {
    h[hl - 1] = '\0';
    h++;
  }
  struct addrinfo hints = {0}, *ai = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  int rc = getaddrinfo(h, colon + 1, &hints, &ai);
  if (rc != 0) {
    snprintf(err, errlen, "%s: %s", where, gai_strerror(rc));
    return -1;
  }
  int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int one = 1;
  /* TCP_NODELAY on the listener is inherited by accepted sockets (Linux): a
   * response may leave in two writes (headers, then a streamed body), and
   * Nagle plus the client's delayed ACK would add 40 ms. */
  if (fd >= 0)
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (fd < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
      bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 4096) < 0) {
    snprintf(err, errlen, "cannot listen on %s: %s", where, strerror(errno));
    if (fd >= 0)
      close(fd);
    freeaddrinfo(ai);
    return -1;
  }
  freeaddrinfo(ai);
  return fd;
}

/* Opens the listening socket ourselves (rather than evconnlistener_new_bind)
 * to get a deep backlog for a thousand simultaneous connects and to learn the
 * port when 0 was asked for. Resolving the address once at start may block:
 * nothing else runs yet. */
int polite__net_listen(net_server *s, const char *where, char *bound,
                       size_t boundlen, char *err, size_t errlen) {
  int fd = bind_socket(where, err, errlen);
  if (fd < 0)
    return -1;
  bound_name(fd, bound, boundlen);
  s->listener =
      evconnlistener_new(s->base, on_accept, s,
                         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
  if (s->listener == NULL) {
    snprintf(err, errlen, "cannot accept on %s", where);
    close(fd);
    return -1;
  }
  s->resume = event_new(s->base, -1, 0, resume_accept, s);
  evconnlistener_set_error_cb(s->listener, accept_error);
  return 0;
}

void polite__net_unlisten(net_server *s) {
  if (s->listener)
    evconnlistener_free(s->listener);
  s->listener = NULL;
  if (s->resume)
    event_del(s->resume);
}

size_t polite__net_fit_conns(size_t want_conns, unsigned spare,
                             const char *who) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
    return want_conns;
  rlim_t want = (rlim_t)want_conns * 2 + spare;
  if (rl.rlim_cur < want && rl.rlim_max > rl.rlim_cur) {
    rlim_t was = rl.rlim_cur;
    rl.rlim_cur =
        rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
      rl.rlim_cur = was;
  }
  if (rl.rlim_cur >= want)
    return want_conns;
  size_t fit = rl.rlim_cur > 2 * (rlim_t)spare
                   ? (size_t)(rl.rlim_cur - spare) / 2
                   : (size_t)spare / 2;
  fprintf(stderr,
          "%s: --max-connections %zu lowered to %zu: the process may open "
          "%llu descriptors (ulimit -n), two per connection\n",
          who, want_conns, fit, (unsigned long long)rl.rlim_cur);
  return fit;
}
