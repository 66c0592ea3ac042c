/* curl's habits shared by `polite run` and `polite diagnose`: the table of
 * curl options polite spells differently, the CA environment variables and
 * the -H check (cli_curl.h). */
#include "cli_curl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read by cli.c's "unknown option" message: the first row that names the
 * option and applies to the command wins, so a row whose polite option
 * only one command has comes before a general row for the same curl
 * option. Rows without an equivalent ("instead" NULL) apply to run and
 * diagnose alike and are worded for both. */
const cli_foreign cli_curl_options[] = {
    {"retry", 0, "max-attempts",
     "curl's --retry N counts retries after the first attempt; polite "
     "counts every attempt: --retry 4 is --max-attempts 5"},
    {"retry", 0, NULL, "polite diagnose makes one request and never retries"},
    {"retry-max-time", 0, "deadline",
     "a request's time from its first attempt, waits and retries included"},
    {"retry-delay", 0, NULL,
     "polite waits as long as the server says in Retry-After or a "
     "rate-limit reset, else backs off with full jitter; see "
     "docs/decisions.md"},
    {"retry-all-errors", 0, NULL,
     "polite retries what can succeed later (429, 503, other 5xx that may "
     "pass, network errors) and never what cannot (a 4xx, a certificate "
     "that does not verify, a write without an idempotency key)"},
    {"retry-connrefused", 0, NULL, "a refused connection is retried already"},
    {"max-time", 'm', "timeout",
     "curl's -m bounds the whole transfer; --timeout bounds each attempt and "
     "takes a duration (30s, 1m)"},
    {NULL, 'm', "max-time", "curl's -m: the time the request may take"},
    {"parallel", 'Z', "concurrency",
     "requests always run in parallel; --concurrency caps how many are in "
     "flight"},
    {"parallel-max", 0, "concurrency", "requests in flight at most"},
    {"limit-rate", 0, "rate",
     "curl's --limit-rate caps bytes per second; polite paces request starts "
     "(N/UNIT, e.g. 90/min)"},
    {"max-filesize", 0, "max-body",
     "the response bytes kept per request (the rest is counted as "
     "body_truncated)"},
    {"output", 0, "out", "one JSON line per request"},
    {"silent", 's', "quiet", "no summary on stderr"},
    {"verbose", 'v', "log", "one JSON line per attempt, with its decision"},
    {"write-out", 'w', "summary-json",
     "the run's figures as JSON; each result line has status and elapsed_ms"},
    {"fail", 'f', NULL,
     "an error status is never taken for success: it is reported (polite "
     "run: outcome http_error and exit status 1)"},
    {"location", 'L', NULL,
     "redirects are not followed: a 3xx is a result with its Location"},
    {"head", 'I', "request", "-X HEAD"},
    {"data-binary", 0, "data", "-d sends its text as is; -d @FILE a file"},
    {"data-raw", 0, "data", "-d sends its text as is"},
    {"oauth2-bearer", 0, "header",
     "-H 'Authorization: Bearer TOKEN' (written nowhere)"},
    {"cookie", 'b', "header", "-H 'Cookie: NAME=VALUE' (written nowhere)"},
    {"socks5", 0, "proxy", "--proxy socks5://HOST:PORT"},
    {"socks5-hostname", 0, "proxy", "--proxy socks5h://HOST:PORT"},
    {NULL, 0, NULL, NULL}};

/* The value of environment variable name, or NULL when unset or empty. */
static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

int cli_ca_env(const char *cmd, polite_transport_options *tr) {
  if (tr->cacert || tr->capath)
    return 0; /* given on the command line: the environment is not read */
  static const struct {
    const char *var;
    int dir; /* 1: capath, 0: cacert */
  } order[] = {
      {"CURL_CA_BUNDLE", 0}, {"SSL_CERT_DIR", 1}, {"SSL_CERT_FILE", 0}};
  for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
    const char *v = env(order[i].var);
    if (v == NULL)
      continue;
    if (access(v, R_OK) != 0)
      return cli_usage(cmd,
                       "%s: cannot read '%.300s' (unset it, or give "
                       "--cacert FILE)",
                       order[i].var, v);
    *(order[i].dir ? &tr->capath : &tr->cacert) = v;
    if (i == 0)
      break; /* CURL_CA_BUNDLE alone, as curl */
  }
  return 0;
}

int cli_header_has_name(const char *h, char *err, size_t errlen) {
  const char *colon = strchr(h, ':');
  if (colon != NULL && colon != h)
    return 0;
  snprintf(err, errlen,
           "expected 'Name: value', got a value without a name and a colon "
           "(not shown: it may be a secret)");
  return -1;
}
