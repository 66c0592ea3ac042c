/* polite proxy: HTTP/1.1 parsers, free of sockets (bytes in, callbacks out):
 * the upstream's responses, the clients' request heads, and message bodies. */
#ifndef POLITE_NET_HTTP_H
#define POLITE_NET_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <event2/keyvalq_struct.h> /* a struct only: no libevent call */

/* Like hiredis' reader, the parser owns no buffer: the caller keeps the
 * bytes not yet consumed (an incomplete line) and feeds them again with
 * more. Body bytes are handed out as they come, de-chunked. */

/* A response head larger than this is refused, like a server's limit. */
#define NET_HTTP_HEAD_MAX (64 * 1024)

typedef struct {
  /* One header of the final (non-1xx) response, name and value trimmed,
   * not NUL-terminated. Return 0, or -1 to stop with an error. */
  int (*on_header)(void *arg, const char *name, size_t nlen, const char *value,
                   size_t vlen);
  /* The head is complete and the body framing known. */
  int (*on_head)(void *arg, int status, const char *reason, size_t rlen,
                 int minor);
  int (*on_body)(void *arg, const char *data, size_t len);
} net_http_cb;

typedef enum {
  NET_HTTP_STATUS = 0,
  NET_HTTP_HEADERS,
  NET_HTTP_FIXED,
  NET_HTTP_CHUNK_SIZE,
  NET_HTTP_CHUNK_DATA,
  NET_HTTP_CHUNK_END,
  NET_HTTP_TRAILERS,
  NET_HTTP_CLOSE, /* body runs until the connection closes */
  NET_HTTP_DONE
} net_http_state;

typedef struct {
  net_http_state state;
  int is_head; /* the request was HEAD: no body whatever the head says */
  int status;
  int minor;              /* HTTP/1.minor */
  int64_t remaining;      /* FIXED / CHUNK_DATA */
  int64_t content_length; /* -1 when absent */
  int chunked;            /* Transfer-Encoding's last coding is chunked */
  int has_te;
  int conn_close, conn_keep_alive; /* Connection tokens */
  int keepalive; /* the connection may carry another request */
  size_t head_bytes;
  char reason[64];   /* reason phrase, truncated, control bytes blanked */
  const char *error; /* static text once feed returned -1 */
} net_http_parser;

/* Starts a parser for the response to one request. */
void polite__net_http_init(net_http_parser *p, int is_head);

/* Feeds bytes. Returns how many were consumed (the rest, an incomplete
 * line, must be fed again with what follows), or -1 on a protocol error or
 * when a callback returned -1 (p->error says which). Stops consuming at
 * NET_HTTP_DONE; bytes after the response are left to the caller. */
ssize_t polite__net_http_feed(net_http_parser *p, const char *data, size_t len,
                              const net_http_cb *cb, void *arg);

/* The connection closed. Returns 1 when that completes the response (a
 * body delimited by the close, or an already complete one), else 0. */
int polite__net_http_eof(net_http_parser *p);

/* Starts `p` as a decoder of a request body: `chunked`, else `length` bytes
 * (0: none). Fed with polite__net_http_feed like a response; on_head and
 * on_header are not called, trailer fields are dropped. */
void polite__net_http_body_init(net_http_parser *p, int chunked,
                                int64_t length);

/* ---- Request heads (the client side) ------------------------------------ */

/* Limits on one request head; both are enforced by the functions below. */
typedef struct {
  size_t head_max;    /* request line + header lines, bytes */
  size_t headers_max; /* header lines */
} net_limits;

/* A parsed request head. The framing follows RFC 9112 §6 strictly: every
 * shape that two parsers could frame differently (request smuggling) is
 * refused instead of guessed. */
typedef struct {
  char method[16];
  const char *target; /* points into the parsed bytes, not NUL-terminated */
  size_t target_len;
  int minor;              /* HTTP/1.minor: 0 or 1 */
  int64_t content_length; /* -1 when absent */
  int chunked;            /* Transfer-Encoding: chunked */
  int keepalive;          /* the connection may carry another request */
  int expect_continue;    /* Expect: 100-continue */
  size_t nheaders;
  int status;        /* when parsing failed: 400, 417, 431, 501 or 505 */
  const char *error; /* static text saying what was wrong */
} net_req_head;

