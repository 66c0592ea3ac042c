/* Unit tests of the proxy's Retry-After tracking, retry chains, bounded
 * tables and report on a fake clock (proxy/px_track*.c): every time is an
 * argument, so each case runs in microseconds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "px_track.c"
#include "px_track_map.c"
#include "px_track_report.c"
#include "px_track_stats.c"

#define T PX_TELL_THROTTLE

/* The judgement of a request from `who` (no User-Agent) on conn. */
static px_verdict judge_ua(px_state *s, const char *key, const char *conn,
                           const char *who, const char *ua, int64_t now,
                           int64_t *remaining) {
  px_judgement j;
  polite__px_judge(s, key, conn, -1, who, ua, now, 0, &j);
  if (remaining)
    *remaining = j.remaining_ms;
  return j.verdict;
}

static px_verdict judge(px_state *s, const char *key, const char *conn,
                        const char *who, int64_t now, int penalty,
                        int64_t *remaining) {
  px_judgement j;
  polite__px_judge(s, key, conn, -1, who, NULL, now, penalty, &j);
  if (remaining)
    *remaining = j.remaining_ms;
  return j.verdict;
}

static json_t *report(px_state *s) {
  char *text = polite__px_report_json(s, 0, 1000);
  assert_non_null(text);
  json_error_t e;
  json_t *j = json_loads(text, 0, &e);
  free(text);
  assert_non_null(j);
  return j;
}

static json_int_t num(const json_t *o, const char *k) {
  assert_non_null(json_object_get(o, k));
  return json_integer_value(json_object_get(o, k));
}

static void rec(px_state *s, const char *method, const char *url,
                uint64_t client, int status, px_kind kind) {
  px_record r = {method, url, "127.0.0.1", client, status, kind};
  polite__px_stats_record(s, &r);
}

/* A judged request recorded as the flow does: judge, early record, stats. */
static px_judgement ask(px_state *s, const char *key, const char *conn,
                        int64_t now) {
  px_judgement j;
  polite__px_judge(s, key, conn, -1, "ip", "ua/1", now, 0, &j);
  px_kind k = j.verdict == PX_JUDGE_EARLY       ? PX_KIND_EARLY
              : j.verdict == PX_JUDGE_THROTTLED ? PX_KIND_THROTTLED
                                                : PX_KIND_PASSED;
  if (k == PX_KIND_EARLY)
    polite__px_early_record(s, now, key, "ip", conn, "GET", key, j.remaining_ms,
                            j.across);
  px_record r = {"GET", key, "ip", j.client, k == PX_KIND_PASSED ? 200 : 429,
                 k};
  polite__px_stats_record(s, &r);
  return j;
}

static void keyed_objects_per_table(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  assert_null(polite__px_keyed(s, PX_TAB_LIMIT, "a"));
  int64_t *a = polite__px_keyed_put(s, PX_TAB_CONC, "a", calloc(1, 8), free);
  assert_non_null(a);
  assert_ptr_equal(polite__px_keyed(s, PX_TAB_CONC, "a"), a);
  assert_null(polite__px_keyed(s, PX_TAB_LIMIT, "a")); /* tables apart */
  assert_null(polite__px_keyed_put(s, PX_TAB__COUNT, "a", calloc(1, 8), free));
  polite__px_state_free(s);
}

static void early_by_milliseconds(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t t0 = 1000000, left = 0; /* fake monotonic ms */
  const char *k = "GET http://h/a";
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 - 1, 0, NULL), PX_JUDGE_OK);
  polite__px_tell(s, k, "ip:1", "ip", t0, 2000, T);
  /* 400 ms early is caught, with its exact remaining time. */
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 1600, 0, &left),
                   PX_JUDGE_EARLY);
  assert_int_equal(left, 400);
  /* 1 ms early is still early. */
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 1999, 0, &left),
                   PX_JUDGE_EARLY);
  assert_int_equal(left, 1);
  /* Exactly on time is compliant, and then settled. */
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 2000, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, k, "ip:1", "ip", t0 + 2000, 0, NULL), PX_JUDGE_OK);
  /* Other keys are unaffected. */
  polite__px_tell(s, "b", "ip:1", "ip", t0, 1000, T);
  assert_int_equal(judge(s, "c", "ip:1", "ip", t0 + 1, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "b", "ip:1", "ip", t0 + 1, 0, &left),
                   PX_JUDGE_EARLY);
  assert_int_equal(left, 999);
  polite__px_state_free(s);
}

