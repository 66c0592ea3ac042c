/* polite proxy: where a request goes: its identity (absolute URL, client,
 * tracking key, destination), then one table of routes walked in order (the
 * report, the metrics, CONNECT, a CORS preflight, the checks of a watched
 * request, a mock, the default). */
#define _GNU_SOURCE
#include "px_engine.h"

#include <event2/http.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* ---- The request's identity ---------------------------------------------- */

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
 * request inside an intercepted CONNECT goes to that host, over https
 * unless the client sent plain HTTP inside it (undici's ProxyAgent); an
 * absolute-form target names its own. An origin-form request outside
 * CONNECT has no destination (dest_host stays empty). Builds raw_url. */
static int forward_dest(px_server *s, px_req *r) {
  const char *origin = r->nr->origin_host[0] ? r->nr->origin_host : NULL;
  const char *t = r->target;
  if (strcmp(r->method, "CONNECT") == 0) {
    if (split_authority(t, r->dest_host, sizeof r->dest_host, &r->dest_port) <
        0)
      return -1;
    r->dest_https = 1;
    r->path = "/";
  } else if (origin && t[0] == '/') {
    snprintf(r->dest_host, sizeof r->dest_host, "%s", origin);
    r->dest_port = r->nr->origin_port;
    r->dest_https = !r->nr->origin_plain;
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

/* The four strings of parts one after the other, malloc'ed (NULL: out of
 * memory). Pieces, not printf: once per request. */
static char *join4(const char *const parts[4]) {
  size_t len[4], total = 1;
  for (size_t i = 0; i < 4; i++)
    total += len[i] = strlen(parts[i]);
  char *out = malloc(total);
  if (out == NULL)
    return NULL;
  char *o = out;
  for (size_t i = 0; i < 4; i++) {
    memcpy(o, parts[i], len[i]);
    o += len[i];
  }
  *o = '\0';
  return out;
}

/* What the decision reads of r (px_decide.h), borrowed from r; the three
 * header values are the ones describe looked up (once per request). */
static px_ask ask_of(const px_req *r) {
  px_ask a = {
      .method = r->method,
      .url = r->url,
      .raw_url = r->raw_url,
      .path = r->path,
      .key = r->key,
      .client = r->client,
      .conn_id = r->conn_id,
      .conn_handle = r->nr ? polite__net_req_fd(r->nr) : -1,
      .host = r->h_host,
      .authorization = r->h_auth,
      .user_agent = r->h_ua,
  };
  return a;
}

/* The request's identity: absolute URL (raw for matching, redacted for
 * everything recorded), where it would be forwarded, client and tracking
 * key. Returns -1 when out of memory, -2 for a forward-mode target that
 * names no usable host. */
static int describe(px_server *s, px_req *r) {
  const px_config *c = s->cfg;
  const char *uri = r->target;
  r->h_host = polite__net_find(r->in, "Host");
  r->h_auth = polite__net_find(r->in, "Authorization");
  r->h_ua = polite__net_find(r->in, "User-Agent");
  if (strcmp(r->method, "CONNECT") == 0) {
    /* The log and the report name the authority it was given
     * ("api.openai.com:443"), in every mode. */
    r->path = "/";
    if (c->forward_mode && forward_dest(s, r) < 0)
      return -2;
    free(r->raw_url);
    r->raw_url = strdup(uri);
  } else if (c->forward_mode) {
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
    const char *host = r->h_host;
    /* The upstream's scheme (https:// globs match), else http://Host. */
    const char *parts[4] = {"http://", host && host[0] ? host : s->listen_addr,
                            "", uri};
    if (c->upstream) {
      parts[0] =
          strncasecmp(c->upstream, "https", 5) == 0 ? "https://" : "http://";
      parts[1] = s->up_authority;
      parts[2] = s->up_prefix;
    }
    r->raw_url = join4(parts);
  }
  r->url = r->raw_url ? polite__px_redact_url(r->raw_url) : NULL;
  if (r->url == NULL)
    return -1;
  if (!c->forward_mode) {
    r->up = s->up;
    r->prefix = s->up_prefix;
    /* Not printf: per request. up_authority fits (the same size). */
    _Static_assert(sizeof r->authority >= sizeof s->up_authority, "authority");
    memcpy(r->authority, s->up_authority, sizeof s->up_authority);
  }
  if (r->h_auth) {
    char hex[17];
    polite__px_hash_hex(s->salt, r->h_auth, hex);
    /* " auth:" and 8 digits, cut to fit as snprintf would; not printf:
     * once per request. */
    size_t n = strlen(r->client), room = sizeof r->client - 1 - n;
    char add[15] = " auth:";
    memcpy(add + 6, hex, 8);
    size_t k = room < 14 ? room : 14;
    memcpy(r->client + n, add, k);
    r->client[n + k] = '\0';
  }
  px_ask a = ask_of(r);
  r->key = polite__px_scope_key(s->salt, &a, c->scope);
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

/* A mocks file's first matching entry answers r (within MockResponsePlugin's
 * own urlsToWatch, when a devproxyrc gives it one). 1 when one did. */
static int mock_answer(px_req *r) {
  const px_config *c = r->s->cfg;
  if (c->mocks.n == 0 ||
      !polite__px_plugin_watches(c, PX_PLUG_MOCKS, r->raw_url, r->path))
    return 0;
  size_t body_len = evbuffer_get_length(r->nr->body);
  const char *body =
      body_len ? (const char *)evbuffer_pullup(r->nr->body, -1) : NULL;
  px_rule *m = polite__px_rules_match((px_rules *)&c->mocks, r->method,
                                      r->raw_url, body, body_len);
  if (m == NULL)
    return 0;
  polite__px_own_canned(r, &m->responses[0]);
  return 1;
}

/* ---- The routes ---------------------------------------------------------- */

#define ROUTE_ENDS 1    /* the handler ends r itself (else its action runs) */
#define ROUTE_COUNTED 2 /* a request of the API: described, counted, judged */

/* One route: when it applies, and what answers (or forwards) the request.
 * A handler either ends r (answered, freed) or prepares r's action, which
 * polite__px_route then runs. */
typedef struct {
  const char *name;
  int (*applies)(const px_req *r);
  void (*handle)(px_req *r);
  int flags; /* ROUTE_* */
} px_routedef;

/* 1 when host (n bytes, "[::1]" bracketed) is a loopback name or
 * address. */
static int is_loopback(const char *host, size_t n) {
  return (n == 9 && strncasecmp(host, "localhost", 9) == 0) ||
         (n == 5 && strncmp(host, "[::1]", 5) == 0) ||
         (n >= 4 && strncmp(host, "127.", 4) == 0);
}

/* 1 when authority a (n bytes, "HOST:PORT") names this proxy: its listen
 * address as printed, or a loopback name on its port when it listens on
 * loopback or on every address. */
static int names_proxy(const px_server *s, const char *a, size_t n) {
  const char *l = s->listen_addr;
  if (strlen(l) == n && strncasecmp(l, a, n) == 0)
    return 1;
  const char *lc = strrchr(l, ':');
  const char *ac = memrchr(a, ':', n);
  if (lc == NULL || ac == NULL)
    return 0;
  size_t port_len = n - (size_t)(ac - a); /* ":PORT" */
  if (strlen(lc) != port_len || memcmp(lc, ac, port_len) != 0)
    return 0;
  size_t lh = (size_t)(lc - l);
  int wild = (lh == 7 && strncmp(l, "0.0.0.0", 7) == 0) ||
             (lh == 4 && strncmp(l, "[::]", 4) == 0);
  return (wild || is_loopback(l, lh)) && is_loopback(a, (size_t)(ac - a));
}

/* r's target as the proxy's own endpoints read it: the path of an
 * absolute-form target that names the proxy itself (a client whose
 * HTTP_PROXY is this proxy asks for http://PROXY/__polite/report in that
 * form; it is answered, never forwarded to the proxy itself), else the
 * target as it is. */
static const char *own_target(const px_req *r) {
  const char *t = r->target;
  if (strncasecmp(t, "http://", 7) != 0)
    return t;
  const char *a = t + 7;
  size_t n = strcspn(a, "/?#");
  if (a[n] != '/' || !names_proxy(r->s, a, n))
    return t;
  return a + n;
}

/* 0 when r's target cannot name one of the proxy's own endpoints (an
 * origin-form target outside "/__polite/", or one that is not http://):
 * the three checks below are asked of every request. */
static int maybe_own(const px_req *r) {
  const char *t = r->target;
  return t[0] == '/' ? strncmp(t, "/__polite/", 10) == 0 : (t[0] | 32) == 'h';
}

static int is_get(const px_req *r, const char *path) {
  size_t n = strlen(path);
  const char *t = own_target(r);
  return strcmp(r->method, "GET") == 0 && strncmp(t, path, n) == 0 &&
         (t[n] == '\0' || t[n] == '?');
}

static int is_report(const px_req *r) {
  return maybe_own(r) && is_get(r, "/__polite/report");
}

static int is_metrics(const px_req *r) {
  return maybe_own(r) && strcmp(r->method, "GET") == 0 &&
         strcmp(own_target(r), "/__polite/metrics") == 0;
}

static int is_clock(const px_req *r) {
  if (!r->s->cfg->test_clock || !maybe_own(r))
    return 0;
  const char *t = own_target(r);
  return strcmp(r->method, "POST") == 0 &&
         strncmp(t, "/__polite/clock", 15) == 0 &&
         (t[15] == '\0' || t[15] == '?');
}

static int is_connect(const px_req *r) {
  return strcmp(r->method, "CONNECT") == 0;
}

/* CORS preflights are never failed (a browser would not even send the real
 * request); in mock mode they are answered here. */
static int is_preflight(const px_req *r) {
  return strcmp(r->method, "OPTIONS") == 0 &&
         polite__net_find(r->in, "Origin") &&
         polite__net_find(r->in, "Access-Control-Request-Method");
}

static int always(const px_req *r) {
  (void)r;
  return 1;
}

/* The proxy refuses the request itself (counted as an error, logged with
 * the code as its category). */
static void refuse_req(px_req *r, int status, const char *code,
                       const char *msg) {
  r->kind = PX_KIND_ERROR;
  snprintf(r->cat, sizeof r->cat, "%s", code);
  polite__px_own_json_error(r, status, code, msg);
  polite__px_send_own(r);
}

static void do_connect(px_req *r) {
  if (!r->s->cfg->forward_mode) {
    r->nr->keepalive = 0;
    refuse_req(r, 405, "method_not_allowed",
               "polite proxy: CONNECT needs --mode forward (this proxy "
               "is a reverse proxy; --connect-to serves an intercepted "
               "host from a local server)");
    return;
  }
  polite__px_connect(r);
}

static void do_preflight(px_req *r) {
  if (mock_answer(r) || r->act != ACT_OWN)
    return; /* a mock answers it, or it is forwarded as it is */
  polite__px_own(r, 204, NULL, NULL, 0);
  const char *m = polite__net_find(r->in, "Access-Control-Request-Method");
  const char *h = polite__net_find(r->in, "Access-Control-Request-Headers");
  /* Header values were checked for control bytes by the parser. */
  polite__px_set_header(r, "Access-Control-Allow-Methods", m);
  if (h)
    polite__px_set_header(r, "Access-Control-Allow-Headers", h);
}

/* The judge's probe: 0 when the connection `conn` ("ADDR:PORT") that had
 * descriptor fd is gone: the descriptor is closed or now belongs to another
 * peer, or the peer has closed its side (a read would see end of file).
 * evhttp notices a client's close of an idle connection late, so the judge
 * asks. */
static int conn_alive(void *ctx, const char *conn, int fd) {
  (void)ctx;
  if (fd < 0)
    return 1;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char host[64], serv[16], id[96];
  if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 ||
      getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, serv,
                  sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return 0;
  snprintf(id, sizeof id, "%s:%s", host, serv);
  if (strcmp(id, conn) != 0)
    return 0;
  char byte;
  return recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
}

/* The verdict on a watched request (px_decide.c), carried out on r: 1 when
 * the proxy answers it itself. The judge first learns which of its
 * clients' connections are gone (the probe touches sockets, so it runs
 * here, before the pure decision). */
static int decide(px_req *r) {
  px_server *s = r->s;
  polite__px_conn_probe(s->st, conn_alive, NULL);
  px_ask a = ask_of(r);
  a.body_len = evbuffer_get_length(r->nr->body);
  a.body = a.body_len ? (const char *)evbuffer_pullup(r->nr->body, -1) : NULL;
  px_decider d = {s->cfg, s->st, &s->rng, s->salt};
  px_decision v;
  polite__px_decide(&d, &a, &r->now, &v);
  polite__px_carry(r, &v);
  return v.answer;
}

/* A watched request: the checks (judge, limits, failures) may answer it;
 * else a mock or the default does. */
static void do_default(px_req *r) {
  const px_config *c = r->s->cfg;
  r->watched = polite__px_watch_match(c->watch, c->nwatch, r->raw_url, r->path);
  if (r->watched && decide(r))
    return;
  if (mock_answer(r))
    return;
  if (r->act == ACT_OWN && c->forward_mode) {
    r->kind = PX_KIND_ERROR;
    snprintf(r->cat, sizeof r->cat, "no_destination");
    polite__px_own_json_error(
        r, 400, "no_destination",
        "polite proxy: forward mode: send absolute-form requests "
        "(HTTP_PROXY) or CONNECT (HTTPS_PROXY)");
  } else if (r->act == ACT_OWN) {
    polite__px_default_mock(r);
  }
}

/* The first row that applies routes the request. The proxy's own
 * endpoints come first and are not counted as requests. */
static const px_routedef routes[] = {
    {"report", is_report, polite__px_answer_report, ROUTE_ENDS},
    {"metrics", is_metrics, polite__px_answer_metrics, ROUTE_ENDS},
    {"clock", is_clock, polite__px_answer_clock, ROUTE_ENDS},
    {"connect", is_connect, do_connect, ROUTE_ENDS | ROUTE_COUNTED},
    {"preflight", is_preflight, do_preflight, ROUTE_COUNTED},
    {"default", always, do_default, ROUTE_COUNTED},
};

/* The request's identity, and the refusals that need it. Returns 0 to go
 * on, 1 when r was ended here. */
static int identify(px_req *r) {
  px_server *s = r->s;
  int dr = describe(s, r);
  if (dr == -1) {
    polite__net_req_end(r->nr, 0); /* out of memory: drop the connection */
    polite__px_req_free(r);
    return 1;
  }
  polite__px_metrics(s->st)->in_flight++; /* pxlimits hook (finish: --) */
  if (dr == -2) {
    if (r->url == NULL)
      r->url = strdup("-");
    if (r->key == NULL)
      r->key = strdup("-");
    r->nr->keepalive = 0;
    refuse_req(r, 400, "bad_request",
               "polite proxy: the request target names no host");
    return 1;
  }
  if (r->dest_host[0] && !host_allowed(s->cfg, r->dest_host)) {
    refuse_req(r, 403, "host_not_allowed",
               "polite proxy: this host is not allowed (--allow-host)");
    return 1;
  }
  return 0;
}

void polite__px_route(px_req *r) {
  for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
    const px_routedef *rt = &routes[i];
    if (!rt->applies(r))
      continue;
    if ((rt->flags & ROUTE_COUNTED) && identify(r))
      return;
    rt->handle(r);
    if (!(rt->flags & ROUTE_ENDS))
      polite__px_run_action(r);
    return;
  }
}
