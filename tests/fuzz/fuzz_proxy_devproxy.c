/* libFuzzer target for Dev Proxy's configuration: the YAML reader and the
 * devproxyrc mapping (JSON and YAML), per-plugin urlsToWatch and the check
 * of the watch lists in every mode. No crash, no leak, every failure names
 * the file, what loads is within the options' bounds, the proxy watches
 * every URL a plugin's own list names, and a refused list is named. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* proxy/ is not part of libpolite: CMakeLists.txt links the loaders' sources
 * (as for fuzz_proxy_config) into this target. */
#include "px.h"

#include <jansson.h>

/* The lists once merged, and the check in each mode. */
static void check_watch(px_config *c) {
  char err[1024] = "";
  if (polite__px_plugin_watch_finish(c, err, sizeof err) != 0)
    return; /* out of memory */
  for (int p = 0; p < PX_PLUG__COUNT; p++) {
    const px_watch *w = &c->plugin_watch[p];
    for (size_t i = 0; w->own && i < w->n; i++) {
      size_t j = 0;
      while (j < c->nwatch && strcmp(c->watch[j], w->pat[i]) != 0)
        j++;
      if (j == c->nwatch)
        abort(); /* a plugin's own URL is not watched */
    }
  }
  static const char *const upstreams[] = {NULL, "http://127.0.0.1:9",
                                          "https://api.test:8443/v1"};
  for (int mode = 0; mode < 4; mode++) {
    c->forward_mode = mode == 3;
    free(c->upstream);
    c->upstream = mode < 3 && upstreams[mode] ? strdup(upstreams[mode]) : NULL;
    err[0] = '\0';
    if (polite__px_watch_check(c, err, sizeof err) != 0 &&
        (strstr(err, "mode") == NULL || strstr(err, "match") == NULL))
      abort(); /* a refusal names the mode and says why */
  }
}

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
  if (rc == 0)
    check_watch(&c);
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
