/* polite run: reads requests (one per line), runs them under one shared
 * budget with the batch engine, and writes one JSON result line each. The
 * options are the table below; the results file is run_output.c, the log,
 * summary and progress line run_summary.c. */
#define _GNU_SOURCE
#include "cli.h"
#include "cli_curl.h"
#include "cli_rows.h"
#include "run_resume.h"
#include "report_tap.h"
#include "run_output.h"
#include "run_queue.h"
#include "http_syntax.h"
#include "run_summary.h"
#include "run_wire.h"

#include <errno.h>
#include <limits.h>
#include <polite/clock.h>
#include <polite/polite.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Everything the command line sets. Rows land in bo and tr directly, so a
 * new engine or transport setting is one new row. */
typedef struct {
  polite_batch_options bo;
  polite_transport_options tr;
  cli_rate rate; /* --rate: units/s (0: no pacing) and its mode */
  unsigned burst, concurrency, cost;
  const char *budget_uri, *out_path, *log_path, *summary_path, *bodies_dir;
  const char *report_path; /* --report FILE.html */
  const char *method, *data_arg;
  cli_list headers;
  size_t max_data; /* -d @FILE cap */
  int progress;    /* -1: when stderr is a terminal */
  int quiet;
  int http11, http2;
  run_resume_config jc;
  run_queue_config qc;    /* --queue and its rows */
  const char *input_path; /* NULL: stdin */
  char *data_buf;         /* -d @FILE contents */
  size_t data_len;
} run_opts;

/* ---- Setters for the rows that check more than a kind can ---------------- */

/* -H "Name: value": a token name, no CR/LF. The value is never quoted (it
 * may be a secret), and without a colon nothing of it is: "Bearer sk-..."
 * is all value. */
static int set_header(void *opts, const cli_opt *o, const char *h, char *err,
                      size_t errlen) {
  if (cli_header_has_name(h, err, errlen) != 0)
    return -1;
  const char *colon = strchr(h, ':');
  polite_request *probe = polite_request_new();
  char *name = strndup(h, (size_t)(colon - h));
  const char *v = colon + 1;
  while (*v == ' ' || *v == '\t')
    v++;
  int ok = probe && name && polite_request_add_header(probe, name, v) == 0;
  polite_request_free(probe);
  if (!ok) {
    snprintf(err, errlen,
             "expected 'Name: value' with a valid name and no line breaks, "
             "got '%.*s: ...'",
             (int)(colon - h > 60 ? 60 : colon - h), h);
    free(name);
    return -1;
  }
  free(name);
  return cli_opt_store(o, opts, h, err, errlen);
}

static int set_method(void *opts, const cli_opt *o, const char *v, char *err,
                      size_t errlen) {
  polite_request *probe = polite_request_new();
  int ok = probe && v[0] && polite_request_add_header(probe, v, "x") == 0;
  polite_request_free(probe);
  if (!ok) {
    snprintf(err, errlen, "'%.64s' is not a valid HTTP method", v);
    return -1;
  }
  ((run_opts *)opts)->method = v;
  return 0;
}

static int set_requeue(void *opts, const cli_opt *o, const char *v, char *err,
                       size_t errlen) {
  char bad[64];
  if (run_resume_parse_requeue(v, &((run_opts *)opts)->jc.requeue, bad,
                               sizeof bad) != 0) {
    snprintf(err, errlen,
             "'%s' is not an outcome that can be requeued (e.g. "
             "deadline,cancelled)",
             bad);
    return -1;
  }
  return 0;
}

/* -u user:password (curl's form; a missing password is not prompted for). */
static int set_user(void *opts, const cli_opt *o, const char *v, char *err,
                    size_t errlen) {
  if (strchr(v, ':') == NULL) {
    snprintf(err, errlen, "expected user:password (not shown)");
    return -1;
  }
  ((run_opts *)opts)->tr.userpwd = v;
  return 0;
}

/* ---- The table ------------------------------------------------------------
 */

#define R run_opts
/* name, short, kind, arg, min, max, default, default as shown, env, help,
 * group, where, setter, choices, flags */
