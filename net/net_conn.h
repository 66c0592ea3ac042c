/* polite proxy: one client connection, shared by the HTTP/1.1 server
 * (px_conn.c) and CONNECT handling (px_connect.c); private to those two. */
#ifndef POLITE_NET_CONN_H
#define POLITE_NET_CONN_H

#include "px_engine.h"

#include <event2/bufferevent.h>

typedef enum {
  C_HEAD,    /* reading a request head (or idle between requests) */
  C_BODY,    /* reading the body of c->cur */
  C_WAIT,    /* c->cur is being answered */
  C_CLOSING, /* the last answer is being flushed, then close */
  C_TUNNEL,  /* CONNECT: bytes relayed to c->peer (px_connect.c) */
  C_DEAD     /* to be freed when the current callback returns */
} cstate;

struct px_conn {
  px_server *s;
  struct bufferevent *bev;
  char peer[64];
  char id[80]; /* "ADDR:PORT": the judge's connection key (pxlimits) */
  cstate state;
  size_t scan;      /* bytes of the pending head already searched */
  int head_started; /* the header deadline runs */
  net_http_parser body;
  px_req *cur;
  int resp_chunked, resp_close, resp_nobody;
  int fresh; /* c->cur was just read and waits to be dispatched */
  int busy;  /* inside process(): do not recurse, do not free */
  int eof;   /* the client will send nothing more */
  struct event *timer;
  struct evbuffer *stage;   /* an answer's head until its first body bytes */
  struct bufferevent *dest; /* C_TUNNEL: the destination */
  int tunnel_closing;       /* C_TUNNEL: one side ended, flushing */
  char origin_host[256];    /* TLS terminated for this CONNECT host */
  int origin_port;
  px_conn *prev, *next; /* s->conns, least recently active first */
};

/* Puts c's bufferevent callbacks, watermark and timeouts in place (after
 * accepting, and after a TLS filter replaced the bufferevent). */
void polite__px_conn_setup(px_conn *c);
/* Back to reading requests: C_HEAD, the idle timer armed. */
void polite__px_conn_idle(px_conn *c);
/* Frees c when it is done with (C_DEAD, or C_CLOSING with nothing left to
 * write); a no-op inside a callback that still uses c. */
void polite__px_conn_settle(px_conn *c);
/* Frees c now (its request, if any, goes on without it). */
void polite__px_conn_free(px_conn *c);
/* Reads and answers what c's input holds (after a tunnel or TLS setup). */
void polite__px_conn_process(px_conn *c);

#endif
