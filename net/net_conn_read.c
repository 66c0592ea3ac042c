/* net/: a plain client's reads, raw: one read() per readable event into
 * the bufferevent's input, where bufferevent_socket asks ioctl(FIONREAD)
 * before each readv (one syscall more per request; the upstream side
 * already reads raw). The bufferevent still writes, and reads behind TLS
 * and in a tunnel. */
#include <sys/queue.h> /* before libevent: its TAILQ macros */

#include "net_conn.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <unistd.h>

size_t polite__net_conn_input_max(const net_conn *c) {
  return c->s->bounds.head.head_max + 65536;
}

/* One read() takes at most this; one of READ_BIG or more reads the next
 * straight into the input buffer. */
#define READ_MAX 16384
#define READ_BIG 4096

/* One read() straight into a READ_MAX chain reserved in `in`: no copy, but
 * a chain that size is a malloc from the slow bins, freed again once the
 * request is drained. For bodies and pipelines. */
static ssize_t read_into(struct evbuffer *in, evutil_socket_t fd, size_t want) {
  struct evbuffer_iovec v;
  if (evbuffer_reserve_space(in, (ev_ssize_t)want, &v, 1) < 1) {
    errno = ENOMEM;
    return -1;
  }
  ssize_t n = read(fd, v.iov_base, v.iov_len < want ? v.iov_len : want);
  v.iov_len = n > 0 ? (size_t)n : 0;
  evbuffer_commit_space(in, &v, n > 0 ? 1 : 0);
  return n;
}

/* One read() on the stack, then added to `in`: a request head of a few
 * hundred bytes costs a copy that size and a chain of 1 KiB (malloc's fast
 * path) instead of a 16 KiB one. */
static ssize_t read_copy(struct evbuffer *in, evutil_socket_t fd, size_t want) {
  char buf[READ_MAX];
  ssize_t n = read(fd, buf, want);
  if (n > 0 && evbuffer_add(in, buf, (size_t)n) != 0) {
    errno = ENOMEM;
    return -1;
  }
  return n;
}

/* A plain client's socket is readable: one read() into bev's input (at
 * most to its watermark), then what bufferevent's read callback or event
 * callback would do. Nothing touches c after those: they may free it. */
static void raw_read(evutil_socket_t fd, short what, void *arg) {
  (void)what;
  net_conn *c = arg;
  struct evbuffer *in = bufferevent_get_input(c->bev);
  size_t have = evbuffer_get_length(in), max = polite__net_conn_input_max(c);
  if (have >= max) {
    c->rev_full = 1; /* settle() reads again once process() drained it */
    event_del(c->rev);
    return;
  }
  size_t want = max - have < READ_MAX ? max - have : READ_MAX;
  /* A bufferevent keeps its input's end frozen but for its own reads. */
  evbuffer_unfreeze(in, 0);
  ssize_t n = c->rev_big ? read_into(in, fd, want) : read_copy(in, fd, want);
  c->rev_big = n >= READ_BIG;
  evbuffer_freeze(in, 0);
  if (n > 0) {
    polite__net_conn_on_read(c->bev, c);
    return;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return;
  event_del(c->rev); /* end of file or an error: nothing more to read */
  polite__net_conn_on_event(
      c->bev, BEV_EVENT_READING | (n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR),
      c);
}

void polite__net_conn_raw_stop(net_conn *c) {
  if (c->rev == NULL)
    return;
  event_free(c->rev);
  c->rev = NULL;
  c->rev_full = 0;
}

int polite__net_conn_raw_start(net_conn *c) {
  c->rev = event_new(c->s->base, bufferevent_getfd(c->bev),
                     EV_READ | EV_PERSIST, raw_read, c);
  if (c->rev && event_add(c->rev, NULL) == 0)
    return 0;
  polite__net_conn_raw_stop(c);
  return -1;
}

void polite__net_conn_raw_pause(net_conn *c) {
  if (c->rev)
    event_del(c->rev);
}

void polite__net_conn_raw_resume(net_conn *c) {
  if (c->rev && c->rev_full && c->state != C_CLOSING &&
      evbuffer_get_length(bufferevent_get_input(c->bev)) <
          polite__net_conn_input_max(c)) {
    c->rev_full = 0; /* drained below the watermark: read again */
    event_add(c->rev, NULL);
  }
}