static const cli_opt run_table[] = {
    CLI_ROWS_RATE(R, rate, bo, burst, concurrency, "4", "Budget"),
    {"cost", 0, CLI_UINT, "N", 1, POLITE_REQUEST_MAX_COST, "1", NULL, NULL,
     "rate units each attempt spends, for lines without a \"cost\" field "
     "(tokens per minute are budgeted like requests per minute)",
     NULL, CLI_AT(R, cost), NULL, NULL, 0},
    CLI_ROWS_BUDGET(R, budget_uri, bo, "run"),
    CLI_ROW_BUDGET_OUTAGE(R, bo,
                          "while the budget cannot be used (Redis unreachable, "
                          "a damaged budget file) nothing is sent and polite "
                          "asks again with a backoff for up to this long, then "
                          "stops (exit 1; --resume sends the rest); 0: stop at "
                          "the first failure"),
    CLI_ROW_MAX_ATTEMPTS(R, bo, "Retries and time"),
    CLI_ROWS_WAIT(R, bo,
                  "per request, from its first attempt (250ms, 2s, 1m); a "
                  "wait that does not fit ends it with outcome deadline",
                  "a server wait (Retry-After, a reset, a pause found in the "
                  "budget) longer than this ends the request "
                  "'wait_too_long' at once instead of waiting, never by "
                  "sending early (0: no limit)"),
    {"run-deadline", 0, CLI_DURATION, "DURATION", 1, INT64_MAX / 1000, "none",
     NULL, NULL, "for the whole run", NULL, CLI_AT(R, bo.run_deadline_ms), NULL,
     NULL, CLI_F_NONE},
    {"connect-timeout", 0, CLI_DURATION, "DURATION", 1, LONG_MAX, "10s", NULL,
     NULL, "per attempt, to connect (0 is refused: there is no 'no limit')",
     NULL, CLI_AT(R, bo.connect_timeout_ms), NULL, NULL, 0},
    {"timeout", 0, CLI_DURATION, "DURATION", 1, LONG_MAX, "30s", NULL, NULL,
     "per attempt, whole transfer (also cut to the time left before a "
     "deadline; 0 is refused: there is no 'no limit')",
     NULL, CLI_AT(R, bo.timeout_ms), NULL, NULL, 0},
    {"spread", 0, CLI_DURATION, "DURATION", 0, 3600000, "250ms", NULL, NULL,
     "the largest random spread added to a server's wait", NULL,
     CLI_AT(R, bo.spread_ms), NULL, NULL, 0},
    CLI_ROW_IDEMPOTENCY_KEY(R, bo, "Writes"),
    {"retry-unsafe", 0, CLI_FLAG, NULL, 1, 0, NULL, "off", NULL,
     "retry POST/PATCH even without a key (you accept duplicates)", NULL,
     CLI_AT(R, bo.retry_unsafe), NULL, NULL, 0},
    {"header", 'H', CLI_LIST, "'K: V'", 0, 0, NULL, NULL, NULL,
     "header for every request (repeatable)", "Requests (like curl)",
     CLI_AT(R, headers), set_header, NULL, 0},
    {"request", 'X', CLI_CUSTOM, "METHOD", 0, 0, NULL, NULL, NULL,
     "method for lines that give none", NULL, 0, 0, set_method, NULL, 0},
    {"data", 'd', CLI_STRING, "DATA", 0, 0, NULL, NULL, NULL,
     "body for lines that give none (@FILE reads a file, at most --max-data "
     "bytes); makes them POST unless -X says otherwise",
     NULL, CLI_AT(R, data_arg), NULL, NULL, 0},
    {"max-data", 0, CLI_SIZE, "SIZE", 0, 1LL << 30, "16MiB", NULL, NULL,
     "largest -d @FILE body; a larger file is an error naming it", NULL,
     CLI_AT(R, max_data), NULL, NULL, 0},
    {"user", 'u', CLI_CUSTOM, "USER:PASSWORD", 0, 0, NULL, NULL, NULL,
     "HTTP Basic credentials for every request (never written anywhere)", NULL,
     0, 0, set_user, NULL, CLI_F_SECRET},
    {"user-agent", 'A', CLI_STRING, "NAME", 0, 0, "polite/" POLITE_VERSION_STR,
     "polite/VERSION", NULL, "User-Agent for requests whose line sets none",
     NULL, CLI_AT(R, bo.user_agent), NULL, NULL, 0},
    {"compressed", 0, CLI_FLAG, NULL, 1, 0, NULL, "off", NULL,
     "ask for a compressed response and decompress it; --max-body counts the "
     "decompressed bytes",
     NULL, CLI_AT(R, tr.compressed), NULL, NULL, 0},
    {"http1.1", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL, "use HTTP/1.1 only",
     NULL, CLI_AT(R, http11), NULL, NULL, 0},
    {"http2", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "use HTTP/2 (ALPN over TLS, else h2c upgrade)", NULL, CLI_AT(R, http2),
     NULL, NULL, 0},
    {"max-body", 0, CLI_SIZE, "SIZE", 1, 1LL << 30, "16MiB", NULL, NULL,
     "response bytes kept per request (the rest is counted as "
     "body_truncated); each request in flight may hold this much",
     NULL, CLI_AT(R, bo.max_body), NULL, NULL, 0},
    CLI_ROWS_TLS(R, tr, bo.insecure, "TLS"),
    CLI_ROWS_PROXY(R, tr, "Proxy"),
    {"out", 'o', CLI_STRING, "FILE", 0, 0, NULL, "stdout", NULL,
     "results, one JSON line per request", "Output", CLI_AT(R, out_path), NULL,
     NULL, 0},
    CLI_ROW_ATTEMPT_LOG(R, log_path, NULL),
    {"bodies-dir", 0, CLI_STRING, "DIR", 0, 0, NULL, "none", NULL,
     "save each body as DIR/<id, %-encoded> and write body_file instead of "
     "body",
     NULL, CLI_AT(R, bodies_dir), NULL, NULL, 0},
    {"summary-json", 0, CLI_STRING, "FILE", 0, 0, NULL, "none", NULL,
     "the summary as a JSON object", NULL, CLI_AT(R, summary_path), NULL, NULL,
     0},
    {"report", 0, CLI_STRING, "FILE.html", 0, 0, NULL, "none", NULL,
     "an HTML timeline of the run, written at its end (see report.md)", NULL,
     CLI_AT(R, report_path), NULL, NULL, 0},
    {"first", 0, CLI_UINT, "N", 1, UINT64_MAX, NULL, "all", NULL,
     "trial: run only the first N requests and compare the measured spacing "
     "and in-flight count with the plan",
     NULL, CLI_AT(R, bo.max_requests), NULL, NULL, 0},
    {"progress", 0, CLI_FLAG, NULL, 1, 0, NULL, "on when stderr is a terminal",
     NULL, "progress line on stderr, even when stderr is not a terminal", NULL,
     CLI_AT(R, progress), NULL, NULL, 0},
    {"no-progress", 0, CLI_FLAG, NULL, 0, 0, NULL, NULL, NULL,
     "no progress line", NULL, CLI_AT(R, progress), NULL, NULL, 0},
    {"quiet", 'q', CLI_FLAG, NULL, 1, 0, NULL, "off", NULL,
     "no summary on stderr", NULL, CLI_AT(R, quiet), NULL, NULL, 0},
    {"journal", 0, CLI_STRING, "FILE", 0, 0, NULL, "none", NULL,
     "record each request, its idempotency key, each attempt and each result "
     "(needs --out and an input FILE; see journal.md)",
     "Journal (crash-safe resume)", CLI_AT(R, jc.path), NULL, NULL, 0},
    {"resume", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "continue the journal's run: skip finished ids, run again what was "
     "cancelled or never started, reuse recorded keys, repair --out",
     NULL, CLI_AT(R, jc.resume), NULL, NULL, 0},
    {"requeue", 0, CLI_CUSTOM, "LIST", 0, 0, NULL, NULL, NULL,
     "with --resume, also run again the ids whose result was one of these "
     "outcomes (e.g. deadline,http_error)",
     NULL, 0, 0, set_requeue, NULL, 0},
    {"force", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "resume although the input or --out changed", NULL, CLI_AT(R, jc.force),
     NULL, NULL, 0},
    {"queue", 0, CLI_STRING, "URI", 0, 0, NULL, "none", NULL,
     "work for the Redis Streams queue redis[s]://[[USER]:PASSWORD@]HOST"
     "[:PORT]/NAME with other workers: take its entries instead of an input "
     "FILE; results go to --out once the queue has recorded them (see "
     "queue.md)",
     "Queue (workers on many hosts share the work)", CLI_AT(R, qc.uri), NULL,
     NULL, 0},
    {"follow", 0, CLI_FLAG, NULL, 1, 0, NULL, "off", NULL,
     "with --queue, wait for more entries when the queue is empty instead "
     "of ending",
     NULL, CLI_AT(R, qc.follow), NULL, NULL, 0},
    {"lease", 0, CLI_DURATION, "DURATION", 1000, 86400000, "30s", NULL, NULL,
     "with --queue, how long a taken entry stays this worker's after its "
     "last renewal (every third of it, also while it waits); then another "
     "worker may claim it",
     NULL, CLI_AT(R, qc.lease_ms), NULL, NULL, 0},
    {"max-deliveries", 0, CLI_UINT, "N", 1, 1000, "5", NULL, NULL,
     "with --queue, takes of an entry without a result before it goes to "
     "the dead letters",
     NULL, CLI_AT(R, qc.max_deliveries), NULL, NULL, 0},
    {"queue-outage", 0, CLI_DURATION, "DURATION", 1, INT64_MAX / 1000, "10m",
     NULL, NULL,
     "with --queue, give up (exit 1) when Redis stays unreachable this long "
     "('none': wait for ever)",
     NULL, CLI_AT(R, qc.outage_ms), NULL, NULL, CLI_F_NONE},
    CLI_ROW_END};
