/* polite proxy: the engine's loop: listener, request dispatch, signals,
 * reports, start and stop. */
#define _GNU_SOURCE
#include "px_engine.h"
#include "px_tls.h"
#include "report_proxy.h"

#include <polite/clock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* One event loop: our own HTTP/1.1 server for the clients (px_conn.c) and
 * our own lean HTTP/1.1 client for the upstream (px_upstream.c, which says
 * why), so a response streams from one socket to the other without
 * threads. The decision for a request is in px_decide.c, the answers the
 * proxy makes up in px_answer.c, forwarding in px_forward.c. */

static void run_action(px_req *r) {
  if (r->act == ACT_FORWARD)
    polite__px_forward(r);
  else
    polite__px_send_own(r);
}

static void latency_cb(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  run_action(arg);
}

/* ---- The decision for one request ---------------------------------------- */

/* Splits "host:port" (CONNECT's authority-form; "[v6]:port" too) into
 * host (brackets removed) and port. Returns -1 when malformed. */
static int split_authority(const char *a, char *host, size_t hl, int *port) {
  const char *colon = strrchr(a, ':');
  if (colon == NULL || colon == a)
    return -1;
  char *end;
  long p = strtol(colon + 1, &end, 10);
  if (*end != '\0' || p < 1 || p > 65535 || colon[1] < '0' || colon[1] > '9')
    return -1;
  const char *h = a;
  size_t n = (size_t)(colon - a);
  if (h[0] == '[' && n > 2 && h[n - 1] == ']') {
    h++;
    n -= 2;
  }
  if (n == 0 || n >= hl)
    return -1;
  memcpy(host, h, n);
  host[n] = '\0';
  *port = (int)p;
  return 0;
}

/* host[:port] as a Host header and in URLs: the default port left out, an
 * IPv6 literal bracketed. */
