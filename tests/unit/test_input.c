/* Unit tests of the input format (lib/request.c): bare URLs, JSON lines,
 * skipped lines, errors naming the field, defaults (-X -H -d --cost),
 * request cost, streaming. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <polite/batch.h>

static polite_request *parse(const char *line, long n,
                             const polite_input_defaults *d) {
  polite_request *r = NULL;
  int rc = polite_request_parse_line(line, strlen(line), n, d, &r);
  assert_int_equal(rc, 1);
  assert_non_null(r);
  return r;
}

/* Asserts the line is invalid with a message containing `want`. */
static void expect_error(const char *line, const char *want) {
  polite_request *r = parse(line, 9, NULL);
  if (r->error == NULL)
    fail_msg("no error for %s", line);
  if (strstr(r->error, want) == NULL)
    fail_msg("error '%s' lacks '%s'", r->error, want);
  assert_int_equal(r->line, 9);
  assert_non_null(r->id);
  polite_request_free(r);
}

static void skipped_lines(void **state) {
  (void)state;
  const char *skip[] = {"", "   ", "\r", "# comment", "   # indented", "\t"};
  for (size_t i = 0; i < sizeof skip / sizeof *skip; i++) {
    polite_request *r = (polite_request *)1;
    assert_int_equal(
        polite_request_parse_line(skip[i], strlen(skip[i]), 1, NULL, &r), 0);
    assert_null(r);
  }
}

static void bare_url(void **state) {
  (void)state;
  polite_request *r = parse("  https://api.example/v1/x?q=1 \r", 7, NULL);
  assert_null(r->error);
  assert_string_equal(r->url, "https://api.example/v1/x?q=1");
  assert_string_equal(r->id, "line-7");
  assert_string_equal(polite_request_method(r), "GET");
  assert_int_equal(r->line, 7);
  assert_false(r->has_body);
  polite_request_free(r);
}

static void json_line(void **state) {
  (void)state;
  polite_request *r =
      parse("{\"id\":\"u-1\",\"method\":\"POST\",\"url\":\"http://h/p\","
            "\"headers\":{\"Content-Type\":\"text/plain\",\"X-A\":\"1\"},"
            "\"body\":\"hi\\u0000there\",\"idempotency_key\":\"k1\"}",
            3, NULL);
  assert_null(r->error);
  assert_string_equal(r->id, "u-1");
  assert_string_equal(r->method, "POST");
  assert_int_equal(r->nheaders, 2);
  assert_string_equal(r->headers[0], "Content-Type: text/plain");
  assert_int_equal(r->body_len, 8); /* the NUL byte is kept */
  assert_memory_equal(r->body, "hi\0there", 8);
  assert_string_equal(r->idempotency_key, "k1");
  polite_request *d = polite_request_dup(r);
  assert_int_equal(d->body_len, 8);
  assert_memory_equal(d->body, "hi\0there", 8);
  assert_string_equal(d->headers[1], "X-A: 1");
  polite_request_free(d);
  polite_request_free(r);

  r = parse("{\"url\":\"http://h/\",\"id\":42,\"body\":{\"a\":[1]}}", 4, NULL);
  assert_null(r->error);
  assert_string_equal(r->id, "42");
  assert_string_equal(r->body, "{\"a\":[1]}");
  assert_string_equal(polite_request_method(r), "POST");
  assert_string_equal(r->headers[0], "Content-Type: application/json");
  polite_request_free(r);
}

