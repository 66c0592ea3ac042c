/* polite proxy: CONNECT in forward mode: a watched host is intercepted with
 * a leaf certificate of the local CA, or read as plain HTTP when the client
 * sends that (its requests then come through the usual route), any other
 * host is tunnelled byte for byte (net/ does all three). */
#define _GNU_SOURCE
#include "px_engine.h"
#include "url_glob.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

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
  if (!(s->ca && polite__url_watch_connect((const char *const *)s->cfg->watch,
                                           s->cfg->nwatch, r->dest_host,
                                           r->dest_port))) {
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
  snprintf(r->note, sizeof r->note, "intercepted");
  polite__px_finish(r);
}
