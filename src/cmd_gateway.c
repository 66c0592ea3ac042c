/* polite gateway: its options (one table, the rows it shares with polite
 * run and polite proxy written once in common/cli_rows.h), the budget, the
 * attempt log and the summary polite run writes; the gateway itself is
 * gateway/ (its one header, gateway.h). */
#include "cli.h"
#include "cli_rows.h"
#include "commands.h"
#include "gateway.h"
#include "run_summary.h"

#include <errno.h>
#include <limits.h>
#include <polite/polite.h>
#include <stdlib.h>
#include <string.h>

/* Everything the command line sets: the gateway's config (rows land in it
 * directly) and what the command itself uses. */
typedef struct {
  gw_config c;
  cli_rate rate;
  unsigned burst, concurrency;
  const char *budget_uri;
  const char *log_path;
  int quiet;
  run_log log;
} gw_opts;

/* ---- Setters for the rows that check more than a kind can ---------------- */

/* A string row of kind CLI_CUSTOM (shared with the proxy, whose setter owns
 * a copy): here the value is borrowed from argv. */
static int set_text(void *opts, const cli_opt *o, const char *v, char *err,
                    size_t errlen) {
  (void)err;
  (void)errlen;
  *(const char **)((char *)opts + o->off) = v;
  return 0;
}

static int set_listen(void *opts, const cli_opt *o, const char *v, char *err,
                      size_t errlen) {
  const char *colon = strrchr(v, ':');
  unsigned long long port;
  if (colon == NULL || colon == v ||
      cli_parse_uint(colon + 1, 65535, &port) != 0) {
    snprintf(err, errlen, "expected ADDR:PORT (e.g. 127.0.0.1:8080), got '%s'",
             v);
    return -1;
  }
  return set_text(opts, o, v, err, errlen);
}

static int set_upstream(void *opts, const cli_opt *o, const char *v, char *err,
                        size_t errlen) {
  gw_base b;
  char why[300];
  if (polite__gw_base_parse(v, &b, why, sizeof why) != 0) {
    char *shown = polite_redact_url(v);
    snprintf(err, errlen, "%s, got '%s'", why, shown ? shown : "?");
    free(shown);
    return -1;
  }
  return set_text(opts, o, v, err, errlen);
}

static int set_connect_to(void *opts, const cli_opt *o, const char *v,
                          char *err, size_t errlen) {
  if (polite__gw_connect_to_check(v, err, errlen) != 0)
    return -1;
  return cli_opt_store(o, opts, v, err, errlen);
}

/* ---- The table ------------------------------------------------------------
 */

#define G gw_opts
/* name, short, kind, arg, min, max, default, default as shown, env, help,
 * group, where, setter, choices, flags */
