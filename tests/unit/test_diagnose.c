/* Unit tests of polite diagnose: every fixture in tests/fixtures/diagnose
 * against its expected .json, plus targeted cases (the CDN-header trap, API
 * Gateway quota vs throttle, GitHub secondary 403, status-line forms, CRLF vs
 * LF, 100 Continue, parse errors). Fixed clock: no test reads the time. */
#include <polite/diagnose.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rule tables themselves, to check that each vendor has a fixture. */
#include "diagnose_rules.h"

/* 2026-11-30 05:00:00 UTC, the Date of every fixture. */
#define NOW_MS INT64_C(1796014800000)

static char fixture_dir[4096];

/* The fixtures live next to this file: ../fixtures/diagnose. CMake passes
 * absolute source paths, so __FILE__ finds them from any build directory. */
static void find_fixtures(void) {
  char here[4096];
  snprintf(here, sizeof here, "%s", __FILE__);
  snprintf(fixture_dir, sizeof fixture_dir, "%s/../fixtures/diagnose",
           dirname(here));
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  assert_non_null(p);
  size_t got = fread(p, 1, (size_t)n, f);
  fclose(f);
  p[got] = '\0';
  *len = got;
  return p;
}

static int diag_str(polite_diagnosis *d, const char *raw) {
  polite_diag_error err = {0};
  return polite_diagnose_response(d, raw, strlen(raw), NOW_MS, &err);
}

static int has_evidence(const polite_diagnosis *d, const char *part) {
  for (size_t i = 0; i < d->n_evidence; i++)
    if (strstr(d->evidence[i], part))
      return 1;
  return 0;
}

/* Checks one fixture; returns the number of mismatches (printed). */
static int check_fixture(const char *name) {
  char path[4200];
  size_t rawlen = 0, explen = 0;
  snprintf(path, sizeof path, "%s/%s.http", fixture_dir, name);
  char *raw = slurp(path, &rawlen);
  snprintf(path, sizeof path, "%s/%s.json", fixture_dir, name);
  char *exps = slurp(path, &explen);
  if (raw == NULL || exps == NULL) {
    print_error("%s: missing .http or .json\n", name);
    free(raw);
    free(exps);
    return 1;
  }
  json_error_t jerr;
  json_t *exp = json_loads(exps, 0, &jerr);
  free(exps);
  if (exp == NULL) {
    print_error("%s.json:%d: %s\n", name, jerr.line, jerr.text);
    free(raw);
    return 1;
  }
  int64_t now_ms = NOW_MS;
  json_t *jnow = json_object_get(exp, "now");
  if (json_is_integer(jnow))
    now_ms = json_integer_value(jnow) * 1000;

  polite_diagnosis d;
  polite_diag_error err = {0};
  int bad = 0;
  if (polite_diagnose_response(&d, raw, rawlen, now_ms, &err) != 0) {
    print_error("%s: parse error line %d: %s\n", name, err.line, err.message);
    bad++;
    goto done;
  }
  const char *want = json_string_value(json_object_get(exp, "component"));
  if (want == NULL || strcmp(want, polite_diagnosis_component(&d)) != 0) {
    print_error("%s: component %s, want %s\n", name,
                polite_diagnosis_component(&d), want ? want : "(none)");
    bad++;
  }
  want = json_string_value(json_object_get(exp, "limit"));
  if (want == NULL || strcmp(want, polite_limit_name(d.limit)) != 0) {
    print_error("%s: limit %s, want %s\n", name, polite_limit_name(d.limit),
                want ? want : "(none)");
    bad++;
  }
  json_t *rh = json_object_get(exp, "retry_helps");
  if (!json_is_boolean(rh) || json_is_true(rh) != (d.retry_helps != 0)) {
    print_error("%s: retry_helps %d\n", name, d.retry_helps);
    bad++;
  }
  json_t *w = json_object_get(exp, "wait_ms");
  int64_t want_wait = json_is_integer(w) ? json_integer_value(w) : -1;
  if (!json_is_integer(w) && !json_is_null(w)) {
    print_error("%s.json: wait_ms must be a number or null\n", name);
    bad++;
  } else if (d.wait_ms != want_wait) {
    print_error("%s: wait_ms %lld, want %lld\n", name, (long long)d.wait_ms,
                (long long)want_wait);
    bad++;
  }
  json_t *th = json_object_get(exp, "through");
  if (json_is_array(th)) {
    if (json_array_size(th) != d.n_through) {
      print_error("%s: %zu layers passed through, want %zu\n", name,
                  d.n_through, json_array_size(th));
      bad++;
    } else {
      for (size_t i = 0; i < d.n_through; i++)
        if (strcmp(json_string_value(json_array_get(th, i)), d.through[i]) !=
            0) {
          print_error("%s: through[%zu] %s\n", name, i, d.through[i]);
          bad++;
        }
    }
  }
  json_t *ids = json_object_get(exp, "ids");
  if (json_is_array(ids)) {
    if (json_array_size(ids) != d.n_ids) {
      print_error("%s: %zu request ids, want %zu\n", name, d.n_ids,
                  json_array_size(ids));
      bad++;
    } else {
      for (size_t i = 0; i < d.n_ids; i++)
        if (strcmp(json_string_value(json_array_get(ids, i)), d.ids[i].name) !=
            0) {
          print_error("%s: id[%zu] %s\n", name, i, d.ids[i].name);
          bad++;
        }
    }
  }
  /* Every diagnosis says why; a diagnosis without evidence is a guess. */
  if (d.n_evidence == 0) {
    print_error("%s: no evidence\n", name);
    bad++;
  }
done:
  json_decref(exp);
  free(raw);
  return bad;
}

