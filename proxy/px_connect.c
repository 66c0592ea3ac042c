/* polite proxy: CONNECT in forward mode: a watched host is intercepted with
 * a leaf certificate of the local CA (its requests then come through the
 * usual route), any other host is tunnelled byte for byte (net/ does both). */
#define _GNU_SOURCE
#include "px_engine.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* The CONNECT itself fails: 502 with why, and the connection closes. */
static void connect_failed(px_req *r, const char *why) {
  char msg[640];
  snprintf(msg, sizeof msg, "polite proxy: %s", why);
  for (char *q = msg; *q; q++) /* trusted text in a JSON string */
    if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
      *q = '\'';
  r->kind = PX_KIND_ERROR;
  r->nr->keepalive = 0;
  polite__px_own_json_error(r, 502, "bad_gateway", msg);
  polite__px_send_own(r);
}

/* net's word on the tunnel: up (the CONNECT is logged and done), or not. */
static void tunnel_done(void *ud, net_req *nr, int ok, const char *err) {
  px_req *r = ud;
  (void)nr;
  r->now = polite__px_now(r->s);
  if (!ok) {
    connect_failed(r, err);
    return;
  }
  r->status = 200;
  r->unrecorded = 1; /* the tunnel's requests are not the proxy's to count */
  snprintf(r->note, sizeof r->note, "tunnel");
  polite__px_finish(r);
}

static void tunnel(px_req *r) {
  px_server *s = r->s;
  char dial[256], err[400];
  int port = r->dest_port;
  polite__net_connect_to_map(s->cto, r->dest_host, r->dest_port, dial,
                             sizeof dial, &port);
  if (polite__net_tunnel(r->nr,
                         s->pool ? polite__net_up_pool_dns(s->pool) : NULL,
                         dial, port, tunnel_done, r, err, sizeof err) != 0)
    connect_failed(r, err);
}

void polite__px_connect(px_req *r) {
  px_server *s = r->s;
  if (!(s->ca && host_watched(s->cfg, r->authority))) {
    tunnel(r);
    return;
  }
  char err[256];
  SSL_CTX *ctx = polite__net_ca_ctx_for(s->ca, r->dest_host, err, sizeof err);
  if (ctx == NULL) {
    char why[600];
    snprintf(why, sizeof why, "no certificate for %s: %s", r->dest_host, err);
    connect_failed(r, why);
    return;
  }
  if (polite__net_intercept(r->nr, ctx, r->dest_host, r->dest_port) != 0) {
    connect_failed(r, "cannot start TLS");
    return;
  }
  r->status = 200;
  r->unrecorded = 1; /* the requests inside are counted one by one */
  snprintf(r->note, sizeof r->note, "intercepted");
  polite__px_finish(r);
}
