/* Unit tests of the attempt log's hand-written line writer
 * (src/run_jline.c): every line it writes is byte for byte the line
 * jansson wrote before (tests/unit/jline_ref.h), over every one- and
 * two-byte string, the three-byte strings around UTF-8's edges, random
 * hostile text, extreme numbers, and many whole attempt and rate lines. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jline_ref.h"

static void every_short_string_is_written_as_jansson_does(void **state) {
  (void)state;
  unsigned char b[3];
  for (unsigned x = 0; x < 256; x++) {
    b[0] = (unsigned char)x;
    assert_true(ref_same_text((char *)b, 1));
    for (unsigned y = 0; y < 256; y++) {
      b[1] = (unsigned char)y;
      assert_true(ref_same_text((char *)b, 2));
    }
  }
  /* Three bytes behind the leads where overlong forms, surrogates and
   * the end of Unicode are decided. */
  static const unsigned char leads[] = {0xc2, 0xdf, 0xe0, 0xed,
                                        0xef, 0xf0, 0xf4, 0xf5};
  for (size_t l = 0; l < sizeof leads; l++)
    for (unsigned y = 0x70; y < 0x100; y++)
      for (unsigned z = 0x70; z < 0x100; z++) {
        b[0] = leads[l];
        b[1] = (unsigned char)y;
        b[2] = (unsigned char)z;
        assert_true(ref_same_text((char *)b, 3));
      }
}

static void random_hostile_text_is_written_as_jansson_does(void **state) {
  (void)state;
  ref_src src = {NULL, 0, 0, 42};
  char buf[256];
  for (int i = 0; i < 50000; i++) {
    size_t n = ref_byte(&src) % 40;
    for (size_t k = 0; k < n; k++) /* raw bytes, NUL included */
      buf[k] = (char)ref_byte(&src);
    assert_true(ref_same_text(buf, n));
    ref_str(&src, buf, sizeof buf);
    assert_true(ref_same_text(buf, strlen(buf)));
  }
}

/* The writer copies runs of plain bytes 8 at a time: every byte value at
 * every place of such a run (and of the bytes after it) must still be
 * seen. */
static void
one_odd_byte_in_a_plain_run_is_written_as_jansson_does(void **state) {
  (void)state;
  char buf[24];
  for (int c = 0; c < 256; c++)
    for (size_t len = 8; len <= sizeof buf; len += 5)
      for (size_t k = 0; k < len; k++) {
        memset(buf, 'a' + (int)(k % 26), sizeof buf);
        buf[k] = (char)c;
        assert_true(ref_same_text(buf, len));
      }
}

static void numbers_are_written_as_jansson_does(void **state) {
  (void)state;
  static const long long ints[] = {0,
                                   1,
                                   -1,
                                   9,
                                   10,
                                   1234567890123LL,
                                   -9223372036854775807LL - 1,
                                   9223372036854775807LL};
  static const double reals[] = {
      0,    1,    -1,   0.5,     4.5,      20,   1e15, 1e16,    1e17,   1e21,
      1e22, 1e-5, 1e-7, 1.5e300, 4.9e-324, -0.0, 0.1,  1.0 / 3, 12.345, 1e100};
  ref_src src = {NULL, 0, 0, 7};
  for (int i = 0; i < 20000; i++) {
    double r;
    if (i < (int)(sizeof reals / sizeof reals[0])) {
      r = reals[i];
    } else {
      long long bits = ref_int(&src);
      memcpy(&r, &bits, sizeof r);
      if (!isfinite(r))
        continue;
    }
    long long v = i < 8 ? ints[i] : ref_int(&src);
    run_jline j = {0};
    run_jline_begin(&j);
    run_jline_int(&j, "i", v);
    run_jline_real(&j, "r", r);
    run_jline_bool(&j, "b", i & 1);
    run_jline_null(&j, "n");
    const char *mine = run_jline_end(&j);
    json_t *o = json_object();
    json_object_set_new(o, "i", json_integer(v));
    json_object_set_new(o, "r", json_real(r));
    json_object_set_new(o, "b", json_boolean(i & 1));
    json_object_set_new(o, "n", json_null());
    char *ref = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (strcmp(mine, ref) != 0)
      fprintf(stderr, "mine %s\nref  %s\n", mine, ref);
    assert_string_equal(mine, ref);
    free(ref);
    run_jline_free(&j);
  }
}