static void test_all_fixtures(void **state) {
  (void)state;
  DIR *dir = opendir(fixture_dir);
  assert_non_null(dir);
  struct dirent *e;
  int n = 0, bad = 0;
  while ((e = readdir(dir)) != NULL) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".http") != 0)
      continue;
    char name[256];
    if (l - 5 >= sizeof name)
      continue;
    memcpy(name, e->d_name, l - 5);
    name[l - 5] = '\0';
    bad += check_fixture(name);
    n++;
  }
  closedir(dir);
  print_message("%d fixtures checked, %d mismatches\n", n, bad);
  assert_true(n >= 40);
  assert_int_equal(bad, 0);
}

/* Adding a vendor is rows plus a fixture: every row of vendors[] is the
 * expected component of at least one fixture. */
static void test_every_vendor_has_a_fixture(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof vendors / sizeof *vendors; i++) {
    char want[64];
    snprintf(want, sizeof want, "\"component\": \"%s:%s\"",
             polite_component_kind_name(vendors[i].kind), vendors[i].vendor);
    DIR *dir = opendir(fixture_dir);
    assert_non_null(dir);
    struct dirent *e;
    int found = 0;
    while (!found && (e = readdir(dir)) != NULL) {
      size_t l = strlen(e->d_name);
      if (l < 6 || strcmp(e->d_name + l - 5, ".json") != 0)
        continue;
      char path[4400];
      size_t len = 0;
      snprintf(path, sizeof path, "%s/%s", fixture_dir, e->d_name);
      char *txt = slurp(path, &len);
      found = txt != NULL && strstr(txt, want) != NULL;
      free(txt);
    }
    closedir(dir);
    if (!found)
      fail_msg("no fixture expects %s", want);
  }
}

/* docs/diagnose.md has a table row for every vendor row: `kind:vendor` at
 * the start of a line of its vendor table. */
static void test_every_vendor_is_documented(void **state) {
  (void)state;
  char path[4200];
  size_t len = 0;
  snprintf(path, sizeof path, "%s/../../../docs/diagnose.md", fixture_dir);
  char *doc = slurp(path, &len);
  assert_non_null(doc);
  for (size_t i = 0; i < sizeof vendors / sizeof *vendors; i++) {
    char want[64];
    snprintf(want, sizeof want, "\n| `%s:%s` |",
             polite_component_kind_name(vendors[i].kind), vendors[i].vendor);
    if (strstr(doc, want) == NULL)
      fail_msg("docs/diagnose.md has no row %s", want + 1);
  }
  free(doc);
}

