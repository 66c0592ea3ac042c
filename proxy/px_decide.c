/* polite proxy: the decision for a watched request, a pure function of the
 * request's facts, the proxy's state and one `now`: the judge (early retry,
 * throttle), concurrency, rate limit, tokens, quota, failure. It returns a
 * verdict (px_decide.h) that px_answer.c carries out; nothing here builds an
 * answer, touches a socket or reads a clock. */
#define _GNU_SOURCE
#include "px_decide.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

char *polite__px_scope_key(uint64_t salt, const px_ask *a, px_scope scope) {
  char buf[256];
  switch (scope) {
  case PX_SCOPE_GLOBAL: return strdup("*");
  case PX_SCOPE_HOST:
    snprintf(buf, sizeof buf, "host:%s", a->host ? a->host : "-");
    return strdup(buf);
  case PX_SCOPE_CLIENT:
    if (a->authorization) {
      char hex[17];
      polite__px_hash_hex(salt, a->authorization, hex);
      snprintf(buf, sizeof buf, "auth:%s", hex);
    } else {
      const char *sp = strchr(a->client, ' ');
      snprintf(buf, sizeof buf, "client:%.*s",
               (int)(sp ? (size_t)(sp - a->client) : strlen(a->client)),
               a->client);
    }
    return strdup(buf);
  case PX_SCOPE_URL:
  default: {
    /* "METHOD URL", in pieces, not printf: the default scope, made once
     * per request. */
    size_t ml = strlen(a->method), ul = strlen(a->url);
    char *k = malloc(ml + ul + 2);
    if (k) {
      memcpy(k, a->method, ml);
      k[ml] = ' ';
      memcpy(k + ml + 1, a->url, ul + 1);
    }
    return k;
  }
  }
}

/* The key of `scope` for a (a copy of a->key when it is the tracking
 * scope). */
static char *key_for(const px_decider *d, const px_ask *a, px_scope scope) {
  if (scope == d->cfg->scope && a->key)
    return strdup(a->key);
  return polite__px_scope_key(d->salt, a, scope);
}

/* The rate limiter of a's scope key, created on first use; NULL without a
 * rate limit (or out of memory, or too many keys). */
static px_lim *limiter(const px_decider *d, const px_ask *a) {
  const px_config *c = d->cfg;
  if (c->rate_n <= 0)
    return NULL;
  char *k = key_for(d, a, c->rate_scope);
  if (k == NULL)
    return NULL;
  px_lim *l = polite__px_keyed(d->st, PX_TAB_LIMIT, k);
  if (l == NULL)
    l = polite__px_keyed_put(d->st, PX_TAB_LIMIT, k,
                             polite__px_lim_new(&c->lim), polite__px_lim_free);
  free(k);
  return l;
}

/* Whole seconds, rounded up, at least 1: a client that waits exactly this
 * long is never early, and a throttled client is never told 0. */
static int64_t secs_up(int64_t us) {
  int64_t s = (us + 999999) / 1000000;
  return s < 1 ? 1 : s;
}

/* The verdict answers: status, kind and an error body CODE / message. */
static void answer_error(px_decision *out, px_kind kind, int status,
                         const char *code, const char *fmt, ...) {
  out->answer = 1;
  out->kind = kind;
  out->status = status;
  out->body = PX_BODY_ERROR;
  out->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->text, sizeof out->text, fmt, ap);
  va_end(ap);
}

/* The verdict answers with a JSON body of its own shape. */
static void answer_json(px_decision *out, px_kind kind, const char *fmt, ...) {
  out->answer = 1;
  out->kind = kind;
  out->status = 429;
  out->body = PX_BODY_JSON;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(out->text, sizeof out->text, fmt, ap);
  va_end(ap);
}

/* Early retry (the client was told and came back too soon) or a request
 * during a throttle (never told): 429 with the remaining wait. Under a
 * rate limit the answer carries the same RateLimit headers as any other
 * (from a look at the limiter that records nothing). */
static int check_judge(const px_decider *d, const px_ask *a, const px_now *now,
                       px_decision *out) {
  const px_config *c = d->cfg;
  px_judgement j;
  /* Outside RetryAfterPlugin's own urlsToWatch the request is only
   * noted. */
  int judged =
      polite__px_plugin_watches(c, PX_PLUG_RETRY_AFTER, a->raw_url, a->path);
  polite__px_judge(d->st, judged ? a->key : NULL, a->conn_id, a->conn_handle,
                   a->client, a->user_agent, now->mono_us / 1000, c->penalty,
                   &j);
  out->client_id = j.client;
  if (j.verdict == PX_JUDGE_OK)
    return 0;
  int64_t secs = secs_up(j.remaining_ms * 1000);
  if (j.verdict == PX_JUDGE_EARLY) {
    polite__px_early_record(d->st, now->wall_ms, a->key, a->client, a->conn_id,
                            a->method, a->url, j.remaining_ms, j.across);
    snprintf(out->note, sizeof out->note, "early_by=%lldms",
             (long long)j.remaining_ms);
    answer_error(out, PX_KIND_EARLY, 429, "early_retry",
                 "Retried %lld ms before Retry-After allowed (polite proxy)",
                 (long long)j.remaining_ms);
    /* Under --penalty the whole wait again, from when this answer
     * leaves. */
    out->tell_flags = c->penalty ? PX_TELL_RESTART : 0;
  } else {
    snprintf(out->note, sizeof out->note, "throttled_for=%lldms",
             (long long)j.remaining_ms);
    answer_error(out, PX_KIND_THROTTLED, 429, "throttled", "%s",
                 "Throttled: another request on this key was told to wait "
                 "(polite proxy); see Retry-After");
  }
  /* The told wait is the remaining time, never a new deadline. */
  out->retry_after_s = secs;
  px_lim *l = limiter(d, a);
  if (l) {
    polite__px_lim_admit(l, now->mono_us, 0, &out->lim);
    out->has_lim = 1;
  }
  return 1;
}