#undef R

const cli_command cli_cmd_run = {
    "run",
    "[OPTIONS] [FILE|-]",
    "run a batch of requests under one shared budget",
    "Runs one HTTP request per input line under one shared budget: starts\n"
    "are spaced by --rate, at most --concurrency are in flight, retries\n"
    "spend the same budget, and a 429/503 with Retry-After pauses the whole\n"
    "budget until the server's time. Input: a bare URL (a GET) or a JSON\n"
    "object {\"id\",\"method\",\"url\",\"headers\":{},\"body\",\n"
    "\"idempotency_key\",\"cost\"} per line; blank lines and # comments are\n"
    "skipped. FILE '-' or none reads stdin. Output: one JSON line per\n"
    "request. Durations: 250ms, 2s, 1.5s, 3m, 1h30m; sizes: 4096, 64k, 16M.\n",
    run_table,
    "Secrets (Authorization, Proxy-Authorization, Cookie, Set-Cookie,\n"
    "X-Api-Key, Api-Key headers; -u; query parameters whose names contain\n"
    "key, token, secret, signature, sig, password) are written as REDACTED.\n"
    "Exit: 0 all ok; 1 some request did not end ok, or an output could not\n"
    "be written; 2 usage error; 3 a quota was spent (nothing new started;\n"
    "the rest are 'cancelled'); 130 interrupted (results so far are\n"
    "flushed). See docs/run.md.\n",
    NULL,
    1,
    cli_curl_options,
    NULL};

