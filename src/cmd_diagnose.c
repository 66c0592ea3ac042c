/* polite diagnose: say who sent a 429/503 and what kind of limit it is, from
 * a raw response (`curl -si` output) or from one request made to a URL. */
#include "cli.h"
#include "cli_curl.h"

#include <polite/clock.h>
#include <polite/diagnose.h>
#include <polite/polite.h>

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CMD "diagnose"
/* Larger inputs are not responses anyone pastes; the body is only read up
 * to 64 KiB anyway. */
#define DIAG_MAX_INPUT ((size_t)16 * 1024 * 1024)
#define MAX_HEADERS 64

/* A growing byte buffer; NUL-terminated for convenience. */
struct buf {
  char *p;
  size_t n, cap;
  int overflow;
};

static int buf_add(struct buf *b, const char *s, size_t n) {
  if (b->n + n > DIAG_MAX_INPUT) {
    b->overflow = 1;
    n = DIAG_MAX_INPUT - b->n;
  }
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL)
      return -1;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
  return 0;
}

static int read_stream(FILE *f, struct buf *b) {
  char chunk[8192];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (buf_add(b, chunk, n) != 0)
      return -1;
    if (b->overflow)
      break;
  }
  return ferror(f) ? -1 : 0;
}

/* ---- one request with libcurl ------------------------------------------ */

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud) {
  struct buf *b = ud;
  size_t n = size * nmemb;
  if (!b->overflow && buf_add(b, ptr, n) != 0)
    return 0;
  return n; /* keep reading past the cap: the diagnosis needs the end */
}

struct request {
  const char *url;
  const char *method;
  const char *data;
  cli_list headers; /* "Name: value" */
  int insecure;
  int follow;
  uint64_t max_time_s;
  polite_transport_options tr; /* --cacert, --proxy, ... as polite run */
};

/* The request failed: one line that names the failure, and what to do when
 * it is a certificate that does not verify (the URL is not repeated: its
 * query may carry a key). */
static void fetch_failed(CURLcode res, const char *detail) {
  if (polite_transport_failure(res) == POLITE_FAILURE_TLS) {
    fprintf(stderr,
            "polite " CMD ": tls_error: %s%s%s (not retried: trust the "
            "server's CA with --cacert FILE, --capath DIR, CURL_CA_BUNDLE or "
            "SSL_CERT_FILE, or skip the check with -k)\n",
            curl_easy_strerror(res), detail[0] ? ": " : "", detail);
    return;
  }
  fprintf(stderr, "polite " CMD ": the request failed: %s%s%s\n",
          curl_easy_strerror(res), detail[0] ? ": " : "", detail);
}

/* Makes the request and writes what `curl -si` would print into *raw:
 * libcurl hands every header line (status lines of interim and redirect
 * responses included) to the header callback before the final body. */
static int fetch(const struct request *rq, struct buf *raw) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    fprintf(stderr, "polite " CMD ": libcurl could not start\n");
    return -1;
  }
  CURL *c = curl_easy_init();
  struct curl_slist *hl = NULL;
  struct buf body = {0};
  char errbuf[CURL_ERROR_SIZE] = "";
  int rc = -1;
  if (c == NULL)
    goto out;
  for (size_t i = 0; i < rq->headers.n; i++) {
    struct curl_slist *t = curl_slist_append(hl, rq->headers.v[i]);
    if (t == NULL)
      goto out;
    hl = t;
  }
  curl_easy_setopt(c, CURLOPT_URL, rq->url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, raw);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, rq->follow ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, rq->insecure ? 0L : 1L);
  curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, rq->insecure ? 0L : 2L);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  polite_transport_apply(c, &rq->tr);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, (long)rq->max_time_s);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "polite/" POLITE_VERSION_STR);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  if (rq->data != NULL) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, rq->data);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(rq->data));
  }
  if (rq->method != NULL)
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
  if (strcmp(rq->method ? rq->method : "", "HEAD") == 0)
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);

  CURLcode res = curl_easy_perform(c);
  if (res != CURLE_OK) {
    fetch_failed(res, errbuf);
    goto out;
  }
  if (body.n > 0 && buf_add(raw, body.p, body.n) != 0)
    goto out;
  rc = 0;