/* More than N in flight on the concurrency key: 429 or 503 with
 * Retry-After. Otherwise the request holds a slot until it is finished. */
static int check_concurrency(const px_decider *d, const px_ask *a,
                             const px_now *now, px_decision *out) {
  (void)now;
  const px_config *c = d->cfg;
  if (c->concurrency <= 0)
    return 0;
  char *k = key_for(d, a, c->conc_scope);
  if (k == NULL)
    return 0;
  int64_t *n = polite__px_keyed(d->st, PX_TAB_CONC, k);
  if (n == NULL)
    n = polite__px_keyed_put(d->st, PX_TAB_CONC, k, calloc(1, sizeof *n), free);
  if (n == NULL || *n < c->concurrency) {
    if (n) {
      (*n)++;
      out->conc_key = k;
    } else {
      free(k);
    }
    return 0;
  }
  free(k);
  answer_error(
      out, PX_KIND_CONCURRENCY, c->conc_status, "concurrency_limited",
      "More than %lld requests in flight (polite proxy); see Retry-After",
      (long long)c->concurrency);
  out->retry_after_s = c->conc_retry_after_s;
  return 1;
}

void polite__px_release(px_state *st, char *conc_key) {
  if (conc_key == NULL)
    return;
  int64_t *n = polite__px_keyed(st, PX_TAB_CONC, conc_key);
  if (n && *n > 0)
    (*n)--;
  free(conc_key);
}

static int check_rate(const px_decider *d, const px_ask *a, const px_now *now,
                      px_decision *out) {
  px_lim *l = limiter(d, a);
  if (l == NULL)
    return 0;
  polite__px_lim_admit(l, now->mono_us, 1, &out->lim);
  out->has_lim = 1;
  if (out->lim.admitted)
    return 0;
  const px_config *c = d->cfg;
  int64_t secs = secs_up(out->lim.wait_us);
  if (c->limit_response.n > 0) {
    /* whenLimitExceeded Custom: the response file, its Retry-After
     * @dynamic replaced by the seconds to the reset. */
    out->answer = 1;
    out->kind = PX_KIND_RATE;
    out->body = PX_BODY_CANNED;
    out->canned = &c->limit_response.rules[0].responses[0];
    out->status = out->canned->status;
    out->canned_wait_s = secs;
    return 1;
  }
  if (c->rate_headers & PX_HDR_OPENAI) /* OpenAI's RPM body */
    answer_json(out, PX_KIND_RATE,
                "{\"error\":{\"message\":\"Rate limit reached for requests "
                "per window: Limit %lld. (polite proxy)\",\"type\":"
                "\"requests\",\"param\":null,\"code\":\"rate_limit_"
                "exceeded\"}}",
                (long long)out->lim.quota);
  else
    answer_error(out, PX_KIND_RATE, 429, "rate_limited", "%s",
                 "Rate limit exceeded (polite proxy); see Retry-After");
  /* Time until capacity returns, rounded up: binds this client only (the
   * limiter itself answers the others). */
  out->retry_after_s = secs;
  return 1;
}

/* The token window (one for the proxy), created on first use. */
static px_tok *tokens(const px_config *c, px_state *st) {
  if (c->tok.prompt_limit <= 0 && c->tok.completion_limit <= 0)
    return NULL;
  px_tok *t = polite__px_keyed(st, PX_TAB_TOKENS, "tokens");
  if (t == NULL)
    t = polite__px_keyed_put(st, PX_TAB_TOKENS, "tokens", calloc(1, sizeof *t),
                             free);
  return t;
}

/* Tokens spent in this window: 429 with OpenAI's TPM body and the wait to
 * the window's end. Tokens are charged after the answer (from its usage),
 * so the request that overshoots still passes, as in Dev Proxy. */