/* Header names are globs: '*' matches any run, any case, both ends. */
static void test_header_globs(void **state) {
  (void)state;
  polite_diagnosis d;
  polite_diagnosis_init(&d, 429, NOW_MS);
  const char *n = "Anthropic-RateLimit-Output-Tokens-Remaining";
  polite_diagnosis_feed_header(&d, n, strlen(n), " 0 ", 3);
  polite_diagnosis_finish(&d, NULL, 0);
  assert_string_equal(polite_diagnosis_component(&d), "origin:anthropic");
  assert_int_equal(d.limit, POLITE_LIMIT_TOKENS);
  assert_true(
      has_evidence(&d, "Anthropic-RateLimit-Output-Tokens-Remaining: 0"));
  polite_diagnosis_init(&d, 429, NOW_MS);
  n = "anthropic-ratelimit-requests-remaining";
  polite_diagnosis_feed_header(&d, n, strlen(n), "0", 1);
  polite_diagnosis_finish(&d, NULL, 0);
  assert_int_equal(d.limit, POLITE_LIMIT_RATE);
  /* "x-fastly" alone is not "x-fastly-*". */
  polite_diagnosis_init(&d, 503, NOW_MS);
  polite_diagnosis_feed_header(&d, "x-fastly", 8, "1", 1);
  polite_diagnosis_finish(&d, NULL, 0);
  assert_int_equal(d.n_through, 0);
}

/* polite's own proxy: Server: polite-proxy with any version suffix makes it
 * the producer, even with an OpenAI-shaped body; its RateLimit-Policy
 * alone only says the answer passed through it. */
static void test_polite_proxy(void **state) {
  (void)state;
  polite_diagnosis d;
  const char *servers[] = {"polite-proxy", "polite-proxy/0.1.0",
                           "Polite-Proxy/12.3 (linux)"};
  for (size_t i = 0; i < 3; i++) {
    char raw[512];
    snprintf(raw, sizeof raw,
             "HTTP/1.1 429 Too Many Requests\r\nServer: %s\r\n\r\n"
             "{\"error\":{\"code\":\"rate_limit_exceeded\"}}",
             servers[i]);
    assert_int_equal(diag_str(&d, raw), 0);
    assert_string_equal(polite_diagnosis_component(&d), "proxy:polite");
    assert_int_equal(d.limit, POLITE_LIMIT_RATE);
  }
  /* Not polite: another name that starts alike, or no Server at all. */
  assert_int_equal(diag_str(&d,
                            "HTTP/1.1 429 X\r\nServer: polite\r\n\r\n"
                            "{\"error\":{\"code\":\"rate_limit_exceeded\"}}"),
                   0);
  assert_string_equal(polite_diagnosis_component(&d), "origin:openai");
  assert_int_equal(
      diag_str(&d, "HTTP/1.1 429 X\r\nRateLimit-Policy: \"other\";q=1, "
                   "\"polite\";q=5;w=1\r\n\r\n"),
      0);
  assert_string_equal(polite_diagnosis_component(&d), "unknown");
  assert_int_equal(d.n_through, 1);
  assert_string_equal(d.through[0], "proxy:polite");
  /* A policy merely named like it is not polite's. */
  assert_int_equal(
      diag_str(&d,
               "HTTP/1.1 429 X\r\nRateLimit-Policy: \"polite-x\";q=5\r\n\r\n"),
      0);
  assert_int_equal(d.n_through, 0);
}

/* The trap: an OpenAI 429 carries Cloudflare's headers; the body and the
 * openai-* headers decide. The same Cloudflare headers with a 1015 body
 * mean Cloudflare itself. */
static void test_cdn_header_trap(void **state) {
  (void)state;
  polite_diagnosis d;
  assert_int_equal(
      diag_str(&d,
               "HTTP/2 429\r\nserver: cloudflare\r\ncf-ray: 1-AMS\r\n"
               "x-request-id: req_1\r\ncontent-type: application/json\r\n\r\n"
               "{\"error\":{\"message\":\"Rate limit "
               "reached\",\"type\":\"requests\","
               "\"param\":null,\"code\":\"rate_limit_exceeded\"}}"),
      0);
  assert_string_equal(polite_diagnosis_component(&d), "origin:openai");
  assert_int_equal(d.limit, POLITE_LIMIT_RATE);
  assert_int_equal(d.n_through, 1);
  assert_string_equal(d.through[0], "cdn:cloudflare");

  assert_int_equal(
      diag_str(&d, "HTTP/2 429\r\nserver: cloudflare\r\ncf-ray: 1-AMS\r\n\r\n"
                   "error code: 1015"),
      0);
  assert_string_equal(polite_diagnosis_component(&d), "cdn:cloudflare");
  assert_int_equal(d.limit, POLITE_LIMIT_RATE);
  assert_int_equal(d.n_through, 0);

  /* server: cloudflare alone names nobody. */
  assert_int_equal(
      diag_str(&d,
               "HTTP/2 429\r\nserver: cloudflare\r\n\r\n{\"error\":\"slow\"}"),
      0);
  assert_string_equal(polite_diagnosis_component(&d), "unknown");
  assert_int_equal(d.kind, POLITE_COMP_UNKNOWN);
  assert_true(has_evidence(&d, "not guessed"));
}