out:
  free(body.p);
  curl_slist_free_all(hl);
  if (c)
    curl_easy_cleanup(c);
  curl_global_cleanup();
  return rc;
}

/* ---- output ------------------------------------------------------------- */

static const char *wait_source_name(const polite_diagnosis *d) {
  switch (d->wait_source) {
  case POLITE_WAIT_SECONDS: return "retry-after";
  case POLITE_WAIT_DATE: return "retry-after-date";
  case POLITE_WAIT_MS: return "retry-after-ms";
  case POLITE_WAIT_RESET: return "reset";
  case POLITE_WAIT_INVALID: return "invalid";
  default: return d->wait_ms >= 0 ? "vendor-default" : "none";
  }
}

static void print_json(const polite_diagnosis *d) {
  printf("{\"status\":%d,\"component\":", d->status);
  cli_json_string(stdout, polite_diagnosis_component(d));
  printf(",\"kind\":\"%s\",\"vendor\":", polite_component_kind_name(d->kind));
  if (d->vendor[0])
    cli_json_string(stdout, d->vendor);
  else
    fputs("null", stdout);
  printf(",\"limit\":\"%s\",\"retry_helps\":%s,\"wait_ms\":",
         polite_limit_name(d->limit), d->retry_helps ? "true" : "false");
  if (d->wait_ms >= 0)
    printf("%lld", (long long)d->wait_ms);
  else
    fputs("null", stdout);
  printf(",\"wait_source\":\"%s\",\"request_ids\":[", wait_source_name(d));
  for (size_t i = 0; i < d->n_ids; i++) {
    printf("%s{\"name\":", i ? "," : "");
    cli_json_string(stdout, d->ids[i].name);
    fputs(",\"value\":", stdout);
    cli_json_string(stdout, d->ids[i].value);
    fputc('}', stdout);
  }
  fputs("],\"through\":[", stdout);
  for (size_t i = 0; i < d->n_through; i++) {
    if (i)
      fputc(',', stdout);
    cli_json_string(stdout, d->through[i]);
  }
  fputs("],\"evidence\":[", stdout);
  for (size_t i = 0; i < d->n_evidence; i++) {
    if (i)
      fputc(',', stdout);
    cli_json_string(stdout, d->evidence[i]);
  }
  fputs("],\"advice\":", stdout);
  cli_json_string(stdout, polite_diagnosis_advice(d));
  fputs("}\n", stdout);
}

static void print_text(const polite_diagnosis *d) {
  printf("status:      %d\n", d->status);
  if (d->kind == POLITE_COMP_UNKNOWN)
    printf("sent by:     unknown (no vendor evidence; not guessed)\n");
  else
    printf("sent by:     %s (%s)\n", polite_diagnosis_component(d),
           polite_component_kind_name(d->kind));
  if (d->n_through > 0) {
    printf("through:     ");
    for (size_t i = 0; i < d->n_through; i++)
      printf("%s%s", i ? ", " : "", d->through[i]);
    printf(" (passed it on, did not send it)\n");
  }
  printf("limit:       %s\n", polite_limit_name(d->limit));
  if (d->wait_ms >= 0)
    printf("wait:        %lld ms (%s)\n", (long long)d->wait_ms,
           wait_source_name(d));
  else
    printf("wait:        not given by the server\n");
  printf("retry helps: %s\n", d->retry_helps ? "yes" : "no");
  printf("advice:      %s", polite_diagnosis_advice(d));
  if (d->retry_helps && d->wait_ms >= 0)
    printf(" (wait at least %.1f s)", (double)d->wait_ms / 1000.0);
  else if (d->limit == POLITE_LIMIT_QUOTA && d->wait_ms > 0)
    printf(" (the server says it renews in %.0f s)",
           (double)d->wait_ms / 1000.0);
  printf(".\n");
  if (d->n_ids > 0) {
    printf("request ids (quote these to support):\n");
    for (size_t i = 0; i < d->n_ids; i++)
      printf("  %s: %s\n", d->ids[i].name, d->ids[i].value);
  }
  if (d->n_evidence > 0) {
    printf("evidence:\n");
    for (size_t i = 0; i < d->n_evidence; i++)
      printf("  - %s\n", d->evidence[i]);
  }
}

