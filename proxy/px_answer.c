/* polite proxy: the answers the proxy makes up (429s, mocks, report), CORS, and
 * the log line. */
#define _GNU_SOURCE
#include "px_engine.h"

#include "http_syntax.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void iso_time(char *buf, size_t size, int64_t ms) {
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, size - n, ".%03dZ", (int)(ms % 1000));
}

void polite__px_req_free(px_req *r) {
  if (r->x) /* never left in flight: its callbacks would find r gone */
    polite__net_up_cancel(r->x);
  if (r->timer)
    event_free(r->timer);
  if (r->body)
    evbuffer_free(r->body);
  evhttp_clear_headers(r->out);
  polite__net_req_free(r->nr);
  free(r->url);
  free(r->raw_url);
  free(r->key);
  free(r->conc_key);
  if (r->usage)
    evbuffer_free(r->usage);
  free(r);
}

/* Logs the request, records it in the stats and frees it. */
void polite__px_finish(px_req *r) {
  px_server *s = r->s;
  px_record rec = {r->method,    r->url,    r->client,
                   r->client_id, r->status, r->kind};
  /* Every line logged is recorded; the stats count CONNECTs and calls to
   * the own endpoints apart from requests (polite__px_record_class). */
  polite__px_stats_record(s->st, &rec);
  polite__px_release(s->st, r->conc_key);
  r->conc_key = NULL;
  polite__px_metrics(s->st)->in_flight--;
  if (s->log) {
    char t[40];
    iso_time(t, sizeof t, r->now.wall_ms);
    long long tenths = (long long)(r->now.mono_us - r->nr->t0_us) / 100;
    if (tenths < 0)
      tenths = 0;
    fprintf(s->log, "%s %s %s %s %d %s%s%s %lld.%lldms\n", t, r->client,
            r->method, r->url, r->status,
            r->cat[0] ? r->cat : polite__px_kind_info(r->kind)->word,
            r->note[0] ? " " : "", r->note, tenths / 10, tenths % 10);
  }
  polite__px_req_free(r);
}

void polite__px_add_cors(px_req *r) {
  const char *origin = evhttp_find_header(r->in, "Origin");
  if (origin == NULL)
    return;
  struct evkeyvalq *out = r->out;
  /* Echo the origin (with Vary) rather than '*', so that credentialed
   * browser requests work too. */
  evhttp_remove_header(out, "Access-Control-Allow-Origin");
  evhttp_add_header(out, "Access-Control-Allow-Origin",
                    strpbrk(origin, "\r\n") ? "*" : origin);
  evhttp_add_header(out, "Vary", "Origin");
  evhttp_add_header(out, "Access-Control-Expose-Headers",
                    "Retry-After, RateLimit, RateLimit-Policy, "
                    "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset");
}

/* Prepares an own response (sent later by send_own). */
void polite__px_own(px_req *r, int status, const char *ctype, const char *body,
                    size_t len) {
  r->act = ACT_OWN;
  r->status = status;
  if (r->body == NULL)
    r->body = evbuffer_new();
  if (body && len)
    evbuffer_add(r->body, body, len);
  if (ctype)
    evhttp_add_header(r->out, "Content-Type", ctype);
  /* The proxy's own answers say so (polite diagnose recognises it). */
  polite__px_set_header(r, "Server", "polite-proxy");
}

void polite__px_own_json_error(px_req *r, int status, const char *code,
                               const char *message) {
  char buf[1024];
  int n = snprintf(
      buf, sizeof buf,
      "{\"error\":{\"code\":\"%s\",\"type\":\"%s\",\"message\":\"%s\"}}", code,
      code, message);
  polite__px_own(r, status, "application/json", buf, (size_t)n);
}

void polite__px_set_header(px_req *r, const char *name, const char *value) {
  evhttp_remove_header(r->out, name);
  evhttp_add_header(r->out, name, value);
}

/* Sends an own Retry-After; the wait is remembered when the answer leaves
 * (polite__px_answer_left), so that it counts from then. */
void polite__px_send_retry_after(px_req *r, int64_t seconds, int flags) {
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)seconds);
  polite__px_set_header(r, "Retry-After", v);
  r->tell_wait_ms = seconds * 1000;
  r->tell_flags = flags;
  size_t n = strlen(r->note);
  /* Every duration in the log is in milliseconds (docs/proxy.md, "Log"). */
  snprintf(r->note + n, sizeof r->note - n, "%sretry_after=%lldms",
           n ? " " : "", (long long)seconds * 1000);
}

/* Counts the usage of r's answer body b in the token window, once, when
 * r was admitted under a token limit. */