static void test_apigw_quota_vs_throttle(void **state) {
  (void)state;
  polite_diagnosis d;
  assert_int_equal(
      diag_str(&d,
               "HTTP/1.1 429 Too Many Requests\r\nx-amzn-RequestId: a\r\n\r\n"
               "{\"message\":\"Too Many Requests\"}"),
      0);
  assert_string_equal(polite_diagnosis_component(&d),
                      "gateway:aws-api-gateway");
  assert_int_equal(d.limit, POLITE_LIMIT_RATE);
  assert_true(d.retry_helps);

  assert_int_equal(
      diag_str(&d,
               "HTTP/1.1 429 Too Many Requests\r\nx-amzn-RequestId: a\r\n\r\n"
               "{\"message\" : \"Limit Exceeded\"}"),
      0);
  assert_string_equal(polite_diagnosis_component(&d),
                      "gateway:aws-api-gateway");
  assert_int_equal(d.limit, POLITE_LIMIT_QUOTA);
  assert_false(d.retry_helps);

  /* The same body without any AWS header is not claimed for AWS. */
  assert_int_equal(diag_str(&d, "HTTP/1.1 429 Too Many Requests\r\n\r\n"
                                "{\"message\":\"Limit Exceeded\"}"),
                   0);
  assert_string_equal(polite_diagnosis_component(&d), "unknown");
}

static void test_github_secondary_403(void **state) {
  (void)state;
  polite_diagnosis d;
  assert_int_equal(diag_str(&d, "HTTP/2 403\r\nx-github-request-id: AB:CD\r\n"
                                "x-ratelimit-remaining: 4000\r\n\r\n"
                                "{\"message\":\"You have exceeded a secondary "
                                "rate limit. Please wait "
                                "a few minutes before you try again.\"}"),
                   0);
  assert_string_equal(polite_diagnosis_component(&d), "origin:github");
  /* A rate limit by GitHub's own description (points, CPU time and content
   * per minute); concurrency only when the body says so. */
  assert_int_equal(d.limit, POLITE_LIMIT_RATE);
  assert_true(d.retry_helps);
  assert_int_equal(d.wait_ms, 60000); /* GitHub: at least one minute */
  assert_int_equal(d.n_ids, 1);
  assert_string_equal(d.ids[0].name, "x-github-request-id");
  assert_string_equal(d.ids[0].value, "AB:CD");

  /* A plain permission 403 from GitHub is no rate limit: no retry. */
  assert_int_equal(
      diag_str(&d, "HTTP/2 403\r\nx-github-request-id: AB:CE\r\n"
                   "x-ratelimit-remaining: 4000\r\n\r\n"
                   "{\"message\":\"Resource not accessible by integration\"}"),
      0);
  assert_string_equal(polite_diagnosis_component(&d), "origin:github");
  assert_int_equal(d.limit, POLITE_LIMIT_UNKNOWN);
  assert_false(d.retry_helps);
}

