/* A Redis connection for libpolite's work queue: TCP or TLS (OpenSSL) with
 * every wait bounded, pipelined commands framed by hiredis's formatter and
 * read by its socket-free reader, one Lua script kept loaded, and Redis
 * Cluster's MOVED / ASK / TRYAGAIN answers followed. hiredis 0.14 (Debian
 * 12) has neither TLS nor a cluster client, so the socket is ours. */
#define _GNU_SOURCE
#include "redis_conn.h"

#include <polite/clock.h>
#include <polite/core.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Redirects and retries followed for one exec before giving up. */
#define MAX_REDIRECTS 5

/* One socket to one node, with its TLS session and reply reader. */
typedef struct {
  int fd;
  SSL *ssl;
  redisReader *rd;
} rlink;

struct polite__rconn {
  const polite__redis_uri *u;
  char *script;
  char sha[41];
  SSL_CTX *ctx; /* made at the first TLS connect */
  rlink l;
  char *host; /* where to connect: the URI's host, or a MOVED target */
  int port;
  char errstr[320];
  uint64_t round_trips;
};

static void errf(polite__rconn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void errf(polite__rconn *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  polite__redis_vmsg(c->errstr, sizeof c->errstr, "", c->u->safe, fmt, ap);
  va_end(ap);
}

/* OpenSSL's first queued error as text (and the queue emptied). */
static const char *ssl_why(char *buf, size_t len) {
  unsigned long e = ERR_get_error();
  if (e == 0)
    snprintf(buf, len, "%s", errno ? strerror(errno) : "the peer closed");
  else
    ERR_error_string_n(e, buf, len);
  ERR_clear_error();
  return buf;
}

/* ---- replies with bounds ---------------------------------------------------
 *
 * hiredis 0.14's own reply builder allocates an array of whatever size a
 * "*N" header names, before any element arrives: a hostile or broken
 * server could make one reply take gigabytes. These builders make the same
 * redisReply objects (freeReplyObject frees them) but refuse arrays longer
 * than POLITE__RCONN_MAX_ELEMENTS; the reader then fails with "Out of
 * memory" and the connection is dropped. */

static void *attach(const redisReadTask *t, redisReply *r) {
  if (t->parent != NULL) {
    redisReply *p = t->parent->obj;
    p->element[t->idx] = r;
  }
  return r;
}

static void *mk_string(const redisReadTask *t, char *str, size_t len) {
  redisReply *r = calloc(1, sizeof *r);
  if (r == NULL || (r->str = malloc(len + 1)) == NULL) {
    free(r);
    return NULL;
  }
  r->type = t->type;
  memcpy(r->str, str, len);
  r->str[len] = '\0';
  r->len = len;
  return attach(t, r);
}

static void *mk_array(const redisReadTask *t, int n) {
  if (n < 0 || n > POLITE__RCONN_MAX_ELEMENTS)
    return NULL;
  redisReply *r = calloc(1, sizeof *r);
  if (r == NULL || (n > 0 && (r->element = calloc(
                                  (size_t)n, sizeof(redisReply *))) == NULL)) {
    free(r);
    return NULL;
  }
  r->type = REDIS_REPLY_ARRAY;
  r->elements = (size_t)n;
  return attach(t, r);
}

static void *mk_integer(const redisReadTask *t, long long v) {
  redisReply *r = calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  r->type = REDIS_REPLY_INTEGER;
  r->integer = v;
  return attach(t, r);
}

static void *mk_nil(const redisReadTask *t) {
  redisReply *r = calloc(1, sizeof *r);
  if (r == NULL)
    return NULL;
  r->type = REDIS_REPLY_NIL;
  return attach(t, r);
}

static redisReplyObjectFunctions bounded = {mk_string, mk_array, mk_integer,
                                            mk_nil, freeReplyObject};

redisReader *polite__rconn_reader(void) {
  return redisReaderCreateWithFunctions(&bounded);
}

static void link_close(rlink *l) {
  if (l->ssl) {
    SSL_free(l->ssl);
    l->ssl = NULL;
  }
  if (l->fd >= 0)
    close(l->fd);
  l->fd = -1;
  if (l->rd)
    redisReaderFree(l->rd);
  l->rd = NULL;
}

/* Waits for events on fd for at most timeout_ms. 1 ready, 0 timed out. */
static int wait_fd(int fd, short events, int64_t timeout_ms) {
  struct pollfd p = {fd, events, 0};
  int r;
  do
    r = poll(&p, 1, (int)timeout_ms);
  while (r < 0 && errno == EINTR);
  return r > 0;
}

/* A non-blocking connect to one address, bounded by timeout_ms. */
static int connect_addr(const struct addrinfo *ai, int64_t timeout_ms) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  ai->ai_protocol);
  if (fd < 0)
    return -1;
  int one = 1;
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
    return fd;
  int err = errno;
  if (err == EINPROGRESS) {
    socklen_t el = sizeof err;
    if (!wait_fd(fd, POLLOUT, timeout_ms))
      err = ETIMEDOUT;
    else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0)
      err = errno;
    if (err == 0)
      return fd;
  }
  close(fd);
  errno = err;
  return -1;
}

