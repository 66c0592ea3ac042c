/* A blocking Redis connection with bounded waits, TLS (rediss://), one Lua
 * script and Redis Cluster redirects, speaking RESP through hiredis's
 * socket-free reader and formatter. Internal, not installed; used by the
 * work queue (lib/queue*.c). Not thread-safe: one thread per connection. */
#ifndef POLITE_REDIS_CONN_H
#define POLITE_REDIS_CONN_H

#include "redis_uri.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

/* The largest reply read (bytes); a larger one breaks the connection with
 * a message: Redis's own limit for one bulk string is 512 MB. */
#define POLITE__RCONN_MAX_REPLY (512u * 1024 * 1024)

/* The most elements one reply array may have (a take of the largest
 * window is about 30,000): a larger one breaks the connection instead of
 * being allocated. */
#define POLITE__RCONN_MAX_ELEMENTS (1 << 20)

/* A reply reader whose arrays are bounded by POLITE__RCONN_MAX_ELEMENTS
 * (hiredis's own allocates any "*N" at once); replies are freed with
 * freeReplyObject. NULL when out of memory. */
redisReader *polite__rconn_reader(void);

typedef struct polite__rconn polite__rconn;

/* One command: argc arguments with their lengths (lens NULL: strlen). */
typedef struct {
  int argc;
  const char *const *argv;
  const size_t *lens;
} polite__rcmd;

/* A connection to u's server (u is borrowed and must outlive it) that keeps
 * `script` (copied) loaded: polite__rconn_sha names it for EVALSHA, and a
 * NOSCRIPT answer loads it again. Nothing is connected yet. NULL when out
 * of memory. */
polite__rconn *polite__rconn_new(const polite__redis_uri *u,
                                 const char *script);
void polite__rconn_free(polite__rconn *c);

/* Connects (TCP, TLS for rediss://, AUTH, SCRIPT LOAD) to the node the
 * last MOVED named, else the URI's host. Returns 0, or POLITE_EIO with
 * errstr naming the URI and the cause. Each wait is bounded by the URI's
 * timeout. */
int polite__rconn_connect(polite__rconn *c);
int polite__rconn_connected(const polite__rconn *c);
/* Closes the connection (the next exec connects again to the URI's host). */
void polite__rconn_drop(polite__rconn *c);

/* Sends n commands in one write (a pipeline) and reads their n replies
 * into replies[] (the caller frees each with freeReplyObject). Connects
 * first when not connected. Replies that mean "not executed" are dealt
 * with here and the command sent again: NOSCRIPT (the script is loaded),
 * MOVED (to the node named, which becomes this connection), ASK (one
 * ASKING + command on the node named) and TRYAGAIN (after 20 ms), a few
 * times each. Returns 0 with every reply set (a reply may be an error:
 * polite__rconn_transient says which mean a failover or a loading server),
 * or POLITE_EIO with every reply NULL and the connection dropped: a command
 * may or may not have run. */
int polite__rconn_exec(polite__rconn *c, size_t n, const polite__rcmd *cmds,
                       redisReply **replies);

/* 1 when r is an error that says the node cannot serve now (LOADING,
 * READONLY, MASTERDOWN, CLUSTERDOWN, BUSY, and TRYAGAIN, MOVED or ASK left
 * after exec's retries: a slot in migration): the command did not run, and
 * the connection should be dropped and tried again later. */
int polite__rconn_transient(const redisReply *r);

/* The SHA-1 of the script as Redis names it (40 hex digits). */
const char *polite__rconn_sha(const polite__rconn *c);
/* The last failure's message ("" when none): "'URI': cause". */
const char *polite__rconn_errstr(const polite__rconn *c);
/* Round trips so far: connects count their AUTH and SCRIPT LOAD. */
uint64_t polite__rconn_round_trips(const polite__rconn *c);

#endif