/* Finds the end of a request head (the empty line) in data[0..len).
 * Returns the head's length including the empty line; 0 when it is not
 * complete yet; -1 when more than lim->head_max bytes hold no end. `*scan`
 * (0 for a new head) remembers how far the bytes were searched, so that
 * feeding a head in small pieces costs time linear in its length. */
long polite__net_req_head_end(const char *data, size_t len, size_t *scan,
                              const net_limits *lim);

/* Parses a complete head of `len` bytes (as found by head_end). Each header
 * (name and value, value trimmed of OWS) goes to on_header (may be NULL),
 * which returns 0 or -1 to stop. Returns 0, or -1 with h->status and
 * h->error set. */
int polite__net_req_parse(net_req_head *h, const char *data, size_t len,
                          const net_limits *lim,
                          int (*on_header)(void *arg, const char *name,
                                           size_t nlen, const char *value,
                                           size_t vlen),
                          void *arg);

/* ---- Header lists ---------------------------------------------------- */

/* The parsed fields of a request or a response as libevent's evkeyvalq, so
 * that evhttp_find_header reads them, but each field made in one
 * allocation (name and value with it) instead of three: a proxied request
 * carries a dozen. Free such a list with polite__net_fields_clear, never
 * evhttp_clear_headers. */
struct evkeyvalq;
/* Appends name[0..nlen): value[0..vlen). 0, or -1 out of memory. */
int polite__net_field_add(struct evkeyvalq *h, const char *name, size_t nlen,
                          const char *value, size_t vlen);
/* Removes every field called name (any case). */
void polite__net_field_remove(struct evkeyvalq *h, const char *name);
void polite__net_fields_clear(struct evkeyvalq *h);

/* The fields of one parsed message (a request's head, an upstream's
 * answer) in one block: the list is an evkeyvalq like the one above, so
 * evhttp_find_header and the loops over it read it unchanged, but its
 * fields (and whatever else the message keeps, its request target) are
 * carved from an inline block instead of one allocation each, and freed
 * at once. Hand &f->list to evhttp_find_header and the header writers. A
 * message whose fields do not fit (a head over NET_FIELDS_BLOCK bytes of names
 * and values) has the rest allocated one by one, as before: the block is a fast
 * path, not a limit (the limits are the parsers' head_max and headers_max). */
typedef struct net_fields {
  struct evkeyvalq list;
  size_t used, cap;
  char *block; /* cap bytes, the owner's (inside the message's struct) */
} net_fields;
/* Makes f empty, carving from block[0..cap) (the owner's, aligned for a
 * pointer). */
void polite__net_fields_init(net_fields *f, char *block, size_t cap);
/* Appends name[0..nlen): value[0..vlen). 0, or -1 out of memory. */
int polite__net_fields_add(net_fields *f, const char *name, size_t nlen,
                           const char *value, size_t vlen);
/* A NUL-terminated copy of s[0..n) carved from f's block (else
 * allocated): free it with polite__net_fields_free_str. NULL when out of
 * memory. */
char *polite__net_fields_str(net_fields *f, const char *s, size_t n);
void polite__net_fields_free_str(net_fields *f, char *s);
/* Removes every field called name (any case). */
void polite__net_fields_remove(net_fields *f, const char *name);
/* Frees what was allocated beside the block and makes f empty (strings
 * carved from it are gone too). */
void polite__net_fields_reset(net_fields *f);

/* The value of the first field of h called name (any case), or NULL; h
 * may be NULL. evhttp_find_header's answer, with the lengths compared
 * before the bytes. */
const char *polite__net_find(const struct evkeyvalq *h, const char *name);

/* 1 when a field called name is hop-by-hop (RFC 9110 7.6.1: Connection,
 * Keep-Alive, TE, Trailer, Transfer-Encoding, Upgrade, any Proxy-* field),
 * or is named by `connection` (the message's Connection field, may be
 * NULL): a proxy does not forward it. */
int polite__net_hop_by_hop(const char *name, const char *connection);
/* The same for a name of n bytes (the writers know its length). */
int polite__net_hop_by_hop_n(const char *name, size_t n,
                             const char *connection);

/* The reason phrase of a status ("Too Many Requests"); a generic one for a
 * status the table does not know. Static text. */
const char *polite__net_reason(int status);

#endif