static int check_tokens(const px_decider *d, const px_ask *a, const px_now *now,
                        px_decision *out) {
  (void)a;
  px_tok *t = tokens(d->cfg, d->st);
  if (t == NULL)
    return 0;
  int ok = polite__px_tok_admit(&d->cfg->tok, t, now->mono_us, &out->tok);
  out->has_tok = 1;
  out->charge_tokens = ok;
  if (ok)
    return 0;
  const px_tok_state *st = &out->tok;
  int64_t secs = secs_up(st->reset_us);
  answer_json(out, PX_KIND_TOKENS,
              "{\"error\":{\"message\":\"Rate limit reached for %s tokens "
              "per window: Limit %lld, Used %lld. Please try again in %llds. "
              "(polite proxy)\",\"type\":\"tokens\",\"param\":null,\"code\":"
              "\"rate_limit_exceeded\"}}",
              st->spent == PX_TOK_PROMPT ? "prompt" : "completion",
              (long long)st->limit, (long long)st->used, (long long)secs);
  out->retry_after_s = secs;
  return 1;
}

void polite__px_charge_tokens(const px_config *c, px_state *st, int64_t now_us,
                              const char *body, size_t len) {
  px_tok *t = tokens(c, st);
  int64_t p, n;
  if (t && polite__px_tok_usage(body, len, &p, &n) == 0)
    polite__px_tok_charge(&c->tok, t, now_us, p, n);
}

/* Spent quota: 429 insufficient_quota and no Retry-After (waiting a normal
 * deadline does not help). The body says when it renews, if it does. */
static int check_quota(const px_decider *d, const px_ask *a, const px_now *now,
                       px_decision *out) {
  (void)a;
  const px_config *c = d->cfg;
  if (c->quota < 0)
    return 0;
  px_quota *q = polite__px_keyed(d->st, PX_TAB_QUOTA, "quota");
  if (q == NULL)
    q = polite__px_keyed_put(d->st, PX_TAB_QUOTA, "quota", calloc(1, sizeof *q),
                             free);
  if (q == NULL)
    return 0;
  int64_t renew = -1;
  if (polite__px_quota_admit(&c->quota_cfg, q, now->wall_ms,
                             now->mono_us / 1000, &renew))
    return 0;
  char when[80] = "";
  if (renew >= 0) {
    time_t t = (time_t)(renew / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, " It renews at %Y-%m-%dT%H:%M:%SZ.", &tm);
  }
  answer_json(out, PX_KIND_QUOTA,
              "{\"error\":{\"code\":\"insufficient_quota\",\"type\":"
              "\"insufficient_quota\",\"message\":\"You exceeded your quota "
              "of %lld requests (polite proxy).%s\"}}",
              (long long)c->quota, when);
  return 1;
}

static int check_failure(const px_decider *d, const px_ask *a,
                         const px_now *now, px_decision *out) {
  (void)now;
  const px_config *c = d->cfg;
  if (c->failure_rate <= 0)
    return 0;
  uint64_t rnd = polite_rand_next(d->rng);
  double draw = (double)(rnd >> 11) * (1.0 / 9007199254740992.0) * 100.0;
  if (draw >= c->failure_rate)
    return 0;
  if (c->errors.n > 0) {
    px_rule *u = polite__px_rules_match((px_rules *)&c->errors, a->method,
                                        a->raw_url, a->body, a->body_len);
    if (u == NULL)
      return 0; /* as in Dev Proxy: no matching error, no failure */
    size_t i = (size_t)(polite_rand_next(d->rng) % u->nresponses);
    out->answer = 1;
    out->kind = PX_KIND_FAILURE;
    out->body = PX_BODY_CANNED;
    out->canned = &u->responses[i];
    out->status = out->canned->status;
    out->canned_wait_s = c->retry_after_s;
    return 1;
  }
  answer_error(out, PX_KIND_FAILURE, 429, "too_many_requests", "%s",
               "Too many requests (injected by polite proxy); see "
               "Retry-After");
  out->retry_after_s = c->retry_after_s;
  out->tell_flags = PX_TELL_THROTTLE;
  return 1;
}

/* The checks in order, each with the Dev Proxy plugin whose urlsToWatch
 * it follows; the first that answers wins. The judge always runs (it notes
 * every watched request's client) and looks at its own list itself. */
static const struct {
  int (*check)(const px_decider *, const px_ask *, const px_now *,
               px_decision *);
  px_plugin plugin;
} checks[] = {
    {check_judge, PX_PLUG_NONE}, {check_concurrency, PX_PLUG_NONE},
    {check_rate, PX_PLUG_RATE},  {check_tokens, PX_PLUG_TOKENS},
    {check_quota, PX_PLUG_NONE}, {check_failure, PX_PLUG_ERRORS},
};

void polite__px_decide(const px_decider *d, const px_ask *a, const px_now *now,
                       px_decision *out) {
  memset(out, 0, sizeof *out);
  out->kind = PX_KIND_PASSED;
  out->retry_after_s = -1;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
    if (polite__px_plugin_watches(d->cfg, checks[i].plugin, a->raw_url,
                                  a->path) &&
        checks[i].check(d, a, now, out))
      return;
}
