/* libFuzzer target for the proxy's JSON loaders: the --config file and the Dev
 * Proxy errors/mocks files. No crash, no leak, errors always explained, and
 * every loaded rule can be matched against a request. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* proxy/ is not part of libpolite: CMakeLists.txt links the loaders' sources
 * (px_config.c, px_glob.c, px_rules.c) into this target. */
#include "px.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  char err[1024];

  /* 1. As a --config file. */
  px_config c;
  polite__px_config_init(&c);
  err[0] = '\0';
  int rc = polite__px_config_parse_json(&c, text, size, "fuzz.json", "/tmp",
                                        err, sizeof err);
  if (rc != 0 &&
      (rc != -1 || err[0] == '\0' || strstr(err, "fuzz.json") == NULL))
    abort(); /* a failure must name the file */
  if (rc == 0) {
    if (!(c.failure_rate >= 0 && c.failure_rate <= 100) || c.burst < 1 ||
        c.latency_min_ms > c.latency_max_ms || c.listen == NULL)
      abort();
  }
  polite__px_config_free(&c);

  /* 2. As a URL to redact (bounded output, never longer than promised). */
  char *url = malloc(size + 1);
  if (url) {
    memcpy(url, data, size);
    url[size] = '\0';
    char *red = polite__px_redact_url(url);
    if (red == NULL || strlen(red) > strlen(url) * 9 + 16)
      abort();
    (void)polite__px_glob_match(url, red, red);
    free(red);
    free(url);
  }

  /* 3. As an errors file and as a mocks file. */
  for (int k = 0; k < 2; k++) {
    px_rules r;
    err[0] = '\0';
    rc = polite__px_rules_parse(&r, k ? PX_RULES_MOCKS : PX_RULES_ERRORS, text,
                                size, "fuzz.json", NULL, PX_FILE_MAX_DEFAULT,
                                err, sizeof err);
    if (rc != 0) {
      if (err[0] == '\0' || r.n != 0)
        abort();
      continue;
    }
    for (size_t i = 0; i < r.n; i++) {
      if (r.rules[i].url == NULL || r.rules[i].nresponses == 0)
        abort();
      for (size_t j = 0; j < r.rules[i].nresponses; j++) {
        const px_response *p = &r.rules[i].responses[j];
        if (p->status < 100 || p->status > 599)
          abort();
        for (size_t h = 0; h < p->nheaders; h++)
          if (strpbrk(p->headers[h].name, "\r\n:") ||
              strpbrk(p->headers[h].value, "\r\n"))
            abort(); /* would split the response */
      }
    }
    (void)polite__px_rules_match(&r, "GET", "http://127.0.0.1:1/a/b?c=d",
                                 "body", 4);
    (void)polite__px_rules_match(&r, "POST", "http://h/", NULL, 0);
    polite__px_rules_free(&r);
  }
  return 0;
}