/* The TLS context: verification on unless ?insecure=1, the system's CAs
 * or ?cacert=, and ?cert=/?key= for servers that ask for a client
 * certificate (Redis does by default: tls-auth-clients yes). */
static int make_ctx(polite__rconn *c) {
  const polite__redis_uri *u = c->u;
  char why[160];
  if (c->ctx != NULL)
    return 0;
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL) {
    errf(c, "TLS: %s", ssl_why(why, sizeof why));
    return POLITE_EIO;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_verify(ctx, u->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                     NULL);
  int ok = u->cacert ? SSL_CTX_load_verify_locations(ctx, u->cacert, NULL)
                     : SSL_CTX_set_default_verify_paths(ctx);
  const char *what = u->cacert ? u->cacert : "the system's CA certificates";
  if (ok && u->cert) {
    what = u->cert;
    ok = SSL_CTX_use_certificate_chain_file(ctx, u->cert) == 1;
    if (ok) {
      what = u->key ? u->key : u->cert;
      ok = SSL_CTX_use_PrivateKey_file(ctx, what, SSL_FILETYPE_PEM) == 1;
    }
  }
  if (!ok) {
    errf(c, "TLS: cannot load '%.100s': %s", what, ssl_why(why, sizeof why));
    SSL_CTX_free(ctx);
    return POLITE_EIO;
  }
  c->ctx = ctx;
  return 0;
}

/* The TLS handshake on l->fd, checking the certificate names the host (an
 * IP address against its IP SANs). */
static int tls_start(polite__rconn *c, rlink *l, const char *host) {
  char why[160];
  if (make_ctx(c) != 0)
    return POLITE_EIO;
  if ((l->ssl = SSL_new(c->ctx)) == NULL || SSL_set_fd(l->ssl, l->fd) != 1) {
    errf(c, "TLS: %s", ssl_why(why, sizeof why));
    return POLITE_EIO;
  }
  unsigned char ip[16];
  int is_ip =
      inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
  X509_VERIFY_PARAM *vp = SSL_get0_param(l->ssl);
  if (!is_ip)
    SSL_set_tlsext_host_name(l->ssl, host);
  if (!c->u->insecure &&
      (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(vp, host)
             : X509_VERIFY_PARAM_set1_host(vp, host, 0)) != 1) {
    errf(c, "TLS: cannot check the name '%.60s'", host);
    return POLITE_EIO;
  }
  for (;;) {
    int r = SSL_connect(l->ssl);
    if (r == 1)
      return 0;
    int e = SSL_get_error(l->ssl, r);
    short ev = e == SSL_ERROR_WANT_READ    ? POLLIN
               : e == SSL_ERROR_WANT_WRITE ? POLLOUT
                                           : 0;
    if (ev == 0) {
      long v = SSL_get_verify_result(l->ssl);
      if (v != X509_V_OK)
        errf(c, "TLS: the server's certificate is not trusted: %s",
             X509_verify_cert_error_string(v));
      else
        errf(c, "TLS handshake failed: %s", ssl_why(why, sizeof why));
      return POLITE_EIO;
    }
    if (!wait_fd(l->fd, ev, c->u->timeout_ms)) {
      errf(c, "TLS handshake: no answer within %lld ms",
           (long long)c->u->timeout_ms);
      return POLITE_EIO;
    }
  }
}

