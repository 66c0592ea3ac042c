/* budget_client: polite_client calls under a shared budget, for the
 * integration test of a budget outage through the C API
 * (tests/integration/test_client_budget_outage.sh). Opens URI, then makes
 * COUNT blocking calls of URL one after another and prints one line each:
 *   CALL <i> rc=<rc> outcome=<name> attempts=<n> ms=<wall ms> error=<text>
 * Usage: budget_client URI URL COUNT [OUTAGE_MS]   (OUTAGE_MS: the
 * client's budget_outage_ms; default the client's default, 60 s).
 * Exit 0, 1 when the budget cannot be opened, 2 on a usage error. */
#include <polite/client.h>
#include <polite/clock.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: budget_client URI URL COUNT [OUTAGE_MS]\n");
    return 2;
  }
  polite_budget_config cfg = {20, 1, 2};
  polite_budget *b = NULL;
  char err[256];
  if (polite_budget_open(argv[1], &cfg, &b, err, sizeof err) != 0) {
    fprintf(stderr, "budget_client: %s\n", err);
    return 1;
  }
  polite_client_options o;
  polite_client_options_init(&o);
  o.budget = b;
  o.rate_mode = POLITE_RATE_FIXED;
  if (argc > 4)
    o.budget_outage_ms = strtoll(argv[4], NULL, 10);
  polite_client *c = polite_client_new(&o);
  if (c == NULL)
    return 1;
  setvbuf(stdout, NULL, _IOLBF, 0);
  long n = strtol(argv[3], NULL, 10);
  for (long i = 0; i < n; i++) {
    polite_request *req = polite_request_new();
    req->url = strdup(argv[2]);
    polite_response resp;
    int64_t t0 = polite_mono_us();
    int rc = polite_client_request(c, req, &resp);
    printf("CALL %ld rc=%d outcome=%s attempts=%u ms=%lld error=%s\n", i, rc,
           polite_outcome_name(resp.outcome), resp.attempts,
           (long long)((polite_mono_us() - t0) / 1000),
           resp.error ? resp.error : "");
    polite_response_free(&resp);
    polite_request_free(req);
  }
  polite_client_free(c);
  polite_budget_close(b);
  return 0;
}