/* ---- Checks after parsing --------------------------------------------------
 */

/* Reads -d @FILE, at most `max` bytes: a larger file (or /dev/zero) is a
 * usage error naming it, not a run that fills memory. */
static int read_data_file(const char *path, size_t max, char **out,
                          size_t *len) {
  if (polite__read_file(path, max, out, len) == 0)
    return 0;
  if (errno == EFBIG)
    return cli_usage("run",
                     "-d: '%s' is larger than --max-data (%zu bytes); raise "
                     "--max-data to send it",
                     path, max);
  return cli_usage("run", "-d: cannot read '%s': %s", path, strerror(errno));
}

/* One file the run reads or writes, for the same-file check. */
typedef struct {
  const char *what; /* "the input", "--out", ... */
  const char *path; /* NULL: the descriptor fd */
  int fd;
  int exists;
  dev_t dev;
  ino_t ino;
  char *resolved; /* where a file that does not exist yet will be */
} run_file;

/* Fills f's identity. Only regular files (and files still to be created)
 * take part: /dev/null or a terminal may well be two outputs at once. */
static int identify(run_file *f) {
  struct stat st;
  int r = f->path ? stat(f->path, &st) : fstat(f->fd, &st);
  if (r == 0) {
    if (!S_ISREG(st.st_mode))
      return 0;
    f->exists = 1;
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    return 1;
  }
  if (f->path == NULL)
    return 0;
  /* Not there yet: the resolved directory plus the last name. */
  char *copy = strdup(f->path);
  if (copy == NULL)
    return 0;
  char *slash = strrchr(copy, '/');
  const char *base = slash ? slash + 1 : copy;
  char *dir =
      realpath(slash ? (slash == copy ? "/" : (*slash = 0, copy)) : ".", NULL);
  if (dir && asprintf(&f->resolved, "%s/%s", dir, base) < 0)
    f->resolved = NULL;
  free(dir);
  free(copy);
  return f->resolved != NULL;
}

