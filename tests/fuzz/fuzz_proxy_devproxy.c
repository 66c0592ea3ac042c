/* libFuzzer target for Dev Proxy's configuration: the YAML reader and the
 * devproxyrc mapping (JSON and YAML). No crash, no leak, every failure names
 * the file, and what loads is within the options' bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* proxy/ is not part of libpolite: CMakeLists.txt links the loaders' sources
 * (as for fuzz_proxy_config) into this target. */
#include "px.h"

#include <jansson.h>

static void apply(json_t *root) {
  px_config c;
  polite__px_config_init(&c);
  char err[1024] = "";
  /* The directory does not exist: file options are recorded, not read. */
  int rc = polite__px_devproxy_apply(&c, root, "rc.json", "/nonexistent", err,
                                     sizeof err);
  if (rc != 0 && (err[0] == '\0' || strstr(err, "rc.json") == NULL))
    abort(); /* a failure must name the file */
  if (rc == 0 && (!(c.failure_rate >= 0 && c.failure_rate <= 100) ||
                  c.latency_min_ms > c.latency_max_ms || c.listen == NULL ||
                  (c.rate_n > 0 && c.rate_cost > c.rate_n)))
    abort();
  polite__px_config_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  char err[1024] = "";
  json_t *y = polite__px_yaml_to_json(text, size, "rc.yaml", err, sizeof err);
  if (y == NULL && (err[0] == '\0' || strstr(err, "rc.yaml") == NULL))
    abort();
  if (y)
    apply(y);
  json_decref(y);
  json_t *j = json_loadb(text, size, 0, NULL);
  if (j)
    apply(j);
  json_decref(j);
  return 0;
}
