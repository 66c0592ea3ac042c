/* polite proxy: the answers the proxy makes up (429s, mocks, report), CORS, and
 * the log line. */
#define _GNU_SOURCE
#include "px_engine.h"

#include <polite/clock.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static void iso_now(char *buf, size_t size) {
  int64_t ms = polite_wall_ms();
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, size - n, ".%03dZ", (int)(ms % 1000));
}

static const char *kind_name(px_kind k) {
  switch (k) {
  case PX_KIND_PASSED: return "passed";
  case PX_KIND_FAILURE: return "injected";
  case PX_KIND_RATE: return "rate_limited";
  case PX_KIND_QUOTA: return "quota";
  case PX_KIND_EARLY: return "EARLY";
  case PX_KIND_ERROR: return "upstream_error";
  default: return "?";
  }
}

static void headers_free(struct evkeyvalq *h) {
  if (h) {
    evhttp_clear_headers(h);
    free(h);
  }
}

void polite__px_req_free(px_req *r) {
  if (r->body)
    evbuffer_free(r->body);
  if (r->reqbody)
    evbuffer_free(r->reqbody);
  headers_free(r->in);
  headers_free(r->out);
  free(r->target);
  free(r->url);
  free(r->raw_url);
  free(r->key);
  free(r);
}

/* Logs the request, records it in the stats and frees it. */
void polite__px_finish(px_req *r) {
  px_server *s = r->s;
  if (!r->unrecorded)
    polite__px_stats_record(s->st, r->method, r->url, r->status, r->kind);
  if (s->log) {
    char t[40];
    iso_now(t, sizeof t);
    long long tenths = (long long)(polite_mono_us() - r->t0_us) / 100;
    fprintf(s->log, "%s %s %s %s %d %s%s%s %lld.%lldms\n", t, r->client,
            r->method, r->url, r->status, kind_name(r->kind),
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
                    "Retry-After, RateLimit, RateLimit-Policy");
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

/* Sends an own Retry-After and remembers it for the request's key. */
void polite__px_send_retry_after(px_req *r, int64_t now_ms, int64_t seconds) {
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)seconds);
  polite__px_set_header(r, "Retry-After", v);
  polite__px_track_set(r->s->st, r->key, now_ms, seconds * 1000);
  size_t n = strlen(r->note);
  snprintf(r->note + n, sizeof r->note - n, "%sretry_after=%llds", n ? " " : "",
           (long long)seconds);
}

/* RateLimit-Policy / RateLimit in the IETF httpapi draft's structured form:
 * q = requests per window, w = window seconds, r = remaining now, t = seconds
 * until the limiter is fully replenished (or until the next start is allowed
 * when r = 0). */
void polite__px_rate_headers(px_req *r, const polite_gcra *g, int64_t now_us,
                             int64_t wait_us) {
  const px_config *c = r->s->cfg;
  char v[128];
  snprintf(v, sizeof v, "\"polite\";q=%lld;w=%lld", (long long)c->rate_n,
           (long long)c->rate_window_s);
  polite__px_set_header(r, "RateLimit-Policy", v);
  int64_t remaining = 0, reset_s;
  if (wait_us > 0) {
    reset_s = (wait_us + 999999) / 1000000;
  } else {
    int64_t tat = g->tat_us > now_us ? g->tat_us : now_us;
    int64_t debt = tat - now_us;
    int64_t room = g->tolerance_us + g->interval_us - debt;
    remaining = room > 0 && g->interval_us > 0 ? room / g->interval_us : 0;
    reset_s = (debt + 999999) / 1000000;
  }
  snprintf(v, sizeof v, "\"polite\";r=%lld;t=%lld", (long long)remaining,
           (long long)reset_s);
  polite__px_set_header(r, "RateLimit", v);
}

/* Applies a canned response (errors file or mocks file): @dynamic values,
 * a JSON content type when the body looks like JSON, and tracking of any
 * Retry-After it carries. */
void polite__px_own_canned(px_req *r, const px_response *resp, int64_t now_ms) {
  px_server *s = r->s;
  int has_ctype = 0;
  for (size_t i = 0; i < resp->nheaders; i++) {
    const px_header *h = &resp->headers[i];
    if (strcasecmp(h->name, "Retry-After") == 0) {
      int64_t secs = -1;
      if (strcmp(h->value, "@dynamic") == 0) {
        secs = s->cfg->retry_after_s;
      } else if (strncmp(h->value, "@dynamic=", 9) == 0) {
        char *end;
        long long v = strtoll(h->value + 9, &end, 10);
        secs = (*end == '\0' && v >= 0) ? v : s->cfg->retry_after_s;
      }
      if (secs >= 0) {
        polite__px_send_retry_after(r, now_ms, secs);
        continue;
      }
      /* A literal value (seconds or HTTP-date): send it as is and track
       * the wait it asks for. */
      polite_retry_after ra;
      int64_t wall = polite_wall_ms();
      polite_retry_after_parse(h->value, strlen(h->value), wall / 1000, &ra);
      int64_t d = polite_retry_after_delay_ms(&ra, wall, -1);
      if (d > 0)
        polite__px_track_set(s->st, r->key, now_ms, d);
    }
    if (strcasecmp(h->name, "Content-Type") == 0)
      has_ctype = 1;
    evhttp_add_header(r->out, h->name, h->value);
  }
  const char *ctype = NULL;
  if (!has_ctype && resp->body_len &&
      (resp->body[0] == '{' || resp->body[0] == '['))
    ctype = "application/json";
  polite__px_own(r, resp->status, ctype, resp->body, resp->body_len);
}

/* Writes the prepared answer to the client. HEAD gets the head only (with
 * the length the body would have had). */
static void send_prepared(px_req *r) {
  int st = r->status;
  size_t len = r->body ? evbuffer_get_length(r->body) : 0;
  int no_body =
      strcmp(r->method, "HEAD") == 0 || st < 200 || st == 204 || st == 304;
  r->headers_sent = 1;
  polite__px_conn_head(r, st, NULL, (int64_t)len, no_body, 1);
  if (r->body)
    polite__px_conn_body(r, r->body);
  polite__px_conn_end(r, 1);
}

void polite__px_send_own(px_req *r) {
  polite__px_add_cors(r);
  send_prepared(r);
  polite__px_finish(r);
}

void polite__px_answer_report(px_req *r) {
  px_server *s = r->s;
  char *text =
      polite__px_report_json(s->st, s->started_wall_ms, polite_wall_ms());
  polite__px_own(r, text ? 200 : 500, "application/json", text,
                 text ? strlen(text) : 0);
  evhttp_add_header(r->out, "Cache-Control", "no-store");
  polite__px_add_cors(r);
  send_prepared(r);
  free(text);
  polite__px_req_free(r); /* report requests are not counted */
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
      o += (size_t)sprintf(esc + o, "\\u%04x", *p);
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
