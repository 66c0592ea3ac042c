/* polite run: reads requests (one per line), runs them under one shared
 * budget with the batch engine, and writes one JSON result line each. */
#define _GNU_SOURCE
#include "cli.h"
#include "run_journal.h"
#include "run_report.h"

#include <errno.h>
#include <jansson.h>
#include <polite/clock.h>
#include <polite/polite.h>
#include <signal.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char USAGE[] =
    "Usage: polite run [OPTIONS] [FILE|-]\n"
    "\n"
    "Runs one HTTP request per input line under one shared budget: starts\n"
    "are spaced by --rate, at most --concurrency are in flight, retries\n"
    "spend the same budget, and a 429/503 with Retry-After pauses the whole\n"
    "budget until the server's time. Input: a bare URL (a GET) or a JSON\n"
    "object {\"id\",\"method\",\"url\",\"headers\":{},\"body\",\n"
    "\"idempotency_key\",\"cost\"} per line; blank lines and # comments are\n"
    "skipped.\n"
    "FILE '-' or none reads stdin. Output: one JSON line per request.\n"
    "\n"
    "Budget:\n"
    "  --rate N/UNIT          planned start rate (s, min, h, day); default:\n"
    "                         no rate limit\n"
    "  --burst N              starts allowed back to back (default 1)\n"
    "  --concurrency N        requests in flight at most (default 4)\n"
    "  --cost N               rate units each attempt spends, for lines\n"
    "                         without \"cost\" (default 1): budget tokens per\n"
    "                         minute like requests per minute\n"
    "  --budget URI           'local' (default, this process), file:PATH\n"
    "                         (processes on one host), redis://HOST:PORT/NAME\n"
    "                         (hosts)\n"
    "  --budget-scope run|host  one account for the run (default) or one\n"
    "                         per host\n"
    "Retries and time:\n"
    "  --max-attempts N       network attempts per request, first included\n"
    "                         (default 5, 1..100): polite never sends more\n"
    "  --deadline DURATION    per request, from its first attempt (250ms,\n"
    "                         2s, 1m); a wait that does not fit ends it with\n"
    "                         outcome 'deadline'\n"
    "  --run-deadline DURATION  for the whole run\n"
    "  --connect-timeout DURATION  per attempt (default 10s)\n"
    "  --timeout DURATION     per attempt (default 30s)\n"
    "  --spread DURATION      random spread added to a server wait (default\n"
    "                         250ms)\n"    "  --max-wait DURATION    a server wait longer than this ends the request\n"
    "                         with 'wait_too_long' at once (default 15m; 0:\n"
    "                         no limit)\n"
    "Writes:\n"
    "  --idempotency-key auto  a random key per logical POST/PATCH without\n"
    "                         one, sent as Idempotency-Key on every attempt\n"
    "  --retry-unsafe         retry POST/PATCH even without a key\n"
    "Requests (applied to every line, like curl):\n"
    "  -H, --header 'K: V'    add a header (repeatable)\n"
    "  -X, --request METHOD   method for lines that give none\n"
    "  -d, --data DATA        body for lines that give none (@FILE reads a\n"
    "                         file); makes them POST unless -X is given\n"
    "  -k, --insecure         do not verify TLS certificates\n"
    "Output:\n"
    "  -o, --out FILE         results (default stdout)\n"
    "  --log FILE             one JSON line per network attempt\n"
    "  --bodies-dir DIR       save bodies as DIR/<id> (\"body_file\")\n"
    "  --summary-json FILE    the summary as JSON\n"
    "  --first N              trial: run only the first N requests and\n"
    "                         compare the measured spacing with the plan\n"
    "  --progress, --no-progress  progress line on stderr (default: on when\n"
    "                         stderr is a terminal)\n"
    "  -q, --quiet            no summary on stderr\n"
    "Journal (crash-safe resume; see docs/journal.md):\n"
    "  --journal FILE         record each request, its idempotency key,\n"
    "                         each attempt and each result (needs --out and\n"
    "                         an input FILE)\n"
    "  --resume               continue the journal's run: skip finished ids,\n"
    "                         reuse recorded keys, repair --out\n"
    "  --requeue LIST         with --resume, run ids whose result was one of\n"
    "                         these outcomes again (e.g. deadline,cancelled)\n"
    "  --force                resume although the input or --out changed\n"
    "\n"
    "Secrets (Authorization, Proxy-Authorization, Cookie, Set-Cookie,\n"
    "X-Api-Key, Api-Key headers; query parameters whose names contain key,\n"
    "token, secret, signature, sig, password) are written as REDACTED.\n"
    "Exit: 0 all ok; 1 some request did not end ok; 2 usage error; 3 a\n"
    "quota was spent (nothing new started; the rest are 'cancelled'); 130\n"
    "interrupted (results so far are flushed). See docs/run.md.\n";