/* The case of issue 13: A is told 1 s; B, never told, asks 300 ms later
 * and is refused during the throttle (told 1 s from then: its own
 * deadline); A, back exactly on time, is not early, and B is judged on its
 * own deadline only. */
static void clients_sharing_a_key_are_not_blamed_for_each_other(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t left;
  /* Two threads of one process, each on its kept-alive connection. */
  assert_int_equal(judge(s, "k", "ip:B", "ip", -5, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "k", "ip:A", "ip", 0, 0, NULL), PX_JUDGE_OK);
  polite__px_tell(s, "k", "ip:A", "ip", 0, 1000, T);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 300, 0, &left),
                   PX_JUDGE_THROTTLED);
  assert_int_equal(left, 700);
  polite__px_tell(s, "k", "ip:B", "ip", 300, 1000, 0); /* rounded up */
  assert_int_equal(judge(s, "k", "ip:A", "ip", 1000, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 1100, 0, &left), PX_JUDGE_EARLY);
  assert_int_equal(left, 200);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 1300, 0, NULL), PX_JUDGE_OK);
  /* A told 429 by a rate limiter (no throttle flag) binds only A. */
  polite__px_tell(s, "k", "ip:A", "ip", 2000, 1000, 0);
  assert_int_equal(judge(s, "k", "ip:B", "ip", 2100, 0, NULL), PX_JUDGE_OK);
  assert_int_equal(judge(s, "k", "ip:A", "ip", 2100, 0, NULL), PX_JUDGE_EARLY);
  polite__px_state_free(s);
}

static void an_early_request_never_moves_the_deadline(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t left;
  judge(s, "k", "c", "ip", 0, 0, NULL);
  polite__px_tell(s, "k", "c", "ip", 0, 2000, T);
  assert_int_equal(judge(s, "k", "c", "ip", 500, 0, &left), PX_JUDGE_EARLY);
  assert_int_equal(left, 1500);
  /* The early 429 says 2 s (1.5 rounded up), sent at 600: not a new
   * deadline, and not a longer throttle. */
  polite__px_tell(s, "k", "c", "ip", 600, 2000, T);
  assert_int_equal(judge(s, "k", "c", "ip", 2000, 0, NULL), PX_JUDGE_OK);
  polite__px_state_free(s);
}

static void a_compliant_client_is_never_early(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  /* Many waits of whole seconds, each retried exactly when allowed. */
  int64_t now = 5;
  for (int i = 1; i <= 50; i++) {
    polite__px_tell(s, "k", "c", "ip", now, (int64_t)(i % 7 + 1) * 1000, T);
    now += (int64_t)(i % 7 + 1) * 1000;
    assert_int_equal(judge(s, "k", "c", "ip", now, i & 1, NULL), PX_JUDGE_OK);
  }
  polite__px_state_free(s);
}

static void penalty_restarts_the_wait(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  int64_t left;
  polite__px_tell(s, "k", "c", "ip", 0, 3000, T);
  /* Early at 1000: the whole 3000 ms start again when the answer leaves
   * (1010), so until 4010. */
  assert_int_equal(judge(s, "k", "c", "ip", 1000, 1, &left), PX_JUDGE_EARLY);
  assert_int_equal(left, 3000);
  polite__px_tell(s, "k", "c", "ip", 1010, 3000, PX_TELL_RESTART);
  assert_int_equal(judge(s, "k", "c", "ip", 3000, 1, NULL), PX_JUDGE_EARLY);
  polite__px_tell(s, "k", "c", "ip", 3000, 3000, PX_TELL_RESTART);
  assert_int_equal(judge(s, "k", "c", "ip", 6000, 1, NULL), PX_JUDGE_OK);
  polite__px_state_free(s);
}