static void charge_tokens(px_req *r, struct evbuffer *b) {
  size_t n = evbuffer_get_length(b);
  if (!r->charge_tokens || n == 0 || n > PX_TOK_BODY_MAX)
    return;
  r->charge_tokens = 0;
  polite__px_charge_tokens(r->s->cfg, r->s->st, r->now.mono_us,
                           (const char *)evbuffer_pullup(b, (ev_ssize_t)n), n);
}

void polite__px_answer_left(px_req *r) {
  if (r->act == ACT_OWN && r->body)
    charge_tokens(r, r->body);
  if (r->tell_wait_ms <= 0)
    return;
  polite__px_tell(r->s->st, r->key, r->conn_id, r->client,
                  r->now.mono_us / 1000, r->tell_wait_ms, r->tell_flags);
  r->tell_wait_ms = 0;
}

/* Dev Proxy's RateLimit-Limit/-Remaining/-Reset (in resources, names as
 * configured), sent once the used share reaches warningThresholdPercent,
 * as its RateLimitingPlugin does. The reset is rounded up. */
static void devproxy_headers(px_req *r, const px_lim_state *st,
                             int64_t wall_ms) {
  const px_config *c = r->s->cfg;
  int64_t limit = c->lim.limit;
  if (st->units_left > limit - limit * c->warn_pct / 100)
    return;
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)limit);
  polite__px_set_header(r, c->hdr_limit ? c->hdr_limit : "RateLimit-Limit", v);
  snprintf(v, sizeof v, "%lld", (long long)st->units_left);
  polite__px_set_header(
      r, c->hdr_remaining ? c->hdr_remaining : "RateLimit-Remaining", v);
  int64_t reset = (st->reset_us + 999999) / 1000000;
  if (c->reset_epoch)
    reset = (wall_ms * 1000 + st->reset_us + 999999) / 1000000;
  snprintf(v, sizeof v, "%lld", (long long)reset);
  polite__px_set_header(r, c->hdr_reset ? c->hdr_reset : "RateLimit-Reset", v);
}

/* RateLimit-Policy / RateLimit (draft-ietf-httpapi-ratelimit-headers-10):
 * q requests per w seconds; r and t as the planner contract reads them (a
 * client may start r requests spread evenly over t seconds, or wait t when
 * r = 0), chosen by the limiter so that following them is never early. */
static void ietf_headers(px_req *r, const px_lim_state *st) {
  char v[128];
  snprintf(v, sizeof v, "\"polite\";q=%lld;w=%lld", (long long)st->quota,
           (long long)st->window_s);
  polite__px_set_header(r, "RateLimit-Policy", v);
  snprintf(v, sizeof v, "\"polite\";r=%lld;t=%lld", (long long)st->remaining,
           (long long)st->reset_s);
  polite__px_set_header(r, "RateLimit", v);
}

void polite__px_openai_headers(px_req *r, const char *what, int64_t limit,
                               int64_t remaining, int64_t reset_ms) {
  char name[48], v[48];
  snprintf(name, sizeof name, "x-ratelimit-limit-%s", what);
  snprintf(v, sizeof v, "%lld", (long long)limit);
  polite__px_set_header(r, name, v);
  snprintf(name, sizeof name, "x-ratelimit-remaining-%s", what);
  snprintf(v, sizeof v, "%lld", (long long)remaining);
  polite__px_set_header(r, name, v);
  /* OpenAI's duration form, rounded up: "20ms", "7s", "1m0s". */
  long long ms = (long long)(reset_ms > 0 ? reset_ms : 0);
  long long secs = (ms + 999) / 1000;
  if (secs >= 60)
    snprintf(v, sizeof v, "%lldm%llds", secs / 60, secs % 60);
  else if (ms >= 1000)
    snprintf(v, sizeof v, "%llds", secs);
  else
    snprintf(v, sizeof v, "%lldms", ms);
  snprintf(name, sizeof name, "x-ratelimit-reset-%s", what);
  polite__px_set_header(r, name, v);
}

void polite__px_rate_headers(px_req *r, const px_lim_state *st,
                             int64_t wall_ms) {
  int h = r->s->cfg->rate_headers;
  if (h & PX_HDR_IETF)
    ietf_headers(r, st);
  if (h & PX_HDR_OPENAI) /* r and t of the contract, as OpenAI names them */
    polite__px_openai_headers(r, "requests", st->quota, st->remaining,
                              st->reset_s * 1000);
  if (h & PX_HDR_DEVPROXY)
    devproxy_headers(r, st, wall_ms);
}