static const cli_opt gateway_table[] = {
    CLI_ROW_LISTEN(G, c.listen, set_listen, "127.0.0.1:8080",
                   "where to listen (port 0: any free port, printed as "
                   "'polite gateway: listening on ...'); loopback unless "
                   "--allow-host is given",
                   "Where it listens and what it reaches"),
    {"upstream", 0, CLI_CUSTOM, "URL", 0, 0, NULL, "none", NULL,
     "base-URL mode: requests with a path (/v1/...) go to this http:// or "
     "https:// URL (OPENAI_BASE_URL=http://ADDR:PORT/v1)",
     NULL, CLI_AT(G, c.upstream), set_upstream, NULL, 0},
    CLI_ROW_WATCH(G, c.watch, NULL),
    CLI_ROW_ALLOW_HOST(G, c.allow_host, NULL),
    CLI_ROW_CONNECT_TO(G, c.connect_to, set_connect_to),
    CLI_ROWS_UPSTREAM_TLS(G, c.upstream_cacert, set_text, c.upstream_insecure,
                          NULL),
    CLI_ROW_READY_FILE(G, c.ready_file, set_text),
    CLI_ROWS_RATE(G, rate, c.bo, burst, concurrency, "8", "Budget"),
    CLI_ROWS_BUDGET(G, budget_uri, c.bo, "host"),
    CLI_ROW_BUDGET_OUTAGE(G, c.bo,
                          "while the budget cannot be used (Redis unreachable, "
                          "a damaged budget file) nothing is sent and the "
                          "gateway asks again with a backoff for up to this "
                          "long; then it answers 503 to what waits and stops "
                          "(exit 1); 0: stop at the first failure"),
    CLI_ROW_MAX_ATTEMPTS(G, c.bo, "Retries and time"),
    CLI_ROWS_WAIT(G, c.bo,
                  "per request, from its arrival (250ms, 2s, 1m); a wait "
                  "that does not fit is answered at once (429 with "
                  "Retry-After)",
                  "a wait longer than this (the server's, or the account's "
                  "pause and the queue ahead) is answered at once with a "
                  "Retry-After saying when the account opens, never by "
                  "sending early (0: no limit)"),
    {"timeout", 0, CLI_DURATION, "DURATION", 1, LONG_MAX, "10m", NULL, NULL,
     "per attempt, until the answer's head (a relayed answer then streams "
     "as long as it keeps moving, see --idle-timeout)",
     NULL, CLI_AT(G, c.bo.timeout_ms), NULL, NULL, 0},
    {"spread", 0, CLI_DURATION, "DURATION", 0, 3600000, "250ms", NULL, NULL,
     "the largest random spread added to a server's wait", NULL,
     CLI_AT(G, c.bo.spread_ms), NULL, NULL, 0},
    CLI_ROW_IDEMPOTENCY_KEY(G, c.bo, "Writes"),
    {"retry-writes", 0, CLI_FLAG, NULL, 1, 0, NULL, "off", NULL,
     "retry a POST/PATCH without a key after a 429 (never after a 503 or a "
     "broken connection): for APIs whose 429 refuses before any work",
     NULL, CLI_AT(G, c.bo.retry_writes), NULL, NULL, 0},
    {"queue-max", 0, CLI_UINT, "N", 1, 1000000, "1024", NULL, NULL,
     "requests that may wait per account; one more is answered 503 with "
     "Retry-After at once",
     "Queue and bodies", CLI_AT(G, c.bo.queue_max), NULL, NULL, 0},
    {"retry-body-max", 0, CLI_SIZE, "SIZE", 0, 1LL << 30, "1MiB", NULL, NULL,
     "request bodies kept for a retry; a larger one is sent once and never "
     "retried",
     NULL, CLI_AT(G, c.retry_body_max), NULL, NULL, 0},
    {"max-body", 0, CLI_SIZE, "SIZE", 1, 1LL << 34, "16MiB", NULL, NULL,
     "largest request body (413 above)", NULL, CLI_AT(G, c.max_body), NULL,
     NULL, 0},
    {"max-head", 0, CLI_SIZE, "SIZE", 1024, 64LL << 20, "64k", NULL, NULL,
     "largest request head (431 above)", "Bounds", CLI_AT(G, c.max_head), NULL,
     NULL, 0},
    {"max-headers", 0, CLI_UINT, "N", 1, 100000, "100", NULL, NULL,
     "most header fields in a request (431 above)", NULL,
     CLI_AT(G, c.max_headers), NULL, NULL, 0},
    {"max-connections", 0, CLI_UINT, "N", 1, 1000000, "4096", NULL, NULL,
     "client connections at once (idle ones are closed first to serve a new "
     "client)",
     NULL, CLI_AT(G, c.max_connections), NULL, NULL, 0},
    {"header-timeout", 0, CLI_DURATION, "DURATION", 1, 86400000, "10s", NULL,
     NULL, "time a client has to send a request head", NULL,
     CLI_AT(G, c.header_timeout_ms), NULL, NULL, 0},
    {"idle-timeout", 0, CLI_DURATION, "DURATION", 1, 86400000, "60s", NULL,
     NULL,
     "idle keep-alive, a stalled request body, or a client that stops "
     "reading its answer",
     NULL, CLI_AT(G, c.idle_timeout_ms), NULL, NULL, 0},
    {"drain-timeout", 0, CLI_DURATION, "DURATION", 0, 86400000, "25s", NULL,
     NULL,
     "on SIGTERM or SIGINT: stop accepting, then finish or answer what is "
     "queued within this (under Kubernetes' 30 s grace); what is still in "
     "flight after it is cut",
     "Stopping", CLI_AT(G, c.drain_timeout_ms), NULL, NULL, 0},
    CLI_ROW_ATTEMPT_LOG(G, log_path, "Output"),
    {"quiet", 'q', CLI_FLAG, NULL, 1, 0, NULL, "off", NULL,
     "no summary on stderr at the end", NULL, CLI_AT(G, quiet), NULL, NULL, 0},
    CLI_ROW_END};
#undef G

const cli_command cli_cmd_gateway = {
    "gateway",
    "[OPTIONS]",
    "make any program polite: a proxy or base URL in front of an API",
    "A gateway on the client's side: every request it receives is admitted\n"
    "under its account's budget (the rate learned from rate-limit headers\n"
    "and 429s unless --rate is given), held in a bounded queue per account,\n"
    "retried when that is safe and never before the server's time, and\n"
    "answered at once, honestly, when a wait cannot be afforded. Two ways in:\n"
    "as HTTP_PROXY/HTTPS_PROXY (plain http:// requests, and CONNECT to a\n"
    "--watch host intercepted with polite proxy's local CA; other CONNECTs\n"
    "are tunnelled) and as a base URL (--upstream). Durations: 250ms, 2s,\n"
    "1m; sizes: 4096, 64k, 16M.\n",
    gateway_table,
    "Metrics: GET http://ADDR:PORT/__polite/metrics (Prometheus text).\n"
    "SIGTERM/SIGINT drain (--drain-timeout) and print polite run's summary.\n"
    "Secrets (Authorization, Cookie, API keys, tokens in URLs) never reach\n"
    "the log. Exit: 0 after a drain; 1 when it cannot start or the budget\n"
    "fails; 2 usage error. See docs/gateway.md.\n",
    NULL,
    0,
    NULL,
    NULL};