/* Opens a link to host:port (TCP, then TLS for rediss://). */
static int link_open(polite__rconn *c, rlink *l, const char *host, int port) {
  char ps[8];
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  snprintf(ps, sizeof ps, "%d", port);
  l->fd = -1;
  l->ssl = NULL;
  l->rd = NULL;
  int g = getaddrinfo(host, ps, &hints, &res);
  if (g != 0) {
    errf(c, "cannot resolve '%.80s': %s", host, gai_strerror(g));
    return POLITE_EIO;
  }
  int err = 0;
  for (const struct addrinfo *ai = res; ai && l->fd < 0; ai = ai->ai_next)
    if ((l->fd = connect_addr(ai, c->u->timeout_ms)) < 0)
      err = errno;
  freeaddrinfo(res);
  if (l->fd < 0) {
    errf(c, "cannot connect to %.80s:%d: %s", host, port, strerror(err));
    return POLITE_EIO;
  }
  if ((l->rd = polite__rconn_reader()) == NULL) {
    errf(c, "out of memory");
    link_close(l);
    return POLITE_EIO;
  }
  if (c->u->tls && tls_start(c, l, host) != 0) {
    link_close(l);
    return POLITE_EIO;
  }
  return 0;
}

/* Writes up to len bytes; returns bytes written, 0 when it would block
 * (*ev says on what), -1 on error. */
static ssize_t link_write(rlink *l, const char *p, size_t len, short *ev) {
  if (l->ssl == NULL) {
    ssize_t w = send(l->fd, p, len, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
      *ev |= POLLOUT;
      return 0;
    }
    return w;
  }
  int w = SSL_write(l->ssl, p, (int)(len > 1 << 20 ? 1 << 20 : len));
  if (w > 0)
    return w;
  int e = SSL_get_error(l->ssl, w);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    *ev |= e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return 0;
  }
  return -1;
}

/* Reads what is there into the reader; returns bytes read, 0 when it would
 * block (*ev says on what), -1 on error or end of stream. */
static ssize_t link_read(rlink *l, short *ev) {
  char buf[16384];
  ssize_t r;
  if (l->ssl == NULL) {
    r = recv(l->fd, buf, sizeof buf, 0);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
      *ev |= POLLIN;
      return 0;
    }
    if (r == 0) {
      errno = ECONNRESET; /* the server closed the connection */
      return -1;
    }
  } else {
    int n = SSL_read(l->ssl, buf, (int)sizeof buf);
    int e = n > 0 ? SSL_ERROR_NONE : SSL_get_error(l->ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      *ev |= e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
      return 0;
    }
    r = n > 0 ? n : -1;
    if (r < 0 && e == SSL_ERROR_ZERO_RETURN)
      errno = ECONNRESET;
  }
  if (r > 0 && redisReaderFeed(l->rd, buf, (size_t)r) != REDIS_OK)
    return -1;
  return r;
}

/* Sends out[0..len) and reads n replies into rep[], reading while writing so
 * that neither side's buffers fill up. Every wait without progress is
 * bounded by the timeout. Returns 0, or POLITE_EIO with errstr set (the
 * replies read so far are freed). */