/* The gateway's hook as cmd_gateway.c writes it, with the values the test
 * chose. */
typedef struct {
  long long queued, retries;
} gw_fields;

static void gw_extra(void *ud, const polite_attempt *a, run_jline *j) {
  const gw_fields *g = ud;
  run_jline_cstr(j, "layer", a->attempt > 1 ? "gateway" : "client");
  if (g->queued >= 0)
    run_jline_int(j, "queued_ms", g->queued);
  else
    run_jline_null(j, "queued_ms");
  if (g->retries >= 0)
    run_jline_int(j, "client_retries", g->retries);
  else
    run_jline_null(j, "client_retries");
}

static void attempt_lines_are_written_as_jansson_does(void **state) {
  (void)state;
  ref_src src = {NULL, 0, 0, 2026};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  run_log l = {.f = f, .path = "memory"};
  gw_fields g;
  size_t at = 0;
  char id[256], url[256], method[256], ra[256], rid[256], rh[256], err[256];
  for (int i = 0; i < 20000; i++) {
    polite_request req = {0};
    req.id = ref_str(&src, id, sizeof id);
    snprintf(url, 64, "https://h%d.test/", i % 7);
    ref_str(&src, url + strlen(url), sizeof url - 64);
    req.url = url;
    polite_diagnosis d;
    memset(&d, 0, sizeof d);
    polite_attempt a = {0};
    a.req = &req;
    unsigned r = ref_byte(&src);
    a.method = r & 1 ? ref_str(&src, method, sizeof method) : NULL;
    a.attempt = 1 + ref_byte(&src) % 4;
    a.start_wall_ms = (long long)(ref_int(&src) % 4000000000000LL);
    if (a.start_wall_ms < 0)
      a.start_wall_ms = -a.start_wall_ms;
    a.end_wall_ms = a.start_wall_ms + ref_byte(&src) * 7;
    a.status = r & 2 ? 0 : 200 + ref_byte(&src) % 400;
    a.retry_after = r & 4 ? ref_str(&src, ra, sizeof ra) : NULL;
    a.request_id = r & 8 ? ref_str(&src, rid, sizeof rid) : NULL;
    a.request_id_header = r & 16 ? ref_str(&src, rh, sizeof rh) : NULL;
    a.error = r & 32 ? ref_str(&src, err, sizeof err) : NULL;
    a.decision.action = (polite_action)(ref_byte(&src) % 3);
    a.decision.reason =
        (polite_reason)(ref_byte(&src) % (POLITE_R_CANCELLED + 1));
    a.decision.wait_ms = ref_int(&src) % 100000;
    a.decision.server_wait_ms = (ref_int(&src) % 100000) - 50000;
    a.decision.account_pause = (int)(ref_byte(&src) & 1);
    a.decision.why = r & 64 ? "the server asked to wait" : NULL;
    if (r & 128) {
      strcpy(d.component, "unknown");
      d.limit = (polite_limit_kind)(ref_byte(&src) % 5);
      d.retry_helps = (int)(ref_byte(&src) & 1);
      d.wait_ms = (ref_int(&src) % 10000) - 5000;
      d.n_evidence = ref_byte(&src) % 4;
      for (size_t k = 0; k < d.n_evidence; k++)
        ref_str(&src, d.evidence[k], sizeof d.evidence[k]);
      a.diagnosis = &d;
    }
    int gw = i & 1;
    g.queued = ref_byte(&src) & 1 ? -1 : (long long)ref_byte(&src) * 3;
    g.retries = ref_byte(&src) & 1 ? -1 : (long long)(ref_byte(&src) % 5);
    l.extra = gw ? gw_extra : NULL;
    l.extra_ud = &g;
    run_log_attempt(&l, &a);
    fflush(f);
    char *ref = ref_attempt(&a, gw, g.queued, g.retries);
    assert_non_null(ref);
    size_t rn = strlen(ref);
    assert_int_equal(len - at, rn + 1);
    if (memcmp(buf + at, ref, rn) != 0)
      fprintf(stderr, "mine %.*s\nref  %s\n", (int)rn, buf + at, ref);
    assert_memory_equal(buf + at, ref, rn);
    assert_int_equal(buf[at + rn], '\n');
    at = len;
    free(ref);
  }
  assert_int_equal(run_log_close(&l), 0);
  free(buf);
}

