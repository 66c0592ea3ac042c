/* polite proxy: the decision for a watched request: early retry, rate limit,
 * quota, failure. */
#define _GNU_SOURCE
#include "px_engine.h"

#include <polite/clock.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

char *polite__px_scope_key(px_server *s, px_req *r, px_scope scope,
                           struct evkeyvalq *in) {
  char buf[256];
  switch (scope) {
  case PX_SCOPE_GLOBAL: return strdup("*");
  case PX_SCOPE_HOST: {
    const char *h = evhttp_find_header(in, "Host");
    snprintf(buf, sizeof buf, "host:%s", h ? h : "-");
    return strdup(buf);
  }
  case PX_SCOPE_CLIENT: {
    const char *a = evhttp_find_header(in, "Authorization");
    if (a) {
      char hex[17];
      polite__px_hash_hex(s->salt, a, hex);
      snprintf(buf, sizeof buf, "auth:%s", hex);
    } else {
      const char *sp = strchr(r->client, ' ');
      snprintf(buf, sizeof buf, "client:%.*s",
               (int)(sp ? (size_t)(sp - r->client) : strlen(r->client)),
               r->client);
    }
    return strdup(buf);
  }
  case PX_SCOPE_URL:
  default: {
    size_t n = strlen(r->method) + strlen(r->url) + 2;
    char *k = malloc(n);
    if (k)
      snprintf(k, n, "%s %s", r->method, r->url);
    return k;
  }
  }
}

/* The proxy's checks for a watched request, in order: early retry, rate
 * limit, quota, random failure. Returns 1 when one of them answers (the
 * answer is prepared in r), 0 when the request goes on. */
int polite__px_decide(px_req *r, int64_t now_us, const char *body,
                      size_t body_len) {
  px_server *s = r->s;
  const px_config *c = s->cfg;
  int64_t now_ms = now_us / 1000;
  int64_t early = polite__px_track_check(s->st, r->key, now_ms, c->penalty);
  if (early > 0) {
    /* Arrived before its Retry-After: record how early (ms), answer 429
     * with the remaining wait rounded up to whole seconds. */
    polite__px_early_record(s->st, polite_wall_ms(), r->key, r->client,
                            r->method, r->url, early);
    r->kind = PX_KIND_EARLY;
    snprintf(r->note, sizeof r->note, "early_by=%lldms", (long long)early);
    char msg[160];
    snprintf(msg, sizeof msg,
             "Retried %lld ms before Retry-After allowed (polite proxy)",
             (long long)early);
    polite__px_own_json_error(r, 429, "early_retry", msg);
    polite__px_send_retry_after(r, now_ms, (early + 999) / 1000);
    return 1;
  }
  if (c->rate_per_s > 0) {
    char *rk =
        c->rate_scope == c->scope
            ? strdup(r->key)
            : polite__px_scope_key(s, r, c->rate_scope, r->in);
    polite_gcra *g =
        rk ? polite__px_gcra_get(s->st, rk, c->rate_per_s, c->burst) : NULL;
    free(rk);
    if (g) {
      int64_t wait_us = polite_gcra_admit(g, now_us, 1);
      polite__px_rate_headers(r, g, now_us, wait_us);
      if (wait_us > 0) {
        /* Whole seconds, rounded up: a client that waits exactly this long
         * is always admitted. */
        int64_t secs = (wait_us + 999999) / 1000000;
        if (secs < 1)
          secs = 1;
        r->kind = PX_KIND_RATE;
        polite__px_own_json_error(
            r, 429, "rate_limited",
            "Rate limit exceeded (polite proxy); see Retry-After");
        polite__px_send_retry_after(r, now_ms, secs);
        return 1;
      }
    }
  }
  if (!polite__px_quota_take(s->st, c->quota)) {
    r->kind = PX_KIND_QUOTA;
    /* No Retry-After: waiting does not help. */
    char buf[256];
    int n = snprintf(buf, sizeof buf,
                     "{\"error\":{\"code\":\"insufficient_quota\",\"type\":"
                     "\"insufficient_quota\",\"message\":\"You exceeded your "
                     "quota of %lld requests (polite proxy).\"}}",
                     (long long)c->quota);
    polite__px_own(r, 429, "application/json", buf, (size_t)n);
    return 1;
  }
  if (c->failure_rate > 0) {
    uint64_t rnd = polite_rand_next(&s->rng);
    double draw = (double)(rnd >> 11) * (1.0 / 9007199254740992.0) * 100.0;
    if (draw >= c->failure_rate)
      return 0;
    if (c->errors.n > 0) {
      px_rule *u = polite__px_rules_match((px_rules *)&c->errors, r->method,
                                          r->raw_url, body, body_len);
      if (u == NULL)
        return 0; /* as in Dev Proxy: no matching error, no failure */
      size_t i = (size_t)(polite_rand_next(&s->rng) % u->nresponses);
      r->kind = PX_KIND_FAILURE;
      polite__px_own_canned(r, &u->responses[i], now_ms);
      return 1;
    }
    r->kind = PX_KIND_FAILURE;
    polite__px_own_json_error(
        r, 429, "too_many_requests",
        "Too many requests (injected by polite proxy); see Retry-After");
    polite__px_send_retry_after(r, now_ms, c->retry_after_s);
    return 1;
  }
  return 0;
}