static void test_status_lines(void **state) {
  (void)state;
  polite_diagnosis d;
  assert_int_equal(diag_str(&d, "HTTP/2 429\r\n\r\n"), 0);
  assert_int_equal(d.status, 429);
  assert_int_equal(diag_str(&d, "HTTP/3 503\n\n"), 0);
  assert_int_equal(d.status, 503);
  assert_int_equal(diag_str(&d, "HTTP/1.0 429 Too Many Requests"), 0);
  assert_int_equal(d.status, 429); /* no blank line: empty body */
  assert_int_equal(diag_str(&d, "\r\n\nHTTP/1.1 429 x\r\n\r\n"), 0);
  assert_int_equal(d.status, 429); /* leading blank lines skipped */

  polite_diag_error err;
  const char *bad[] = {"",
                       "HTTP/1.1\r\n",
                       "HTTP/1.1 42\r\n",
                       "HTTP/x 429\r\n",
                       "HTTP/1.1 4290\r\n",
                       "HTTP/1.1 099 x\r\n",
                       "http/1.1 429\r\n",
                       "429 Too Many\r\n",
                       NULL};
  for (int i = 0; bad[i]; i++) {
    memset(&err, 0, sizeof err);
    assert_int_equal(
        polite_diagnose_response(&d, bad[i], strlen(bad[i]), NOW_MS, &err),
        POLITE_EINVAL);
    assert_int_equal(err.line, 1);
    assert_true(strlen(err.message) > 0);
  }
}

static void test_crlf_and_lf_agree(void **state) {
  (void)state;
  polite_diagnosis a, b;
  assert_int_equal(
      diag_str(&a, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\n"
                   "x-envoy-ratelimited: true\r\n\r\nlocal_rate_limited"),
      0);
  assert_int_equal(diag_str(&b,
                            "HTTP/1.1 429 Too Many Requests\nRetry-After: 7\n"
                            "x-envoy-ratelimited: true\n\nlocal_rate_limited"),
                   0);
  assert_string_equal(polite_diagnosis_component(&a), "proxy:envoy");
  assert_string_equal(polite_diagnosis_component(&b), "proxy:envoy");
  assert_int_equal(a.wait_ms, 7000);
  assert_int_equal(b.wait_ms, 7000);
  assert_int_equal(a.limit, b.limit);
}

static void test_interim_and_redirects(void **state) {
  (void)state;
  polite_diagnosis d;
  /* 100 Continue, then the real answer. */
  assert_int_equal(
      diag_str(&d, "HTTP/1.1 100 Continue\r\n\r\n"
                   "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 4\r\n\r\n"),
      0);
  assert_int_equal(d.status, 429);
  assert_int_equal(d.wait_ms, 4000);
  /* A redirect's headers do not leak into the final diagnosis. */
  assert_int_equal(
      diag_str(
          &d,
          "HTTP/1.1 302 Found\r\nx-github-request-id: X\r\nLocation: /b\r\n\r\n"
          "HTTP/2 429\r\nretry-after: 2\r\n\r\n"),
      0);
  assert_int_equal(d.status, 429);
  assert_string_equal(polite_diagnosis_component(&d), "unknown");
  assert_int_equal(d.n_ids, 0);
  /* A proxy's CONNECT answer first. */
  assert_int_equal(diag_str(&d, "HTTP/1.1 200 Connection established\r\n\r\n"
                                "HTTP/2 503\r\nretry-after: 1\r\n\r\n"),
                   0);
  assert_int_equal(d.status, 503);
  /* A 200 body that happens to start with "HTTP/" stays a body. */
  assert_int_equal(diag_str(&d, "HTTP/1.1 200 OK\r\n\r\nHTTP/1.1 429 x"), 0);
  assert_int_equal(d.status, 200);
  /* Only an interim response: nothing to diagnose. */
  polite_diag_error err;
  const char *only = "HTTP/1.1 100 Continue\r\n\r\n";
  assert_int_equal(
      polite_diagnose_response(&d, only, strlen(only), NOW_MS, &err),
      POLITE_EINVAL);
}

static void test_bad_header_line(void **state) {
  (void)state;
  polite_diagnosis d;
  polite_diag_error err;
  const char *raw = "HTTP/1.1 429 x\r\nRetry-After: 1\r\nno colon here\r\n\r\n";
  assert_int_equal(polite_diagnose_response(&d, raw, strlen(raw), NOW_MS, &err),
                   POLITE_EINVAL);
  assert_int_equal(err.line, 3);
  raw = "HTTP/1.1 429 x\r\nBad Name: 1\r\n\r\n";
  assert_int_equal(polite_diagnose_response(&d, raw, strlen(raw), NOW_MS, &err),
                   POLITE_EINVAL);
  assert_int_equal(err.line, 2);
  /* Folded continuation lines are obsolete but not fatal. */
  raw = "HTTP/1.1 429 x\r\nX-A: 1\r\n  folded\r\n\r\n";
  assert_int_equal(polite_diagnose_response(&d, raw, strlen(raw), NOW_MS, NULL),
                   0);
}

