/* libFuzzer target for polite_rate_parse, polite_duration_parse and
 * polite_go_duration_ms (one reader, lib/duration.c): no crash, no undefined
 * behaviour, and the results keep their promises. */
#include <polite/core.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Both parsers take NUL-terminated strings; an embedded NUL just ends the
   * string early, as it would for a command-line argument. */
  char *s = malloc(size + 1);
  if (s == NULL)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';

  double per_s = -1;
  int rc = polite_rate_parse(s, &per_s);
  if (rc == POLITE_OK) {
    if (!isfinite(per_s) || !(per_s > 0) || per_s > 1e9)
      abort();
    /* Every accepted rate can be given to the limiter. */
    polite_gcra g;
    if (polite_gcra_init(&g, per_s, 1) != POLITE_OK)
      abort();
  } else if (rc != POLITE_EINVAL || per_s != -1) {
    abort();
  }

  int64_t ms = -7;
  rc = polite_duration_parse(s, &ms);
  if (rc == POLITE_OK) {
    if (ms < 0)
      abort();
  } else if ((rc != POLITE_EINVAL && rc != POLITE_ERANGE) || ms != -7) {
    abort();
  }

  /* Go's dialect takes the counted bytes (NULs included) and saturates at
   * the header cap instead of failing. */
  ms = -7;
  rc = polite_go_duration_ms((const char *)data, size, &ms);
  if (rc == POLITE_OK) {
    if (ms < 0 || ms > POLITE_RA_MAX_SECONDS * 1000)
      abort();
  } else if (rc != POLITE_EINVAL || ms != -7) {
    abort();
  }

  free(s);
  return 0;
}
