/* The attempt log's lines as jansson wrote them before the hand-written
 * line writer (src/run_jline.c): the reference test_jline and fuzz_jline
 * compare it with, byte for byte. Also a generator of attempts whose text
 * fields are drawn from hostile bytes. */
#ifndef POLITE_JLINE_REF_H
#define POLITE_JLINE_REF_H

#include "run_output.h"
#include "run_summary.h"

#include <jansson.h>
#include <polite/polite.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static json_t *ref_text(const char *s) {
  return s ? run_text_json(s, strlen(s)) : json_null();
}

static json_t *ref_iso(int64_t ms) {
  char buf[40];
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)(ms % 1000));
  return json_string(buf);
}

static json_t *ref_diagnosis(const polite_diagnosis *d) {
  json_t *o = json_object();
  json_object_set_new(o, "component",
                      json_string(polite_diagnosis_component(d)));
  json_object_set_new(o, "limit", json_string(polite_limit_name(d->limit)));
  json_object_set_new(o, "retry_helps", json_boolean(d->retry_helps));
  json_object_set_new(o, "wait_ms",
                      d->wait_ms >= 0 ? json_integer(d->wait_ms) : json_null());
  json_t *ev = json_array();
  for (size_t i = 0; i < d->n_evidence; i++)
    json_array_append_new(ev, run_redacted_text_json(d->evidence[i]));
  json_object_set_new(o, "evidence", ev);
  return o;
}

/* The attempt's object as run_summary.c built it; with gw, the gateway's
 * three fields after it (cmd_gateway.c's log_extra). */
static char *ref_attempt(const polite_attempt *a, int gw, long long queued,
                         long long retries) {
  const polite_decision *d = &a->decision;
  json_t *o = json_object();
  json_object_set_new(o, "id", run_text_json(a->req->id, strlen(a->req->id)));
  json_object_set_new(o, "attempt", json_integer(a->attempt));
  json_object_set_new(o, "method", ref_text(a->method));
  json_object_set_new(o, "url", run_redacted_url_json(a->req->url));
  json_object_set_new(o, "start", ref_iso(a->start_wall_ms));
  json_object_set_new(o, "end", ref_iso(a->end_wall_ms));
  json_object_set_new(o, "start_ms", json_integer(a->start_wall_ms));
  json_object_set_new(o, "end_ms", json_integer(a->end_wall_ms));
  json_object_set_new(o, "status",
                      a->status ? json_integer(a->status) : json_null());
  json_object_set_new(o, "retry_after", ref_text(a->retry_after));
  json_object_set_new(o, "action",
                      json_string(d->action == POLITE_RETRY  ? "retry"
                                  : d->action == POLITE_STOP ? "stop"
                                                             : "done"));
  json_object_set_new(o, "reason", json_string(polite_reason_name(d->reason)));
  json_object_set_new(o, "wait_ms",
                      d->action == POLITE_RETRY ? json_integer(d->wait_ms)
                                                : json_null());
  json_object_set_new(o, "server_wait_ms",
                      d->server_wait_ms >= 0 ? json_integer(d->server_wait_ms)
                                             : json_null());
  json_object_set_new(o, "account_pause", json_boolean(d->account_pause));
  json_object_set_new(o, "why", d->why ? json_string(d->why) : json_null());
  if (d->reason == POLITE_R_CANCELLED)
    json_object_set_new(o, "cut_in_flight", json_true());
  json_object_set_new(o, "request_id", ref_text(a->request_id));
  if (a->request_id_header)
    json_object_set_new(o, "request_id_header", ref_text(a->request_id_header));
  if (a->error)
    json_object_set_new(o, "error", run_redacted_text_json(a->error));
  if (a->diagnosis)
    json_object_set_new(o, "diagnosis", ref_diagnosis(a->diagnosis));
  if (gw) {
    json_object_set_new(o, "layer",
                        json_string(a->attempt > 1 ? "gateway" : "client"));
    json_object_set_new(o, "queued_ms",
                        queued >= 0 ? json_integer(queued) : json_null());
    json_object_set_new(o, "client_retries",
                        retries >= 0 ? json_integer(retries) : json_null());
  }
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return s;
}

static char *ref_rate(const polite_rate_change *r) {
  json_t *o = json_object();
  json_object_set_new(o, "event", json_string("rate"));
  json_object_set_new(o, "wall_ms", json_integer(r->wall_ms));
  json_object_set_new(o, "rate_per_s", json_real(r->rate_per_s));
  json_object_set_new(o, "previous_per_s",
                      r->previous_per_s >= 0 ? json_real(r->previous_per_s)
                                             : json_null());
  json_object_set_new(o, "reason", json_string(r->reason));
  json_object_set_new(o, "detail", json_string(r->detail));
  if (r->host)
    json_object_set_new(o, "host", json_string(r->host));
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return s;
}

/* {"k":<s>} by both writers: 1 when they are the same bytes. */
static int ref_same_text(const char *s, size_t n) {
  run_jline j = {0};
  run_jline_begin(&j);
  run_jline_text(&j, "k", s, n);
  const char *mine = run_jline_end(&j);
  json_t *o = json_object();
  json_object_set_new(o, "k", run_text_json(s, n));
  char *ref = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  int eq = mine && ref && strcmp(mine, ref) == 0;
  if (!eq)
    fprintf(stderr, "differ (%zu bytes):\n mine %s\n ref  %s\n", n,
            mine ? mine : "(null)", ref ? ref : "(null)");
  free(ref);
  run_jline_free(&j);
  return eq;
}

/* A source of bytes: the fuzzer's input, or a seeded generator. */
typedef struct {
  const unsigned char *data;
  size_t size, at;
  unsigned long long seed; /* used when data is NULL */
} ref_src;

static unsigned ref_byte(ref_src *s) {
  if (s->data == NULL) {
    s->seed = s->seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)(s->seed >> 56);
  }
  return s->at < s->size ? s->data[s->at++] : 0;
}

static long long ref_int(ref_src *s) {
  unsigned long long v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | ref_byte(s);
  return (long long)v;
}

/* Text of up to 63 bytes, NUL-free (the log's fields are C strings),
 * mostly hostile: quotes, backslashes, control bytes, DEL, invalid and
 * overlong UTF-8, surrogates, valid multibyte sequences and secrets in
 * query strings. */
static char *ref_str(ref_src *s, char *buf, size_t cap) {
  static const char *const pieces[] = {"\"",
                                       "\\",
                                       "\x01",
                                       "\x1f",
                                       "\x7f",
                                       "\n\r\t\b\f",
                                       "\xc3\xa9",
                                       "\xe2\x82\xac",
                                       "\xf0\x9f\x98\x80",
                                       "\xc0\xaf",
                                       "\xed\xa0\x80",
                                       "\xf4\x90\x80\x80",
                                       "\xff",
                                       "\x80",
                                       "\xe2\x82",
                                       "?api_key=sk-123",
                                       "https://u:pw@h/x?token=t",
                                       "Authorization: Bearer abc",
                                       "/",
                                       "a"};
  size_t n = 0, want = ref_byte(s) % 16;
  for (size_t k = 0; k < want; k++) {
    unsigned b = ref_byte(s);
    const char *p;
    char one[2] = {(char)(b | 1), 0};
    p = b & 1 ? one : pieces[(b >> 1) % (sizeof pieces / sizeof pieces[0])];
    size_t len = strlen(p);
    if (n + len >= cap)
      break;
    memcpy(buf + n, p, len);
    n += len;
  }
  buf[n] = '\0';
  return buf;
}

#endif