/* The incremental API as `polite run` uses it. */
static void test_incremental_api(void **state) {
  (void)state;
  polite_diagnosis d;
  polite_diagnosis_init(&d, 429, NOW_MS);
  polite_diagnosis_feed_header(&d, "Retry-After", 11, " 12 ", 4);
  polite_diagnosis_feed_header(&d, "anthropic-ratelimit-tokens-remaining", 36,
                               "0", 1);
  polite_diagnosis_feed_header(&d, "request-id", 10, "req_42", 6);
  /* Credentials never become evidence or ids. */
  polite_diagnosis_feed_header(&d, "Set-Cookie", 10, "session=SECRET", 14);
  polite_diagnosis_feed_header(&d, "Authorization", 13, "Bearer SECRET", 13);
  const char *body = "{\"type\":\"error\",\"error\":{\"type\":"
                     "\"rate_limit_error\",\"message\":\"slow\"}}";
  polite_diagnosis_finish(&d, body, strlen(body));
  assert_string_equal(polite_diagnosis_component(&d), "origin:anthropic");
  assert_string_equal(d.vendor, "anthropic");
  assert_int_equal(d.kind, POLITE_COMP_ORIGIN);
  assert_int_equal(d.limit, POLITE_LIMIT_TOKENS);
  assert_true(d.retry_helps);
  assert_int_equal(d.wait_ms, 12000);
  assert_int_equal(d.wait_source, POLITE_WAIT_SECONDS);
  assert_int_equal(d.n_ids, 1);
  assert_string_equal(d.ids[0].value, "req_42");
  for (size_t i = 0; i < d.n_evidence; i++)
    assert_null(strstr(d.evidence[i], "SECRET"));
  /* finish is idempotent: a second call changes nothing. */
  size_t n = d.n_evidence;
  polite_diagnosis_finish(&d, "", 0);
  assert_int_equal(d.n_evidence, n);
  /* A copy is self-contained (no pointers into the input). */
  polite_diagnosis copy = d;
  memset(&d, 0xAB, sizeof d);
  assert_string_equal(polite_diagnosis_component(&copy), "origin:anthropic");

  assert_string_equal(polite_limit_name(POLITE_LIMIT_CONCURRENCY),
                      "concurrency");
  assert_string_equal(polite_component_kind_name(POLITE_COMP_GATEWAY),
                      "gateway");
  assert_string_equal(polite_limit_name((polite_limit_kind)99), "unknown");
}

/* Request ids: first value wins, long values are cut, control bytes go. */
static void test_request_ids(void **state) {
  (void)state;
  polite_diagnosis d;
  polite_diagnosis_init(&d, 429, NOW_MS);
  char longv[300];
  memset(longv, 'a', sizeof longv);
  polite_diagnosis_feed_header(&d, "X-Request-Id", 12, longv, sizeof longv);
  polite_diagnosis_feed_header(&d, "x-request-id", 12, "second", 6);
  polite_diagnosis_feed_header(&d, "cf-ray", 6,
                               "a\x01"
                               "b",
                               3);
  polite_diagnosis_finish(&d, NULL, 0);
  assert_int_equal(d.n_ids, 2);
  assert_string_equal(d.ids[0].name, "x-request-id");
  assert_int_equal(strlen(d.ids[0].value), POLITE_DIAG_ID_VALUE_SIZE - 1);
  assert_string_equal(d.ids[1].value, "a?b");
}

