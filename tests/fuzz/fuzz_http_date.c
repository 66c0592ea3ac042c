/* libFuzzer target: HTTP-date parsing, with a format/parse round trip. */
#include <polite/core.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The first 8 bytes are `now` (for RFC 850 years), the rest the date. Any
 * accepted date must format, and the formatted text must parse back to the
 * same instant; any int64 must either format and round-trip or be refused. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int64_t now = 1700000000, t;
  char buf[64];
  if (size >= 8) {
    memcpy(&now, data, 8);
    data += 8;
    size -= 8;
  }
  if (polite_http_date_parse((const char *)data, size, now, &t) == 0) {
    int n = polite_http_date_format(t, buf, sizeof buf);
    if (n != 29)
      abort();
    int64_t back;
    if (polite_http_date_parse(buf, (size_t)n, now, &back) != 0 || back != t)
      abort();
  }
  /* The clock bytes read as an instant. */
  int n = polite_http_date_format(now, buf, sizeof buf);
  if (n == 29) {
    int64_t back;
    if (polite_http_date_parse(buf, 29, 0, &back) != 0 || back != now)
      abort();
    if (buf[29] != '\0')
      abort();
  } else if (n != POLITE_EINVAL) {
    abort();
  }
  return 0;
}