typedef struct {
  FILE *out;
  FILE *log;
  const char *bodies_dir;
  polite_input *input;
  run_progress progress;
  int out_error;
  /* Without a journal, a failed result write stops the run (see
   * docs/run.md, "When writing the results fails"). */
  int journal;          /* the journal wrapper handles write failures */
  const char *out_name; /* --out path, or NULL for stdout */
  polite_batch *batch;
  struct stat out_st; /* identity of --out when opened */
  int out_regular;    /* --out is a regular file (checked, truncated) */
  int out_failed;
  int out_errno;
  const char *out_op;     /* "write", "flush", or NULL: file gone/replaced */
  long long out_good;     /* bytes of complete lines written */
  uint64_t out_lines;     /* lines written */
  uint64_t out_unwritten; /* results with no line after the failure */
  int out_torn_removed;   /* a partial line was cut off */
} run_ctx;

static polite_batch *volatile g_batch;

static void on_signal(int sig) {
  (void)sig;
  if (g_batch)
    polite_batch_cancel(g_batch);
}

static int next_request(void *ud, polite_request **out) {
  run_ctx *c = ud;
  return polite_input_next(c->input, out);
}

/* A JSON string for bytes that may not be UTF-8: invalid bytes become
 * U+FFFD, so a binary body still gives a valid JSON line. */
static json_t *text_json(const char *s, size_t n) {
  json_t *j = json_stringn(s, n);
  if (j)
    return j;
  char *buf = malloc(n * 3 + 1);
  if (buf == NULL)
    return json_string("");
  size_t o = 0;
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    unsigned char c = p[i];
    size_t len = c < 0x80         ? 1
                 : (c >> 5) == 6  ? 2
                 : (c >> 4) == 14 ? 3
                 : (c >> 3) == 30 ? 4
                                  : 0;
    int ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; k++)
      ok = (p[i + k] & 0xc0) == 0x80;
    if (ok && len > 1) {
      json_t *t = json_stringn(s + i, len);
      ok = t != NULL;
      json_decref(t);
    }
    if (ok) {
      memcpy(buf + o, s + i, len);
      o += len;
      i += len;
    } else {
      memcpy(buf + o, "\xef\xbf\xbd", 3);
      o += 3;
      i++;
    }
  }
  j = json_stringn(buf, o);
  free(buf);
  return j ? j : json_string("");
}

/* A redacted copy of a URL. */
static json_t *redacted_json(const char *s) {
  char *r = polite_redact_url(s);
  json_t *j = text_json(r ? r : "", r ? strlen(r) : 0);
  free(r);
  return j;
}

/* A message that may quote URLs, with their secrets redacted. */
static json_t *redacted_text_json(const char *s) {
  char *r = polite_redact_text(s);
  json_t *j = text_json(r ? r : "", r ? strlen(r) : 0);
  free(r);
  return j;
}

/* File name for a body: the id with anything outside [A-Za-z0-9._-]
 * replaced by '_', plus a hash suffix when that changed the id (so two ids
 * never share a file). */
static char *body_path(const char *dir, const char *id) {
  char name[160];
  size_t n = 0;
  int changed = 0;
  for (const char *p = id; *p && n < 100; p++) {
    char ch = *p;
    int keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
               (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
               (ch == '.' && n > 0);
    name[n++] = keep ? ch : '_';
    changed |= !keep;
  }
  if (strlen(id) > 100 || n == 0)
    changed = 1;
  name[n] = '\0';
  if (changed) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
      h = (h ^ *p) * 1099511628211ull;
    snprintf(name + n, sizeof name - n, "-%08llx",
             (unsigned long long)(h & 0xffffffffu));
  }
  char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, name) < 0)
    return NULL;
  return path;
}

