/* polite proxy: --preset NAME, the limit shapes of well-known APIs as rows
 * of options, and --preset list. */
#include "px.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct {
  const char *opt, *value;
} preset_opt;

#define PRESET_OPTS 12

/* Each preset: a name, what it imitates, and the options it sets (flags
 * given after it override them). */
static const struct {
  const char *name;
  const char *about;
  preset_opt opts[PRESET_OPTS];
} presets[] = {
    {"openai",
     "an OpenAI-like API: 60 requests/min in a sliding window, OpenAI's "
     "x-ratelimit-*-requests headers, a daily quota of 10000 requests "
     "(insufficient_quota), 2% injected 429s",
     {{"rate-limit", "60/min"},
      {"rate-limit-mode", "sliding"},
      {"rate-limit-headers", "openai"},
      {"quota", "10000"},
      {"quota-period", "day"},
      {"failure-rate", "2"},
      {"retry-after", "1"},
      {"retry-after-scope", "client"},
      {"rate-limit-scope", "client"}}},
    {"github",
     "a GitHub-like API: primary limit 5000/hour in a fixed window with "
     "x-ratelimit-limit/-remaining/-reset (epoch seconds) on every answer; "
     "secondary limit of 100 requests in flight answered 403 with "
     "Retry-After: 60",
     {{"rate-limit", "5000/h"},
      {"rate-limit-mode", "fixed"},
      {"rate-limit-headers", "devproxy"},
      {"warning-threshold", "0"},
      {"reset-format", "utc-epoch-seconds"},
      {"header-names", "x-ratelimit"},
      {"concurrency-limit", "100"},
      {"concurrency-status", "403"},
      {"concurrency-retry-after", "60"},
      {"rate-limit-scope", "client"},
      {"retry-after-scope", "client"}}},
    {"graph",
     "a Microsoft Graph-like API: 600 requests/min per client, 5% injected "
     "429s, Retry-After on 429 and 503, and an early retry restarts the wait "
     "(--penalty)",
     {{"rate-limit", "600/min"},
      {"rate-limit-mode", "sliding"},
      {"rate-limit-scope", "client"},
      {"retry-after-scope", "client"},
      {"failure-rate", "5"},
      {"retry-after", "2"},
      {"penalty", "true"}}},
};

#define NPRESETS (sizeof presets / sizeof presets[0])

int polite__px_preset_apply(px_config *c, const char *name, char *err,
                            size_t errlen) {
  for (size_t i = 0; i < NPRESETS; i++) {
    if (strcasecmp(presets[i].name, name) != 0)
      continue;
    for (size_t k = 0; k < PRESET_OPTS && presets[i].opts[k].opt; k++) {
      char msg[512];
      if (polite__px_config_set(c, presets[i].opts[k].opt,
                                presets[i].opts[k].value, NULL, msg,
                                sizeof msg) < 0) {
        snprintf(err, errlen, "%s: %s", name, msg);
        return -1;
      }
    }
    return 0;
  }
  char list[128] = "";
  for (size_t i = 0; i < NPRESETS; i++) {
    size_t n = strlen(list);
    snprintf(list + n, sizeof list - n, "%s%s", i ? ", " : "", presets[i].name);
  }
  snprintf(err, errlen, "expected list, %s, got '%s'", list, name);
  return -1;
}

void polite__px_preset_list(FILE *f) {
  for (size_t i = 0; i < NPRESETS; i++) {
    fprintf(f, "%s\n  %s\n ", presets[i].name, presets[i].about);
    for (size_t k = 0; k < PRESET_OPTS && presets[i].opts[k].opt; k++) {
      const preset_opt *o = &presets[i].opts[k];
      if (polite__px_config_is_bool(o->opt))
        fprintf(f, " --%s", o->opt); /* a flag, as typed */
      else
        fprintf(f, " --%s %s", o->opt, o->value);
    }
    fprintf(f, "\n");
  }
}
