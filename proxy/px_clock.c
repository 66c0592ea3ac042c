/* polite proxy: the clocks it reads, the real ones or, with --test-clock, a
 * controlled one that only POST /__polite/clock moves (so that a test of
 * Retry-After, rate windows and quotas needs no sleep). */
#include "px_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One controlled clock per process (the proxy runs one loop). */
static struct { int64_t mono_us, wall_ms; } fake;

static int64_t fake_mono(void *ud) {
  (void)ud;
  return fake.mono_us;
}

static int64_t fake_wall(void *ud) {
  (void)ud;
  return fake.wall_ms;
}

static const polite_env fake_env = {fake_mono, fake_wall, NULL, NULL};

void polite__px_clock_init(px_server *s) {
  s->env = polite_env_real();
  if (!s->cfg->test_clock)
    return;
  /* It starts where the real clocks are, then stands still. */
  fake.mono_us = polite_env_mono_us(NULL);
  fake.wall_ms = polite_env_wall_ms(NULL);
  s->env = &fake_env;
}

/* The value of query parameter `name` in target ("?advance=1500"), or
 * NULL. */
static const char *query_param(const char *target, const char *name) {
  const char *q = strchr(target, '?');
  size_t n = strlen(name);
  while (q) {
    q++;
    if (strncmp(q, name, n) == 0 && q[n] == '=')
      return q + n + 1;
    q = strchr(q, '&');
  }
  return NULL;
}

void polite__px_answer_clock(px_req *r) {
  char body[160];
  int status = 200;
  const char *adv = query_param(r->target, "advance");
  char *end = NULL;
  long long ms = adv ? strtoll(adv, &end, 10) : 0;
  if (!r->s->cfg->test_clock) {
    status = 404;
    snprintf(body, sizeof body, "{\"error\":\"no --test-clock\"}");
  } else if (adv && (end == adv || (*end && *end != '&') || ms < 0 ||
                     ms > 366LL * 86400 * 1000)) {
    status = 400;
    snprintf(body, sizeof body,
             "{\"error\":\"advance: milliseconds 0 to a year\"}");
  } else {
    fake.mono_us += ms * 1000;
    fake.wall_ms += ms;
    snprintf(body, sizeof body, "{\"mono_ms\":%lld,\"wall_ms\":%lld}",
             (long long)(fake.mono_us / 1000), (long long)fake.wall_ms);
  }
  polite__px_own(r, status, "application/json", body, strlen(body));
  polite__px_set_header(r, "Cache-Control", "no-store");
  polite__px_send_endpoint(r);
}