static void errors_name_the_field(void **state) {
  (void)state;
  expect_error("{\"url\":1}", "\"url\"");
  expect_error("{\"url\":\"ftp://h/\"}", "ftp://h/");
  expect_error("{\"url\":\"http://\"}", "no host");
  expect_error("{\"url\":\"http://h/a b\"}", "space");
  expect_error("{\"method\":\"GET\"}", "missing field \"url\"");
  expect_error("{\"url\":\"http://h/\",\"method\":\"G T\"}", "method");
  expect_error("{\"url\":\"http://h/\",\"headers\":[]}", "headers");
  expect_error("{\"url\":\"http://h/\",\"headers\":{\"A\":1}}", "\"A\"");
  expect_error(
      "{\"url\":\"http://h/\",\"headers\":{\"A B\":\"x\"}}",
      "header name \"A...\" is not a valid HTTP token (byte 2 is 0x20)");
  expect_error("{\"url\":\"http://h/\",\"headers\":{\"X\":\"a\\nb\"}}",
               "CR, LF");
  expect_error("{\"url\":\"http://h/\",\"body\":3}", "\"body\"");
  expect_error("{\"url\":\"http://h/\",\"idempotency_key\":\"\"}",
               "idempotency_key");
  expect_error("{\"url\":\"http://h/\",\"extra\":1}",
               "unknown field \"extra\"");
  expect_error("{\"url\":\"http://h/\",\"url\":\"http://h/\"}", "duplicate");
  expect_error("{\"url\":", "column");
  expect_error("[1,2]", "object");
  expect_error("not a url", "http://");
  expect_error("{\"id\":\"\",\"url\":\"http://h/\"}", "\"id\"");
}

static void errors_hide_secrets(void **state) {
  (void)state;
  polite_request *r = parse("{\"url\":\"ftp://h/?api_key=SECRET1\",\"headers\":"
                            "{\"Authorization\":\"SECRET2\\n\"}}",
                            1, NULL);
  assert_non_null(r->error);
  assert_null(strstr(r->error, "SECRET"));
  polite_request_free(r);
  r = parse("{\"url\":\"http://h/\",\"headers\":{\"Cookie\":\"SECRET3\\r\"}}",
            1, NULL);
  assert_non_null(r->error);
  assert_null(strstr(r->error, "SECRET"));
  assert_non_null(strstr(r->error, "Cookie"));
  polite_request_free(r);
}

/* A malformed JSON line never quotes the text jansson stopped at (it is
 * often the secret that broke the line): line, column and kind only. */
static void json_errors_hide_the_text(void **state) {
  (void)state;
  static const struct {
    const char *line, *kind;
    int column;
  } cases[] = {
      {"{\"url\":\"http://h/\",\"headers\":{\"Authorization\":\"Bearer SEKRIT",
       "unterminated string", 60},
      {"{\"headers\":{\"Authorization\":\"Bearer SEK\\qRIT\"}}",
       "bad escape in a string", 41},
      {"{\"headers\":{\"Authorization\":\"Bearer SEK\x01RIT\"}}",
       "control character in a string", 39},
      {"{\"headers\":{\"Authorization\":\"Bearer SEK\xff\xfeRIT\"}}",
       "invalid UTF-8", 39},
      {"{\"url\":\"http://h/\",\"SEKRIT\":", "premature end of input", 28},
      {"{\"url\":\"http://h/\",\"a\":\"SEKRIT\"",
       "premature end of input (an object is not closed)", 31},
      {"{\"headers\":{\"Authorization\":Bearer SEKRIT\"}}", "invalid token",
       34},
      {"{\"url\":\"http://h/\"} SEKRIT", "text after the JSON object", 26},
      {"{SEKRIT:1}", "object key is not a string", 7},
      {"{\"a\":\"\\uD800SEKRIT\"}", "invalid \\u escape", 19},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    polite_request *r = parse(cases[i].line, 12, NULL);
    assert_non_null(r->error);
    char want[160];
    snprintf(want, sizeof want, "not valid JSON at line 12, column %d: %s",
             cases[i].column, cases[i].kind);
    if (strstr(r->error, want) == NULL)
      fail_msg("case %zu: '%s' lacks '%s'", i, r->error, want);
    if (strstr(r->error, "SEK") != NULL || strstr(r->error, "near") != NULL)
      fail_msg("case %zu quotes the input: %s", i, r->error);
    polite_request_free(r);
  }
  /* A secret in a bad header name is not quoted past the first bad byte. */
  expect_error("{\"url\":\"http://h/\",\"headers\":{\"Authorization: Bearer "
               "SEKRIT\":\"\"}}",
               "\"Authorization...\"");
  polite_request *r =
      parse("{\"url\":\"http://h/\",\"headers\":{\"Authorization: "
            "Bearer SEKRIT\":\"\"}}",
            1, NULL);
  assert_null(strstr(r->error, "SEK"));
  polite_request_free(r);
}