static int xfer(polite__rconn *c, rlink *l, const char *out, size_t len,
                size_t n, redisReply **rep) {
  size_t got = 0, off = 0, fed = 0;
  c->round_trips++;
  while (got < n || off < len) {
    short ev = 0;
    int progress = 0;
    if (off < len) {
      ssize_t w = link_write(l, out + off, len - off, &ev);
      if (w < 0)
        goto io_error;
      off += (size_t)w;
      progress |= w > 0;
    }
    ssize_t r = link_read(l, &ev);
    if (r < 0)
      goto io_error;
    fed += (size_t)r;
    progress |= r > 0;
    void *reply = NULL;
    while (got < n && redisReaderGetReply(l->rd, &reply) == REDIS_OK &&
           reply != NULL) {
      rep[got++] = reply;
      fed = 0;
      progress = 1;
    }
    if (l->rd->err) {
      errf(c, "protocol error: %.100s (or a reply of more than %d elements)",
           l->rd->errstr, POLITE__RCONN_MAX_ELEMENTS);
      goto fail;
    }
    if (fed > POLITE__RCONN_MAX_REPLY) {
      errf(c, "a reply is larger than %u bytes", POLITE__RCONN_MAX_REPLY);
      goto fail;
    }
    if (!progress && (got < n || off < len) &&
        !wait_fd(l->fd, ev ? ev : POLLIN, c->u->timeout_ms)) {
      errf(c,
           "no answer within %lld ms (the server hangs or is too slow; "
           "see ?timeout=)",
           (long long)c->u->timeout_ms);
      goto fail;
    }
  }
  return 0;
io_error:
  if (l->ssl) {
    char why[160];
    errf(c, "lost the connection: %s", ssl_why(why, sizeof why));
  } else {
    errf(c, "lost the connection: %s", strerror(errno));
  }
fail:
  for (size_t i = 0; i < got; i++)
    freeReplyObject(rep[i]);
  return POLITE_EIO;
}

/* Formats cmds[0..n) into one buffer (malloc'ed) and its length. */
static char *format_all(size_t n, const polite__rcmd *cmds, size_t *len) {
  char *all = NULL;
  size_t total = 0;
  for (size_t i = 0; i < n; i++) {
    size_t tmp[64], *lens = (size_t *)cmds[i].lens, *own = NULL;
    if (lens == NULL) {
      own = cmds[i].argc <= 64 ? tmp : malloc(sizeof *own * cmds[i].argc);
      if (own == NULL)
        goto oom;
      for (int k = 0; k < cmds[i].argc; k++)
        own[k] = strlen(cmds[i].argv[k]);
      lens = own;
    }
    char *one = NULL;
    int l = redisFormatCommandArgv(&one, cmds[i].argc,
                                   (const char **)cmds[i].argv, lens);
    if (own != tmp)
      free(own);
    char *na = l > 0 ? realloc(all, total + (size_t)l) : NULL;
    if (na == NULL) {
      if (l > 0)
        redisFreeCommand(one);
      goto oom;
    }
    all = na;
    memcpy(all + total, one, (size_t)l);
    total += (size_t)l;
    redisFreeCommand(one);
  }
  *len = total;
  return all;
oom:
  free(all);
  return NULL;
}

/* Runs n commands on link l (one round trip). */
static int link_exec(polite__rconn *c, rlink *l, size_t n,
                     const polite__rcmd *cmds, redisReply **rep) {
  size_t len = 0;
  char *out = format_all(n, cmds, &len);
  if (out == NULL) {
    errf(c, "out of memory");
    return POLITE_EIO;
  }
  int rc = xfer(c, l, out, len, n, rep);
  free(out);
  return rc;
}

/* AUTH, then SCRIPT LOAD (its reply is the SHA-1 EVALSHA uses). */
static int link_setup(polite__rconn *c, rlink *l) {
  const polite__redis_uri *u = c->u;
  const char *auth[3] = {"AUTH", u->user ? u->user : u->pass, u->pass};
  const char *load[3] = {"SCRIPT", "LOAD", c->script};
  polite__rcmd cmds[2] = {{u->user ? 3 : 2, auth, NULL}, {3, load, NULL}};
  size_t first = u->pass ? 0 : 1;
  redisReply *rep[2] = {NULL, NULL};
  if (link_exec(c, l, 2 - first, cmds + first, rep) != 0) {
    /* TLS 1.3 servers refuse a missing client certificate after the
     * handshake: the first read finds the connection reset. */
    size_t n = strlen(c->errstr);
    if (u->tls && u->cert == NULL && n < sizeof c->errstr)
      snprintf(c->errstr + n, sizeof c->errstr - n,
               " (does the server want a client certificate? ?cert=FILE)");
    return POLITE_EIO;
  }
  int rc = 0;
  redisReply *a = first ? NULL : rep[0], *s = rep[1 - first];
  if (a && a->type == REDIS_REPLY_ERROR) {
    /* The server's message never contains the password. */
    errf(c, "authentication failed: %.100s", a->str);
    rc = POLITE_EIO;
  } else if (s->type != REDIS_REPLY_STRING || s->len != 40) {
    errf(c, "cannot load the queue's script: %.100s",
         s->type == REDIS_REPLY_ERROR ? s->str : "unexpected reply");
    rc = POLITE_EIO;
  } else {
    memcpy(c->sha, s->str, 40);
    c->sha[40] = '\0';
  }
  for (size_t i = 0; i < 2 - first; i++)
    freeReplyObject(rep[i]);
  return rc;
}