static int is_url(const char *s) {
  return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

struct diag_opts {
  int json;
  int64_t now_s; /* -1: the clock */
  struct request rq;
};

/* -H: "Name: value"; the value is never quoted (it may be a secret). */
static int set_header(void *opts, const cli_opt *o, const char *val, char *err,
                      size_t errlen) {
  struct diag_opts *d = opts;
  if (cli_header_has_name(val, err, errlen) != 0)
    return -1;
  if (d->rq.headers.n >= MAX_HEADERS) {
    snprintf(err, errlen, "too many headers (at most %d)", MAX_HEADERS);
    return -1;
  }
  return cli_opt_store(o, opts, val, err, errlen);
}

static int set_method(void *opts, const cli_opt *o, const char *val, char *err,
                      size_t errlen) {
  struct diag_opts *d = opts;
  int ok = val[0] != '\0';
  for (const char *p = val; *p; p++)
    ok &= *p > ' ' && *p < 0x7f;
  if (!ok) {
    snprintf(err, errlen, "'%.64s' is not a method", val);
    return -1;
  }
  d->rq.method = val;
  return 0;
}

#define O struct diag_opts
static const cli_opt diag_opts_table[] = {
    {"json", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "one JSON object instead of plain words", "Options", CLI_AT(O, json), NULL,
     NULL, 0},
    {"now", 0, CLI_INT, "UNIX_SECONDS", 0, INT64_MAX / 1000, NULL, "now", NULL,
     "the clock used to turn reset times and HTTP-dates into waits (tests "
     "and old captures)",
     NULL, CLI_AT(O, now_s), NULL, NULL, 0},
    {"header", 'H', CLI_LIST, "'K: V'", 0, 0, NULL, NULL, NULL,
     "request header (URL only; repeatable)", "Request (a URL only)",
     CLI_AT(O, rq.headers), set_header, NULL, CLI_F_SECRET},
    {"request", 'X', CLI_CUSTOM, "METHOD", 0, 0, NULL, "GET, or POST with -d",
     NULL, "request method (URL only)", NULL, 0, 0, set_method, NULL, 0},
    {"data", 'd', CLI_STRING, "DATA", 0, 0, NULL, NULL, NULL,
     "request body, sent as is (URL only)", NULL, CLI_AT(O, rq.data), NULL,
     NULL, 0},
    {"location", 'L', CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "follow redirects, at most 10 (URL only)", NULL, CLI_AT(O, rq.follow),
     NULL, NULL, 0},
    {"max-time", 0, CLI_UINT, "SECONDS", 1, 86400, "30", NULL, NULL,
     "give up on the request after this long (URL only)", NULL,
     CLI_AT(O, rq.max_time_s), NULL, NULL, 0},
    CLI_ROWS_TLS(O, rq.tr, rq.insecure, "TLS (a URL only)"),
    CLI_ROWS_PROXY(O, rq.tr, "Proxy (a URL only)"),
    CLI_ROW_END};
#undef O

const cli_command cli_cmd_diagnose = {
    CMD,
    "[OPTIONS] [FILE | - | URL]",
    "say who sent a 429 and what kind of limit",
    "Says who sent a 429/503 (origin API, CDN, gateway or proxy), what kind\n"
    "of limit it is (rate, concurrency, quota, tokens), whether retrying\n"
    "helps and after how long, and the request ids to quote to support.\n\n"
    "FILE is a raw response as 'curl -si' prints it; '-' or nothing reads\n"
    "standard input. A URL (http:// or https://) is requested once.\n",
    diag_opts_table,
    "Exit status: 0 a diagnosis was made (even 'unknown'), 1 the input is\n"
    "not a response or the request failed (a certificate that does not\n"
    "verify says tls_error), 2 usage error.\n",
    NULL,
    1,
    cli_curl_options,
    NULL};

/* The first request option given, for "only applies to a URL". */
static const char *url_only_option(const struct diag_opts *o) {
  const struct request *rq = &o->rq;
  const polite_transport_options *t = &rq->tr;
  return rq->headers.n          ? "-H"
         : rq->method           ? "-X"
         : rq->data             ? "-d"
         : rq->insecure         ? "-k"
         : rq->follow           ? "-L"
         : rq->max_time_s != 30 ? "--max-time"
         : t->cacert            ? "--cacert"
         : t->capath            ? "--capath"
         : t->cert              ? "--cert"
         : t->key               ? "--key"
         : t->proxy             ? "--proxy"
         : t->noproxy           ? "--noproxy"
                                : NULL;
}

static int diagnose_main(struct diag_opts *o, const char *input);

int cmd_diagnose(int argc, char **argv) {
  struct diag_opts o;
  memset(&o, 0, sizeof o);
  o.now_s = -1;
  cli_args pos = {{NULL}, 0};
  int rc = cli_defaults(&cli_cmd_diagnose, &o);
  if (rc == 0)
    rc = cli_parse(&cli_cmd_diagnose, argc, argv, &o, &pos);
  if (rc < 0) {
    const char *input = pos.n ? pos.v[0] : NULL;
    const char *url_opt = url_only_option(&o);
    if (url_opt && (input == NULL || !is_url(input)))
      rc = cli_usage(CMD, "%s only applies to a URL (http:// or https://)",
                     url_opt);
    else
      rc = diagnose_main(&o, input);
  }
  cli_free(&cli_cmd_diagnose, &o);
  return rc;
}

static int diagnose_main(struct diag_opts *o, const char *input) {
  int json = o->json;
  int64_t now_ms = o->now_s >= 0 ? o->now_s * 1000 : -1;
  struct request rq = o->rq;
  if (now_ms < 0)
    now_ms = polite_wall_ms();

  struct buf raw = {0};
  const char *name; /* for messages */
  if (input != NULL && is_url(input)) {
    char err[300];
    int rc = cli_ca_env(CMD, &rq.tr);
    if (rc != 0)
      return rc;
    if (polite_transport_check(&rq.tr, err, sizeof err) != 0)
      return cli_usage(CMD, "%s", err);
    rq.url = input;
    if (rq.data != NULL && rq.method == NULL)
      rq.method = "POST";
    name = "the response";
    if (fetch(&rq, &raw) != 0) {
      free(raw.p);
      return CLI_EXIT_FAILED;
    }
  } else if (input == NULL || strcmp(input, "-") == 0) {
    name = "<stdin>";
    if (read_stream(stdin, &raw) != 0) {
      fprintf(stderr, "polite " CMD ": cannot read standard input: %s\n",
              strerror(errno));
      free(raw.p);
      return CLI_EXIT_FAILED;
    }
  } else {
    name = input;
    FILE *f = fopen(input, "rb");
    if (f == NULL) {
      fprintf(stderr, "polite " CMD ": cannot open '%s': %s\n", input,
              strerror(errno));
      return CLI_EXIT_FAILED;
    }
    int rc = read_stream(f, &raw);
    int saved = errno;
    fclose(f);
    if (rc != 0) {
      fprintf(stderr, "polite " CMD ": cannot read '%s': %s\n", input,
              strerror(saved));
      free(raw.p);
      return CLI_EXIT_FAILED;
    }
  }

  polite_diagnosis d;
  polite_diag_error err = {0};
  int rc =
      polite_diagnose_response(&d, raw.p ? raw.p : "", raw.n, now_ms, &err);
  free(raw.p);
  if (rc != 0) {
    fprintf(stderr, "polite " CMD ": %s:%d: %s\n", name, err.line, err.message);
    return CLI_EXIT_FAILED;
  }
  if (json)
    print_json(&d);
  else
    print_text(&d);
  return CLI_EXIT_OK;
}