static void authority_of(char *out, size_t size, const char *host, int port,
                         int https) {
  int v6 = strchr(host, ':') != NULL;
  if (port == (https ? 443 : 80))
    snprintf(out, size, "%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "");
  else
    snprintf(out, size, "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

/* Forward mode: where the request really goes. CONNECT names host:port; a
 * request inside an intercepted CONNECT goes to that host over https; an
 * absolute-form target names its own. An origin-form request outside
 * CONNECT has no destination (dest_host stays empty). Builds raw_url. */
static int forward_dest(px_server *s, px_req *r) {
  int port = 0;
  const char *origin = polite__px_conn_origin(r, &port);
  const char *t = r->target;
  if (strcmp(r->method, "CONNECT") == 0) {
    if (split_authority(t, r->dest_host, sizeof r->dest_host, &r->dest_port) <
        0)
      return -1;
    r->dest_https = 1;
    r->path = "/";
  } else if (origin && t[0] == '/') {
    snprintf(r->dest_host, sizeof r->dest_host, "%s", origin);
    r->dest_port = port;
    r->dest_https = 1;
    r->path = t;
  } else if (t[0] != '/' && t[0] != '*') {
    struct evhttp_uri *u = evhttp_uri_parse(t);
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    if (host == NULL || host[0] == '\0') {
      if (u)
        evhttp_uri_free(u);
      return -1;
    }
    r->dest_https = strncasecmp(t, "https:", 6) == 0;
    size_t hl = strlen(host);
    if (host[0] == '[' && hl > 2)
      snprintf(r->dest_host, sizeof r->dest_host, "%.*s", (int)(hl - 2),
               host + 1);
    else
      snprintf(r->dest_host, sizeof r->dest_host, "%s", host);
    int up = evhttp_uri_get_port(u);
    r->dest_port = up > 0 ? up : r->dest_https ? 443 : 80;
    evhttp_uri_free(u);
    const char *p = strchr(strstr(t, "://") + 3, '/');
    r->path = p ? p : "/";
  } else {
    r->path = t;
    size_t n = strlen(t) + 200;
    r->raw_url = malloc(n);
    if (r->raw_url)
      snprintf(r->raw_url, n, "http://%s%s", s->listen_addr, t);
    return 0;
  }
  authority_of(r->authority, sizeof r->authority, r->dest_host, r->dest_port,
               r->dest_https);
  r->prefix = "";
  size_t n = strlen(r->authority) + strlen(r->path) + 16;
  r->raw_url = malloc(n);
  if (r->raw_url)
    snprintf(r->raw_url, n, "%s://%s%s", r->dest_https ? "https" : "http",
             r->authority, r->path);
  return 0;
}

/* The request's identity: absolute URL (raw for matching, redacted for
 * everything recorded), where it would be forwarded, client and tracking
 * key. Returns -1 when out of memory, -2 for a forward-mode target that
 * names no usable host. */
static int describe(px_server *s, px_req *r) {
  const px_config *c = s->cfg;
  const char *uri = r->target;
  if (c->forward_mode) {
    if (forward_dest(s, r) < 0)
      return -2;
  } else if (strncasecmp(uri, "http://", 7) == 0 ||
             strncasecmp(uri, "https://", 8) == 0) {
    /* Absolute-form request targets are used as they are; otherwise the
     * upstream's URL (reverse proxy) or http://Host (mock mode). */
    const char *p = strchr(strstr(uri, "://") + 3, '/');
    r->path = p ? p : "/";
    r->raw_url = strdup(uri);
  } else {
    r->path = uri;
    const char *host = evhttp_find_header(r->in, "Host");
    size_t n = strlen(uri) + 1400;
    r->raw_url = malloc(n);
    if (r->raw_url) {
      if (c->upstream) /* the upstream's scheme: https:// globs match */
        snprintf(r->raw_url, n, "%s://%s%s%s",
                 strncasecmp(c->upstream, "https", 5) == 0 ? "https" : "http",
                 s->up_authority, s->up_prefix, uri);
      else
        snprintf(r->raw_url, n, "http://%s%s",
                 host && host[0] ? host : s->listen_addr, uri);
    }
  }
  r->url = r->raw_url ? polite__px_redact_url(r->raw_url) : NULL;
  if (r->url == NULL)
    return -1;
  if (!c->forward_mode) {
    r->up = s->up;
    r->prefix = s->up_prefix;
    snprintf(r->authority, sizeof r->authority, "%s", s->up_authority);
  }
  const char *auth = evhttp_find_header(r->in, "Authorization");
  if (auth) {
    char hex[17];
    polite__px_hash_hex(s->salt, auth, hex);
    size_t n = strlen(r->client);
    snprintf(r->client + n, sizeof r->client - n, " auth:%.8s", hex);
  }
  r->key = polite__px_scope_key(s, r, c->scope, r->in);
  if (r->key == NULL)
    return -1;
  r->kind = PX_KIND_PASSED;
  r->act = r->up || r->dest_host[0] ? ACT_FORWARD : ACT_OWN;
  return 0;
}

/* --allow-host: forward mode connects only to hosts a glob names (all
 * when none is given; the listener is then loopback-only, see run). */
static int host_allowed(const px_config *c, const char *host) {
  if (c->nallow_host == 0)
    return 1;
  for (size_t i = 0; i < c->nallow_host; i++)
    if (polite__px_glob_match(c->allow_host[i], host, NULL))
      return 1;
  return 0;
}

/* A CONNECT host is intercepted when a --watch pattern could match one of
 * its URLs: the pattern's host part (between "://" and the next '/')
 * matches host[:port], or the pattern names no host (a path glob, or a
 * bare star). With no
 * --watch at all nothing is decrypted. */
static int host_watched(const px_config *c, const char *authority) {
  for (size_t i = 0; i < c->nwatch; i++) {
    const char *p = c->watch[i];
    if (p[0] == '!')
      continue;
    const char *sep = strstr(p, "://");
    if (sep == NULL)
      return 1;
    if (strncasecmp(p, "http://", 7) == 0)
      continue; /* a plain-http pattern watches no https host */
    char hp[512];
    const char *h = sep + 3;
    size_t n = strcspn(h, "/");
    snprintf(hp, sizeof hp, "%.*s", (int)n, h);
    if (polite__px_glob_match(hp, authority, NULL))
      return 1;
  }
  return 0;
}

/* CONNECT: tunnel, or intercept a watched host with a leaf of the CA. */
static void on_connect(px_server *s, px_req *r) {
  SSL_CTX *ctx = NULL;
  if (s->ca && host_watched(s->cfg, r->authority)) {
    char err[256];
    ctx = polite__px_ca_ctx_for(s->ca, r->dest_host, err, sizeof err);
    if (ctx == NULL) {
      char msg[640];
      snprintf(msg, sizeof msg, "polite proxy: no certificate for %s: %s",
               r->dest_host, err);
      r->kind = PX_KIND_ERROR;
      r->keepalive = 0;
      polite__px_own_json_error(r, 502, "bad_gateway", msg);
      polite__px_send_own(r);
      return;
    }
  }
  polite__px_connect(r, ctx);
}

static int is_report(const px_req *r) {
  return strcmp(r->method, "GET") == 0 &&
         (strcmp(r->target, "/__polite/report") == 0 ||
          strncmp(r->target, "/__polite/report?", 17) == 0);
}

/* The proxy refuses the request itself (counted as an error). */
static void refuse_req(px_req *r, int status, const char *code,
                       const char *msg) {
  r->kind = PX_KIND_ERROR;
  polite__px_own_json_error(r, status, code, msg);
  polite__px_send_own(r);
}

void polite__px_dispatch(px_req *r) {
  px_server *s = r->s;
  const px_config *c = s->cfg;
  int64_t now_us = polite_mono_us(); /* one reading for the whole decision */
  if (is_report(r)) {
    polite__px_answer_report(r);
    return;
  }
  if (strcmp(r->method, "GET") == 0 &&
      strcmp(r->target, "/__polite/metrics") == 0) {
    polite__px_answer_metrics(r); /* pxlimits hook */
    return;
  }
  int dr = describe(s, r);
  if (dr == -1) {
    polite__px_conn_end(r, 0); /* out of memory: drop the connection */
    polite__px_req_free(r);
    return;
  }
  polite__px_metrics(s->st)->in_flight++; /* pxlimits hook (finish: --) */
  if (dr == -2) {
    if (r->url == NULL)
      r->url = strdup("-");
    if (r->key == NULL)
      r->key = strdup("-");
    r->keepalive = 0;
    refuse_req(r, 400, "bad_request",
               "polite proxy: the request target names no host");
    return;
  }
  if (r->dest_host[0] && !host_allowed(c, r->dest_host)) {
    refuse_req(r, 403, "host_not_allowed",
               "polite proxy: this host is not allowed (--allow-host)");
    return;
  }
  if (strcmp(r->method, "CONNECT") == 0) {
    if (c->forward_mode) {
      on_connect(s, r);
      return;
    }
    refuse_req(r, 405, "method_not_allowed",
               "polite proxy: CONNECT needs --mode forward");
    return;
  }
  /* CORS preflights are never failed (a browser would not even send the
   * real request); in mock mode they are answered here. */
  int preflight = strcmp(r->method, "OPTIONS") == 0 &&
                  evhttp_find_header(r->in, "Origin") &&
                  evhttp_find_header(r->in, "Access-Control-Request-Method");
  r->watched = !preflight &&
               polite__px_watch_match(c->watch, c->nwatch, r->raw_url, r->path);

  size_t body_len = evbuffer_get_length(r->reqbody);
  const char *body =
      body_len ? (const char *)evbuffer_pullup(r->reqbody, -1) : NULL;

  if (!r->watched || !polite__px_decide(r, now_us, body, body_len)) {
    px_rule *m = c->mocks.n && polite__px_plugin_watches(c, PX_PLUG_MOCKS,
                                                         r->raw_url, r->path)
                     ? polite__px_rules_match((px_rules *)&c->mocks, r->method,
                                              r->raw_url, body, body_len)
                     : NULL;
    if (m) {
      polite__px_own_canned(r, &m->responses[0]);
    } else if (preflight && r->act == ACT_OWN) {
      polite__px_own(r, 204, NULL, NULL, 0);
      const char *m2 =
          evhttp_find_header(r->in, "Access-Control-Request-Method");
      const char *h2 =
          evhttp_find_header(r->in, "Access-Control-Request-Headers");
      /* Header values were checked for control bytes by the parser. */
      polite__px_set_header(r, "Access-Control-Allow-Methods", m2);
      if (h2)
        polite__px_set_header(r, "Access-Control-Allow-Headers", h2);
    } else if (r->act == ACT_OWN && c->forward_mode) {
      refuse_req(r, 400, "no_destination",
                 "polite proxy: forward mode: send absolute-form requests "
                 "(HTTP_PROXY) or CONNECT (HTTPS_PROXY)");
      return;
    } else if (r->act == ACT_OWN) {
      polite__px_default_mock(r);
    } else {
      r->act = ACT_FORWARD;
    }
  }

  if (c->latency_max_ms > 0 &&
      polite__px_plugin_watches(c, PX_PLUG_LATENCY, r->raw_url, r->path)) {
    /* A timer, never a sleep: other requests go on meanwhile. */
    int64_t d = c->latency_min_ms +
                polite_rand_uniform(polite_rand_next(&s->rng),
                                    c->latency_max_ms - c->latency_min_ms);
    struct timeval tv = {(time_t)(d / 1000), (suseconds_t)((d % 1000) * 1000)};
    if (event_base_once(s->base, -1, EV_TIMEOUT, latency_cb, r, &tv) == 0)
      return;
  }
  run_action(r);
}

/* ---- Start, reports, stop ----------------------------------------------- */

static int write_file_atomic(const char *path, const char *text, size_t len) {
  size_t n = strlen(path) + 16;
  char *tmp = malloc(n);
  if (tmp == NULL)
    return -1;
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (f == NULL) {
    free(tmp);
    return -1;
  }
  int ok = fwrite(text, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) != 0)
    ok = 0;
  if (!ok)
    unlink(tmp);
  free(tmp);
  return ok ? 0 : -1;
}

static void write_reports(px_server *s) {
  int64_t now = polite_wall_ms();
  if (s->cfg->report) {
    char *text = polite__px_report_json(s->st, s->started_wall_ms, now);
    if (text == NULL ||
        write_file_atomic(s->cfg->report, text, strlen(text)) < 0)
      fprintf(stderr, "polite proxy: cannot write report %s: %s\n",
              s->cfg->report, strerror(errno));
    free(text);
  }
  if (s->cfg->report_md) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (f) {
      polite__px_report_md(s->st, f, s->started_wall_ms, now);
      fclose(f);
      if (write_file_atomic(s->cfg->report_md, buf, len) < 0)
        fprintf(stderr, "polite proxy: cannot write report %s: %s\n",
                s->cfg->report_md, strerror(errno));
    }
    free(buf);
  }
  if (s->cfg->report_html)
    polite__px_report_html(s->cfg, s->st, s->started_wall_ms, now, s->log);
}

/* Out of descriptors (EMFILE/ENFILE): stop accepting for 100 ms instead of
 * spinning on a listener that stays readable, and say so once a second. */
static void accept_error(struct evconnlistener *l, void *arg) {
  px_server *s = arg;
  int err = EVUTIL_SOCKET_ERROR();
  int64_t now = polite_mono_us() / 1000;
  if (now - s->accept_warned_ms >= 1000) {
    fprintf(stderr,
            "polite proxy: cannot accept connections: %s; retrying in 100 ms\n",
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
  px_server *s = arg;
  evconnlistener_enable(s->listener);
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *addr, int addrlen, void *arg) {
  (void)l;
  polite__px_conn_accept(arg, fd, addr, addrlen);
}

static void flush_log(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  px_server *s = arg;
  fflush(s->log);
}

/* pxlimits hook: errors and mocks files reloaded when they change. */
static void reload_files(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  px_server *s = arg;
  polite__px_config_reload(s->cfg, stderr);
}

static void on_signal(evutil_socket_t sig, short what, void *arg) {
  (void)what;
  px_server *s = arg;
  fprintf(stderr, "polite proxy: %s, writing the report and stopping\n",
          sig == SIGINT ? "interrupted" : "terminated");
  write_reports(s);
  event_base_loopbreak(s->base);
}

/* Opens the listening socket ourselves (rather than evconnlistener_new_bind)
 * to get a deep backlog for a thousand simultaneous connects and to learn the
 * port when 0 was asked for. */
static int open_listener(px_server *s, const char *where) {
  char host[256];
  const char *colon = strrchr(where, ':');
  size_t hl = (size_t)(colon - where);
  if (hl >= sizeof host)
    return -1;
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
    fprintf(stderr, "polite proxy: --listen %s: %s\n", where, gai_strerror(rc));
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
    fprintf(stderr, "polite proxy: cannot listen on %s: %s\n", where,
            strerror(errno));
    if (fd >= 0)
      close(fd);
    freeaddrinfo(ai);
    return -1;
  }
  freeaddrinfo(ai);
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  /* Zeroed first: if getsockname fails the family reads as AF_UNSPEC and
     the "?" address is shown, not stack garbage. */
  memset(&ss, 0, sizeof ss);
  getsockname(fd, (struct sockaddr *)&ss, &sl);
  char addr[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
    inet_ntop(AF_INET, &in4->sin_addr, addr, sizeof addr);
    port = ntohs(in4->sin_port);
    snprintf(s->listen_addr, sizeof s->listen_addr, "%s:%d", addr, port);
  } else if (ss.ss_family == AF_INET6) {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
    inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof addr);
    port = ntohs(in6->sin6_port);
    snprintf(s->listen_addr, sizeof s->listen_addr, "[%s]:%d", addr, port);
  }
  s->listener =
      evconnlistener_new(s->base, on_accept, s,
                         LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
  if (s->listener == NULL) {
    fprintf(stderr, "polite proxy: cannot accept on %s\n", where);
    close(fd);
    return -1;
  }
  s->resume = event_new(s->base, -1, 0, resume_accept, s);
  evconnlistener_set_error_cb(s->listener, accept_error);
  return 0;
}

static int split_upstream(px_server *s, const char *url) {
  struct evhttp_uri *u = evhttp_uri_parse(url);
  if (u == NULL || evhttp_uri_get_host(u) == NULL) {
    if (u)
      evhttp_uri_free(u);
    char *shown = polite__px_redact_url(url);
    fprintf(stderr, "polite proxy: --upstream %s: not a valid http URL\n",
            shown ? shown : "?");
    free(shown);
    return -1;
  }
  const char *host = evhttp_uri_get_host(u);
  int port = evhttp_uri_get_port(u);
  snprintf(s->up_host, sizeof s->up_host, "%s", host);
  /* evhttp keeps IPv6 literals bracketed; sockets want them bare. */
  size_t hl = strlen(s->up_host);
  if (hl > 2 && s->up_host[0] == '[' && s->up_host[hl - 1] == ']') {
    memmove(s->up_host, s->up_host + 1, hl - 2);
    s->up_host[hl - 2] = '\0';
  }
  s->up_port = port > 0 ? port : strncasecmp(url, "https", 5) == 0 ? 443 : 80;
  if (port > 0)
    snprintf(s->up_authority, sizeof s->up_authority, "%s:%d", host, port);
  else
    snprintf(s->up_authority, sizeof s->up_authority, "%s", host);
  const char *path = evhttp_uri_get_path(u);
  snprintf(s->up_prefix, sizeof s->up_prefix, "%s", path ? path : "");
  size_t pl = strlen(s->up_prefix);
  while (pl > 0 && s->up_prefix[pl - 1] == '/')
    s->up_prefix[--pl] = '\0';
  evhttp_uri_free(u);
  return 0;
}

/* 1 when the --listen address is on loopback. */
static int loopback_listen(const char *listen) {
  return strncmp(listen, "127.", 4) == 0 || strncmp(listen, "[::1]:", 6) == 0 ||
         strncmp(listen, "localhost:", 10) == 0;
}

/* Forward mode: the upstream pool, and the local CA when some host is
 * watched (created on first use, see docs/proxy-https.md). Refuses to be an
 * open relay: off loopback, --allow-host must say where it may connect. */
static int start_forward(px_server *s) {
  const px_config *c = s->cfg;
  if (c->upstream) {
    fprintf(stderr, "polite proxy: --mode forward takes no --upstream (each "
                    "request names its destination)\n");
    return -1;
  }
  if (!loopback_listen(c->listen) && c->nallow_host == 0) {
    fprintf(stderr,
            "polite proxy: --mode forward on %s (not loopback) would relay "
            "to any host: give --allow-host GLOB\n",
            c->listen);
    return -1;
  }
  s->pool =
      polite__px_up_pool_new(s->base, c->upstream_cacert, c->upstream_insecure);
  if (s->pool == NULL) {
    fprintf(stderr, "polite proxy: out of memory\n");
    return -1;
  }
  if (c->nwatch > 0) {
    char err[512];
    if (polite__px_ca_open(NULL, 1, &s->ca, err, sizeof err) < 0) {
      fprintf(stderr, "polite proxy: the local CA: %s\n", err);
      return -1;
    }
    fprintf(stderr,
            "polite proxy: intercepting watched HTTPS hosts with the "
            "CA in %s\n",
            polite__px_ca_cert_path(s->ca));
  }
  return 0;
}

/* The documented defaults (docs/proxy.md, "Bounds") where the config leaves
 * a bound at 0. The connection limit also stays below the descriptors the
 * process may open: each connection may hold two (client and upstream). */
static void set_bounds(px_bounds *b, const px_config *c) {
  b->head.head_max = c->max_head ? (size_t)c->max_head : 64 * 1024;
  b->head.headers_max = c->max_headers ? (size_t)c->max_headers : 100;
  b->body_max = c->max_body ? c->max_body : 16 * 1024 * 1024;
  b->header_timeout_ms = c->header_timeout_ms ? c->header_timeout_ms : 10000;
  b->idle_timeout_ms = c->idle_timeout_ms ? c->idle_timeout_ms : 60000;
  b->conns_max = c->max_connections ? (size_t)c->max_connections : 4096;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur > 64) {
    size_t fit = (size_t)(rl.rlim_cur - 32) / 2;
    if (b->conns_max > fit)
      b->conns_max = fit;
  }
}

/* Frees what run() made, whatever it got to. */
static void release(px_server *s) {
  polite__px_conn_close_all(s);
  if (s->listener)
    evconnlistener_free(s->listener);
  if (s->resume)
    event_free(s->resume);
  polite__px_up_free(s->up);
  if (s->pool)
    polite__px_up_pool_free(s->pool);
  if (s->ca)
    polite__px_ca_free(s->ca);
  if (s->base)
    event_base_free(s->base);
  polite__px_state_free(s->st);
  if (s->log && s->log != stderr)
    fclose(s->log);
}

int polite__px_run(px_config *c) {
  px_server s;
  memset(&s, 0, sizeof s);
  s.cfg = c;
  s.rng = c->has_seed ? c->seed : polite_random_seed();
  s.salt = polite_random_seed();
  s.started_wall_ms = polite_wall_ms();
  set_bounds(&s.bounds, c);
  signal(SIGPIPE, SIG_IGN);
  if (c->upstream && split_upstream(&s, c->upstream) < 0)
    return 1;
  if (c->log && strcmp(c->log, "-") != 0) {
    s.log = fopen(c->log, "a");
    if (s.log == NULL) {
      fprintf(stderr, "polite proxy: --log %s: %s\n", c->log, strerror(errno));
      return 1;
    }
    /* Fully buffered, flushed by a timer every 200 ms and at exit: one
     * write per batch instead of one per request. */
    setvbuf(s.log, NULL, _IOFBF, 1 << 16);
  } else {
    s.log = stderr;
  }
  /* The changelist folds the add/remove pairs made within one loop turn
   * into one epoll_ctl each. */
  struct event_config *ecfg = event_config_new();
  if (ecfg) {
    event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    s.base = event_base_new_with_config(ecfg);
    event_config_free(ecfg);
  }
  if (s.base == NULL)
    s.base = event_base_new();
  s.st = polite__px_state_new();
  if (s.st)
    polite__px_track_setup(s.st, &c->track); /* the judge's switch, bounds */
  if (s.base == NULL || s.st == NULL) {
    fprintf(stderr, "polite proxy: cannot start the event loop\n");
    release(&s);
    return 1;
  }
  if (c->forward_mode && start_forward(&s) < 0) {
    release(&s);
    return 1;
  }
  if (c->upstream) {
    char err[512];
    int https = strncasecmp(c->upstream, "https://", 8) == 0;
    SSL_CTX *tls =
        https ? polite__px_tls_client_ctx(c->upstream_cacert,
                                          c->upstream_insecure, err, sizeof err)
              : NULL;
    s.up = https && tls == NULL
               ? NULL
               : polite__px_up_new_tls(s.base, s.up_host, s.up_port, tls, err,
                                       sizeof err);
    SSL_CTX_free(tls);
    if (s.up == NULL) {
      fprintf(stderr, "polite proxy: --upstream %s://%s: %s\n",
              https ? "https" : "http", s.up_authority, err);
      release(&s);
      return 1;
    }
    if (https && c->upstream_insecure)
      fprintf(stderr, "polite proxy: --upstream-insecure: the upstream's "
                      "certificate is NOT verified\n");
  }
  /* Signals are caught before the address is announced, so that a script
   * that stops the proxy right after reading --ready-file gets a report. */
  struct event *si = evsignal_new(s.base, SIGINT, on_signal, &s);
  struct event *st = evsignal_new(s.base, SIGTERM, on_signal, &s);
  struct event *fl = event_new(s.base, -1, EV_PERSIST, flush_log, &s);
  struct event *rl = event_new(s.base, -1, EV_PERSIST, reload_files, &s);
  struct timeval every = {0, 200000}, second = {1, 0};
  if (rl)
    event_add(rl, &second); /* pxlimits hook */
  int rc = 1;
  if (si && st && fl && event_add(si, NULL) == 0 && event_add(st, NULL) == 0 &&
      (s.log == stderr || event_add(fl, &every) == 0) &&
      open_listener(&s, c->listen) == 0) {
    fprintf(stderr, "polite proxy: listening on %s\n", s.listen_addr);
    if (c->warning) /* pxlimits hook: what a devproxyrc asks, not simulated */
      fprintf(stderr, "polite proxy: warning: %s\n", c->warning);
    if (c->upstream)
      fprintf(stderr, "polite proxy: forwarding to %s://%s%s\n",
              strncasecmp(c->upstream, "https://", 8) == 0 ? "https" : "http",
              s.up_authority, s.up_prefix);
    else if (c->forward_mode)
      fprintf(stderr, "polite proxy: forward mode (HTTP_PROXY/HTTPS_PROXY "
                      "clients)\n");
    else
      fprintf(stderr, "polite proxy: mock mode (no --upstream)\n");
    if (c->ready_file) {
      char line[160];
      int n = snprintf(line, sizeof line, "%s\n", s.listen_addr);
      if (write_file_atomic(c->ready_file, line, (size_t)n) < 0)
        fprintf(stderr, "polite proxy: cannot write --ready-file %s\n",
                c->ready_file);
    }
    event_base_dispatch(s.base);
    rc = 0;
  }
  if (si)
    event_free(si);
  if (st)
    event_free(st);
  if (fl)
    event_free(fl);
  if (rl)
    event_free(rl);
  release(&s);
  return rc;
}