polite__rconn *polite__rconn_new(const polite__redis_uri *u,
                                 const char *script) {
  polite__rconn *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->u = u;
  c->l.fd = -1;
  c->script = strdup(script);
  c->host = strdup(u->host);
  c->port = u->port;
  if (c->script == NULL || c->host == NULL) {
    polite__rconn_free(c);
    return NULL;
  }
  return c;
}

void polite__rconn_free(polite__rconn *c) {
  if (c == NULL)
    return;
  link_close(&c->l);
  if (c->ctx)
    SSL_CTX_free(c->ctx);
  free(c->script);
  free(c->host);
  free(c);
}

/* Points the next connect at the URI's host again. */
static void back_to_seed(polite__rconn *c) {
  char *h = strdup(c->u->host);
  if (h == NULL)
    return;
  free(c->host);
  c->host = h;
  c->port = c->u->port;
}

int polite__rconn_connect(polite__rconn *c) {
  link_close(&c->l);
  c->round_trips++;
  if (link_open(c, &c->l, c->host, c->port) != 0 || link_setup(c, &c->l) != 0) {
    link_close(&c->l);
    back_to_seed(c);
    return POLITE_EIO;
  }
  c->errstr[0] = '\0';
  return 0;
}

int polite__rconn_connected(const polite__rconn *c) {
  return c->l.fd >= 0;
}

void polite__rconn_drop(polite__rconn *c) {
  link_close(&c->l);
  back_to_seed(c);
}

/* The prefix of an error reply, or "". */
static int err_is(const redisReply *r, const char *prefix) {
  return r && r->type == REDIS_REPLY_ERROR &&
         strncmp(r->str, prefix, strlen(prefix)) == 0;
}

