/* libFuzzer target: one input line of `polite run` (bare URL or JSON object),
 * with and without global defaults, plus the redaction of what it yields. */
#include <polite/batch.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const hdrs[] = {"Authorization: Bearer x", "X-A: 1"};
  polite_input_defaults def = {"PUT", hdrs, 2, "d=1", 3};
  for (int k = 0; k < 2; k++) {
    polite_request *r = NULL;
    int rc = polite_request_parse_line((const char *)data, size, 1,
                                       k ? &def : NULL, &r);
    if (rc == 1) {
      if (r->id == NULL)
        abort(); /* every parsed line has an id */
      if (r->error == NULL && r->url == NULL)
        abort(); /* a valid request always has a URL */
      polite_request *d = polite_request_dup(r);
      if (r->url) {
        char *u = polite_redact_url(r->url);
        free(u);
      }
      if (r->error) {
        char *t = polite_redact_text(r->error);
        free(t);
      }
      polite_request_free(d);
      polite_request_free(r);
    } else if (r != NULL) {
      abort(); /* skipped lines produce nothing */
    }
  }
  /* Redaction on arbitrary text must not overflow. */
  char *s = malloc(size + 1);
  if (s) {
    memcpy(s, data, size);
    s[size] = '\0';
    free(polite_redact_url(s));
    free(polite_redact_text(s));
    free(s);
  }
  return 0;
}
