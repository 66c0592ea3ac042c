/* polite gateway: the network half's shared state (internal to gateway/):
 * the server (one event loop, net/'s HTTP/1.1 server, the engine, the
 * upstreams) and one client request from arrival to its answer. The files:
 * gw_server.c (start, the loop's turn, signals and the drain), gw_front.c
 * (what a client's request is and its answer), gw_attempt.c (attempts
 * upstream and the relay of their answers). */
#ifndef POLITE_GW_NET_H
#define POLITE_GW_NET_H

#include "gateway.h"
#include "net_ca.h"
#include "net_server.h"
#include "net_tls.h"
#include "net_upstream.h"

#include <event2/event.h>
#include <polite/clock.h>

typedef struct gw_req gw_req;

typedef struct {
  const gw_config *cfg;
  struct event_base *base;
  net_server *srv;
  net_up_pool *pool; /* forward mode: by scheme, host and port */
  net_upstream *up;  /* the --upstream base URL's */
  gw_base ubase;     /* ... split */
  int has_base;
  net_connect_to *cto;
  net_ca *ca; /* --watch: the local CA, else NULL */
  polite_engine *e;
  struct evbuffer *reqbuf; /* scratch: a request's bytes (gw_attempt.c) */
  polite_batch_options bo; /* the engine's copy of the config's */
  gw_metrics *m;
  gw_seen *seen;
  const polite_env *env;
  char self[96];    /* the bound ADDR:PORT */
  int loopback;     /* --listen is on loopback */
  uint64_t seq;     /* request ids */
  gw_totals passed; /* untouched requests (unwatched) */
  /* The loop's turn (gw_server.c): results to answer, then a step. */
  struct event *turn; /* made active when there is work */
  struct event *wake; /* the engine's next wake */
  int turn_armed;
  struct event *flush; /* the command's on_flush, after the loop's pass */
  int flush_armed;
  gw_req *done, **done_tail; /* results not yet answered, in order */
  /* Requests answered, kept for the next (gw_front.c): a malloc and a
   * timer's event_new less per request. At most GW_REQ_SPARE. */
  gw_req *spare;
  unsigned nspare;
  int draining, stopped, failed;
  int64_t flush_from_us; /* stopped: since when the last answers flush */
  struct event *sig_term, *sig_int, *drain_timer;
  int64_t started_us;
} gw_server;

/* Where a request's attempt is. */
typedef enum {
  X_NONE = 0, /* none in flight */
  X_SENT,     /* sent, no head yet */
  X_READING,  /* a 429/503/403 whose body the engine reads */
  X_RELAYING, /* the final answer, streaming to the client */
  X_DISCARD   /* dropped by the engine: its exchange is cancelled soon */
} gw_xstate;

#define GW_REQ_MAGIC 0x67777271u /* "gwrq" */
/* Freed requests kept for reuse: about the connections busy at once. */
#define GW_REQ_SPARE 256

/* One client request. Owned by the gateway from on_request until it is
 * answered and freed (gw_front.c); its polite_request belongs to the
 * engine from submit to on_result. */
struct gw_req {
  unsigned magic;
  gw_server *s;
  net_req *nr;              /* the client's; NULL once freed */
  polite_request *pr;       /* the engine's from submit to its result */
  polite_engine_attempt *a; /* the attempt in flight, or NULL */
  net_upstream *up;         /* where its attempts go */
  int expecting;            /* announced to up (polite__net_up_expect) */
  net_up_exch *x;           /* the exchange in flight, or NULL */
  gw_xstate xs;
  struct event *timer;   /* the attempt's timeout; a deferred cancel */
  int cancel_due;        /* the timer cancels a dropped exchange */
  struct evbuffer *body; /* the client's request body */
  int keep_body;         /* kept for a retry (else moved, sent once) */
  char method[16];
  char *target; /* the request-target sent upstream */
  char *url;    /* canonical URL (the engine's, the seen table's) */
  gw_dest dest;
  int passthrough; /* unwatched: forwarded untouched, no engine */
  int64_t arrival_us;
  int64_t first_start_us; /* -1 before the first attempt */
  int client_retries;     /* the client's own, -1: none known */
  int submitted, resulted, gone;
  int head_sent, relay_ok; /* the client got a head; the relay ended whole */
  /* A 429/503/403 read for the engine: its head, kept until decided. */
  int rstatus, rminor;
  char rreason[64];
  struct evkeyvalq *rhead;
  struct evbuffer *rbody;
  /* The gateway's own answer, when not relayed: malloc'ed only then (it
   * is most of a request's size, and most requests are relayed), else
   * NULL. */
  gw_reply *reply;
  gw_req *next_done;
};

/* gw_server.c */
/* One reading of the clocks for an event's callback. */
polite_engine_now polite__gw_now(const gw_server *s);
/* Asks for a turn of the loop (answers, then an engine step) soon. */
void polite__gw_kick(gw_server *s);
/* Queues g (whose result came) to be answered at the next turn. */
void polite__gw_done(gw_server *s, gw_req *g);

/* gw_front.c */
void polite__gw_on_request(void *ud, net_req *nr);
void polite__gw_on_gone(void *ud, net_req *nr);
/* The engine's on_result: g's answer is settled (relayed or the gateway's
 * own, built now); it is sent at the next turn. */
void polite__gw_on_result(void *ud, const polite_result *r);
/* Builds g's own answer to r (polite__gw_reply) into g->reply. 0, or -1
 * out of memory (g->reply stays NULL). */
int polite__gw_make_reply(gw_req *g, const polite_result *r,
                          const char *account);
/* Sends g's answer (its own, or the end of a relay) and frees g. */
void polite__gw_answer(gw_req *g);
/* Frees g and its client request (g itself may be kept for the next
 * request: polite__gw_spares_free frees those). */
void polite__gw_req_free(gw_req *g);
/* Frees the requests kept for reuse (the server stops). */
void polite__gw_spares_free(gw_server *s);
/* An answer of the gateway's own to nr (not through the engine): status,
 * error code and message, as JSON in the shape the LLM SDKs read. */
void polite__gw_own_error(gw_server *s, net_req *nr, int status,
                          const char *code, const char *message);
/* GET /__polite/metrics. */
void polite__gw_metrics_answer_req(gw_server *s, net_req *nr);

/* gw_attempt.c */
/* The engine's transport (polite_engine_io). */
int polite__gw_io_start(void *ud, polite_engine_attempt *a,
                        const polite_engine_send *send, char *err,
                        size_t errlen);
void polite__gw_io_abort(void *ud, polite_engine_attempt *a);
/* Forwards g once, untouched, without the engine (an unwatched request). */
void polite__gw_pass(gw_req *g);
/* Where g's attempts go (the base URL's upstream or the pool's). NULL with
 * a message in err. */
net_upstream *polite__gw_upstream_of(gw_req *g, char *err, size_t errlen);
/* g's timer: its attempt's timeout, or the deferred cancel of a dropped
 * answer's exchange. */
void polite__gw_on_timer(evutil_socket_t fd, short what, void *arg);
/* Stops g's exchange and timer (g is being freed or withdrawn). */
void polite__gw_attempt_stop(gw_req *g);

#endif
