/* libFuzzer target for polite report's log reader: any bytes, split into
 * lines, fed to the model and drawn as a page: no crash, no undefined
 * behaviour, counts that keep their promises, and a page that ends. */
#include "../../src/report_bars.c"
#include "../../src/report_charts.c"
#include "../../src/report_model.c"
#include "../../src/report_page.c"
#include "../../src/report_parse.c"
#include "../../common/report_svg.c"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static FILE *devnull;
  if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
    return 0;
  /* Bad lines are named on stderr; the fuzzer's output stays readable. */
  FILE *saved = stderr;
  stderr = devnull;
  rp_model *m = rp_model_new();
  if (m == NULL) {
    stderr = saved;
    return 0;
  }
  rp_model_source(m, "fuzz");
  long lineno = 0;
  uint64_t bad = 0;
  for (size_t i = 0; i < size;) {
    const uint8_t *nl = memchr(data + i, '\n', size - i);
    size_t len = nl ? (size_t)(nl - (data + i)) : size - i;
    lineno++;
    if (rp_model_feed_line(m, (const char *)data + i, len, lineno) != 0)
      bad++;
    i += len + 1;
  }
  rp_model_source_end(m);
  if (m->bad_lines != bad || m->nb < 0 || m->nb > RP_BUCKETS ||
      m->npause > RP_PAUSES || m->npairs > RP_PAIRS ||
      m->first_attempts + m->retries != m->attempts)
    abort();
  rp_derived d;
  rp_model_derive(m, &d);
  if (d.paused_ms < 0)
    abort();
  if (rp_write_page(devnull, m) != 0)
    abort();
  rp_model_free(m);
  stderr = saved;
  return 0;
}