/* A client whose connection closed and that comes back on a fresh one from
 * the same identity (curl in a loop) is the same client; so is one whose
 * identity opens a connection per request (requests.get leaves its socket
 * open until Python frees it). Another address, credentials or User-Agent
 * is never the same client. */
static void a_reconnecting_client_keeps_its_deadline(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  px_judgement j1, j2;
  polite__px_judge(s, "k", "ip:1", -1, "ip", "curl/8", 0, 0, &j1);
  polite__px_tell(s, "k", "ip:1", "ip", 1, 1000, T);
  polite__px_conn_closed(s, "ip:1");
  polite__px_judge(s, "k", "ip:2", -1, "ip", "curl/8", 600, 0, &j2);
  assert_int_equal(j2.verdict, PX_JUDGE_EARLY);
  assert_int_equal(j2.remaining_ms, 401);
  assert_true(j2.across);
  assert_int_equal(j2.client, j1.client); /* one retry chain */
  /* Another address, credentials or program: never. */
  assert_int_equal(judge_ua(s, "k", "ip:4", "other", "curl/8", 700, NULL),
                   PX_JUDGE_THROTTLED);
  assert_int_equal(judge_ua(s, "k", "ip:5", "ip", "python-requests", 700, NULL),
                   PX_JUDGE_THROTTLED);
  polite__px_state_free(s);

  /* A connection per request, the old one still open: the next request on
   * a fresh connection is the same client's, if it is the identity's next
   * request after the told one. */
  s = polite__px_state_new();
  polite__px_conn_opened(s, "ip:1", 0);
  polite__px_judge(s, "k", "ip:1", -1, "ip", "py", 0, 0, &j1);
  polite__px_tell(s, "k", "ip:1", "ip", 1, 1000, T);
  polite__px_conn_opened(s, "ip:2", 299);
  polite__px_judge(s, "k", "ip:2", -1, "ip", "py", 300, 0, &j2);
  assert_int_equal(j2.verdict, PX_JUDGE_EARLY);
  assert_true(j2.across);
  polite__px_tell(s, "k", "ip:2", "ip", 301, 1000, 0); /* not moved */
  polite__px_judge(s, "k", "ip:3", -1, "ip", "py", 1001, 0, &j2);
  assert_int_equal(j2.verdict, PX_JUDGE_OK); /* on time, on a third one */
  polite__px_state_free(s);

  /* At once on a new connection: a thread starting, for all the judge
   * knows, until the identity has let go of a one-request connection. */
  s = polite__px_state_new();
  polite__px_judge(s, "k", "ip:1", -1, "ip", "py", 0, 0, &j1);
  polite__px_tell(s, "k", "ip:1", "ip", 1, 1000, T);
  polite__px_judge(s, "k", "ip:2", -1, "ip", "py", 5, 0, &j2);
  assert_int_equal(j2.verdict, PX_JUDGE_THROTTLED);
  polite__px_tell(s, "k", "ip:2", "ip", 6, 1000, 0);
  polite__px_conn_closed(s, "ip:1"); /* one request, then let go of */
  polite__px_tell(s, "j", "ip:2", "ip", 10, 1000, T);
  polite__px_judge(s, "j", "ip:3", -1, "ip", "py", 12, 0, &j2);
  assert_int_equal(j2.verdict, PX_JUDGE_EARLY);
  assert_true(j2.across);
  polite__px_state_free(s);
}

static int dead_conn_1(void *ctx, const char *conn, int handle) {
  (void)ctx;
  assert_int_equal(handle, 7);
  return strcmp(conn, "ip:1") != 0;
}