static int same_file(const run_file *a, const run_file *b) {
  if (a->exists && b->exists)
    return a->dev == b->dev && a->ino == b->ino;
  if (!a->exists && !b->exists)
    return strcmp(a->resolved, b->resolved) == 0;
  return 0;
}

/* Refuses a run whose outputs are the input, the journal or each other
 * (device and inode for files that exist, the resolved path for files
 * still to be made), before anything is opened for writing. */
static int check_distinct(const run_opts *o) {
  run_file f[] = {
      {"the input", o->input_path, STDIN_FILENO, 0, 0, 0, NULL},
      {o->out_path ? "--out" : "the results (standard output)", o->out_path,
       STDOUT_FILENO, 0, 0, 0, NULL},
      {"--journal", o->jc.path, -1, 0, 0, 0, NULL},
      {"--log", o->log_path, -1, 0, 0, 0, NULL},
      {"--summary-json", o->summary_path, -1, 0, 0, 0, NULL},
      {"--report", o->report_path, -1, 0, 0, 0, NULL},
  };
  size_t n = sizeof f / sizeof f[0];
  int known[sizeof f / sizeof f[0]] = {0};
  int rc = 0;
  for (size_t i = 0; i < n; i++)
    known[i] = (f[i].path || f[i].fd >= 0) && identify(&f[i]);
  for (size_t i = 0; i < n && rc == 0; i++)
    for (size_t j = i + 1; j < n && rc == 0; j++)
      if (known[i] && known[j] && same_file(&f[i], &f[j]))
        rc = cli_usage("run",
                       "%s%s%s%s and %s%s%s%s are the same file: refusing to "
                       "overwrite %s",
                       f[i].what, f[i].path ? " '" : "",
                       f[i].path ? f[i].path : "", f[i].path ? "'" : "",
                       f[j].what, f[j].path ? " '" : "",
                       f[j].path ? f[j].path : "", f[j].path ? "'" : "",
                       i == 0 ? "the input" : "one output with another");
  for (size_t i = 0; i < n; i++)
    free(f[i].resolved);
  return rc;
}

/* Parses and checks the command line. Returns -1 to go on, else an exit
 * status. */
static int parse_run_args(int argc, char **argv, run_opts *o) {
  memset(o, 0, sizeof *o);
  polite_batch_options_init(&o->bo);
  o->rate.mode = POLITE_RATE_AUTO; /* without --rate it is learned */
  o->progress = -1;
  cli_args pos = {{NULL}, 0};
  int rc = cli_defaults(&cli_cmd_run, o);
  if (rc == 0)
    rc = cli_parse(&cli_cmd_run, argc, argv, o, &pos);
  if (rc >= 0)
    return rc;
  o->bo.rate_mode = o->rate.mode;
  o->input_path = pos.n && strcmp(pos.v[0], "-") != 0 ? pos.v[0] : NULL;
  run_resume_config *jc = &o->jc;
  if (jc->path == NULL && (jc->resume || jc->force || jc->requeue))
    return cli_usage("run", "%s needs --journal FILE",
                     jc->resume  ? "--resume"
                     : jc->force ? "--force"
                                 : "--requeue");
  if (jc->requeue && !jc->resume)
    return cli_usage("run", "--requeue needs --resume");
  if ((rc = run_queue_check(&o->qc, pos.n > 0, jc->path != NULL)) >= 0)
    return rc;
  if (o->http11 && o->http2)
    return cli_usage("run", "--http1.1 and --http2 exclude each other");
  o->tr.http_version = o->http11  ? POLITE_HTTP_1_1
                       : o->http2 ? POLITE_HTTP_2
                                  : POLITE_HTTP_ANY;
  if ((rc = cli_ca_env("run", &o->tr)) != 0)
    return rc;
  char err[300];
  if (polite_transport_check(&o->tr, err, sizeof err) != 0)
    return cli_usage("run", "%s", err);
  if ((rc = check_distinct(o)) != 0)
    return rc;
  const char *outs[] = {"--out",     o->out_path,      "--log",
                        o->log_path, "--summary-json", o->summary_path,
                        "--report",  o->report_path};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i += 2)
    if (run_output_path_check(outs[i], outs[i + 1], err, sizeof err))
      return cli_usage("run", "%s", err);
  if (o->data_arg && o->data_arg[0] == '@') {
    if ((rc = read_data_file(o->data_arg + 1, o->max_data, &o->data_buf,
                             &o->data_len)) != 0)
      return rc;
  } else if (o->data_arg) {
    o->data_len = strlen(o->data_arg);
  }
  return -1;
}