/* The first failed result write without a journal: stops new starts
 * (cancel), drops what stdio still buffers (it would be written after the
 * cut or fail again) and cuts a partial line back to the last complete one,
 * so the file holds only whole result lines. op NULL: the file is gone or
 * was replaced (err says which). */
static void out_fail(run_ctx *c, const char *op, int err) {
  c->out_failed = 1;
  c->out_op = op;
  c->out_errno = err;
  c->out_error = 1;
  c->out_unwritten++;
  if (c->batch)
    polite_batch_cancel(c->batch);
  __fpurge(c->out);
  struct stat st;
  if (op && c->out_regular && fstat(fileno(c->out), &st) == 0 &&
      st.st_size > c->out_good &&
      ftruncate(fileno(c->out), (off_t)c->out_good) == 0)
    c->out_torn_removed = 1;
}

/* 1 when the --out path still names the file the run opened: writes to a
 * removed file would vanish without an error. */
static int out_intact(run_ctx *c) {
  if (!c->out_regular)
    return 1;
  struct stat now;
  if (stat(c->out_name, &now) != 0) {
    out_fail(c, NULL, errno);
    return 0;
  }
  if (now.st_dev != c->out_st.st_dev || now.st_ino != c->out_st.st_ino) {
    out_fail(c, NULL, 0);
    return 0;
  }
  return 1;
}

/* Writes one result line. Without a journal a failure stops the run here;
 * with one, the journal wrapper sees ferror and stops it (its message). */
static void write_line(run_ctx *c, const char *s) {
  if (!c->journal && !out_intact(c))
    return; /* out_fail counted this line as unwritten */
  size_t len = strlen(s);
  errno = 0;
  if (fwrite(s, 1, len, c->out) != len || fputc('\n', c->out) == EOF) {
    if (c->journal)
      c->out_error = 1;
    else
      out_fail(c, "write", errno);
    return;
  }
  if (fflush(c->out) != 0) {
    if (c->journal)
      c->out_error = 1;
    else
      out_fail(c, "flush", errno);
    return;
  }
  c->out_good += (long long)len + 1;
  c->out_lines++;
}

static void on_result(void *ud, const polite_result *r) {
  run_ctx *c = ud;
  if (!c->journal && c->out_failed) {
    c->out_unwritten++; /* stopped: no line, and no body file either */
    return;
  }
  json_t *o = json_object();
  json_object_set_new(o, "id", text_json(r->req->id, strlen(r->req->id)));
  json_object_set_new(o, "method", text_json(r->method, strlen(r->method)));
  json_object_set_new(o, "url",
                      r->req->url ? redacted_json(r->req->url) : json_null());
  json_object_set_new(o, "status",
                      r->status ? json_integer(r->status) : json_null());
  json_object_set_new(o, "outcome",
                      json_string(polite_outcome_name(r->outcome)));
  json_object_set_new(o, "attempts", json_integer(r->attempts));
  json_object_set_new(o, "elapsed_ms", json_integer(r->elapsed_ms));
  if (r->body != NULL && c->bodies_dir != NULL) {
    char *path = body_path(c->bodies_dir, r->req->id);
    FILE *f = path ? fopen(path, "wb") : NULL;
    /* fclose runs exactly once whatever happens: closing again after a
       failed fclose would be undefined behaviour. */
    int ok = f && fwrite(r->body, 1, r->body_len, f) == r->body_len;
    if (f && fclose(f) != 0)
      ok = 0;
    if (ok) {
      json_object_set_new(o, "body_file", text_json(path, strlen(path)));
    } else {
      fprintf(stderr, "polite run: cannot write body file %s: %s\n",
              path ? path : "(none)", strerror(errno));
      json_object_set_new(o, "body_file", json_null());
    }
    free(path);
  } else {
    json_object_set_new(
        o, "body", r->body ? text_json(r->body, r->body_len) : json_null());
  }
  if (r->body_truncated)
    json_object_set_new(o, "body_truncated", json_true());
  if (r->error)
    json_object_set_new(o, "error", redacted_text_json(r->error));
  json_object_set_new(o, "line",
                      r->req->line ? json_integer(r->req->line) : json_null());
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (s) {
    write_line(c, s);
    free(s);
  } else if (!c->journal) {
    out_fail(c, "write", ENOMEM);
  }
}

