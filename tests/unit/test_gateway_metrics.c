/* Unit tests of the gateway's metrics (gateway/gw_metrics.c): the counts
 * by layer, status and source, the queue-wait histogram, pauses and the
 * per-account gauges, label values escaped, and the accounts bounded
 * (promtool itself checks the text in tests/integration/
 * test_gateway_metrics.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"

static void has(const char *text, const char *line) {
  if (strstr(text, line) == NULL)
    fail_msg("missing: %s\n--- text ---\n%s", line, text);
}

static void counts(void **state) {
  (void)state;
  gw_metrics *m = polite__gw_metrics_new();
  assert_non_null(m);
  polite__gw_metrics_request(m, 0, 0);
  polite__gw_metrics_request(m, 0, 0);
  polite__gw_metrics_request(m, 1, 1);
  polite__gw_metrics_attempt(m, 1);
  polite__gw_metrics_attempt(m, 1);
  polite__gw_metrics_attempt(m, 2);
  polite__gw_metrics_attempt(m, 3);
  polite__gw_metrics_queue_wait(m, 500);         /* 0.5 ms */
  polite__gw_metrics_queue_wait(m, 2 * 1000000); /* 2 s */
  polite__gw_metrics_queue_wait(m, 900000000LL); /* 15 min: +Inf only */
  polite__gw_metrics_pause(m, "api.test", 2500);
  polite__gw_metrics_pause(m, "api.test", 500);
  polite__gw_metrics_pause(m, NULL, 1000);
  polite__gw_metrics_answer(m, 200, 1, POLITE_OUT_OK);
  polite__gw_metrics_answer(m, 429, 0, POLITE_OUT_WAIT_TOO_LONG);
  polite__gw_metrics_answer(m, 429, 1, POLITE_OUT_NOT_RETRIED_UNSAFE);
  polite__gw_metrics_answer(m, 503, 0, POLITE_OUT_QUEUE_FULL);
  polite_engine_account acc[2] = {
      {"api.test", 7, 2, 1500, 0, 4.5},
      {NULL, 0, 1, 0, 30000, 0},
  };
  polite_batch_stats st;
  memset(&st, 0, sizeof st);
  st.n429 = 5;
  st.n503 = 1;
  char *t = polite__gw_metrics_text(m, acc, 2, &st);
  assert_non_null(t);
  has(t, "# TYPE polite_gateway_requests_total counter\n");
  has(t, "polite_gateway_requests_total{kind=\"first\"} 2\n");
  has(t, "polite_gateway_requests_total{kind=\"client_retry\"} 1\n");
  has(t, "polite_gateway_client_early_retries_total 1\n");
  has(t, "polite_gateway_attempts_total{layer=\"client\"} 2\n");
  has(t, "polite_gateway_attempts_total{layer=\"gateway\"} 2\n");
  has(t, "polite_gateway_answers_total{status=\"200\",source=\"upstream\"} "
         "1\n");
  has(t, "polite_gateway_answers_total{status=\"429\",source=\"upstream\"} "
         "1\n");
  has(t, "polite_gateway_answers_total{status=\"429\",source=\"gateway\"} "
         "1\n");
  has(t, "polite_gateway_outcomes_total{outcome=\"queue_full\"} 1\n");
  has(t, "# TYPE polite_gateway_queue_wait_seconds histogram\n");
  has(t, "polite_gateway_queue_wait_seconds_bucket{le=\"0.001\"} 1\n");
  has(t, "polite_gateway_queue_wait_seconds_bucket{le=\"2.5\"} 2\n");
  has(t, "polite_gateway_queue_wait_seconds_bucket{le=\"300\"} 2\n");
  has(t, "polite_gateway_queue_wait_seconds_bucket{le=\"+Inf\"} 3\n");
  has(t, "polite_gateway_queue_wait_seconds_count 3\n");
  has(t, "polite_gateway_pauses_total{account=\"api.test\"} 2\n");
  has(t, "polite_gateway_pause_seconds_total{account=\"api.test\"} 3.000\n");
  has(t, "polite_gateway_pauses_total{account=\"default\"} 1\n");
  has(t, "polite_gateway_queue_length{account=\"api.test\"} 7\n");
  has(t, "polite_gateway_in_flight{account=\"default\"} 1\n");
  has(t, "polite_gateway_pause_remaining_seconds{account=\"api.test\"} 1.5\n");
  has(t, "polite_gateway_pause_remaining_seconds{account=\"default\"} 30\n");
  has(t, "polite_gateway_start_rate{account=\"api.test\"} 4.5\n");
  has(t, "polite_gateway_upstream_throttled_total{status=\"429\"} 5\n");
  free(t);
  polite__gw_metrics_free(m);
}

/* A label value with a quote, a backslash and a line feed is escaped; past
 * GW_METRICS_MAX_ACCOUNTS accounts the rest count as "other". */
static void hostile_accounts(void **state) {
  (void)state;
  gw_metrics *m = polite__gw_metrics_new();
  polite__gw_metrics_pause(m, "a\"b\\c\nd", 1000);
  char name[32];
  for (int i = 0; i < 200; i++) {
    snprintf(name, sizeof name, "h%d.test", i);
    polite__gw_metrics_pause(m, name, 1000);
  }
  polite_engine_account acc[100];
  static char keys[100][16];
  for (int i = 0; i < 100; i++) {
    snprintf(keys[i], sizeof keys[i], "q%d.test", i);
    acc[i] = (polite_engine_account){keys[i], 1, 0, 0, 0, 1.0};
  }
  char *t = polite__gw_metrics_text(m, acc, 100, NULL);
  has(t, "polite_gateway_pauses_total{account=\"a\\\"b\\\\c\\nd\"} 1\n");
  has(t, "polite_gateway_pauses_total{account=\"other\"} 137\n");
  has(t, "polite_gateway_queue_length{account=\"other\"} 36\n");
  assert_null(strstr(t, "h199.test"));
  assert_null(strstr(t, "q99.test"));
  assert_null(strstr(t, "polite_gateway_start_rate{account=\"other\"}"));
  unsigned lines = 0;
  for (const char *p = t; *p; p++)
    lines += *p == '\n';
  assert_true(lines < 600);
  free(t);
  polite__gw_metrics_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(counts),
      cmocka_unit_test(hostile_accounts),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