/* ---- The run ---------------------------------------------------------------
 */

typedef struct {
  run_output out;
  run_log log;
  run_progress progress;
  polite_input *input;
  run_outage outage;
  run_queue *queue;                 /* --queue: the source instead of input */
  const polite_input_defaults *def; /* -X, -H, -d */
} run_ctx;

static polite_batch *volatile g_batch;

static void on_signal(int sig) {
  (void)sig;
  if (g_batch)
    polite_batch_cancel(g_batch);
}

static int next_request(void *ud, polite_request **out) {
  return polite_input_next(((run_ctx *)ud)->input, out);
}
static void on_result(void *ud, const polite_result *r) {
  run_output_result(&((run_ctx *)ud)->out, r);
}
static void on_attempt(void *ud, const polite_attempt *a) {
  run_log_attempt(&((run_ctx *)ud)->log, a);
}
static void on_tick(void *ud, const polite_batch_stats *s) {
  run_ctx *c = ud;
  run_outage_tell(&c->outage, &c->progress, s);
  run_progress_draw(&c->progress, s, 0);
}
static void on_rate(void *ud, const polite_rate_change *r) {
  run_log_rate(&((run_ctx *)ud)->log, r);
}

/* Counts request lines (not blank, not '#') of a regular file, so the
 * progress line can show a total and an ETA. -1 when not a regular file. */
static long long count_requests(const char *path) {
  struct stat stt;
  if (path == NULL || stat(path, &stt) != 0 || !S_ISREG(stt.st_mode))
    return -1;
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return -1;
  long long n = 0;
  int c, start = 1, content = 0;
  while ((c = getc_unlocked(f)) != EOF) {
    if (c == '\n') {
      n += content;
      start = 1;
      content = 0;
    } else if (start && (c == ' ' || c == '\t' || c == '\r')) {
      continue;
    } else if (start) {
      start = 0;
      content = c != '#';
    }
  }
  n += content;
  fclose(f);
  return n;
}

/* Opens the results, the log and the bodies directory (the input is open
 * already). Returns 0 or an exit status after a message. */
static int open_outputs(run_opts *o, run_ctx *c, run_resume **jr) {
  c->out.out = stdout;
  if (o->jc.path) {
    o->jc.input_path = o->input_path;
    o->jc.out_path = o->out_path;
    o->jc.idempotency_auto = o->bo.idempotency_auto;
    o->jc.quiet = o->quiet;
    int rc = run_resume_open(&o->jc, jr, &c->out.out);
    if (rc != 0) {
      c->out.out = NULL;
      return rc;
    }
  } else if (o->out_path &&
             (c->out.out = run_output_open(o->out_path, 0)) == NULL) {
    return cli_usage("run", "--out: cannot open '%s': %s", o->out_path,
                     strerror(errno));
  }
  c->out.journal = *jr != NULL;
  c->out.bodies_dir = o->bodies_dir;
  if (!*jr && o->out_path) {
    c->out.out_name = o->out_path;
    c->out.out_regular = fstat(fileno(c->out.out), &c->out.out_st) == 0 &&
                         S_ISREG(c->out.out_st.st_mode);
  }
  c->log.path = o->log_path;
  /* --resume appends to the first run's log: one log for the batch. */
  if (o->log_path &&
      (c->log.f = run_output_open(o->log_path, o->jc.resume)) == NULL)
    return cli_usage("run", "--log: cannot open '%s': %s", o->log_path,
                     strerror(errno));
  if (o->bodies_dir) {
    struct stat stt;
    if (mkdir(o->bodies_dir, 0777) != 0 && errno != EEXIST)
      return cli_usage("run", "--bodies-dir: cannot create '%s': %s",
                       o->bodies_dir, strerror(errno));
    if (stat(o->bodies_dir, &stt) != 0 || !S_ISDIR(stt.st_mode))
      return cli_usage("run", "--bodies-dir: '%s' is not a directory",
                       o->bodies_dir);
  }
  return 0;
}