/* ISO-8601 UTC with milliseconds. */
static json_t *iso_time(int64_t ms) {
  char buf[40];
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%03dZ", (int)(ms % 1000));
  return json_string(buf);
}

/* Who sent a 429/503 and why, for the attempt log (evidence sentences
 * never quote secret headers: see diagnose.h). */
static json_t *diagnosis_json(const polite_diagnosis *d) {
  json_t *o = json_object();
  json_object_set_new(o, "component",
                      json_string(polite_diagnosis_component(d)));
  json_object_set_new(o, "limit", json_string(polite_limit_name(d->limit)));
  json_object_set_new(o, "retry_helps", json_boolean(d->retry_helps));
  json_object_set_new(o, "wait_ms",
                      d->wait_ms >= 0 ? json_integer(d->wait_ms) : json_null());
  json_t *ev = json_array();
  for (size_t i = 0; i < d->n_evidence; i++)
    json_array_append_new(ev, redacted_text_json(d->evidence[i]));
  json_object_set_new(o, "evidence", ev);
  return o;
}

static void on_attempt(void *ud, const polite_attempt *a) {
  run_ctx *c = ud;
  if (c->log == NULL)
    return;
  const polite_decision *d = &a->decision;
  json_t *o = json_object();
  json_object_set_new(o, "id", text_json(a->req->id, strlen(a->req->id)));
  json_object_set_new(o, "attempt", json_integer(a->attempt));
  json_object_set_new(o, "method", text_json(a->method, strlen(a->method)));
  json_object_set_new(o, "url", redacted_json(a->req->url));
  json_object_set_new(o, "start", iso_time(a->start_wall_ms));
  json_object_set_new(o, "end", iso_time(a->end_wall_ms));
  json_object_set_new(o, "start_ms", json_integer(a->start_wall_ms));
  json_object_set_new(o, "end_ms", json_integer(a->end_wall_ms));
  json_object_set_new(o, "status",
                      a->status ? json_integer(a->status) : json_null());
  json_object_set_new(o, "retry_after",
                      a->retry_after
                          ? text_json(a->retry_after, strlen(a->retry_after))
                          : json_null());
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
  json_object_set_new(o, "request_id",
                      a->request_id
                          ? text_json(a->request_id, strlen(a->request_id))
                          : json_null());
  if (a->request_id_header)
    json_object_set_new(
        o, "request_id_header",
        text_json(a->request_id_header, strlen(a->request_id_header)));
  if (a->error)
    json_object_set_new(o, "error", redacted_text_json(a->error));
  if (a->diagnosis)
    json_object_set_new(o, "diagnosis", diagnosis_json(a->diagnosis));
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (s) {
    fputs(s, c->log);
    fputc('\n', c->log);
    fflush(c->log);
    free(s);
  }
}

static void on_tick(void *ud, const polite_batch_stats *s) {
  run_ctx *c = ud;
  run_progress_draw(&c->progress, s, 0);
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

/* Reads -d @FILE. Returns 0 or -1. */
static int read_file(const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return -1;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  size_t r;
  while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
    n += r;
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (nb == NULL) {
        free(buf);
        buf = NULL;
      } else {
        buf = nb;
      }
    }
  }
  int err = ferror(f);
  fclose(f);
  if (buf == NULL || err) {
    free(buf);
    return -1;
  }
  *out = buf;
  *len = n;
  return 0;
}

/* Validates a -H value: "Name: value" with a token name, no CR/LF. */
static int header_arg_ok(const char *h) {
  const char *colon = strchr(h, ':');
  if (colon == NULL || colon == h)
    return 0;
  polite_request *probe = polite_request_new();
  if (probe == NULL)
    return 0;
  char *name = strndup(h, (size_t)(colon - h));
  const char *v = colon + 1;
  while (*v == ' ' || *v == '\t')
    v++;
  int ok = name && polite_request_add_header(probe, name, v) == 0;
  free(name);
  polite_request_free(probe);
  return ok;
}

/* Matches "--name VALUE", "--name=VALUE" and, for a short alias, "-x VALUE"
 * or "-xVALUE". Advances *i past a separate value. */
