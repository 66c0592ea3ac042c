/* libFuzzer target: raw header lines fed to the rate-limit header reader. */
#include <polite/core.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Newline-separated header lines; also runs the Go-duration and body quota
 * parsers over each line and the whole input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  polite_headers h;
  polite_headers_init(&h, 1700000000000);
  size_t start = 0;
  for (size_t i = 0; i <= size; i++) {
    if (i == size || s[i] == '\n') {
      polite_headers_feed_line(&h, s + start, i - start);
      int64_t ms;
      if (polite_go_duration_ms(s + start, i - start, &ms) == 0 &&
          (ms < 0 || ms > POLITE_RA_MAX_SECONDS * 1000))
        abort();
      start = i + 1;
    }
  }
  polite_wait_source src;
  int64_t w = polite_headers_wait_ms(&h, &src);
  if (w < -1 || w > POLITE_RA_MAX_SECONDS * 1000)
    abort();
  if ((w == -1) != (src == POLITE_WAIT_NONE || src == POLITE_WAIT_INVALID))
    abort();
  if (h.remaining < -1 || h.limit < -1 || h.reset_ms < -1 || h.window_s < -1 ||
      h.tokens_limit < -1 || h.tokens_remaining < -1 ||
      h.tokens_reset_ms < -1 || h.retry_after_ms < -1)
    abort();
  int q = polite_body_quota_hint(s, size);
  if (q != 0 && q != 1)
    abort();
  return 0;
}