/* Hostile URLs are invalid_input at once, with the field named (#15.7). */
static void url_checks(void **state) {
  (void)state;
  static const struct {
    const char *url, *why;
  } bad[] = {
      {"http://[::1:18080/", "malformed IPv6 address"},
      {"http://h:99999/", "port that is not a number from 1 to 65535"},
      {"http://h:-1/", "port that is not a number from 1 to 65535"},
      {"http://h:0/", "port that is not a number from 1 to 65535"},
      {"http://h:80:80/", "port"},
      {"http://user@:80/", "has no host"},
      {"http://:80/", "has no host"},
      {"http:///x", "has no host"},
      {"https://?q=1", "has no host"},
      {"http://exa%20mple/", "malformed host name"},
  };
  char line[256];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    polite_request *r = parse(bad[i].url, 3, NULL);
    if (r->error == NULL || strstr(r->error, bad[i].why) == NULL ||
        strstr(r->error, "url \"") != r->error)
      fail_msg("bare %s: %s", bad[i].url, r->error ? r->error : "accepted");
    assert_null(r->url);
    polite_request_free(r);
    snprintf(line, sizeof line, "{\"url\":\"%s\"}", bad[i].url);
    r = parse(line, 3, NULL);
    if (r->error == NULL || strstr(r->error, bad[i].why) == NULL ||
        strstr(r->error, "field \"url\"") != r->error)
      fail_msg("json %s: %s", bad[i].url, r->error ? r->error : "accepted");
    polite_request_free(r);
  }
  const char *good[] = {"http://h:65535/", "http://[::1]:8080/x",
                        "https://u:p@h/x?q=1#f", "http://h:/x",
                        "http://ex_a.example/"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    polite_request *r = parse(good[i], 3, NULL);
    if (r->error != NULL)
      fail_msg("%s refused: %s", good[i], r->error);
    polite_request_free(r);
  }
  /* A 1 MiB URL: refused by length, not quoted whole. */
  size_t n = 1024 * 1024;
  char *big = malloc(n + 1);
  assert_non_null(big);
  memcpy(big, "http://h/", 9);
  memset(big + 9, 'a', n - 9);
  big[n] = '\0';
  polite_request *r = parse(big, 3, NULL);
  assert_non_null(r->error);
  assert_non_null(strstr(r->error, "more than the limit of 65536 bytes"));
  assert_true(strlen(r->error) < 200);
  polite_request_free(r);
  /* 65536 bytes is still fine. */
  big[65536] = '\0';
  r = parse(big, 3, NULL);
  assert_null(r->error);
  polite_request_free(r);
  free(big);
}

/* A UTF-8 byte order mark starts line 1 only and is not part of it. */
static void bom_on_line_one(void **state) {
  (void)state;
  FILE *f = tmpfile();
  fputs("\xEF\xBB\xBFhttp://h/1\n\xEF\xBB\xBFhttp://h/2\n", f);
  rewind(f);
  polite_input *in = polite_input_open(f, NULL);
  polite_request *r;
  assert_int_equal(polite_input_next(in, &r), 1);
  assert_null(r->error);
  assert_string_equal(r->url, "http://h/1");
  polite_request_free(r);
  /* On a later line it is a stray character, and an error. */
  assert_int_equal(polite_input_next(in, &r), 1);
  assert_non_null(r->error);
  polite_request_free(r);
  polite_input_close(in);
  fclose(f);
  f = tmpfile();
  fputs("\xEF\xBB\xBF{\"url\":\"http://h/j\"}\n", f);
  rewind(f);
  in = polite_input_open(f, NULL);
  assert_int_equal(polite_input_next(in, &r), 1);
  assert_null(r->error);
  assert_string_equal(r->url, "http://h/j");
  polite_request_free(r);
  polite_input_close(in);
  fclose(f);
}

