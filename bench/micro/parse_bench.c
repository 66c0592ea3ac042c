/* bench/micro: ns per call of polite's parsers and limiter next to libcurl's
 * curl_getdate() and glibc strptime()+timegm() on the same inputs, plus a
 * table of what each of them makes of tricky Retry-After values.
 *
 * Usage: parse_bench bench     one line per case: "BENCH<TAB>case<TAB>input
 *                              <TAB>median ns<TAB>min ns<TAB>max ns"
 *        parse_bench correct   one line per tricky input: "CORRECT<TAB>input
 *                              <TAB>polite<TAB>curl_getdate<TAB>libcurl
 *                              CURLINFO_RETRY_AFTER<TAB>strptime+timegm"
 * A benchmark, not a test: it never fails because something is slow.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <polite/core.h>
#include <polite/diagnose.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Every result is folded in here so that no call can be optimised away. */
static volatile int64_t sink;

/* A fixed "now" (2026-11-30 00:53:20 UTC) so runs are comparable. */
#define NOW_UNIX INT64_C(1796000000)

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef void (*bench_fn)(const void *ctx);

/* Runs f(ctx) `iters` times; returns ns per call. */
static double time_loop(bench_fn f, const void *ctx, long iters) {
  double t0 = now_ns();
  for (long i = 0; i < iters; i++)
    f(ctx);
  return (now_ns() - t0) / (double)iters;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Measures one case: picks an iteration count that takes about 40 ms, then
 * makes 5 timed runs of it and prints the median, min and max ns per call.
 * The median is what the README reports: on a shared 2-core VM single runs
 * are disturbed by other work, and the median ignores the worst of it. */
static void bench(const char *name, const char *input, bench_fn f,
                  const void *ctx) {
  long iters = 1000;
  for (;;) {
    double t0 = now_ns();
    time_loop(f, ctx, iters);
    double ms = (now_ns() - t0) / 1e6;
    if (ms >= 10.0 || iters > (1L << 28))
      break;
    iters *= 4;
  }
  iters *= 4; /* ~40 ms per run */
  double r[5];
  for (int i = 0; i < 5; i++)
    r[i] = time_loop(f, ctx, iters);
  qsort(r, 5, sizeof r[0], cmp_double);
  printf("BENCH\t%s\t%s\t%.1f\t%.1f\t%.1f\n", name, input, r[2], r[0], r[4]);
  fflush(stdout);
}

/* ---- Cases ------------------------------------------------------------- */

static void b_empty(const void *ctx) {
  sink += (intptr_t)ctx;
}

static void b_polite_ra(const void *ctx) {
  const char *s = ctx;
  polite_retry_after ra;
  polite_retry_after_parse(s, strlen(s), NOW_UNIX, &ra);
  sink += ra.kind + ra.seconds + ra.date_unix;
}

static void b_curl_getdate(const void *ctx) {
  sink += (int64_t)curl_getdate((const char *)ctx, NULL);
}

static void b_strptime(const void *ctx) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  const char *end =
      strptime((const char *)ctx, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  sink += end ? (int64_t)timegm(&tm) : -1;
}

/* An OpenAI-like 429 (tokens per minute spent), as `curl -si` prints it. */
static const char RAW_429[] =
    "HTTP/2 429\r\n"
    "date: Mon, 30 Nov 2026 05:00:00 GMT\r\n"
    "content-type: application/json; charset=utf-8\r\n"
    "content-length: 312\r\n"
    "x-request-id: req_6f1c0c2a9b1e4d7f8a3b2c1d0e9f8a7b\r\n"
    "openai-organization: org-example\r\n"
    "openai-processing-ms: 41\r\n"
    "openai-version: 2020-10-01\r\n"
    "strict-transport-security: max-age=31536000; includeSubDomains\r\n"
    "x-ratelimit-limit-requests: 500\r\n"
    "x-ratelimit-limit-tokens: 30000\r\n"
    "x-ratelimit-remaining-requests: 499\r\n"
    "x-ratelimit-remaining-tokens: 0\r\n"
    "x-ratelimit-reset-requests: 120ms\r\n"
    "x-ratelimit-reset-tokens: 6s\r\n"
    "retry-after: 6\r\n"
    "cf-cache-status: DYNAMIC\r\n"
    "server: cloudflare\r\n"
    "cf-ray: 8ea1b2c3d4e5f607-AMS\r\n"
    "\r\n"
    "{\n    \"error\": {\n        \"message\": \"Rate limit reached for gpt-4o "
    "in organization org-example on tokens per min (TPM): Limit 30000, Used "
    "30000, Requested 812. Please try again in 1.624s.\",\n        \"type\": "
    "\"tokens\",\n        \"param\": null,\n        \"code\": "
    "\"rate_limit_exceeded\"\n    }\n}\n";

#define NOW_MS (INT64_C(1796014800) * 1000) /* the Date above */

/* The header block split into lines once, outside the timed loop: the
 * status line and the header lines with their CRLF, as a client's header
 * callback (libcurl CURLOPT_HEADERFUNCTION) hands them over. */
typedef struct {
  const char *line[32];
  size_t len[32];
  size_t n;
} lines;

static void split_headers(lines *L) {
  const char *p = RAW_429;
  L->n = 0;
  for (;;) {
    const char *nl = strchr(p, '\n');
    size_t len = (size_t)(nl - p + 1);
    if (len <= 2) /* the blank line */
      break;
    L->line[L->n] = p;
    L->len[L->n] = len;
    L->n++;
    p = nl + 1;
  }
}

static void b_headers(const void *ctx) {
  const lines *L = ctx;
  polite_headers h;
  polite_headers_init(&h, NOW_MS);
  for (size_t i = 0; i < L->n; i++)
    sink += polite_headers_feed_line(&h, L->line[i], L->len[i]);
  polite_wait_source src;
  sink += polite_headers_wait_ms(&h, &src) + src;
}

static void b_decide(const void *ctx) {
  polite_decision d;
  polite_decide((const polite_decide_in *)ctx, &d);
  sink += d.action + d.wait_ms;
}

typedef struct {
  polite_gcra g;
  int64_t now_us;
  int64_t step_us;
} gcra_ctx;

static void b_gcra(const void *ctx) {
  gcra_ctx *c = (gcra_ctx *)(uintptr_t)ctx; /* state advances per call */
  c->now_us += c->step_us;
  sink += polite_gcra_admit(&c->g, c->now_us, 1);
}

static void b_diagnose(const void *ctx) {
  (void)ctx;
  polite_diagnosis d;
  polite_diag_error err;
  if (polite_diagnose_response(&d, RAW_429, sizeof RAW_429 - 1, NOW_MS, &err) !=
      0)
    abort();
  sink += d.wait_ms + d.limit;
}

static const char *const DATES[][2] = {
    {"imf-fixdate", "Sun, 06 Nov 1994 08:49:37 GMT"},
    {"rfc850", "Sunday, 06-Nov-94 08:49:37 GMT"},
    {"asctime", "Sun Nov  6 08:49:37 1994"},
};

static void run_bench(void) {
  bench("empty (call overhead)", "", b_empty, NULL);
  bench("polite_retry_after_parse", "120", b_polite_ra, "120");
  for (size_t i = 0; i < 3; i++)
    bench("polite_retry_after_parse", DATES[i][1], b_polite_ra, DATES[i][1]);
  const char *bad = "Tue, 29 Feb 2022 08:49:37 GMT";
  bench("polite_retry_after_parse", bad, b_polite_ra, bad);
  bench("polite_retry_after_parse", "soon", b_polite_ra, "soon");
  for (size_t i = 0; i < 3; i++)
    bench("curl_getdate", DATES[i][1], b_curl_getdate, DATES[i][1]);
  bench("curl_getdate", bad, b_curl_getdate, bad);
  bench("curl_getdate", "soon", b_curl_getdate, "soon");
  bench("strptime+timegm", DATES[0][1], b_strptime, DATES[0][1]);
  bench("strptime+timegm", bad, b_strptime, bad);

  static lines L;
  split_headers(&L);
  char desc[64];
  snprintf(desc, sizeof desc, "OpenAI 429, %zu lines", L.n);
  bench("polite_headers_feed_line+wait_ms", desc, b_headers, &L);

  static polite_headers h;
  polite_headers_init(&h, NOW_MS);
  for (size_t i = 0; i < L.n; i++)
    polite_headers_feed_line(&h, L.line[i], L.len[i]);
  static polite_decide_in in;
  memset(&in, 0, sizeof in);
  in.method = "GET";
  in.status = 429;
  in.headers = &h;
  in.attempt = 1;
  in.max_attempts = 5;
  in.time_left_ms = -1;
  in.backoff = (polite_backoff)POLITE_BACKOFF_DEFAULT;
  in.spread_ms = 1000;
  in.rnd = UINT64_C(0x9e3779b97f4a7c15);
  bench("polite_decide", "429, retry-after: 6", b_decide, &in);

  static gcra_ctx ga, gb;
  polite_gcra_init(&ga.g, 1e6, 1); /* 1 start/us, 1 us apart: all admitted */
  ga.now_us = 1;
  ga.step_us = 1;
  bench("polite_gcra_admit", "all admitted", b_gcra, &ga);
  polite_gcra_init(&gb.g, 1000, 10); /* 1000/s, calls every 500 us */
  gb.now_us = 1;
  gb.step_us = 500;
  bench("polite_gcra_admit", "half refused", b_gcra, &gb);

  snprintf(desc, sizeof desc, "OpenAI 429, %zu bytes", sizeof RAW_429 - 1);
  bench("polite_diagnose_response", desc, b_diagnose, NULL);
}

/* ---- Correctness ------------------------------------------------------- */

static void fmt_date(char *buf, size_t size, int64_t t) {
  struct tm tm;
  time_t tt = (time_t)t;
  gmtime_r(&tt, &tm);
  strftime(buf, size, "date %Y-%m-%d %H:%M:%S", &tm);
}

static size_t discard(char *p, size_t sz, size_t n, void *ud) {
  (void)p;
  (void)ud;
  return sz * n;
}

/* libcurl's own reading of a Retry-After header (CURLINFO_RETRY_AFTER), got
 * by running a real transfer against a forked child that answers one canned
 * 429 on 127.0.0.1 (a listener on port 0, closed after the one answer).
 * Returns 1 and *out when the transfer ran, 0 when it could not. */
static int curl_retry_after(const char *value, curl_off_t *out) {
  struct sockaddr_in a;
  socklen_t alen = sizeof a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int l = socket(AF_INET, SOCK_STREAM, 0);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(l, 1) != 0 || getsockname(l, (struct sockaddr *)&a, &alen) != 0) {
    if (l >= 0)
      close(l);
    return 0;
  }
  pid_t pid = fork();
  if (pid < 0) {
    close(l);
    return 0;
  }
  if (pid == 0) { /* the canned server: read the request head, answer, exit */
    int s = accept(l, NULL, NULL);
    char req[4096];
    size_t got = 0;
    while (s >= 0 && got < sizeof req - 1) {
      ssize_t r = read(s, req + got, sizeof req - 1 - got);
      if (r <= 0)
        break;
      got += (size_t)r;
      req[got] = 0;
      if (strstr(req, "\r\n\r\n"))
        break;
    }
    char resp[512];
    int n = snprintf(resp, sizeof resp,
                     "HTTP/1.1 429 Too Many Requests\r\nRetry-After: %s\r\n"
                     "Content-Length: 0\r\nConnection: close\r\n\r\n",
                     value);
    if (s >= 0 && write(s, resp, (size_t)n) != n)
      _exit(1);
    _exit(0);
  }
  close(l);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/", ntohs(a.sin_port));
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
  if (getenv("PB_DEBUG")) /* to see why a transfer failed */
    curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
  CURLcode rc = curl_easy_perform(c);
  int ok = rc == CURLE_OK &&
           curl_easy_getinfo(c, CURLINFO_RETRY_AFTER, out) == CURLE_OK;
  curl_easy_cleanup(c);
  waitpid(pid, NULL, 0);
  return ok;
}