int polite__rconn_transient(const redisReply *r) {
  /* A redirect or TRYAGAIN still there after the retries of one exec: a
   * slot being migrated; wait and try again like after a failover. */
  static const char *const codes[] = {"LOADING",     "READONLY", "MASTERDOWN",
                                      "CLUSTERDOWN", "BUSY",     "TRYAGAIN",
                                      "MOVED ",      "ASK ",     NULL};
  for (const char *const *p = codes; *p; p++)
    if (err_is(r, *p))
      return 1;
  return 0;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 HOST:PORT": the node named. */
static int redirect_target(const redisReply *r, char **host, int *port) {
  const char *sp = strchr(r->str, ' ');
  sp = sp ? strchr(sp + 1, ' ') : NULL;
  const char *colon = sp ? strrchr(sp, ':') : NULL;
  if (colon == NULL)
    return -1;
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (p < 1 || p > 65535 || colon == sp + 1)
    return -1;
  *host = strndup(sp + 1, (size_t)(colon - sp - 1));
  *port = (int)p;
  return *host ? 0 : -1;
}

/* One ASK redirect: ASKING + the command on a one-off link to the node. */
static int ask_once(polite__rconn *c, const redisReply *ask,
                    const polite__rcmd *cmd, redisReply **out) {
  char *host = NULL;
  int port = 0, rc = POLITE_EIO;
  rlink l;
  if (redirect_target(ask, &host, &port) != 0) {
    errf(c, "a malformed redirect: %.80s", ask->str);
    return POLITE_EIO;
  }
  if (link_open(c, &l, host, port) == 0 && link_setup(c, &l) == 0) {
    static const char *const asking[1] = {"ASKING"};
    polite__rcmd two[2] = {{1, asking, NULL}, *cmd};
    redisReply *rep[2] = {NULL, NULL};
    if ((rc = link_exec(c, &l, 2, two, rep)) == 0) {
      freeReplyObject(rep[0]);
      *out = rep[1];
    }
  }
  link_close(&l);
  free(host);
  return rc;
}

/* 1 for the replies that mean "not executed, send it again". */
static int needs_resend(const redisReply *r) {
  return err_is(r, "MOVED ") || err_is(r, "TRYAGAIN") || err_is(r, "NOSCRIPT");
}

/* Deals with the replies that mean "not executed" (see the header): ASK
 * is answered here on the node named; for MOVED the connection moves to
 * the node named (once per round), NOSCRIPT loads the script again and
 * TRYAGAIN waits 20 ms. Returns 1 when some commands are to be sent again,
 * 0 when none, or POLITE_EIO. */
static int fix_replies(polite__rconn *c, size_t n, const polite__rcmd *cmds,
                       redisReply **rep) {
  int again = 0, moved = 0, noscript = 0, tryagain = 0;
  for (size_t i = 0; i < n; i++) {
    redisReply *r = rep[i];
    if (err_is(r, "ASK ")) {
      redisReply *fresh = NULL;
      if (ask_once(c, r, &cmds[i], &fresh) != 0)
        return POLITE_EIO;
      freeReplyObject(r);
      rep[i] = fresh;
    } else if (err_is(r, "MOVED ") && !moved) {
      char *host = NULL;
      int port = 0;
      if (redirect_target(r, &host, &port) != 0) {
        errf(c, "a malformed redirect: %.80s", r->str);
        return POLITE_EIO;
      }
      free(c->host);
      c->host = host;
      c->port = port;
      moved = 1;
    }
    noscript |= err_is(rep[i], "NOSCRIPT");
    tryagain |= err_is(rep[i], "TRYAGAIN");
    again |= needs_resend(rep[i]);
  }
  if (moved) {
    /* Connecting loads the script on the new node too. */
    link_close(&c->l);
    if (polite__rconn_connect(c) != 0)
      return POLITE_EIO;
  } else if (noscript && link_setup(c, &c->l) != 0) {
    return POLITE_EIO;
  }
  if (tryagain) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return again;
}

/* Sends again (one round trip) the commands whose reply said "not
 * executed", at most 64 per round. */
static int resend(polite__rconn *c, size_t n, const polite__rcmd *cmds,
                  redisReply **rep) {
  size_t idx[64], k = 0;
  for (size_t i = 0; i < n && k < 64; i++)
    if (needs_resend(rep[i]))
      idx[k++] = i;
  if (k == 0)
    return 0;
  polite__rcmd sub[64];
  redisReply *fresh[64];
  for (size_t j = 0; j < k; j++)
    sub[j] = cmds[idx[j]];
  if (link_exec(c, &c->l, k, sub, fresh) != 0)
    return POLITE_EIO;
  for (size_t j = 0; j < k; j++) {
    freeReplyObject(rep[idx[j]]);
    rep[idx[j]] = fresh[j];
  }
  return 0;
}

int polite__rconn_exec(polite__rconn *c, size_t n, const polite__rcmd *cmds,
                       redisReply **replies) {
  for (size_t i = 0; i < n; i++)
    replies[i] = NULL;
  if (!polite__rconn_connected(c) && polite__rconn_connect(c) != 0)
    return POLITE_EIO;
  int rc = link_exec(c, &c->l, n, cmds, replies);
  for (int round = 0; rc == 0 && round < MAX_REDIRECTS; round++) {
    int again = fix_replies(c, n, cmds, replies);
    if (again <= 0) {
      rc = again;
      break;
    }
    rc = resend(c, n, cmds, replies);
  }
  if (rc != 0) {
    for (size_t i = 0; i < n; i++) {
      freeReplyObject(replies[i]);
      replies[i] = NULL;
    }
    polite__rconn_drop(c);
    return POLITE_EIO;
  }
  for (size_t i = 0; i < n; i++)
    if (polite__rconn_transient(replies[i])) {
      polite__rconn_drop(c); /* a failover: reconnect from the seed */
      break;
    }
  return 0;
}

const char *polite__rconn_sha(const polite__rconn *c) {
  return c->sha;
}

const char *polite__rconn_errstr(const polite__rconn *c) {
  return c->errstr;
}

uint64_t polite__rconn_round_trips(const polite__rconn *c) {
  return c->round_trips;
}
