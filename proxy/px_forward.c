/* polite proxy: forwarding: request to the upstream (or the real
 * destination), answer streamed back, hop-by-hop headers, truncation. */
#define _GNU_SOURCE
#include "px_engine.h"

#include "net_head.h"

#include <stdlib.h>
#include <string.h>
#include <event2/bufferevent.h>
#include <event2/http_struct.h>

static void up_head(void *arg, int code, const char *reason, int minor,
                    struct evkeyvalq *in) {
  px_req *r = arg;
  r->now = polite__px_now(r->s);
  char via[NET_VIA_LINE_MAX];
  polite__net_via_line(via, polite__net_find(in, "Via"), minor);
  /* pxlimits hooks: the upstream's Retry-After and latency, then the wait
   * counts from now, as the head leaves. */
  polite__px_upstream_answer(r, code, in);
  polite__px_answer_left(r);
  r->status = code;
  r->headers_sent = 1;
  /* The upstream's parser checked Content-Length (digits, one value) and
   * dropped it when the body is chunked: it is the body's length here. */
  const char *cl = polite__net_find(in, "Content-Length");
  int64_t length = cl ? strtoll(cl, NULL, 10) : -1;
  int no_body = strcmp(r->method, "HEAD") == 0 || code < 200 || code == 204 ||
                code == 304;
  /* The upstream's fields go to the client as they are (no copy), after
   * the proxy's own (the limits' headers on a passed request). */
  polite__net_req_head_fwd(
      r->nr, code, reason, r->out, in, polite__net_answer_skip,
      (void *)polite__net_find(in, "Connection"), via, length, no_body, 0);
}

static void up_body(void *arg, struct evbuffer *data) {
  px_req *r = arg;
  polite__px_upstream_chunk(r, data); /* pxlimits hook: token usage */
  polite__net_req_body(r->nr, data);
}

static void up_done(void *arg, int ok) {
  px_req *r = arg;
  r->x = NULL; /* ended: nothing left to cancel */
  r->now = polite__px_now(r->s);
  if (!ok && !r->headers_sent) {
    r->kind = PX_KIND_ERROR;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              polite__net_up_error(r->up));
    polite__px_send_own(r);
    return;
  }
  /* A body cut short (an upstream that closed mid-body, or broke off its
   * chunks) closes the client's connection: it must not look complete. */
  if (!ok)
    r->kind = PX_KIND_ERROR;
  else
    polite__px_upstream_end(r); /* pxlimits hook: token usage */
  polite__net_req_end(r->nr, ok);
  polite__px_finish(r);
}

/* More than this waiting for a slow client pauses reading the upstream. */
#define CLIENT_BUFFER_MAX (4 * 1024 * 1024)

static int up_busy(void *arg) {
  const px_req *r = arg;
  return polite__net_req_backlog(r->nr) > CLIENT_BUFFER_MAX;
}

static const net_up_handler up_handler = {up_head, up_body, up_done, up_busy};

/* Methods whose requests carry a body, so that an empty one is sent with
 * Content-Length: 0 (as the client framed it). */
static int body_method(const char *m) {
  return !strcmp(m, "POST") || !strcmp(m, "PUT") || !strcmp(m, "PATCH");
}

void polite__px_forward(px_req *r) {
  if (r->up == NULL && r->dest_host[0] && r->s->pool) {
    /* Forward mode: the destination's pool (resolved on first use). */
    char err[300];
    r->up = polite__net_up_pool_get(r->s->pool, r->dest_https, r->dest_host,
                                    r->dest_port, err, sizeof err);
    if (r->up == NULL) {
      char msg[400];
      snprintf(msg, sizeof msg, "polite proxy: %s", err);
      for (char *q = msg; *q; q++)
        if (*q == '"' || *q == '\\')
          *q = '\'';
      r->kind = PX_KIND_ERROR;
      polite__px_own_json_error(r, 502, "bad_gateway", msg);
      polite__px_send_own(r);
      return;
    }
  }
  r->fwd_us = r->now.mono_us; /* pxlimits hook: upstream latency */
  /* The run's scratch buffer, taken while in use (a nested forward, were
   * there one, makes its own). */
  px_server *s = r->s; /* r may be freed below (an error answered) */
  struct evbuffer *out = s->fwd_out ? s->fwd_out : evbuffer_new();
  s->fwd_out = NULL;
  struct evbuffer *reqbody = r->nr->body;
  size_t blen = reqbody ? evbuffer_get_length(reqbody) : 0;
  if (out == NULL) {
    r->kind = PX_KIND_ERROR;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              "polite proxy: out of memory");
    polite__px_send_own(r);
    return;
  }
  /* The body as received (de-chunked by the server side), always with its
   * length: one framing only reaches the upstream. */
  net_req_line rl = {
      .method = r->method,
      .prefix = r->prefix,
      .path = r->path,
      .authority = r->authority,
      .in = r->in,
      .minor = r->nr->minor,
      .length = blen > 0 || body_method(r->method) ? (int64_t)blen : -1,
  };
  polite__net_request_head(out, &rl);
  if (blen)
    evbuffer_add_buffer(out, reqbody);
  r->status = 0;
  int retryable = polite_method_idempotent(r->method);
  if (r->up == NULL ||
      (r->x = polite__net_up_send(r->up, out, strcmp(r->method, "HEAD") == 0,
                                  retryable, &up_handler, r)) == NULL) {
    r->kind = PX_KIND_ERROR;
    polite__px_own_json_error(r, 502, "bad_gateway",
                              r->up ? polite__net_up_error(r->up)
                                    : "polite proxy: no upstream");
    polite__px_send_own(r);
  }
  /* Kept empty for the next request: what a failed send left is dropped. */
  evbuffer_drain(out, evbuffer_get_length(out));
  if (s->fwd_out == NULL)
    s->fwd_out = out;
  else
    evbuffer_free(out);
}
