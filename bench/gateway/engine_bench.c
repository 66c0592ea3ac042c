/* bench/gateway: what the engine (polite/engine.h) costs the gateway per
 * request, and what a waiting client costs in memory, with no network: a
 * fake transport answers at once and the clock is faked, so only the
 * engine's own work is measured. A benchmark, not a test.
 *
 *   engine_bench relay N        N GETs submitted one at a time, each started,
 *                               its 200 head relayed and ended (the path of
 *                               an unthrottled request); one budget account
 *   engine_bench relay-hosts N  the same over 50 host accounts
 *   engine_bench throttled N    every first attempt a 429 (Retry-After 1,
 *                               body read), then a 200: two attempts each
 *   engine_bench wait N         N clients waiting behind a 1/s rate (the
 *                               queue), each with 8 headers and a 1 KiB body;
 *                               prints the heap growth per waiting client
 *   engine_bench sweep N        N clients waiting, then the first one's 429
 *                               (Retry-After 1) sweeps the queue: the CPU of
 *                               that one answer, per waiting client
 *
 * Prints one line "name N requests=R us_per_request=U bytes_per_waiting=B"
 * (the CPU per request is this process's, from getrusage; run.sh also
 * measures it with perf stat). */
#include <polite/engine.h>

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define SEC INT64_C(1000000)

typedef struct {
  polite_engine_attempt **started;
  size_t n_started, cap;
  unsigned results;
} bench;

static int io_start(void *ud, polite_engine_attempt *a,
                    const polite_engine_send *s, char *err, size_t errlen) {
  bench *b = ud;
  (void)err, (void)errlen;
  polite_engine_attempt_set_private(a, (void *)(uintptr_t)s->attempt);
  if (b->n_started == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 1024;
    b->started = realloc(b->started, b->cap * sizeof *b->started);
    if (b->started == NULL)
      abort();
  }
  b->started[b->n_started++] = a;
  return 0;
}

static void on_result(void *ud, const polite_result *r) {
  bench *b = ud;
  (void)r;
  b->results++;
}

static polite_request *request(unsigned i, const char *host, int heavy) {
  polite_request *r = polite_request_new();
  char buf[256];
  snprintf(buf, sizeof buf, "r%u", i);
  r->id = strdup(buf);
  snprintf(buf, sizeof buf, "http://%s/v1/items/%u?page=2", host, i);
  r->url = strdup(buf);
  if (heavy) {
    static const char *const names[] = {
        "Accept",       "User-Agent",
        "Content-Type", "Authorization",
        "X-Request-Id", "Accept-Encoding",
        "Cookie",       "X-Stainless-Retry-Count"};
    for (int k = 0; k < 8; k++)
      polite_request_add_header(r, names[k], "a-typical-value-of-some-length");
    r->body = calloc(1, 1024);
    r->body_len = 1024;
    r->has_body = 1;
    r->method = strdup("PUT");
  }
  return r;
}

static double cpu_us(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 +
         (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static size_t heap_bytes(void) {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "relay";
  unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 100000;
  int hosts = strcmp(what, "relay-hosts") == 0;
  int throttled = strcmp(what, "throttled") == 0;
  int sweep = strcmp(what, "sweep") == 0;
  int wait = strcmp(what, "wait") == 0 || sweep;
  polite_budget *budget;
  polite_budget_config c = {wait ? 1 : 0, 1, 0};
  if (polite_budget_local_new(&c, &budget) != 0)
    return 1;
  bench b = {0};
  polite_batch_options o;
  polite_batch_options_init(&o);
  o.budget = budget;
  o.seed = 7;
  o.spread_ms = 0;
  o.heartbeat_ms = 0;
  o.scope_host = hosts;
  o.queue_max = n + 1;
  o.max_wait_ms = 0;
  o.on_result = on_result;
  o.ud = &b;
  polite_engine_io io = {io_start, NULL, &b};
  char err[200];
  polite_engine *e = polite_engine_new(&o, &io, err, sizeof err);
  if (e == NULL) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  polite_engine_now now = {1000 * SEC, INT64_C(1795996800000)};
  int64_t wake;
  size_t heap0 = heap_bytes();
  double t0 = cpu_us();
  polite_header_field ct = {"Content-Type", 12, "application/json", 16};
  polite_header_field ra = {"Retry-After", 11, "1", 1};
  char host[32] = "api.test";
  for (unsigned i = 0; i < n; i++) {
    if (hosts)
      snprintf(host, sizeof host, "h%u.test", i % 50);
    if (polite_engine_submit(e, request(i, host, wait), &now) != 0)
      return 1;
    if (wait)
      continue; /* they queue behind the 1/s rate */
    polite_engine_step(e, &now, &wake);
    while (b.n_started > 0) {
      polite_engine_attempt *a = b.started[--b.n_started];
      int first = (uintptr_t)polite_engine_attempt_private(a) == 1;
      if (throttled && first &&
          polite_engine_head(e, a, 429, &ra, 1, &now) ==
              POLITE_ENGINE_READ_BODY) {
        if (polite_engine_body(e, a, "{\"error\":\"slow down\"}", 21, 0,
                               &now) == POLITE_ENGINE_DROP) {
          now.mono_us += 1001 * 1000; /* the server's second passes */
          now.wall_ms += 1001;
          polite_engine_step(e, &now, &wake);
          continue;
        }
      }
      if (polite_engine_head(e, a, 200, &ct, 1, &now) == POLITE_ENGINE_RELAY)
        polite_engine_end(e, a, NULL, 0, &now);
      now.mono_us += 10; /* 10 us of fake time per answer */
      polite_engine_step(e, &now, &wake);
    }
  }
  if (sweep) {
    /* The first client started at once; its 429 pauses the account and
     * sweeps the n - 1 behind it. Only that answer is timed. */
    polite_engine_step(e, &now, &wake);
    if (b.n_started != 1)
      return 1;
    t0 = cpu_us();
    polite_engine_attempt *a = b.started[--b.n_started];
    if (polite_engine_head(e, a, 429, &ra, 1, &now) == POLITE_ENGINE_READ_BODY)
      polite_engine_body(e, a, "{}", 2, 0, &now);
  }
  polite_engine_step(e, &now, &wake);
  double used = cpu_us() - t0;
  size_t heap = heap_bytes();
  unsigned done = b.results;
  printf("%s %u requests=%u us_per_request=%.3f bytes_per_waiting=%.0f\n", what,
         n, done, used / n, wait && !sweep ? (double)(heap - heap0) / n : 0.0);
  polite_engine_free(e);
  polite_budget_close(budget);
  free(b.started);
  return 0;
}