/* The told connection is open, so a fresh one is someone else, until the
 * probe finds the told one closed (the server had not noticed). */
static void the_probe_finds_a_closed_connection(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  px_judgement j;
  polite__px_judge(s, "k", "ip:1", 7, "ip", NULL, 0, 0, &j);
  polite__px_tell(s, "k", "ip:1", "ip", 0, 1000, T);
  polite__px_judge(s, "k", "ip:1", 7, "ip", NULL, 50, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  assert_false(j.across);
  polite__px_judge(s, "k", "ip:2", 7, "ip", NULL, 100, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_THROTTLED); /* ip:1 still open */
  polite__px_conn_probe(s, dead_conn_1, NULL);
  polite__px_judge(s, "k", "ip:3", 7, "ip", NULL, 200, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  assert_true(j.across);
  polite__px_state_free(s);
}

/* The early-retry counter of the metrics page. */
static long long early_metric(px_state *s) {
  char *m = polite__px_metrics_text(s);
  assert_non_null(m);
  const char *p = strstr(m, "\npolite_proxy_early_retries_total ");
  assert_non_null(p);
  long long v = strtoll(p + 34, NULL, 10);
  free(m);
  return v;
}

/* Issue 20: a pool (one client, several connections: the same address,
 * credentials and User-Agent; undici opens a second connection while the
 * first is busy) retries early on its new connection, then hands out the
 * older one again. The early retry is caught across the connections, the
 * wait binds both, and nothing is taken back when the pool goes on using
 * both connections. */
static void a_pool_hop_is_caught_and_never_taken_back(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  const char *k = "GET http://h/x";
  assert_int_equal(ask(s, k, "ip:A", 0).verdict, PX_JUDGE_OK);
  polite__px_tell(s, k, "ip:A", "ip", 1, 2000, T);
  px_judgement j = ask(s, k, "ip:B", 300);
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  assert_true(j.across);
  assert_int_equal(j.remaining_ms, 1701);
  polite__px_tell(s, k, "ip:B", "ip", 301, 2000, 0); /* the early answer */
  assert_int_equal(early_metric(s), 1);
  j = ask(s, k, "ip:A", 900); /* the older connection again, still early */
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  assert_false(j.across);
  assert_int_equal(j.remaining_ms, 1101);
  assert_int_equal(ask(s, k, "ip:A", 2001).verdict, PX_JUDGE_OK);
  assert_int_equal(ask(s, k, "ip:B", 2002).verdict, PX_JUDGE_OK);
  /* The pool goes back and forth between its connections: from now on it
   * counts as several clients (an event of its own), and nothing found
   * before goes away. */
  static const char *const turns[] = {"ip:A", "ip:B", "ip:A", "ip:B"};
  for (int i = 0; i < 4; i++)
    ask(s, "GET http://h/other", turns[i], 2100 + i);
  json_t *r = report(s);
  assert_int_equal(num(r, "early_retries"), 2);
  assert_int_equal(num(r, "shared_identities"), 1);
  assert_true(json_is_true(json_object_get(
      json_array_get(json_object_get(r, "early"), 0), "across_connections")));
  json_decref(r);
  assert_int_equal(early_metric(s), 2);
  polite__px_state_free(s);
}

/* Threads each on its own kept-alive connection, taking turns: a wait
 * binds the told connection only, and once the identity showed several
 * clients not even a reconnect is followed. */
static void alternating_connections_are_several_clients(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  static const char *const conns[] = {"ip:A", "ip:B", "ip:C", "ip:D"};
  for (int i = 0; i < 8; i++)
    ask(s, "GET http://h/w", conns[i % 4], i);
  json_t *r = report(s);
  assert_int_equal(num(r, "shared_identities"), 1);
  json_decref(r);
  const char *k = "GET http://h/y";
  polite__px_tell(s, k, "ip:C", "ip", 10, 5000, T);
  assert_int_equal(ask(s, k, "ip:D", 20).verdict, PX_JUDGE_THROTTLED);
  assert_int_equal(ask(s, k, "ip:C", 30).verdict, PX_JUDGE_EARLY);
  polite__px_conn_closed(s, "ip:C");
  assert_int_equal(ask(s, k, "ip:E", 40).verdict, PX_JUDGE_THROTTLED);
  r = report(s);
  assert_int_equal(num(r, "early_retries"), 1);
  assert_int_equal(num(r, "during_throttle"), 2);
  assert_int_equal(num(r, "shared_identities"), 1); /* counted once */
  json_decref(r);
  polite__px_state_free(s);
}

/* A young identity that keeps its connections alive (threads, each on its
 * own) is not followed across open connections: nothing to withdraw
 * later. */
static void a_young_identity_is_not_followed(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  const char *k = "GET http://h/x";
  ask(s, k, "ip:A", 0);
  ask(s, k, "ip:A", 1); /* a connection carried two requests */
  polite__px_tell(s, k, "ip:A", "ip", 2, 1000, T);
  assert_int_equal(ask(s, k, "ip:B", 3).verdict, PX_JUDGE_THROTTLED);
  assert_int_equal(ask(s, k, "ip:C", 4).verdict, PX_JUDGE_THROTTLED);
  assert_int_equal(ask(s, k, "ip:A", 5).verdict, PX_JUDGE_EARLY);
  polite__px_state_free(s);
}

/* Threads starting together each open a connection at once; the first
 * request's 429 is not the others' wait: their connections were open before
 * it was told. A connection opened after the 429 left is a retry's. */
static void connections_open_before_the_wait_are_other_clients(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  const char *k = "GET http://h/x";
  static const char *const conns[] = {"ip:A", "ip:B", "ip:C"};
  for (int i = 0; i < 3; i++)
    polite__px_conn_opened(s, conns[i], i);
  assert_int_equal(ask(s, k, "ip:A", 5).verdict, PX_JUDGE_OK);
  polite__px_tell(s, k, "ip:A", "ip", 6, 1000, T);
  assert_int_equal(ask(s, k, "ip:B", 10).verdict, PX_JUDGE_THROTTLED);
  assert_int_equal(ask(s, k, "ip:C", 11).verdict, PX_JUDGE_THROTTLED);
  polite__px_state_free(s);
  s = polite__px_state_new();
  polite__px_conn_opened(s, "ip:A", 0);
  ask(s, k, "ip:A", 5);
  polite__px_tell(s, k, "ip:A", "ip", 6, 1000, T);
  polite__px_conn_opened(s, "ip:D", 300); /* after the 429: a retry */
  px_judgement j = ask(s, k, "ip:D", 301);
  assert_int_equal(j.verdict, PX_JUDGE_EARLY);
  assert_true(j.across);
  polite__px_state_free(s);
}

/* With the judge off (a devproxyrc without RetryAfterPlugin) nothing is
 * told or judged, but clients are still noted for the retry chains; a NULL
 * key notes without judging. */
static void the_judge_can_be_off(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  px_track_opts o = {0, 0};
  polite__px_track_setup(s, &o);
  polite__px_tell(s, "k", "c", "ip", 0, 5000, T);
  px_judgement j;
  polite__px_judge(s, "k", "c", -1, "ip", NULL, 10, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_OK);
  assert_true(j.client != 0);
  assert_int_equal(s->track.n, 0);
  json_t *r = report(s);
  assert_true(json_is_false(json_object_get(r, "judge")));
  json_decref(r);
  polite__px_state_free(s);
  s = polite__px_state_new();
  polite__px_tell(s, "k", "c", "ip", 0, 5000, T);
  polite__px_judge(s, NULL, "c", -1, "ip", NULL, 10, 0, &j);
  assert_int_equal(j.verdict, PX_JUDGE_OK);
  assert_int_equal(judge(s, "k", "c", "ip", 20, 0, NULL), PX_JUDGE_EARLY);
  polite__px_state_free(s);
}

/* Four clients taking turns on one URL, each 429 then 200: two attempts
 * each, not a chain of eight. */
static void max_attempts_counts_per_client(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  for (uint64_t c = 1; c <= 4; c++)
    rec(s, "GET", "http://h/x", c, 429, PX_KIND_THROTTLED);
  for (uint64_t c = 1; c <= 4; c++)
    rec(s, "GET", "http://h/x", c, 200, PX_KIND_PASSED);
  json_t *j = report(s);
  assert_int_equal(num(j, "max_attempts"), 2);
  assert_int_equal(num(j, "during_throttle"), 4);
  assert_int_equal(num(j, "early_retries"), 0);
  json_t *c = json_array_get(json_object_get(j, "clients"), 0);
  assert_int_equal(num(c, "during_throttle"), 4);
  assert_int_equal(num(c, "requests"), 8);
  json_decref(j);
  assert_int_equal(s->chains.n, 0); /* every chain ended */
  polite__px_state_free(s);
}

static void retry_chains_and_report(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  /* 3 x 3 nested retry loops: 9 attempts in a row, each answered 429. */
  for (int i = 0; i < 9; i++)
    rec(s, "GET", "http://h/nested", 1, 429, PX_KIND_FAILURE);
  rec(s, "GET", "http://h/nested", 1, 200, PX_KIND_PASSED);
  /* A fresh chain after a success starts at 1 again. */
  rec(s, "GET", "http://h/nested", 1, 200, PX_KIND_PASSED);
  /* Another URL: 503 then 200 is two attempts. */
  rec(s, "POST", "http://h/b", 1, 503, PX_KIND_PASSED);
  rec(s, "POST", "http://h/b", 1, 200, PX_KIND_PASSED);
  rec(s, "GET", "http://h/b", 1, 429, PX_KIND_EARLY);
  polite__px_early_record(s, 500, "GET http://h/b", "127.0.0.1",
                          "127.0.0.1:4242", "GET", "http://h/b", 400, 0);
  json_t *j = report(s);
  assert_int_equal(num(j, "requests"), 14);
  assert_int_equal(num(j, "passed"), 4);
  assert_int_equal(num(j, "injected"), 10);
  assert_int_equal(num(j, "failures"), 9);
  assert_int_equal(num(j, "early_retries"), 1);
  assert_int_equal(num(j, "max_attempts"), 10);
  json_t *early = json_array_get(json_object_get(j, "early"), 0);
  assert_int_equal(num(early, "early_ms"), 400);
  assert_string_equal(json_string_value(json_object_get(early, "client")),
                      "127.0.0.1");
  assert_string_equal(json_string_value(json_object_get(early, "time")),
                      "1970-01-01T00:00:00.500Z");
  json_t *urls = json_object_get(j, "urls");
  assert_int_equal(json_array_size(urls), 3);
  json_t *first = json_array_get(urls, 0); /* busiest first */
  assert_string_equal(json_string_value(json_object_get(first, "url")),
                      "http://h/nested");
  assert_string_equal(json_string_value(json_object_get(first, "method")),
                      "GET");
  assert_int_equal(num(first, "max_attempts"), 10);
  assert_int_equal(num(json_object_get(first, "statuses"), "429"), 9);
  for (size_t i = 0; i < 3; i++) {
    json_t *u = json_array_get(urls, i);
    if (strcmp(json_string_value(json_object_get(u, "method")), "POST") == 0)
      assert_int_equal(num(u, "max_attempts"), 2);
  }
  json_decref(j);

  char *md = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&md, &len);
  polite__px_report_md(s, f, 0, 1000);
  fclose(f);
  assert_non_null(
      strstr(md, "| **early retry (told to wait, came back too soon)** | 1 |"));
  assert_non_null(
      strstr(md, "| during a throttle (never told, refused) | 0 |"));
  assert_non_null(strstr(md, "400 ms"));
  free(md);
  polite__px_state_free(s);
}

static void early_list_is_bounded(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  for (int i = 0; i < EARLY_KEEP + 5; i++)
    polite__px_early_record(s, i, "k", "c", "c:1", "GET", "u", 1, 0);
  json_t *j = report(s);
  assert_int_equal(json_array_size(json_object_get(j, "early")), EARLY_KEEP);
  assert_true(json_is_true(json_object_get(j, "early_truncated")));
  json_decref(j);
  polite__px_state_free(s);
}

/* CONNECTs and calls to /__polite/ (also through the proxy itself) are
 * counted apart, never as requests. */
static void only_requests_are_requests(void **state) {
  (void)state;
  static const struct {
    const char *method, *url;
    px_rec_class want;
  } rows[] = {
      {"CONNECT", "https://api.test/", PX_REC_CONNECT},
      {"GET", "http://127.0.0.1:8000/__polite/report", PX_REC_OWN},
      {"GET", "/__polite/metrics", PX_REC_OWN},
      {"GET", "https://h/__polite", PX_REC_REQUEST},
      {"GET", "https://h/v1/__polite/x", PX_REC_REQUEST},
      {"GET", "http://h", PX_REC_REQUEST},
      {"POST", "http://h/x?u=/__polite/", PX_REC_REQUEST},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    assert_int_equal(polite__px_record_class(rows[i].method, rows[i].url),
                     rows[i].want);
  px_state *s = polite__px_state_new();
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    rec(s, rows[i].method, rows[i].url, 1, 200, PX_KIND_PASSED);
  json_t *j = report(s);
  assert_int_equal(num(j, "requests"), 4);
  assert_int_equal(num(j, "passed"), 4);
  assert_int_equal(num(j, "connects"), 1);
  assert_int_equal(num(j, "own_endpoint_calls"), 2);
  json_decref(j);
  polite__px_state_free(s);
}

/* Every kind has its own log word and JSON key, and the words read back. */
static void kinds_have_one_name_each(void **state) {
  (void)state;
  for (int a = 0; a < PX_KIND__COUNT; a++) {
    const px_kind_info *x = polite__px_kind_info((px_kind)a);
    assert_int_equal(polite__px_kind_of_word(x->word), a);
    for (int b = 0; b < a; b++) {
      assert_string_not_equal(x->word, polite__px_kind_info((px_kind)b)->word);
      assert_string_not_equal(x->key, polite__px_kind_info((px_kind)b)->key);
    }
  }
  assert_int_equal(polite__px_kind_of_word("nonsense"), PX_KIND__COUNT);
}

/* A requests sum: the rows of a report section plus what it keeps apart. */
static json_int_t rows_sum(const json_t *a, const char *key) {
  json_int_t n = 0;
  size_t i;
  json_t *o;
  json_array_foreach(a, i, o) n += num(o, key);
  return n;
}

/* Issue 21 item 6: the URL table keeps --max-urls URLs, the ones used
 * longest ago go, and the report still adds up. */
static void the_url_table_is_bounded(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  px_track_opts o = {1, 100};
  polite__px_track_setup(s, &o);
  char url[64];
  for (int i = 0; i < 5000; i++) {
    snprintf(url, sizeof url, "http://h/u/%d", i);
    rec(s, "GET", url, 1, i % 3 ? 200 : 429,
        i % 3 ? PX_KIND_PASSED : PX_KIND_FAILURE);
    rec(s, "GET", "http://h/busy", 2, 200, PX_KIND_PASSED);
  }
  assert_true(s->urls.n <= 100);
  json_t *j = report(s);
  json_t *t = json_object_get(j, "url_table");
  assert_int_equal(num(t, "max_urls"), 100);
  assert_int_equal(num(t, "evicted"), 5001 - 100);
  json_t *urls = json_object_get(j, "urls");
  assert_int_equal(rows_sum(urls, "requests") + num(t, "unlisted_requests") +
                       num(t, "evicted_requests"),
                   num(j, "requests"));
  assert_string_equal(
      json_string_value(json_object_get(json_array_get(urls, 0), "url")),
      "http://h/busy"); /* used all along: never let go of */
  assert_int_equal(num(json_array_get(urls, 0), "requests"), 5000);
  assert_int_equal(rows_sum(json_object_get(j, "clients"), "requests"), 10000);
  json_decref(j);
  /* Retry chains in progress are bounded too, and ended ones are gone. */
  assert_true(s->chains.n <= CHAINS_MAX);
  char *m = polite__px_metrics_text(s);
  assert_non_null(strstr(m, "\npolite_proxy_urls_evicted_total 4901\n"));
  free(m);
  polite__px_state_free(s);
}

/* The judge's tables have bounds: keys with waits, connections, identities,
 * and clients in the report (whose counts go to an "other clients" row). */
static void every_table_is_bounded(void **state) {
  (void)state;
  px_state *s = polite__px_state_new();
  char key[64], conn[64], who[64];
  for (int i = 0; i < TRACK_MAX + 500; i++) {
    snprintf(key, sizeof key, "GET http://h/%d", i);
    snprintf(conn, sizeof conn, "10.0.%d.%d:%d", i / 65536, i / 256 % 256,
             i % 256 + 1000);
    snprintf(who, sizeof who, "10.2.%d.%d", i / 4 / 256, i / 4 % 256);
    px_judgement j;
    polite__px_judge(s, key, conn, -1, who, NULL, i, 0, &j);
    polite__px_tell(s, key, conn, who, i, 600000, T);
  }
  assert_true(s->track.n <= TRACK_MAX);
  assert_true(s->conns.n <= CONNS_MAX);
  assert_true(s->idents.n <= IDENTS_MAX);
  assert_true(s->waits_forgotten > 0);
  for (int i = 0; i < CLIENTS_MAX + 10; i++) {
    snprintf(who, sizeof who, "10.1.%d.%d", i / 256, i % 256);
    px_record r = {"GET", "http://h/c", who, 1, 200, PX_KIND_PASSED};
    polite__px_stats_record(s, &r);
  }
  assert_true(s->clients.n <= CLIENTS_MAX);
  json_t *j = report(s);
  json_t *c = json_object_get(j, "clients");
  assert_int_equal(rows_sum(c, "requests"), CLIENTS_MAX + 10);
  json_t *last = json_array_get(c, json_array_size(c) - 1);
  assert_string_equal(json_string_value(json_object_get(last, "client")),
                      "(other clients)");
  json_decref(j);
  polite__px_state_free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(early_by_milliseconds),
      cmocka_unit_test(a_compliant_client_is_never_early),
      cmocka_unit_test(clients_sharing_a_key_are_not_blamed_for_each_other),
      cmocka_unit_test(an_early_request_never_moves_the_deadline),
      cmocka_unit_test(a_reconnecting_client_keeps_its_deadline),
      cmocka_unit_test(the_probe_finds_a_closed_connection),
      cmocka_unit_test(a_pool_hop_is_caught_and_never_taken_back),
      cmocka_unit_test(alternating_connections_are_several_clients),
      cmocka_unit_test(a_young_identity_is_not_followed),
      cmocka_unit_test(connections_open_before_the_wait_are_other_clients),
      cmocka_unit_test(the_judge_can_be_off),
      cmocka_unit_test(max_attempts_counts_per_client),
      cmocka_unit_test(penalty_restarts_the_wait),
      cmocka_unit_test(keyed_objects_per_table),
      cmocka_unit_test(retry_chains_and_report),
      cmocka_unit_test(early_list_is_bounded),
      cmocka_unit_test(only_requests_are_requests),
      cmocka_unit_test(kinds_have_one_name_each),
      cmocka_unit_test(the_url_table_is_bounded),
      cmocka_unit_test(every_table_is_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