/* A canned response's Retry-After: @dynamic is `dynamic` seconds,
 * @dynamic=N is N; a literal value is sent as written. Returns the wait in
 * ms it asks for (0: none or invalid) and sets *literal when it is sent as
 * written. */
static int64_t canned_wait(const char *value, int64_t dynamic, int64_t wall,
                           int *literal) {
  *literal = 0;
  if (strcmp(value, "@dynamic") == 0)
    return dynamic * 1000;
  if (strncmp(value, "@dynamic=", 9) == 0) {
    char *end;
    long long v = strtoll(value + 9, &end, 10);
    return (*end == '\0' && v >= 0 ? v : dynamic) * 1000;
  }
  *literal = 1;
  polite_retry_after ra;
  polite_retry_after_parse(value, strlen(value), wall / 1000, &ra);
  int64_t d = polite_retry_after_delay_ms(&ra, wall, -1);
  return d > 0 ? d : 0;
}

void polite__px_own_canned_wait(px_req *r, const px_response *resp,
                                int64_t dynamic_s) {
  int has_ctype = 0;
  /* Only 429 and 503 throttle: a 202 with Retry-After (a long-running
   * operation's polling hint) is sent, never tracked. */
  int throttles = resp->status == 429 || resp->status == 503;
  for (size_t i = 0; i < resp->nheaders; i++) {
    const px_header *h = &resp->headers[i];
    if (polite__ci_eq(h->name, strlen(h->name), "Retry-After")) {
      int literal;
      int64_t ms = canned_wait(h->value, dynamic_s, r->now.wall_ms, &literal);
      if (!literal) {
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)(ms / 1000));
        polite__px_set_header(r, "Retry-After", v);
      }
      if (throttles && ms > 0) {
        r->tell_wait_ms = ms;
        r->tell_flags = PX_TELL_THROTTLE;
        size_t n = strlen(r->note);
        snprintf(r->note + n, sizeof r->note - n, "%sretry_after=%lldms",
                 n ? " " : "", (long long)ms);
      }
      if (!literal)
        continue;
    }
    if (polite__ci_eq(h->name, strlen(h->name), "Content-Type"))
      has_ctype = 1;
    evhttp_add_header(r->out, h->name, h->value);
  }
  const char *ctype = NULL;
  if (!has_ctype && resp->body_len &&
      (resp->body[0] == '{' || resp->body[0] == '['))
    ctype = "application/json";
  polite__px_own(r, resp->status, ctype, resp->body, resp->body_len);
}

void polite__px_own_canned(px_req *r, const px_response *resp) {
  polite__px_own_canned_wait(r, resp, r->s->cfg->retry_after_s);
}

void polite__px_carry(px_req *r, px_decision *d) {
  r->client_id = d->client_id;
  r->conc_key = d->conc_key;
  d->conc_key = NULL;
  r->charge_tokens = d->charge_tokens;
  if (d->has_lim)
    polite__px_rate_headers(r, &d->lim, r->now.wall_ms);
  if (d->has_tok)
    polite__px_openai_headers(r, "tokens", d->tok.limit, d->tok.remaining,
                              (d->tok.reset_us + 999) / 1000);
  if (!d->answer)
    return;
  r->kind = d->kind;
  snprintf(r->note, sizeof r->note, "%s", d->note);
  switch (d->body) {
  case PX_BODY_CANNED:
    polite__px_own_canned_wait(r, d->canned, d->canned_wait_s);
    break;
  case PX_BODY_JSON:
    polite__px_own(r, d->status, "application/json", d->text, strlen(d->text));
    break;
  case PX_BODY_ERROR:
  default: polite__px_own_json_error(r, d->status, d->code, d->text); break;
  }
  if (d->retry_after_s >= 0)
    polite__px_send_retry_after(r, d->retry_after_s, d->tell_flags);
}

void polite__px_upstream_chunk(px_req *r, struct evbuffer *data) {
  if (!r->charge_tokens)
    return;
  if (r->usage == NULL && (r->usage = evbuffer_new()) == NULL)
    return;
  size_t have = evbuffer_get_length(r->usage);
  size_t n = evbuffer_get_length(data);
  if (have + n > PX_TOK_BODY_MAX) {
    r->charge_tokens = 0; /* too long to read: not charged */
    return;
  }
  /* A copy: the chunk itself goes on to the client. */
  char tmp[16384];
  for (size_t off = 0; off < n;) {
    struct evbuffer_ptr pos;
    evbuffer_ptr_set(data, &pos, off, EVBUFFER_PTR_SET);
    ev_ssize_t got = evbuffer_copyout_from(data, &pos, tmp, sizeof tmp);
    if (got <= 0)
      break;
    evbuffer_add(r->usage, tmp, (size_t)got);
    off += (size_t)got;
  }
}

