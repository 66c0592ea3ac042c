/* What docs/gateway.md says of the gateway's policy, printed from the code
 * itself so that tests/integration/test_gateway_docs.sh can hold the page
 * to it:
 *   gateway_docs metrics        the metrics text with every kind of series
 *                               filled in (hostile account names included),
 *                               for promtool and the list of families
 *   gateway_docs retry-table    the safety rules (gateway/gw_retry.c) as
 *                               the page's Markdown table
 *   gateway_docs answer-table   the honest answer of each outcome
 *                               (gateway/gw_answer.c) as a Markdown table */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"

static int metrics(void) {
  gw_metrics *m = polite__gw_metrics_new();
  if (m == NULL)
    return 1;
  for (int i = 0; i < 5; i++) {
    polite__gw_metrics_request(m, i == 3, i == 4);
    polite__gw_metrics_attempt(m, (unsigned)(i % 3) + 1);
    polite__gw_metrics_queue_wait(m, (int64_t)i * 700000);
  }
  polite__gw_metrics_pause(m, "api.example.com", 2000);
  polite__gw_metrics_pause(m, NULL, 1000);
  polite__gw_metrics_pause(m, "we\"ird\\host\nname", 10);
  char name[32];
  for (int i = 0; i < 80; i++) {
    snprintf(name, sizeof name, "h%d.test:8080", i);
    polite__gw_metrics_pause(m, name, 5);
  }
  static const int statuses[] = {200, 201, 429, 503, 502, 504, 400};
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
    polite__gw_metrics_answer(m, statuses[i], (int)(i % 2),
                              (polite_outcome)(i % POLITE_OUT_COUNT));
  polite_engine_account acc[70];
  static char keys[70][24];
  for (int i = 0; i < 70; i++) {
    snprintf(keys[i], sizeof keys[i], "[::%d]:443", i);
    acc[i] = (polite_engine_account){
        i ? keys[i] : NULL, (unsigned)i, 1, i * 10, 0, 2.5};
  }
  polite_batch_stats st;
  memset(&st, 0, sizeof st);
  st.n429 = 3;
  char *t = polite__gw_metrics_text(m, acc, 70, &st);
  if (t == NULL)
    return 1;
  fputs(t, stdout);
  free(t);
  polite__gw_metrics_free(m);
  return 0;
}

static const char *method_text(int m) {
  return m < 0          ? "any"
         : m == GW_READ ? "GET, HEAD, OPTIONS, PUT, DELETE, TRACE"
                        : "POST, PATCH, any other";
}

static const char *either(int v, const char *no, const char *yes) {
  return v < 0 ? "either" : v ? yes : no;
}

static const char *answer_text(gw_answer_kind a) {
  static const char *const t[] = {"429", "503", "500, 502, 504, 408, 425",
                                  "none (refused, reset, timed out)",
                                  "anything else"};
  return t[a];
}

static int retry_table(void) {
  size_t n;
  const gw_retry_row *rows = polite__gw_retry_rows(&n);
  printf("| method | idempotency key | `--retry-writes` | answer | sent again "
         "| why |\n|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < n; i++)
    printf("| %s | %s | %s | %s | %s | %s |\n", method_text(rows[i].method),
           either(rows[i].keyed, "no", "yes"),
           either(rows[i].retry_writes, "off", "on"),
           answer_text(rows[i].answer), rows[i].retried ? "**yes**" : "no",
           rows[i].why);
  return 0;
}

static int answer_table(void) {
  static const struct {
    polite_outcome out;
    int64_t ra_ms;
    int pause_status;
    const char *when;
  } rows[] = {
      {POLITE_OUT_QUEUE_FULL, 2500, 0,
       "the account's queue is full (`--queue-max`)"},
      {POLITE_OUT_WAIT_TOO_LONG, 30000, 429,
       "the account's pause (from a 429) and the queue ahead exceed "
       "`--max-wait`"},
      {POLITE_OUT_WAIT_TOO_LONG, 30000, 503, "... the pause came from a 503"},
      {POLITE_OUT_WAIT_TOO_LONG, 30000, 0,
       "... the queue ahead at the planned rate alone"},
      {POLITE_OUT_DEADLINE, 4000, 0,
       "the wait does not fit the request's `--deadline`"},
      {POLITE_OUT_DEADLINE, -1, 0, "the deadline passed during an attempt"},
      {POLITE_OUT_QUOTA_EXHAUSTED, 60000, 429,
       "the account's quota is spent (stopped until its reset)"},
      {POLITE_OUT_NETWORK_ERROR, -1, 0,
       "no answer from the upstream after the attempts allowed"},
      {POLITE_OUT_CANCELLED, -1, 0, "the gateway is stopping"},
  };
  printf("| outcome | when | status | Retry-After |\n|---|---|---:|---|\n");
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    polite_result r;
    memset(&r, 0, sizeof r);
    r.outcome = rows[i].out;
    r.retry_after_ms = rows[i].ra_ms;
    r.pause_status = rows[i].pause_status;
    gw_reply g;
    if (polite__gw_reply(&r, NULL, &g) != 0)
      return 1;
    const char *ra = NULL;
    for (size_t k = 0; k < g.nheaders; k++)
      if (strcmp(g.headers[k].name, "Retry-After") == 0)
        ra = g.headers[k].value;
    printf("| `%s` | %s | %d %s | %s |\n", polite_outcome_name(r.outcome),
           rows[i].when, g.status, g.reason,
           ra ? (rows[i].ra_ms >= 0 ? "when the account opens again, "
                                      "seconds rounded up"
                                    : "1 (no rate paces the account)")
              : "none");
    polite__gw_reply_free(&g);
  }
  return 0;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "metrics") == 0)
    return metrics();
  if (strcmp(what, "retry-table") == 0)
    return retry_table();
  if (strcmp(what, "answer-table") == 0)
    return answer_table();
  fprintf(stderr, "usage: gateway_docs metrics|retry-table|answer-table\n");
  return 2;
}