/* The progress total: request lines of a file, less what --resume skips,
 * at most --first. */
static void progress_setup(const run_opts *o, run_ctx *c,
                           const run_resume *jr) {
  run_progress *p = &c->progress;
  p->on = o->progress >= 0 ? o->progress : isatty(STDERR_FILENO);
  p->total = count_requests(o->input_path);
  long long done = run_resume_done(jr);
  if (jr && p->total >= 0) /* --resume skips finished ones */
    p->total = p->total > done ? p->total - done : 0;
  uint64_t first = o->bo.max_requests;
  if (p->total >= 0 && first > 0 && (unsigned long long)p->total > first)
    p->total = (long long)first;
  p->planned_rate =
      o->rate.per_s > 0 ? o->rate.per_s / (o->cost ? o->cost : 1) : 0;
}

static void install_signals(polite_batch *batch) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process at once */
  sigemptyset(&sa.sa_mask);
  g_batch = batch;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* A file-size limit (ulimit -f) must give EFBIG and a clear message, not
   * kill the process in the middle of a line. */
  signal(SIGXFSZ, SIG_IGN);
}

/* Runs the batch and reports; returns the exit status. */
static int run_batch(run_opts *o, run_ctx *c, run_resume *jr,
                     polite_budget *budget) {
  polite_batch_options *bo = &o->bo;
  bo->budget = budget;
  bo->transport = &o->tr;
  bo->next = next_request;
  bo->on_result = on_result;
  bo->on_attempt = on_attempt;
  bo->on_tick = on_tick;
  bo->on_rate = on_rate;
  bo->ud = c;
  c->outage.quiet = o->quiet;
  c->outage.limit_ms = bo->budget_outage_ms;
  run_layers layers = {
      jr,       c->queue,       &c->out,     c->def, o->concurrency,
      c->log.f, o->report_path, &budget->cfg};
  report_tap *tap;
  if (run_wire(bo, &layers, &tap) != 0)
    return CLI_EXIT_FAILED;
  char err[256];
  polite_batch *batch = polite_batch_new(bo, err, sizeof err);
  if (batch == NULL) {
    fprintf(stderr, "polite run: %s\n", err);
    report_tap_finish(tap);
    return CLI_EXIT_FAILED;
  }
  c->out.batch = batch;
  if (jr)
    run_resume_set_batch(jr, batch);
  if (c->queue)
    run_queue_set_batch(c->queue, batch);
  install_signals(batch);

  int64_t t0 = polite_mono_us();
  int erc = polite_batch_run(batch);
  if (c->queue)
    run_queue_finish(c->queue); /* the last results, the give-backs */
  const polite_batch_stats *st = polite_batch_stats_get(batch);
  run_progress_draw(&c->progress, st, 1);
  run_progress_end(&c->progress);
  run_plan plan = {o->rate.per_s, o->concurrency, bo->max_requests,
                   (polite_mono_us() - t0) / 1000, NULL};
  const char *berr = polite_batch_errstr(batch);
  if (erc != 0 || berr[0])
    fprintf(stderr, "polite run: %s\n", berr);
  if (!o->quiet)
    run_summary_text(stderr, st, &plan);
  if (c->queue)
    run_queue_summary(c->queue, stderr, o->quiet);
  int outputs_failed = 0;
  if (o->summary_path && run_summary_json(o->summary_path, st, &plan) != 0) {
    fprintf(stderr, "polite run: --summary-json: cannot write '%s': %s\n",
            o->summary_path, strerror(errno));
    outputs_failed = 1;
  }
  if (report_tap_finish(tap) != 0)
    outputs_failed = 1; /* the message is on stderr */
  run_output_report(&c->out);

  int rc;
  if (st->cancelled)
    rc = CLI_EXIT_INTERRUPTED;
  else if (st->quota_stop)
    rc = CLI_EXIT_QUOTA;
  else if (erc != 0 || c->out.out_error || berr[0] ||
           st->by_outcome[POLITE_OUT_OK] != st->results)
    rc = CLI_EXIT_FAILED;
  else
    rc = CLI_EXIT_OK;
  if (rc == CLI_EXIT_OK && run_resume_report_kept(jr))
    rc = CLI_EXIT_FAILED; /* the whole batch's status, not this session's */
  if (c->queue)           /* a worker's results are what it recorded */
    rc = rc == CLI_EXIT_FAILED && (erc != 0 || c->out.out_error || berr[0])
             ? rc
             : run_queue_exit(c->queue, st);
  if (c->out.out_failed || outputs_failed || c->out.body_errors)
    rc = CLI_EXIT_FAILED; /* an output could not be written */
  if (run_resume_finish(jr))
    rc = CLI_EXIT_FAILED; /* recording failed: the run was stopped */
  g_batch = NULL;
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  polite_batch_free(batch);
  return rc;
}