static void test_retry_helps_rules(void **state) {
  (void)state;
  polite_diagnosis d;
  /* Unknown limit: retry on 429/503/529 only. */
  assert_int_equal(diag_str(&d, "HTTP/1.1 503 x\r\n\r\n"), 0);
  assert_true(d.retry_helps);
  assert_int_equal(diag_str(&d, "HTTP/1.1 500 x\r\n\r\n"), 0);
  assert_false(d.retry_helps);
  /* Stripe-Should-Retry: false wins over a rate limit. */
  assert_int_equal(diag_str(&d, "HTTP/1.1 429 x\r\nRequest-Id: "
                                "req_1\r\nStripe-Should-Retry: false\r\n"
                                "\r\n{\"error\":{\"code\":\"rate_limit\"}}"),
                   0);
  assert_string_equal(polite_diagnosis_component(&d), "origin:stripe");
  assert_false(d.retry_helps);
  /* x-should-retry (OpenAI, Anthropic) is honoured the same way. */
  assert_int_equal(diag_str(&d, "HTTP/2 429\r\nopenai-version: 1\r\n"
                                "x-should-retry: false\r\n\r\n"),
                   0);
  assert_string_equal(polite_diagnosis_component(&d), "origin:openai");
  assert_false(d.retry_helps);
  /* A Cloudflare challenge is not passed by retrying. */
  assert_int_equal(
      diag_str(&d, "HTTP/2 403\r\ncf-mitigated: challenge\r\n\r\n"), 0);
  assert_string_equal(polite_diagnosis_component(&d), "cdn:cloudflare");
  assert_false(d.retry_helps);
  /* Kong: a minute window is a rate, a month window a quota. */
  assert_int_equal(diag_str(&d,
                            "HTTP/1.1 429 x\r\nX-Kong-Response-Latency: 0\r\n"
                            "X-RateLimit-Remaining-Month: 0\r\n\r\n"),
                   0);
  assert_string_equal(polite_diagnosis_component(&d), "gateway:kong");
  assert_int_equal(d.limit, POLITE_LIMIT_QUOTA);
}

/* The body is read only up to 64 KiB: a marker past that is not seen. */
static void test_body_cap(void **state) {
  (void)state;
  size_t pad = 70 * 1024;
  const char *head = "HTTP/1.1 429 x\r\n\r\n";
  const char *tail = "error code: 1015";
  size_t n = strlen(head) + pad + strlen(tail);
  char *raw = malloc(n + 1);
  assert_non_null(raw);
  memcpy(raw, head, strlen(head));
  memset(raw + strlen(head), ' ', pad);
  memcpy(raw + strlen(head) + pad, tail, strlen(tail) + 1);
  polite_diagnosis d;
  assert_int_equal(polite_diagnose_response(&d, raw, n, NOW_MS, NULL), 0);
  assert_string_equal(polite_diagnosis_component(&d), "unknown");
  /* The same marker early is seen. */
  memmove(raw + strlen(head), tail, strlen(tail));
  assert_int_equal(polite_diagnose_response(&d, raw, n, NOW_MS, NULL), 0);
  assert_string_equal(polite_diagnosis_component(&d), "cdn:cloudflare");
  free(raw);
}

/* Evidence stops at its cap instead of overflowing. */
static void test_evidence_cap(void **state) {
  (void)state;
  polite_diagnosis d;
  polite_diagnosis_init(&d, 429, NOW_MS);
  char name[32];
  for (int i = 0; i < 40; i++) {
    int n = snprintf(name, sizeof name, "x-kong-h%d", i);
    polite_diagnosis_feed_header(&d, name, (size_t)n, "1", 1);
  }
  polite_diagnosis_finish(&d, NULL, 0);
  assert_int_equal(d.n_evidence, POLITE_DIAG_MAX_EVIDENCE);
  assert_string_equal(polite_diagnosis_component(&d), "gateway:kong");
}

int main(void) {
  find_fixtures();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_fixtures),
      cmocka_unit_test(test_cdn_header_trap),
      cmocka_unit_test(test_apigw_quota_vs_throttle),
      cmocka_unit_test(test_github_secondary_403),
      cmocka_unit_test(test_every_vendor_has_a_fixture),
      cmocka_unit_test(test_every_vendor_is_documented),
      cmocka_unit_test(test_header_globs),
      cmocka_unit_test(test_polite_proxy),
      cmocka_unit_test(test_status_lines),
      cmocka_unit_test(test_crlf_and_lf_agree),
      cmocka_unit_test(test_interim_and_redirects),
      cmocka_unit_test(test_bad_header_line),
      cmocka_unit_test(test_incremental_api),
      cmocka_unit_test(test_request_ids),
      cmocka_unit_test(test_retry_helps_rules),
      cmocka_unit_test(test_body_cap),
      cmocka_unit_test(test_evidence_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