static const char *const TRICKY[] = {
    "120",
    " 120 ",
    "120abc",
    "-1",
    "1.5",
    "+120",
    "99999999999999999999",
    "Sun, 06 Nov 1994 08:49:37 GMT",
    "Sun, 06 Nov 1994 08:49:37 gmt",
    "Sun, 06 Nov 1994 08:49:37 +0000",
    "Sun, 06 Nov 1994 08:49:37",
    "Mon, 06 Nov 1994 08:49:37 GMT",
    "Tue, 29 Feb 2022 08:49:37 GMT",
    "Sun, 06 Nov 1994 25:49:37 GMT",
    "Sun, 06 Nov 1994 08:49:37 GMT junk",
    "Sunday, 06-Nov-94 08:49:37 GMT",
    "Thursday, 06-Nov-69 08:49:37 GMT",
    "Sun Nov  6 08:49:37 1994",
    "06 Nov 1994",
    "",
};

static void run_correct(void) {
  int64_t now = (int64_t)time(NULL);
  for (size_t i = 0; i < sizeof TRICKY / sizeof TRICKY[0]; i++) {
    const char *s = TRICKY[i];
    char pol[64], cg[64], cra[64], sp[80];

    polite_retry_after ra;
    polite_retry_after_parse(s, strlen(s), now, &ra);
    switch (ra.kind) {
    case POLITE_RA_NONE: snprintf(pol, sizeof pol, "none"); break;
    case POLITE_RA_SECONDS:
      snprintf(pol, sizeof pol, "%lld s%s", (long long)ra.seconds,
               ra.saturated ? " (saturated)" : "");
      break;
    case POLITE_RA_DATE: fmt_date(pol, sizeof pol, ra.date_unix); break;
    default: snprintf(pol, sizeof pol, "invalid"); break;
    }

    time_t t = curl_getdate(s, NULL);
    if (t == -1)
      snprintf(cg, sizeof cg, "invalid");
    else
      fmt_date(cg, sizeof cg, (int64_t)t);

    curl_off_t ro;
    if (curl_retry_after(s, &ro))
      snprintf(cra, sizeof cra, "%lld s", (long long)ro);
    else
      snprintf(cra, sizeof cra, "(transfer failed)");

    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *end = strptime(s, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end) {
      snprintf(sp, sizeof sp, "invalid");
    } else {
      fmt_date(sp, sizeof sp, (int64_t)timegm(&tm));
      if (*end)
        strncat(sp, " (rest ignored)", sizeof sp - strlen(sp) - 1);
    }
    printf("CORRECT\t%s\t%s\t%s\t%s\t%s\n", s, pol, cg, cra, sp);
  }
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "bench") && strcmp(argv[1], "correct"))) {
    fprintf(stderr, "parse_bench: %s%s: usage: parse_bench bench|correct\n",
            argc > 1 ? "unknown mode " : "missing mode",
            argc > 1 ? argv[1] : "");
    return 2;
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  if (!strcmp(argv[1], "bench"))
    run_bench();
  else
    run_correct();
  curl_global_cleanup();
  return 0;
}