static void defaults_like_curl(void **state) {
  (void)state;
  const char *hdrs[] = {"Authorization: Bearer t", "X-A: global"};
  polite_input_defaults d = {NULL, hdrs, 2, "a=1", 3, 0};
  polite_request *r = parse("http://h/", 1, &d);
  assert_null(r->error);
  assert_string_equal(polite_request_method(r), "POST"); /* -d makes POST */
  assert_string_equal(r->body, "a=1");
  assert_int_equal(r->nheaders, 2);
  polite_request_free(r);

  /* The line's own header replaces -H of the same name; its body wins. */
  r = parse("{\"url\":\"http://h/\",\"headers\":{\"x-a\":\"line\"},"
            "\"body\":\"b\",\"method\":\"PUT\"}",
            2, &d);
  assert_null(r->error);
  assert_int_equal(r->nheaders, 2);
  assert_string_equal(r->headers[1], "x-a: line");
  assert_string_equal(r->body, "b");
  assert_string_equal(polite_request_method(r), "PUT");
  polite_request_free(r);

  polite_input_defaults x = {"DELETE", NULL, 0, NULL, 0, 0};
  r = parse("http://h/", 3, &x);
  assert_string_equal(polite_request_method(r), "DELETE");
  polite_request_free(r);
}

/* "cost": a whole number 1..POLITE_REQUEST_MAX_COST, default 1 (or
 * --cost); a line's own cost wins over --cost; dup keeps it. */
static void request_cost(void **state) {
  (void)state;
  polite_request *r = parse("http://h/", 1, NULL);
  assert_int_equal(r->cost, 1);
  polite_request_free(r);

  r = parse("{\"url\":\"http://h/\",\"cost\":1500}", 2, NULL);
  assert_null(r->error);
  assert_int_equal(r->cost, 1500);
  polite_request *d = polite_request_dup(r);
  assert_int_equal(d->cost, 1500);
  polite_request_free(d);
  polite_request_free(r);

  r = parse("{\"url\":\"http://h/\",\"cost\":1000000000}", 3, NULL);
  assert_null(r->error);
  assert_int_equal(r->cost, POLITE_REQUEST_MAX_COST);
  polite_request_free(r);

  polite_input_defaults def = {NULL, NULL, 0, NULL, 0, 7};
  r = parse("http://h/", 4, &def);
  assert_int_equal(r->cost, 7);
  polite_request_free(r);
  r = parse("{\"url\":\"http://h/\"}", 5, &def);
  assert_int_equal(r->cost, 7);
  polite_request_free(r);
  r = parse("{\"url\":\"http://h/\",\"cost\":2}", 6, &def);
  assert_int_equal(r->cost, 2);
  polite_request_free(r);

  /* Invalid costs name the field and quote the value. */
  expect_error("{\"url\":\"http://h/\",\"cost\":0}", "field \"cost\"");
  expect_error("{\"url\":\"http://h/\",\"cost\":0}", "got 0");
  expect_error("{\"url\":\"http://h/\",\"cost\":-3}", "got -3");
  expect_error("{\"url\":\"http://h/\",\"cost\":2.5}", "got 2.5");
  expect_error("{\"url\":\"http://h/\",\"cost\":\"5\"}", "got \"5\"");
  expect_error("{\"url\":\"http://h/\",\"cost\":null}", "got null");
  expect_error("{\"url\":\"http://h/\",\"cost\":1000000001}", "got 1000000001");
  expect_error("{\"url\":\"http://h/\",\"cost\":[1]}", "field \"cost\"");
  /* An invalid cost is not replaced by --cost. */
  r = parse("{\"url\":\"http://h/\",\"cost\":0}", 7, &def);
  assert_non_null(r->error);
  polite_request_free(r);
  /* The list of known fields mentions cost. */
  expect_error("{\"url\":\"http://h/\",\"costs\":1}", "cost)");
}