static void rate_lines_are_written_as_jansson_does(void **state) {
  (void)state;
  ref_src src = {NULL, 0, 0, 5};
  char *buf = NULL;
  size_t len = 0, at = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  run_log l = {.f = f, .path = "memory"};
  for (int i = 0; i < 5000; i++) {
    polite_rate_change c = {(long long)ref_int(&src) % 10000000000000LL,
                            (double)ref_int(&src) / 1e15,
                            i % 3 ? (double)(ref_byte(&src)) / 7 : -1,
                            "throttle",
                            "a 429 cut it",
                            i % 2 ? "api.example.com" : NULL};
    run_log_rate(&l, &c);
    fflush(f);
    char *ref = ref_rate(&c);
    size_t rn = strlen(ref);
    assert_int_equal(len - at, rn + 1);
    assert_memory_equal(buf + at, ref, rn);
    at = len;
    free(ref);
  }
  assert_int_equal(run_log_close(&l), 0);
  free(buf);
}

/* The gateway's deferred log: lines wait in the stream's buffer until
 * run_log_flush, and a write that fails there (a full disk) stops the log
 * and is reported by run_log_close, as a failed line is without deferral. */
static void deferred_lines_wait_for_the_flush(void **state) {
  (void)state;
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  run_log l = {.f = f, .path = "memory", .deferred = 1};
  polite_rate_change c = {1, 4.5, -1, "start", "first", NULL};
  run_log_rate(&l, &c);
  run_log_rate(&l, &c);
  assert_int_equal(len, 0); /* open_memstream's len moves at a flush */
  run_log_flush(&l);
  assert_true(len > 0);
  assert_int_equal(strchr(buf, '\n') - buf + 1, len / 2);
  assert_int_equal(run_log_close(&l), 0);
  free(buf);

  FILE *full = fopen("/dev/full", "w");
  if (full == NULL)
    return; /* no /dev/full here: the first half stands alone */
  run_log d = {.f = full, .path = "/dev/full", .deferred = 1};
  run_log_rate(&d, &c);
  assert_int_equal(d.failed, 0); /* buffered: nothing written yet */
  run_log_flush(&d);
  assert_int_equal(d.failed, 1);
  FILE *saved = stderr; /* run_log_close names the file on stderr */
  stderr = fopen("/dev/null", "w");
  assert_int_equal(run_log_close(&d), -1);
  fclose(stderr);
  stderr = saved;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_short_string_is_written_as_jansson_does),
      cmocka_unit_test(random_hostile_text_is_written_as_jansson_does),
      cmocka_unit_test(one_odd_byte_in_a_plain_run_is_written_as_jansson_does),
      cmocka_unit_test(numbers_are_written_as_jansson_does),
      cmocka_unit_test(attempt_lines_are_written_as_jansson_does),
      cmocka_unit_test(rate_lines_are_written_as_jansson_does),
      cmocka_unit_test(deferred_lines_wait_for_the_flush),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