/* ---- The hooks: the attempt log and the summary ------------------------- */

/* The gateway's fields in an attempt's log line: the wait in the queue
 * before the request's first attempt, and the client's own retries (the
 * layer the attempt belongs to). */
static void log_extra(void *ud, const polite_attempt *a, run_jline *j) {
  (void)ud;
  gw_attempt_info in;
  if (polite__gw_attempt_info(a->req, &in) != 0)
    return;
  run_jline_cstr(j, "layer", a->attempt > 1 ? "gateway" : "client");
  if (in.queued_ms >= 0 && a->attempt == 1)
    run_jline_int(j, "queued_ms", in.queued_ms);
  else
    run_jline_null(j, "queued_ms");
  if (in.client_retries >= 0)
    run_jline_int(j, "client_retries", in.client_retries);
  else
    run_jline_null(j, "client_retries");
}

static void on_attempt(void *ud, const polite_attempt *a) {
  run_log_attempt(&((gw_opts *)ud)->log, a);
}

static void on_rate(void *ud, const polite_rate_change *c) {
  run_log_rate(&((gw_opts *)ud)->log, c);
}

static void on_flush(void *ud) {
  run_log_flush(&((gw_opts *)ud)->log);
}

/* polite run's summary, then the layers' attempts. */
static void on_end(void *ud, const polite_batch_stats *st, const gw_totals *t,
                   int64_t wall_ms) {
  gw_opts *o = ud;
  if (o->quiet)
    return;
  run_plan plan = {o->rate.per_s, o->concurrency, 0, wall_ms, "polite gateway"};
  run_summary_text(stderr, st, &plan);
  fprintf(
      stderr,
      "  clients: %llu requests, %llu of them their own retries (%llu "
      "before the Retry-After they were given); attempts upstream over "
      "all layers: %llu (%llu the clients' requests, %llu the gateway's "
      "retries); %llu unwatched requests forwarded untouched\n",
      (unsigned long long)t->requests, (unsigned long long)t->client_retries,
      (unsigned long long)t->client_early,
      (unsigned long long)t->attempts_client +
          (unsigned long long)t->attempts_gateway,
      (unsigned long long)t->attempts_client,
      (unsigned long long)t->attempts_gateway, (unsigned long long)t->passed);
}

/* Parses the command line into o. -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, gw_opts *o) {
  memset(o, 0, sizeof *o);
  polite_batch_options_init(&o->c.bo);
  o->rate.mode = POLITE_RATE_AUTO; /* without --rate it is learned */
  o->c.bo.quota_per_account = 1;   /* a spent quota stops its account only */
  o->c.bo.cancel_grace_ms = 1000;  /* after --drain-timeout */
  cli_args pos = {{NULL}, 0};
  int rc = cli_defaults(&cli_cmd_gateway, o);
  if (rc == 0)
    rc = cli_parse(&cli_cmd_gateway, argc, argv, o, &pos);
  if (rc >= 0)
    return rc;
  if (!polite__gw_listen_loopback(o->c.listen) && o->c.allow_host.n == 0)
    return cli_usage("gateway",
                     "--listen %s is not loopback: as a forward proxy it "
                     "would relay to any host; give --allow-host GLOB",
                     o->c.listen);
  o->c.bo.rate_mode = o->rate.mode;
  if (o->c.retry_body_max > o->c.max_body)
    o->c.retry_body_max = o->c.max_body;
  return -1;
}

int cmd_gateway(int argc, char **argv) {
  gw_opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0) {
    cli_free(&cli_cmd_gateway, &o);
    return rc;
  }
  o.log.path = o.log_path;
  o.log.extra = log_extra;
  o.log.deferred = 1; /* flushed after each pass of the loop (on_flush) */
  if (o.log_path && (o.log.f = fopen(o.log_path, "a")) == NULL) {
    rc = cli_usage("gateway", "--log: cannot open '%s': %s", o.log_path,
                   strerror(errno));
    cli_free(&cli_cmd_gateway, &o);
    return rc;
  }
  polite_budget_config bc = {o.rate.per_s, o.burst, o.concurrency};
  polite_budget *budget = NULL;
  char err[256];
  if (polite_budget_open(o.budget_uri, &bc, &budget, err, sizeof err) != 0) {
    rc = cli_usage("gateway", "--budget: %s", err);
  } else {
    o.c.bo.budget = budget;
    o.c.on_attempt = on_attempt;
    o.c.on_rate = on_rate;
    o.c.on_flush = o.log.f ? on_flush : NULL;
    o.c.on_end = on_end;
    o.c.ud = &o;
    rc = polite__gw_run(&o.c) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
    polite_budget_close(budget);
  }
  if (run_log_close(&o.log) != 0 && rc == CLI_EXIT_OK)
    rc = CLI_EXIT_FAILED;
  cli_free(&cli_cmd_gateway, &o);
  return rc;
}
