/* libFuzzer target for the attempt log's line writer (src/run_jline.c):
 * the input's bytes become an attempt's text fields, numbers and
 * decisions, and raw text; every line must be byte for byte the line
 * jansson wrote before (tests/unit/jline_ref.h), and never crash. */
#define _GNU_SOURCE
#include "../../src/run_jline.c"
#include "../../src/run_output.c"
#include "../../src/run_summary.c"
#include "../unit/jline_ref.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Raw text (NUL and all) through both writers. */
static void check_text(ref_src *src) {
  char buf[300];
  size_t n = ref_byte(src) % sizeof buf;
  for (size_t k = 0; k < n; k++)
    buf[k] = (char)ref_byte(src);
  if (!ref_same_text(buf, n))
    abort();
}

/* One attempt line through run_log_attempt against the reference. */
static void check_attempt(ref_src *src, FILE *f, char **buf, size_t *len) {
  char id[128], url[160], method[128], ra[128], rid[128], err[128];
  polite_request req = {0};
  req.id = ref_str(src, id, sizeof id);
  memcpy(url, "https://h.test/", 16);
  ref_str(src, url + 15, sizeof url - 15);
  req.url = url;
  polite_attempt a = {0};
  polite_diagnosis d;
  memset(&d, 0, sizeof d);
  unsigned r = ref_byte(src);
  a.req = &req;
  a.method = r & 1 ? ref_str(src, method, sizeof method) : NULL;
  a.attempt = ref_byte(src);
  a.start_wall_ms = ref_int(src) % 400000000000000LL;
  a.end_wall_ms = ref_int(src) % 400000000000000LL;
  a.status = r & 2 ? 0 : (int)ref_byte(src) * 3;
  a.retry_after = r & 4 ? ref_str(src, ra, sizeof ra) : NULL;
  a.request_id = r & 8 ? ref_str(src, rid, sizeof rid) : NULL;
  a.request_id_header = r & 16 ? "x-request-id" : NULL;
  a.error = r & 32 ? ref_str(src, err, sizeof err) : NULL;
  a.decision.action = (polite_action)(ref_byte(src) % 3);
  a.decision.reason = (polite_reason)(ref_byte(src) % (POLITE_R_CANCELLED + 1));
  a.decision.wait_ms = ref_int(src);
  a.decision.server_wait_ms = ref_int(src);
  a.decision.account_pause = (int)(ref_byte(src) & 1);
  a.decision.why = r & 64 ? "a sentence" : NULL;
  if (r & 128) {
    strcpy(d.component, "cdn:cloudflare");
    d.limit = (polite_limit_kind)(ref_byte(src) % 5);
    d.retry_helps = (int)(ref_byte(src) & 1);
    d.wait_ms = ref_int(src);
    d.n_evidence = ref_byte(src) % (POLITE_DIAG_MAX_EVIDENCE + 1);
    for (size_t k = 0; k < d.n_evidence; k++)
      ref_str(src, d.evidence[k], sizeof d.evidence[k]);
    a.diagnosis = &d;
  }
  size_t at = *len;
  run_log l = {.f = f, .path = "fuzz"};
  run_log_attempt(&l, &a);
  run_jline_free(&l.line);
  fflush(f);
  char *ref = ref_attempt(&a, 0, -1, -1);
  if (ref == NULL)
    abort();
  size_t rn = strlen(ref);
  if (*len - at != rn + 1 || memcmp(*buf + at, ref, rn) != 0)
    abort();
  free(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ref_src src = {data, size, 0, 0};
  check_text(&src);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return 0;
  while (src.at < src.size)
    check_attempt(&src, f, &buf, &len);
  fclose(f);
  free(buf);
  return 0;
}