static void streaming_reader(void **state) {
  (void)state;
  char *big = malloc(POLITE_INPUT_MAX_LINE + 100);
  memset(big, 'a', POLITE_INPUT_MAX_LINE + 99);
  big[POLITE_INPUT_MAX_LINE + 99] = '\0';
  FILE *f = tmpfile();
  fprintf(f, "http://h/1\n\n# c\n{bad\n%s\nhttp://h/6", big);
  free(big);
  rewind(f);
  polite_input *in = polite_input_open(f, NULL);
  polite_request *r;
  assert_int_equal(polite_input_next(in, &r), 1);
  assert_string_equal(r->url, "http://h/1");
  assert_int_equal(r->line, 1);
  polite_request_free(r);
  assert_int_equal(polite_input_next(in, &r), 1);
  assert_int_equal(r->line, 4);
  assert_non_null(r->error);
  polite_request_free(r);
  assert_int_equal(polite_input_next(in, &r), 1);
  assert_int_equal(r->line, 5);
  assert_non_null(strstr(r->error, "longer than"));
  polite_request_free(r);
  /* The last line has no newline and still counts. */
  assert_int_equal(polite_input_next(in, &r), 1);
  assert_int_equal(r->line, 6);
  assert_string_equal(r->url, "http://h/6");
  polite_request_free(r);
  assert_int_equal(polite_input_next(in, &r), 0);
  assert_int_equal(polite_input_lines(in), 6);
  polite_input_close(in);
  fclose(f);
}

static void add_header_rules(void **state) {
  (void)state;
  polite_request *r = polite_request_new();
  assert_int_equal(polite_request_add_header(r, "X-A", "1"), 0);
  assert_int_equal(polite_request_add_header(r, "x-a", "2"), 0);
  assert_int_equal(r->nheaders, 1);
  assert_string_equal(r->headers[0], "x-a: 2");
  assert_int_equal(polite_request_add_header(r, "Bad:Name", "1"),
                   POLITE_EINVAL);
  assert_int_equal(polite_request_add_header(r, "X-B", "a\r\nX-C: 1"),
                   POLITE_EINVAL);
  assert_int_equal(r->nheaders, 1);
  polite_request_free(r);
}

/* has_header matches the whole name, in any case, and nothing shorter or
 * longer: "X-A" is not "X-AB", and "X-" is not "X-A". */
static void has_header_rules(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int want;
  } rows[] = {
      {"X-AB", 1}, {"x-ab", 1}, {"X-A", 0}, {"X-ABC", 0}, {"", 0}, {"Y", 0},
  };
  polite_request *r = polite_request_new();
  assert_int_equal(polite_request_add_header(r, "X-AB", "1"), 0);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    assert_int_equal(polite_request_has_header(r, rows[i].name), rows[i].want);
  polite_request_free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(skipped_lines),
      cmocka_unit_test(bare_url),
      cmocka_unit_test(json_line),
      cmocka_unit_test(errors_name_the_field),
      cmocka_unit_test(errors_hide_secrets),
      cmocka_unit_test(json_errors_hide_the_text),
      cmocka_unit_test(url_checks),
      cmocka_unit_test(bom_on_line_one),
      cmocka_unit_test(defaults_like_curl),
      cmocka_unit_test(request_cost),
      cmocka_unit_test(streaming_reader),
      cmocka_unit_test(add_header_rules),
      cmocka_unit_test(has_header_rules),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