static int opt_value(int argc, char **argv, int *i, const char *lng,
                     const char *shrt, const char **val, int *missing) {
  const char *a = argv[*i];
  size_t ll = strlen(lng);
  if (strncmp(a, lng, ll) == 0 && a[ll] == '=') {
    *val = a + ll + 1;
    return 1;
  }
  if (strcmp(a, lng) == 0 || (shrt && strcmp(a, shrt) == 0)) {
    if (*i + 1 >= argc) {
      *missing = 1;
      return 1;
    }
    *val = argv[++*i];
    return 1;
  }
  if (shrt && strncmp(a, shrt, 2) == 0 && a[2] != '\0' && a[1] != '-') {
    *val = a + 2;
    return 1;
  }
  return 0;
}

static int parse_duration_arg(const char *opt, const char *v, int64_t *ms) {
  if (polite_duration_parse(v, ms) != 0 || *ms < 0)
    return cli_usage("run", "%s: invalid duration '%s' (e.g. 250ms, 2s, 1m)",
                     opt, v);
  return 0;
}

int cmd_run(int argc, char **argv) {
  polite_batch_options bo;
  polite_batch_options_init(&bo);
  double rate = 0;
  unsigned long long burst = 1, concurrency = 4, first = 0, max_attempts = 5;
  unsigned long long cost = 1;
  const char *budget_uri = "local", *out_path = NULL, *log_path = NULL;
  const char *summary_path = NULL, *bodies_dir = NULL, *input_path = NULL;
  const char *method = NULL, *data = NULL;
  char *data_buf = NULL;
  size_t data_len = 0;
  int progress = -1, quiet = 0, scope_host = 0;
  run_journal_config jc = {0};
  run_journal *jr = NULL;
  const char **headers = calloc((size_t)argc + 1, sizeof(char *));
  size_t nheaders = 0;
  int rc = CLI_EXIT_USAGE;
  if (headers == NULL)
    return CLI_EXIT_FAILED;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int missing = 0;
#define OPT(l, s) opt_value(argc, argv, &i, l, s, &v, &missing)
#define NEED()                                                                 \
  do {                                                                         \
    if (missing) {                                                             \
      rc = cli_usage("run", "%s needs a value", a);                            \
      goto out;                                                                \
    }                                                                          \
  } while (0)
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(USAGE, stdout);
      rc = CLI_EXIT_OK;
      goto out;
    } else if (OPT("--rate", NULL)) {
      NEED();
      if (polite_rate_parse(v, &rate) != 0 || !(rate > 0)) {
        rc = cli_usage("run", "--rate: invalid rate '%s' (e.g. 10/s, 90/min)",
                       v);
        goto out;
      }
    } else if (OPT("--burst", NULL)) {
      NEED();
      if (cli_parse_uint(v, 1000000, &burst) || burst < 1) {
        rc = cli_usage("run", "--burst: expected a whole number >= 1, got '%s'",
                       v);
        goto out;
      }
    } else if (OPT("--concurrency", NULL)) {
      NEED();
      if (cli_parse_uint(v, 100000, &concurrency) || concurrency < 1) {
        rc = cli_usage("run",
                       "--concurrency: expected a whole number 1..100000, got "
                       "'%s'",
                       v);
        goto out;
      }
    } else if (OPT("--cost", NULL)) {
      NEED();
      if (cli_parse_uint(v, POLITE_REQUEST_MAX_COST, &cost) || cost < 1) {
        rc = cli_usage("run", "--cost: expected a whole number 1..%u, got '%s'",
                       POLITE_REQUEST_MAX_COST, v);
        goto out;
      }
    } else if (OPT("--max-attempts", NULL)) {
      NEED();
      if (cli_parse_uint(v, 100, &max_attempts) || max_attempts < 1) {
        rc = cli_usage("run", "--max-attempts: expected 1..100, got '%s'", v);
        goto out;
      }
    } else if (OPT("--first", NULL)) {
      NEED();
      if (cli_parse_uint(v, UINT64_MAX, &first) || first < 1) {
        rc = cli_usage("run", "--first: expected a whole number >= 1, got '%s'",
                       v);
        goto out;
      }
    } else if (OPT("--deadline", NULL)) {
      NEED();
      if ((rc = parse_duration_arg("--deadline", v, &bo.deadline_ms)))
        goto out;
    } else if (OPT("--run-deadline", NULL)) {
      NEED();
      if ((rc = parse_duration_arg("--run-deadline", v, &bo.run_deadline_ms)))
        goto out;
    } else if (OPT("--connect-timeout", NULL)) {
      NEED();
      if ((rc = parse_duration_arg("--connect-timeout", v,
                                   &bo.connect_timeout_ms)))
        goto out;
    } else if (OPT("--timeout", NULL)) {
      NEED();
      if ((rc = parse_duration_arg("--timeout", v, &bo.timeout_ms)))
        goto out;
    } else if (OPT("--spread", NULL)) {
      NEED();
      if ((rc = parse_duration_arg("--spread", v, &bo.spread_ms)))
        goto out;
    } else if (OPT("--max-wait", NULL)) {
      NEED();
      if ((rc = parse_duration_arg("--max-wait", v, &bo.max_wait_ms)))
        goto out;
    } else if (OPT("--budget", NULL)) {
      NEED();
      budget_uri = v;
    } else if (OPT("--budget-scope", NULL)) {
      NEED();
      if (strcmp(v, "run") == 0)
        scope_host = 0;
      else if (strcmp(v, "host") == 0)
        scope_host = 1;
      else {
        rc = cli_usage("run",
                       "--budget-scope: expected 'run' or 'host', got "
                       "'%s'",
                       v);
        goto out;
      }
    } else if (OPT("--idempotency-key", NULL)) {
      NEED();
      if (strcmp(v, "auto") != 0) {
        rc = cli_usage("run",
                       "--idempotency-key: only 'auto' is supported, "
                       "got '%s' (put a fixed key in the input line's "
                       "\"idempotency_key\")",
                       v);
        goto out;
      }
      bo.idempotency_auto = 1;
    } else if (strcmp(a, "--retry-unsafe") == 0) {
      bo.retry_unsafe = 1;
    } else if (strcmp(a, "-k") == 0 || strcmp(a, "--insecure") == 0) {
      bo.insecure = 1;
    } else if (strcmp(a, "--progress") == 0) {
      progress = 1;
    } else if (strcmp(a, "--no-progress") == 0) {
      progress = 0;
    } else if (strcmp(a, "-q") == 0 || strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (OPT("--header", "-H")) {
      NEED();
      if (!header_arg_ok(v)) {
        const char *colon = strchr(v, ':');
        rc = cli_usage("run",
                       "-H: expected 'Name: value' with a valid name and no "
                       "line breaks, got '%.*s%s'",
                       colon ? (int)(colon - v) : 40, v, colon ? ": ..." : "");
        goto out;
      }
      headers[nheaders++] = v;
    } else if (OPT("--request", "-X")) {
      NEED();
      polite_request *probe = polite_request_new();
      int ok = probe && polite_request_add_header(probe, v, "x") == 0;
      polite_request_free(probe);
      if (!ok) {
        rc = cli_usage("run", "-X: '%s' is not a valid HTTP method", v);
        goto out;
      }
      method = v;
    } else if (OPT("--data", "-d")) {
      NEED();
      if (v[0] == '@') {
        free(data_buf);
        data_buf = NULL;
        if (read_file(v + 1, &data_buf, &data_len) != 0) {
          rc = cli_usage("run", "-d: cannot read '%s': %s", v + 1,
                         strerror(errno));
          goto out;
        }
        data = data_buf;
      } else {
        data = v;
        data_len = strlen(v);
      }
    } else if (OPT("--out", "-o")) {
      NEED();
      out_path = v;
    } else if (OPT("--log", NULL)) {
      NEED();
      log_path = v;
    } else if (OPT("--bodies-dir", NULL)) {
      NEED();
      bodies_dir = v;
    } else if (OPT("--summary-json", NULL)) {
      NEED();
      summary_path = v;
    } else if (OPT("--journal", NULL)) {
      NEED();
      jc.path = v;
    } else if (strcmp(a, "--resume") == 0) {
      jc.resume = 1;
    } else if (strcmp(a, "--force") == 0) {
      jc.force = 1;
    } else if (OPT("--requeue", NULL)) {
      NEED();
      char badname[64];
      if (run_journal_parse_requeue(v, &jc.requeue, badname, sizeof badname) !=
          0) {
        rc = cli_usage("run",
                       "--requeue: '%s' is not an outcome that can be "
                       "requeued (e.g. deadline,cancelled)",
                       badname);
        goto out;
      }
    } else if (a[0] == '-' && a[1] != '\0') {
      rc = cli_usage("run", "unknown option '%s'", a);
      goto out;
    } else if (input_path == NULL) {
      input_path = a;
    } else {
      rc = cli_usage("run",
                     "only one input FILE may be given, got '%s' "
                     "after '%s'",
                     a, input_path);
      goto out;
    }
#undef OPT
#undef NEED
  }
  if (input_path && strcmp(input_path, "-") == 0)
    input_path = NULL;
  if (jc.path == NULL && (jc.resume || jc.force || jc.requeue)) {
    rc = cli_usage("run", "%s needs --journal FILE",
                   jc.resume  ? "--resume"
                   : jc.force ? "--force"
                              : "--requeue");
    goto out;
  }
  if (jc.requeue && !jc.resume) {
    rc = cli_usage("run", "--requeue needs --resume");
    goto out;
  }

  run_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.bodies_dir = bodies_dir;
  FILE *in = stdin;
  if (input_path && (in = fopen(input_path, "r")) == NULL) {
    rc = cli_usage("run", "cannot open input '%s': %s", input_path,
                   strerror(errno));
    goto out;
  }
  ctx.out = stdout;
  if (jc.path) {
    jc.input_path = input_path;
    jc.out_path = out_path;
    jc.idempotency_auto = bo.idempotency_auto;
    jc.quiet = quiet;
    if ((rc = run_journal_open(&jc, &jr, &ctx.out)) != 0) {
      ctx.out = NULL;
      if (in != stdin)
        fclose(in);
      goto out;
    }
  } else if (out_path && (ctx.out = fopen(out_path, "w")) == NULL) {
    rc = cli_usage("run", "--out: cannot open '%s': %s", out_path,
                   strerror(errno));
    if (in != stdin)
      fclose(in);
    goto out;
  }
  ctx.journal = jr != NULL;
  if (!jr && out_path) {
    ctx.out_name = out_path;
    ctx.out_regular =
        fstat(fileno(ctx.out), &ctx.out_st) == 0 && S_ISREG(ctx.out_st.st_mode);
  }
  if (log_path && (ctx.log = fopen(log_path, "w")) == NULL) {
    rc = cli_usage("run", "--log: cannot open '%s': %s", log_path,
                   strerror(errno));
    goto close_files;
  }
  if (bodies_dir) {
    struct stat stt;
    if (mkdir(bodies_dir, 0777) != 0 && errno != EEXIST) {
      rc = cli_usage("run", "--bodies-dir: cannot create '%s': %s", bodies_dir,
                     strerror(errno));
      goto close_files;
    }
    if (stat(bodies_dir, &stt) != 0 || !S_ISDIR(stt.st_mode)) {
      rc =
          cli_usage("run", "--bodies-dir: '%s' is not a directory", bodies_dir);
      goto close_files;
    }
  }

  polite_input_defaults def = {method, headers,  nheaders,
                               data,   data_len, (unsigned)cost};
  ctx.input = polite_input_open(in, &def);
  polite_budget_config bc = {rate, (unsigned)burst, (unsigned)concurrency};
  polite_budget *budget = NULL;
  char err[256];
  if (polite_budget_open(budget_uri, &bc, &budget, err, sizeof err) != 0) {
    rc = cli_usage("run", "--budget: %s", err);
    polite_input_close(ctx.input);
    goto close_files;
  }

  bo.budget = budget;
  bo.scope_host = scope_host;
  bo.max_attempts = (unsigned)max_attempts;
  bo.max_requests = first;
  bo.next = next_request;
  bo.on_result = on_result;
  bo.on_attempt = on_attempt;
  bo.on_tick = on_tick;
  bo.ud = &ctx;
  if (jr)
    run_journal_wrap(jr, &bo);
  ctx.progress.on = progress >= 0 ? progress : isatty(STDERR_FILENO);
  ctx.progress.total = count_requests(input_path);
  if (jr && ctx.progress.total >= 0) /* --resume skips finished ones */
    ctx.progress.total = ctx.progress.total > run_journal_done(jr)
                             ? ctx.progress.total - run_journal_done(jr)
                             : 0;
  if (ctx.progress.total >= 0 && first > 0 &&
      (unsigned long long)ctx.progress.total > first)
    ctx.progress.total = (long long)first;

  polite_batch *batch = polite_batch_new(&bo, err, sizeof err);
  if (batch == NULL) {
    fprintf(stderr, "polite run: %s\n", err);
    rc = CLI_EXIT_FAILED;
    polite_budget_close(budget);
    polite_input_close(ctx.input);
    goto close_files;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the process at once */
  sigemptyset(&sa.sa_mask);
  g_batch = batch;
  ctx.batch = batch;
  if (jr)
    run_journal_set_batch(jr, batch);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  /* A file-size limit (ulimit -f) must give EFBIG and a clear message, not
   * kill the process in the middle of a line. */
  signal(SIGXFSZ, SIG_IGN);

  int64_t t0 = polite_mono_us();
  int erc = polite_batch_run(batch);
  const polite_batch_stats *st = polite_batch_stats_get(batch);
  run_progress_draw(&ctx.progress, st, 1);
  run_progress_end(&ctx.progress);
  run_plan plan = {rate, (unsigned)concurrency, first,
                   (polite_mono_us() - t0) / 1000};
  if (erc != 0)
    fprintf(stderr, "polite run: %s\n", polite_batch_errstr(batch));
  else if (polite_batch_errstr(batch)[0])
    fprintf(stderr, "polite run: %s\n", polite_batch_errstr(batch));
  if (!quiet)
    run_summary_text(stderr, st, &plan);
  if (summary_path && run_summary_json(summary_path, st, &plan) != 0)
    fprintf(stderr, "polite run: --summary-json: cannot write '%s'\n",
            summary_path);
  if (ctx.out_failed) {
    const char *name = ctx.out_name ? ctx.out_name : "standard output";
    if (ctx.out_op)
      fprintf(stderr,
              "polite run: cannot write the results file '%s' (%s): %s\n", name,
              ctx.out_op,
              ctx.out_errno ? strerror(ctx.out_errno) : "write error");
    else if (ctx.out_errno)
      fprintf(stderr,
              "polite run: the results file '%s' is gone (%s) while the run "
              "was writing it\n",
              name, strerror(ctx.out_errno));
    else
      fprintf(stderr,
              "polite run: the results file '%s' was replaced by another file "
              "while the run was writing it\n",
              name);
    fprintf(stderr,
            "polite run: stopped: nothing new was started after that; the "
            "%llu line(s) written before are kept%s; %llu request(s) read "
            "have no result line (unread input lines were not run)\n",
            (unsigned long long)ctx.out_lines,
            ctx.out_torn_removed ? " (a partial line was removed)" : "",
            (unsigned long long)ctx.out_unwritten);
  }

  if (st->cancelled)
    rc = CLI_EXIT_INTERRUPTED;
  else if (st->quota_stop)
    rc = CLI_EXIT_QUOTA;
  else if (erc != 0 || ctx.out_error || polite_batch_errstr(batch)[0] ||
           st->by_outcome[POLITE_OUT_OK] != st->results)
    rc = CLI_EXIT_FAILED;
  else
    rc = CLI_EXIT_OK;
  if (ctx.out_failed)
    rc = CLI_EXIT_FAILED; /* results could not be written: stopped */
  if (run_journal_finish(jr))
    rc = CLI_EXIT_FAILED; /* recording failed: the run was stopped */
  g_batch = NULL;
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  polite_batch_free(batch);
  polite_budget_close(budget);
  polite_input_close(ctx.input);

close_files:
  if (ctx.log)
    fclose(ctx.log);
  if (ctx.out && ctx.out != stdout && fclose(ctx.out) != 0)
    rc = CLI_EXIT_FAILED;
  else if (ctx.out == stdout && fflush(stdout) != 0)
    rc = CLI_EXIT_FAILED;
  if (in != stdin)
    fclose(in);
  run_journal_close(jr);
out:
  free(headers);
  free(data_buf);
  return rc;
}
