/* polite gateway: the honest answer. A client whose request ended without
 * the server's answer (its wait could not be afforded, its account's
 * queue was full, its quota is spent, the upstream never answered) gets
 * the gateway's own: the status its outcome calls for, a Retry-After that
 * says when the account opens again (never earlier than the server said),
 * and a JSON body saying why (docs/gateway.md "The honest answer"). */
#include "gateway.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One row per outcome the gateway answers itself. status 0: the status of
 * the answer that paused or stopped the account (pause_status), else
 * `fallback`. */
static const struct {
  polite_outcome outcome;
  int status, fallback;
  const char *type; /* error.type, as the LLM SDKs read it */
} rows[] = {
    {POLITE_OUT_QUEUE_FULL, 503, 503, "overloaded_error"},
    {POLITE_OUT_WAIT_TOO_LONG, 0, 429, "rate_limit_error"},
    {POLITE_OUT_DEADLINE, 0, 429, "rate_limit_error"},
    {POLITE_OUT_QUOTA_EXHAUSTED, 0, 429, "insufficient_quota"},
    {POLITE_OUT_NETWORK_ERROR, 502, 502, "api_error"},
    {POLITE_OUT_CANCELLED, 503, 503, "overloaded_error"},
    {POLITE_OUT_INVALID_INPUT, 400, 400, "invalid_request_error"},
};

static const struct {
  int status;
  const char *reason;
} reasons[] = {
    {400, "Bad Request"},         {403, "Forbidden"},
    {429, "Too Many Requests"},   {502, "Bad Gateway"},
    {503, "Service Unavailable"}, {504, "Gateway Timeout"},
};

static const char *reason_of(int status) {
  for (size_t i = 0; i < sizeof reasons / sizeof reasons[0]; i++)
    if (reasons[i].status == status)
      return reasons[i].reason;
  return "Error";
}

int64_t polite__gw_retry_after_s(int64_t ms) {
  if (ms <= 0)
    return 1;
  return ms / 1000 + (ms % 1000 != 0);
}

/* The status and error type of r's answer. A deadline that says nothing
 * of when the account opens ran out during the attempt: 504. */
static int status_of(const polite_result *r, const char **type) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (rows[i].outcome != r->outcome)
      continue;
    *type = rows[i].type;
    if (r->outcome == POLITE_OUT_DEADLINE && r->retry_after_ms < 0) {
      *type = "timeout_error";
      return 504;
    }
    if (rows[i].status)
      return rows[i].status;
    int p = r->pause_status;
    return p == 429 || p == 503 || p == 403 ? p : rows[i].fallback;
  }
  /* An outcome that comes with the server's answer, not relayed. */
  *type = "api_error";
  return 502;
}

/* Adds a header (the table holds GW_REPLY_MAX_HEADERS, more than any
 * answer needs). */
static void add(gw_reply *out, const char *name, const char *value) {
  if (out->nheaders == GW_REPLY_MAX_HEADERS)
    return;
  out->headers[out->nheaders].name = name;
  snprintf(out->headers[out->nheaders].value,
           sizeof out->headers[out->nheaders].value, "%s", value);
  out->nheaders++;
}

/* The body: {"type":"error","error":{...},"polite":{...}} (the error
 * object in the shape the OpenAI and Anthropic SDKs print). */
static char *body_of(const polite_result *r, const char *account, int status,
                     const char *type) {
  const char *oc = polite_outcome_name(r->outcome);
  char *why = polite_redact_text(r->error ? r->error : oc);
  char msg[600];
  snprintf(msg, sizeof msg, "polite gateway: %s", why ? why : oc);
  free(why);
  /* The messages are English; a transport's may quote any byte, and a
   * JSON string takes only valid UTF-8. */
  for (char *c = msg; *c; c++)
    if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
      *c = '?';
  json_t *p = json_pack("{s:s, s:i, s:I, s:i}", "outcome", oc, "status", status,
                        "attempts", (json_int_t)r->attempts, "upstream_status",
                        r->status);
  if (p && r->status == 0)
    json_object_set_new(p, "upstream_status", json_null());
  if (p && account)
    json_object_set_new(p, "account", json_string(account));
  if (p && r->retry_after_ms >= 0) {
    json_object_set_new(p, "retry_after_ms", json_integer(r->retry_after_ms));
    json_object_set_new(
        p, "retry_after_s",
        json_integer(polite__gw_retry_after_s(r->retry_after_ms)));
  }
  json_t *o =
      p ? json_pack("{s:s, s:{s:s, s:s, s:s}, s:o}", "type", "error", "error",
                    "message", msg, "type", type, "code", oc, "polite", p)
        : NULL;
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return text;
}

int polite__gw_reply(const polite_result *r, const char *account,
                     gw_reply *out) {
  memset(out, 0, sizeof *out);
  const char *type = "api_error";
  out->status = status_of(r, &type);
  out->reason = reason_of(out->status);
  add(out, "Content-Type", "application/json");
  add(out, "Cache-Control", "no-store");
  /* A full queue is worth a Retry-After even when no rate paces it. */
  if (r->retry_after_ms >= 0 || r->outcome == POLITE_OUT_QUEUE_FULL) {
    char v[64];
    long long secs = polite__gw_retry_after_s(r->retry_after_ms);
    snprintf(v, sizeof v, "%lld", secs);
    add(out, "Retry-After", v);
    if (out->status == 429) {
      /* The IETF draft's field, for clients that read it (polite does). */
      snprintf(v, sizeof v, "\"polite\";r=0;t=%lld", secs);
      add(out, "RateLimit", v);
    }
  }
  add(out, "X-Polite-Outcome", polite_outcome_name(r->outcome));
  out->body = body_of(r, account, out->status, type);
  if (out->body == NULL)
    return POLITE_ENOMEM;
  out->body_len = strlen(out->body);
  return 0;
}

void polite__gw_reply_free(gw_reply *out) {
  free(out->body);
  out->body = NULL;
}
