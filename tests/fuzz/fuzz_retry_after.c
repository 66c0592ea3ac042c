/* libFuzzer target: Retry-After parsing and the delay computed from it. */
#include <polite/core.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The first 16 bytes pick the clocks (so extreme values are explored), the
 * rest is the field value. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int64_t now_ms = 1700000000000, server = -1;
  if (size >= 16) {
    memcpy(&now_ms, data, 8);
    memcpy(&server, data + 8, 8);
    data += 16;
    size -= 16;
  }
  polite_retry_after ra;
  polite_retry_after_parse((const char *)data, size, now_ms / 1000, &ra);
  int64_t d = polite_retry_after_delay_ms(&ra, now_ms, server);
  switch (ra.kind) {
  case POLITE_RA_NONE:
  case POLITE_RA_INVALID:
    if (d != -1)
      abort();
    break;
  case POLITE_RA_SECONDS:
    if (ra.seconds < 0 || ra.seconds > POLITE_RA_MAX_SECONDS)
      abort();
    if (ra.saturated && ra.seconds != POLITE_RA_MAX_SECONDS)
      abort();
    if (d != ra.seconds * 1000)
      abort();
    break;
  case POLITE_RA_DATE:
    if (d < 0 || d > POLITE_RA_MAX_SECONDS * 1000)
      abort();
    break;
  default: abort();
  }
  /* Seconds never depend on the clocks. */
  if (ra.kind == POLITE_RA_SECONDS &&
      polite_retry_after_delay_ms(&ra, 0, -1) != d)
    abort();
  return 0;
}