/* Closes what open_outputs opened; a failed close of an output is an
 * error. */
static int close_outputs(run_ctx *c, int rc) {
  if (run_log_close(&c->log) != 0)
    rc = rc == CLI_EXIT_OK ? CLI_EXIT_FAILED : rc;
  errno = 0;
  if (c->out.out && c->out.out != stdout && fclose(c->out.out) != 0) {
    fprintf(stderr, "polite run: cannot close the results file '%s': %s\n",
            c->out.out_name ? c->out.out_name : "--out", strerror(errno));
    rc = rc == CLI_EXIT_OK ? CLI_EXIT_FAILED : rc;
  } else if (c->out.out == stdout && fflush(stdout) != 0) {
    fprintf(stderr, "polite run: cannot write standard output: %s\n",
            strerror(errno));
    rc = rc == CLI_EXIT_OK ? CLI_EXIT_FAILED : rc;
  }
  return rc;
}

int cmd_run(int argc, char **argv) {
  run_opts o;
  int rc = parse_run_args(argc, argv, &o);
  if (rc >= 0) {
    cli_free(&cli_cmd_run, &o);
    free(o.data_buf);
    return rc;
  }
  run_ctx c;
  memset(&c, 0, sizeof c);
  run_resume *jr = NULL;
  FILE *in = stdin;
  if (!o.qc.uri && o.input_path && (in = fopen(o.input_path, "r")) == NULL) {
    rc = cli_usage("run", "cannot open input '%s': %s", o.input_path,
                   strerror(errno));
    in = stdin;
  } else if ((rc = open_outputs(&o, &c, &jr)) == 0) {
    polite_input_defaults def = {
        o.method,    o.headers.v,
        o.headers.n, o.data_buf ? o.data_buf : o.data_arg,
        o.data_len,  o.cost};
    c.input = polite_input_open(in, &def);
    c.def = &def;
    polite_budget_config bc = {o.rate.per_s, o.burst, o.concurrency};
    polite_budget *budget = NULL;
    char err[256];
    if (c.input == NULL) {
      rc = CLI_EXIT_FAILED;
    } else if (polite_budget_open(o.budget_uri, &bc, &budget, err,
                                  sizeof err) != 0) {
      rc = cli_usage("run", "--budget: %s", err);
    } else if (o.qc.uri && (rc = run_queue_open(&o.qc, &c.queue)) != 0) {
      polite_budget_close(budget);
    } else {
      progress_setup(&o, &c, jr);
      rc = run_batch(&o, &c, jr, budget);
      run_queue_close(c.queue); /* before the budget: it may still hold */
      polite_budget_close(budget);
    }
    polite_input_close(c.input);
    c.def = NULL; /* def ends here */
  }
  rc = close_outputs(&c, rc);
  if (in != stdin)
    fclose(in);
  run_resume_close(jr);
  cli_free(&cli_cmd_run, &o);
  free(o.data_buf);
  return rc;
}
