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

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parses V, the argument named WHAT, as a whole number >= 0: the whole of
 * V is the digits (no sign, no blanks, no trailing text) and it fits.
 * Returns 0 with *out set, or -1 after naming WHAT and V on stderr. */
static int whole(const char *what, const char *v, long long *out) {
  char *end = NULL;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (!isdigit((unsigned char)v[0]) || *end != '\0' || errno != 0) {
    fprintf(stderr, "budget_client: %s: '%s' is not a whole number >= 0\n",
            what, v);
    return -1;
  }
  *out = n;
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: budget_client URI URL COUNT [OUTAGE_MS]\n");
    return 2;
  }
  long long n = 0, outage_ms = -1;
  if (whole("COUNT", argv[3], &n) != 0 ||
      (argc > 4 && whole("OUTAGE_MS", argv[4], &outage_ms) != 0))
    return 2;
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
  if (outage_ms >= 0)
    o.budget_outage_ms = outage_ms;
  polite_client *c = polite_client_new(&o);
  if (c == NULL)
    return 1;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (long long i = 0; i < n; i++) {
    polite_request *req = polite_request_new();
    req->url = strdup(argv[2]);
    polite_response resp;
    int64_t t0 = polite_mono_us();
    int rc = polite_client_request(c, req, &resp);
    printf("CALL %lld rc=%d outcome=%s attempts=%u ms=%lld error=%s\n", i, rc,
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
