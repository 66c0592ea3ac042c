/* polite gateway: which requests the gateway sends again, as a table of
 * rows (docs/gateway.md "Safety rules"), and the idempotency keys clients
 * send. The scheduler decides with polite_decide; this table says the same
 * in the gateway's terms (tests/unit/test_gateway_retry.c checks every row
 * against polite_decide), and tells the network half whether a request's
 * body must be kept for a retry. */
#include "gateway.h"

#include "http_syntax.h"

#include <string.h>

/* First match wins. */
static const gw_retry_row rows[] = {
    {-1, -1, -1, GW_ANS_OTHER, 0,
     "not a throttle, an overload or a failure in transit: the server's "
     "answer is final"},
    {GW_READ, -1, -1, GW_ANS_429, 1,
     "a read: sending it again has the same effect as once"},
    {GW_READ, -1, -1, GW_ANS_503, 1,
     "a read: sending it again has the same effect as once"},
    {GW_READ, -1, -1, GW_ANS_5XX, 1,
     "a read: sending it again has the same effect as once"},
    {GW_READ, -1, -1, GW_ANS_NETWORK, 1,
     "a read: sending it again has the same effect as once"},
    {GW_WRITE, 1, -1, GW_ANS_429, 1,
     "a write with an idempotency key: the server applies it once"},
    {GW_WRITE, 1, -1, GW_ANS_503, 1,
     "a write with an idempotency key: the server applies it once"},
    {GW_WRITE, 1, -1, GW_ANS_5XX, 1,
     "a write with an idempotency key: the server applies it once"},
    {GW_WRITE, 1, -1, GW_ANS_NETWORK, 1,
     "a write with an idempotency key: the server applies it once"},
    {GW_WRITE, 0, 1, GW_ANS_429, 1,
     "--retry-writes: a 429 refuses the write before any work is done"},
    {GW_WRITE, 0, -1, GW_ANS_429, 0,
     "a write without an idempotency key: a second copy could be applied "
     "twice; the client gets the 429"},
    {GW_WRITE, 0, -1, GW_ANS_503, 0,
     "a write without an idempotency key: a 503 may come after the work; "
     "the client gets the 503"},
    {GW_WRITE, 0, -1, GW_ANS_5XX, 0,
     "a write without an idempotency key: the work may have been done; the "
     "client gets the answer"},
    {GW_WRITE, 0, -1, GW_ANS_NETWORK, 0,
     "a write without an idempotency key: it may have landed before the "
     "connection broke; the client gets an error"},
};

#define NROWS (sizeof rows / sizeof rows[0])

gw_method_kind polite__gw_method_kind(const char *method) {
  /* polite_method_idempotent is the one list of reads (lib/decide.c). */
  return polite_method_idempotent(method) ? GW_READ : GW_WRITE;
}

gw_answer_kind polite__gw_answer_kind(int status) {
  switch (status) {
  case 0: return GW_ANS_NETWORK;
  case 429: return GW_ANS_429;
  case 503: return GW_ANS_503;
  case 408:
  case 425:
  case 500:
  case 502:
  case 504: return GW_ANS_5XX;
  default: return GW_ANS_OTHER;
  }
}

static int fits(int want, int have) {
  return want < 0 || want == have;
}

const gw_retry_row *polite__gw_retry_rule(const char *method, int keyed,
                                          int retry_writes, int status) {
  int m = (int)polite__gw_method_kind(method);
  gw_answer_kind a = polite__gw_answer_kind(status);
  for (size_t i = 0; i < NROWS; i++)
    if (fits(rows[i].method, m) && fits(rows[i].keyed, keyed != 0) &&
        fits(rows[i].retry_writes, retry_writes != 0) && rows[i].answer == a)
      return &rows[i];
  return &rows[0]; /* not reached: every kind has a row */
}

const gw_retry_row *polite__gw_retry_rows(size_t *n) {
  *n = NROWS;
  return rows;
}

int polite__gw_may_retry(const char *method, int keyed, int retry_writes) {
  static const int answers[] = {429, 503, 500, 0};
  for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++)
    if (polite__gw_retry_rule(method, keyed, retry_writes, answers[i])->retried)
      return 1;
  return 0;
}

/* The request headers that carry an idempotency key: the IETF draft's
 * (Stripe, Adyen, GoCardless and others use it) and PayPal's. */
static const char *const key_headers[] = {"Idempotency-Key",
                                          "PayPal-Request-Id"};

const char *polite__gw_idempotency_key(const polite_header_field *fields,
                                       size_t n, size_t *len) {
  for (size_t k = 0; k < sizeof key_headers / sizeof key_headers[0]; k++)
    for (size_t i = 0; i < n; i++) {
      if (!polite__ci_eq(fields[i].name, fields[i].name_len, key_headers[k]))
        continue;
      const char *v = fields[i].value;
      size_t vl = fields[i].value_len;
      polite__trim_ows(&v, &vl);
      if (vl == 0)
        continue; /* an empty key is no key */
      *len = vl;
      return v;
    }
  *len = 0;
  return NULL;
}
