/* polite net: one client connection and the server that holds it, shared by
 * the HTTP/1.1 server (net_server.c), the listener (net_listen.c) and
 * CONNECT (net_connect.c); private to net/. */
#ifndef POLITE_NET_CONN_H
#define POLITE_NET_CONN_H

#include "net_server.h"

#include <event2/bufferevent.h>
#include <event2/listener.h>

struct net_server {
  struct event_base *base;
  net_bounds bounds;
  net_server_cb cb;
  void *ud;
  const polite_env *env;
  struct evconnlistener *listener;
  struct event *resume; /* re-enables accepting after EMFILE */
  int64_t accept_warned_ms;
  net_conn *conns, *conns_tail; /* every client connection, oldest first */
  size_t nconns;
  uint64_t shed; /* connections closed to make room for new ones */
  int quiesced;  /* stopping: every answer ends its connection */
  char date[40]; /* the Date header's value, made once per second */
  int64_t date_s;
};

typedef enum {
  C_HEAD,    /* reading a request head (or idle between requests) */
  C_BODY,    /* reading the body of c->cur */
  C_WAIT,    /* c->cur is being answered by the owner */
  C_CLOSING, /* the last answer is being flushed, then close */
  C_SNIFF,   /* CONNECT intercepted: TLS or plain HTTP? (net_connect.c) */
  C_TUNNEL,  /* CONNECT: bytes relayed to c->dest (net_connect.c) */
  C_DEAD     /* to be freed when the current callback returns */
} cstate;

struct net_conn {
  net_server *s;
  struct bufferevent *bev;
  /* A plain client's reads, raw (NULL: bev reads, behind TLS and in a
   * tunnel): one read() per readable event into bev's input, where
   * bufferevent's own reading asks ioctl(FIONREAD) first each time. bev
   * still writes. */
  struct event *rev;
  int rev_full; /* rev paused: bev's input is at its high watermark */
  int rev_big;  /* the last read was large: the next reads into the input */
  char peer[64];
  char id[80]; /* "ADDR:PORT" */
  cstate state;
  size_t scan;      /* bytes of the pending head already searched */
  int head_started; /* the header deadline runs */
  net_http_parser body;
  net_req *cur; /* the request being read or answered */
  int resp_chunked, resp_close, resp_nobody;
  int fresh;           /* c->cur was just read and waits to be handed out */
  int busy;            /* inside process(): do not recurse, do not free */
  int eof;             /* the client will send nothing more */
  int closing_poll;    /* C_CLOSING behind TLS: the timer polls the socket */
  int closing_left_ms; /* how long it may still wait for it */
  struct event *timer;
  struct evbuffer *stage;   /* an answer's head until its first body bytes */
  struct evbuffer *spare;   /* an ended request's empty body buffer, for the
                               next request's (NULL: none) */
  struct bufferevent *dest; /* C_TUNNEL: the destination */
  int tunnel_closing;       /* C_TUNNEL: one side ended, flushing */
  char origin_host[256];    /* this intercepted CONNECT's host */
  int origin_port;
  int origin_plain;        /* ... which sent plain HTTP, not TLS */
  struct net_sniff *sniff; /* C_SNIFF: waiting for the first byte */
  net_conn *prev, *next;   /* s->conns, least recently active first */
};

/* Puts c's bufferevent callbacks, watermark and timeouts in place (after
 * accepting, and after a TLS filter replaced the bufferevent). */
void polite__net_conn_setup(net_conn *c);
/* Back to reading requests: C_HEAD, the idle timer armed. */
void polite__net_conn_idle(net_conn *c);
/* Frees c when it is done with (C_DEAD, or C_CLOSING with nothing left to
 * write); a no-op inside a callback that still uses c. */
void polite__net_conn_settle(net_conn *c);
/* Takes over an accepted socket. Returns 0, or -1 (the socket is closed). */
int polite__net_conn_accept(net_server *s, evutil_socket_t fd,
                            const struct sockaddr *addr);
/* Detaches rq from its connection (which forgets it). */
void polite__net_req_detach(net_req *rq);
/* net_connect.c: cancels a CONNECT that net/ is still setting up for rq. */
void polite__net_pending_cancel(net_req *rq);
/* net_connect.c: frees c's wait for an intercepted CONNECT's first byte. */
void polite__net_sniff_cancel(net_conn *c);
/* bufferevent callbacks of a client connection (net_server.c), also
 * called by the raw reads: bytes arrived; end of file, an error or a
 * timeout. Either may free c. */
void polite__net_conn_on_read(struct bufferevent *bev, void *arg);
void polite__net_conn_on_event(struct bufferevent *bev, short what, void *arg);
/* net_conn_read.c: the most a client's input holds before reading pauses
 * (pipelined bytes beyond one head wait in the kernel, not here). */
size_t polite__net_conn_input_max(const net_conn *c);
/* Starts c's raw reads (a plain client, after accepting): 0, or -1 when
 * they cannot (the bufferevent reads then). */
int polite__net_conn_raw_start(net_conn *c);
/* Pauses them (the connection closes after its last answer), and resumes
 * them once process() drained the input below its maximum (settle). */
void polite__net_conn_raw_pause(net_conn *c);
void polite__net_conn_raw_resume(net_conn *c);
/* bev reads from now on (a tunnel, or a TLS filter over it): the raw
 * reads stop (also when c is freed); bytes they read stay in bev's input. */
void polite__net_conn_raw_stop(net_conn *c);
/* Arms c's timer for ms. */
void polite__net_conn_arm(net_conn *c, int ms);

#endif
