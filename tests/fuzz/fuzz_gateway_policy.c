/* libFuzzer target: what clients send the gateway, through its parsers
 * (gateway/): authorities, retry-count and idempotency-key headers, the
 * memory of answers given, and the honest answer built from any error
 * text. Checks the bounds each promises. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gateway.h"

/* Newline-separated lines; a line "name: value" is a header field. */
static size_t fields_of(const char *s, size_t size, polite_header_field *f,
                        size_t max) {
  size_t n = 0, start = 0;
  for (size_t i = 0; i <= size && n < max; i++) {
    if (i < size && s[i] != '\n')
      continue;
    const char *line = s + start;
    size_t len = i - start;
    const char *colon = memchr(line, ':', len);
    if (colon) {
      f[n].name = line;
      f[n].name_len = (size_t)(colon - line);
      f[n].value = colon + 1;
      f[n].value_len = len - f[n].name_len - 1;
      n++;
    }
    start = i + 1;
  }
  return n;
}

static void authority(const char *s, size_t size) {
  static const char *const schemes[] = {"http", "https"};
  for (int k = 0; k < 2; k++) {
    char out[GW_ACCOUNT_MAX], again[GW_ACCOUNT_MAX], err[128];
    if (polite__gw_authority(schemes[k], s, size, out, sizeof out, err,
                             sizeof err) != 0) {
      if (err[0] == '\0')
        abort(); /* a refusal always says why */
      continue;
    }
    size_t n = strlen(out);
    if (n == 0 || n >= GW_ACCOUNT_MAX || memchr(out, '@', n))
      abort();
    for (size_t i = 0; i < n; i++)
      if (out[i] >= 'A' && out[i] <= 'Z')
        abort();
    /* Canonical means a fixed point. */
    if (polite__gw_authority(schemes[k], out, n, again, sizeof again, err,
                             sizeof err) != 0 ||
        strcmp(out, again) != 0)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *s = (const char *)data;
  authority(s, size);
  polite_header_field f[64];
  size_t n = fields_of(s, size, f, 64);
  int r = polite__gw_client_retries(f, n);
  if (r < -1 || r > GW_CLIENT_RETRIES_MAX)
    abort();
  size_t klen;
  const char *key = polite__gw_idempotency_key(f, n, &klen);
  if (key && (klen == 0 || key < s || key + klen > s + size))
    abort();
  /* Every field's value as a URL, noted and looked up in a small table. */
  gw_seen *t = polite__gw_seen_new(4, 1000);
  if (t == NULL)
    abort();
  char url[512];
  for (size_t i = 0; i < n; i++) {
    size_t l = f[i].value_len < sizeof url - 1 ? f[i].value_len : 0;
    memcpy(url, f[i].value, l);
    url[l] = '\0';
    int64_t early;
    if (i % 3 == 2)
      (void)polite__gw_seen_retry(t, "GET", url, (int64_t)i * 100, &early);
    else
      polite__gw_seen_note(t, "GET", url, i % 2 ? 429 : 503,
                           (int64_t)(i * 37 % 5000) - 1, (int64_t)i * 100);
    if (polite__gw_seen_count(t) > 4)
      abort();
  }
  polite__gw_seen_free(t);
  /* The honest answer to any error text, for every outcome. */
  char *text = malloc(size + 1);
  if (text == NULL)
    return 0;
  memcpy(text, s, size);
  text[size] = '\0';
  for (int o = 0; o < POLITE_OUT_COUNT; o++) {
    polite_result res;
    memset(&res, 0, sizeof res);
    res.outcome = (polite_outcome)o;
    res.error = text;
    res.retry_after_ms = size % 2 ? (int64_t)size * 1000 : -1;
    res.pause_status = size % 3 ? 429 : 503;
    gw_reply g;
    if (polite__gw_reply(&res, "api.test", &g) != 0)
      abort(); /* any text, even invalid UTF-8, gets an answer */
    if (g.status < 400 || g.status > 599 || g.body_len != strlen(g.body))
      abort();
    polite__gw_reply_free(&g);
  }
  free(text);
  return 0;
}