void polite__px_upstream_end(px_req *r) {
  if (r->usage)
    charge_tokens(r, r->usage);
}

void polite__px_upstream_answer(px_req *r, int code, struct evkeyvalq *in) {
  px_server *s = r->s;
  if (r->fwd_us > 0)
    polite__px_metrics_latency(polite__px_metrics(s->st),
                               r->now.mono_us - r->fwd_us);
  if (!r->watched || (code != 429 && code != 503))
    return;
  /* The upstream's own Retry-After is tracked like ours. */
  const char *ra_text = evhttp_find_header(in, "Retry-After");
  if (ra_text == NULL)
    return;
  polite_retry_after ra;
  int64_t wall = r->now.wall_ms;
  polite_retry_after_parse(ra_text, strlen(ra_text), wall / 1000, &ra);
  int64_t server_date = -1;
  const char *date = evhttp_find_header(in, "Date");
  if (date && polite_http_date_parse(date, strlen(date), wall / 1000,
                                     &server_date) != 0)
    server_date = -1;
  int64_t d = polite_retry_after_delay_ms(&ra, wall, server_date);
  if (d > 0) {
    r->tell_wait_ms = d;
    r->tell_flags = PX_TELL_THROTTLE;
    snprintf(r->note, sizeof r->note, "upstream_retry_after=%lldms",
             (long long)d);
  }
}

/* Writes the prepared answer to the client. HEAD gets the head only (with
 * the length the body would have had). */
static void send_prepared(px_req *r) {
  int st = r->status;
  size_t len = r->body ? evbuffer_get_length(r->body) : 0;
  int no_body =
      strcmp(r->method, "HEAD") == 0 || st < 200 || st == 204 || st == 304;
  r->headers_sent = 1;
  polite__net_req_head(r->nr, st, NULL, r->out, (int64_t)len, no_body,
                       NET_HEAD_DATE);
  if (r->body)
    polite__net_req_body(r->nr, r->body);
  polite__net_req_end(r->nr, 1);
}

void polite__px_send_own(px_req *r) {
  polite__px_add_cors(r);
  polite__px_answer_left(r); /* pxlimits hook: waits count from now */
  send_prepared(r);
  polite__px_finish(r);
}

/* An endpoint of the proxy itself: sent, not counted, r freed. */
static void send_endpoint(px_req *r, char *text, const char *ctype) {
  polite__px_own(r, text ? 200 : 500, ctype, text, text ? strlen(text) : 0);
  polite__px_set_header(r, "Cache-Control", "no-store");
  polite__px_add_cors(r);
  send_prepared(r);
  free(text);
  polite__px_req_free(r);
}

void polite__px_send_endpoint(px_req *r) {
  polite__px_add_cors(r);
  send_prepared(r);
  polite__px_req_free(r);
}

void polite__px_answer_report(px_req *r) {
  px_server *s = r->s;
  send_endpoint(
      r, polite__px_report_json(s->st, s->started_wall_ms, r->now.wall_ms),
      "application/json");
}

void polite__px_answer_metrics(px_req *r) {
  send_endpoint(r, polite__px_metrics_text(r->s->st),
                "text/plain; version=0.0.4");
}

/* The default mock: 200 with {"ok":true,"path":PATH} (the query is left
 * out: it may carry a credential). */
void polite__px_default_mock(px_req *r) {
  char *esc = NULL;
  size_t n = strcspn(r->path, "?#");
  esc = malloc(n * 6 + 1);
  size_t o = 0;
  if (esc == NULL) {
    polite__px_own(r, 500, NULL, NULL, 0);
    return;
  }
  for (const unsigned char *p = (const unsigned char *)r->path;
       *p && p < (const unsigned char *)r->path + n; p++) {
    if (*p == '"' || *p == '\\') {
      esc[o++] = '\\';
      esc[o++] = (char)*p;
    } else if (*p < 0x20) {
      o += (size_t)snprintf(esc + o, 7, "\\u%04x", *p);
    } else {
      esc[o++] = (char)*p;
    }
  }
  esc[o] = '\0';
  struct evbuffer *b = r->body ? r->body : (r->body = evbuffer_new());
  evbuffer_add_printf(b, "{\"ok\":true,\"path\":\"%s\"}", esc);
  free(esc);
  polite__px_own(r, 200, "application/json", NULL, 0);
}
