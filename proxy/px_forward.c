/* polite proxy: reverse proxy: request to the upstream, answer streamed back,
 * hop-by-hop headers. */
#define _GNU_SOURCE
#include "px_engine.h"

#include <polite/clock.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/bufferevent.h>
#include <event2/http_struct.h>

/* Hop-by-hop headers (RFC 9110 §7.6.1) are for one connection only. */
static int hop_by_hop(const char *name, const char *connection) {
  static const char *const hop[] = {"Connection",
                                    "Keep-Alive",
                                    "Proxy-Connection",
                                    "Proxy-Authenticate",
                                    "Proxy-Authorization",
                                    "TE",
                                    "Trailer",
                                    "Transfer-Encoding",
                                    "Upgrade",
                                    NULL};
  for (int i = 0; hop[i]; i++)
    if (strcasecmp(name, hop[i]) == 0)
      return 1;
  if (strncasecmp(name, "Proxy-", 6) == 0)
    return 1;
  if (connection) {
    /* Also every header the Connection field names. */
    size_t n = strlen(name);
    const char *p = connection;
    while (*p) {
      while (*p == ' ' || *p == ',' || *p == '\t')
        p++;
      const char *e = p;
      while (*e && *e != ',' && *e != ' ' && *e != '\t')
        e++;
      if ((size_t)(e - p) == n && strncasecmp(p, name, n) == 0)
        return 1;
      p = e;
    }
  }
  return 0;
}

static void copy_headers(struct evkeyvalq *from, struct evkeyvalq *to) {
  const char *conn = evhttp_find_header(from, "Connection");
  for (struct evkeyval *h = from->tqh_first; h; h = h->next.tqe_next)
    if (!hop_by_hop(h->key, conn))
      evhttp_add_header(to, h->key, h->value);
}

static void add_via(struct evkeyvalq *h, const char *proto) {
  const char *old = evhttp_find_header(h, "Via");
  char v[1024];
  if (old)
    snprintf(v, sizeof v, "%s, %s polite", old, proto);
  else
    snprintf(v, sizeof v, "%s polite", proto);
  evhttp_remove_header(h, "Via");
  evhttp_add_header(h, "Via", v);
}

static void up_head(void *arg, int code, const char *reason, int minor,
                    struct evkeyvalq *in) {
  px_req *r = arg;
  struct evkeyvalq *out = evhttp_request_get_output_headers(r->req);
  copy_headers(in, out);
  char proto[16];
  snprintf(proto, sizeof proto, "1.%d", minor);
  add_via(out, proto);
  /* pxlimits hooks: the upstream's Retry-After and latency, then the wait
   * counts from now, as the head leaves. */
  polite__px_upstream_answer(r, code, in);
  polite__px_answer_left(r);
  r->status = code;
  r->headers_sent = 1;
  evhttp_send_reply_start(r->req, code, reason && reason[0] ? reason : NULL);
}

static void up_body(void *arg, struct evbuffer *data) {
  px_req *r = arg;
  polite__px_upstream_chunk(r, data); /* pxlimits hook: token usage */
  if (r->headers_sent && evbuffer_get_length(data) > 0)
    evhttp_send_reply_chunk(r->req, data);
}

static void up_done(void *arg, int ok) {
  px_req *r = arg;
  if (!ok && !r->headers_sent) {
    r->kind = PX_KIND_ERROR;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              polite__px_up_error(r->s->up));
    polite__px_send_own(r);
    return;
  }
  /* After a mid-body failure the client gets what arrived (a short body). */
  if (!ok)
    r->kind = PX_KIND_ERROR;
  else
    polite__px_upstream_end(r); /* pxlimits hook: token usage */
  evhttp_send_reply_end(r->req);
  polite__px_finish(r);
}

/* More than this waiting for a slow client pauses reading the upstream. */
#define CLIENT_BUFFER_MAX (4 * 1024 * 1024)

static int up_busy(void *arg) {
  px_req *r = arg;
  /* A client that went away has no connection: drain the upstream. */
  struct evhttp_connection *conn = evhttp_request_get_connection(r->req);
  struct bufferevent *bev =
      conn ? evhttp_connection_get_bufferevent(conn) : NULL;
  return bev &&
         evbuffer_get_length(bufferevent_get_output(bev)) > CLIENT_BUFFER_MAX;
}

static const px_up_handler up_handler = {up_head, up_body, up_done, up_busy};

void polite__px_forward(px_req *r) {
  px_server *s = r->s;
  struct evhttp_request *req = r->req;
  r->fwd_us = polite_mono_us(); /* pxlimits hook: upstream latency */
  enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
  struct evbuffer *out = evbuffer_new();
  struct evbuffer *body = evhttp_request_get_input_buffer(req);
  size_t blen = evbuffer_get_length(body);
  if (out == NULL) {
    r->kind = PX_KIND_ERROR;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              "polite proxy: out of memory");
    polite__px_send_own(r);
    return;
  }
  evbuffer_add_printf(out, "%s %s%s HTTP/1.1\r\nHost: %s\r\n", r->method,
                      s->up_prefix, r->path, s->up_authority);
  struct evkeyvalq *in = evhttp_request_get_input_headers(req);
  const char *conn = evhttp_find_header(in, "Connection");
  const char *via = NULL;
  for (struct evkeyval *h = in->tqh_first; h; h = h->next.tqe_next) {
    /* Expect: 100-continue was answered by our server side; the body is
     * already here, so the upstream is not asked to wait for it. */
    if (hop_by_hop(h->key, conn) || strcasecmp(h->key, "Host") == 0 ||
        strcasecmp(h->key, "Content-Length") == 0 ||
        strcasecmp(h->key, "Expect") == 0)
      continue;
    if (strcasecmp(h->key, "Via") == 0) {
      via = h->value;
      continue;
    }
    evbuffer_add_printf(out, "%s: %s\r\n", h->key, h->value);
  }
  evbuffer_add_printf(out, "Via: %s%s1.%d polite\r\n", via ? via : "",
                      via ? ", " : "", req->minor);
  /* The body as received (de-chunked by the server side), always with its
   * length; methods that usually carry a body get one even when empty. */
  if (blen > 0 || cmd == EVHTTP_REQ_POST || cmd == EVHTTP_REQ_PUT ||
      cmd == EVHTTP_REQ_PATCH)
    evbuffer_add_printf(out, "Content-Length: %zu\r\n", blen);
  evbuffer_add(out, "\r\n", 2);
  evbuffer_add_buffer(out, body);
  r->status = 0;
  int retryable = polite_method_idempotent(r->method);
  if (s->up == NULL || polite__px_up_send(s->up, out, cmd == EVHTTP_REQ_HEAD,
                                          retryable, &up_handler, r) != 0) {
    r->kind = PX_KIND_ERROR;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              s->up ? polite__px_up_error(s->up)
                                    : "polite proxy: no upstream");
    polite__px_send_own(r);
  }
  evbuffer_free(out);
}
