/* polite proxy: the decision for a watched request: the judge (early retry,
 * throttle), concurrency, rate limit, quota, failure. */
#define _GNU_SOURCE
#include "px_engine.h"

#include <event2/bufferevent.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
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

/* The key of `scope` for r (r->key when it is the tracking scope). */
static char *key_for(px_req *r, px_scope scope) {
  if (scope == r->s->cfg->scope)
    return strdup(r->key);
  return polite__px_scope_key(r->s, r, scope, r->in);
}

/* The rate limiter of r's scope key, created on first use; NULL without a
 * rate limit (or out of memory, or too many keys). */
static px_lim *limiter(px_req *r) {
  const px_config *c = r->s->cfg;
  if (c->rate_n <= 0)
    return NULL;
  char *k = key_for(r, c->rate_scope);
  if (k == NULL)
    return NULL;
  px_lim *l = polite__px_keyed(r->s->st, PX_TAB_LIMIT, k);
  if (l == NULL)
    l = polite__px_keyed_put(r->s->st, PX_TAB_LIMIT, k,
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

/* The judge's probe: 0 when the connection `conn` ("ADDR:PORT") that had
 * descriptor fd is gone: the descriptor is closed or now belongs to another
 * peer, or the peer has closed its side (a read would see end of file).
 * evhttp notices a client's close of an idle connection late, so the judge
 * asks. */
static int conn_alive(void *ctx, const char *conn, int fd) {
  (void)ctx;
  if (fd < 0)
    return 1;
  struct sockaddr_storage ss;
  socklen_t sl = sizeof ss;
  char host[64], serv[16], id[96];
  if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0 ||
      getnameinfo((struct sockaddr *)&ss, sl, host, sizeof host, serv,
                  sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return 0;
  snprintf(id, sizeof id, "%s:%s", host, serv);
  if (strcmp(id, conn) != 0)
    return 0;
  char byte;
  return recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) != 0;
}

/* Early retry (the client was told and came back too soon) or a request
 * during a throttle (never told): 429 with the remaining wait. Under a
 * rate limit the answer carries the same RateLimit headers as any other
 * (from a look at the limiter that records nothing). */
static int check_judge(px_req *r, int64_t now_us, const char *body,
                       size_t body_len) {
  (void)body;
  (void)body_len;
  px_server *s = r->s;
  const px_config *c = s->cfg;
  px_judgement j;
  polite__px_conn_probe(s->st, conn_alive, NULL);
  /* Outside RetryAfterPlugin's own urlsToWatch the request is only noted.
   * Without a connection (a unit test's request) the probe has no socket. */
  int judged =
      polite__px_plugin_watches(c, PX_PLUG_RETRY_AFTER, r->raw_url, r->path);
  polite__px_judge(s->st, judged ? r->key : NULL, r->conn_id,
                   r->nr ? polite__net_req_fd(r->nr) : -1, r->client,
                   evhttp_find_header(r->in, "User-Agent"), now_us / 1000,
                   c->penalty, &j);
  r->client_id = j.client;
  if (j.verdict == PX_JUDGE_OK)
    return 0;
  char msg[200];
  int64_t secs = secs_up(j.remaining_ms * 1000);
  if (j.verdict == PX_JUDGE_EARLY) {
    polite__px_early_record(s->st, r->now.wall_ms, r->key, r->client,
                            r->conn_id, r->method, r->url, j.remaining_ms,
                            j.across);
    r->kind = PX_KIND_EARLY;
    snprintf(r->note, sizeof r->note, "early_by=%lldms",
             (long long)j.remaining_ms);
    snprintf(msg, sizeof msg,
             "Retried %lld ms before Retry-After allowed (polite proxy)",
             (long long)j.remaining_ms);
    polite__px_own_json_error(r, 429, "early_retry", msg);
  } else {
    r->kind = PX_KIND_THROTTLED;
    snprintf(r->note, sizeof r->note, "throttled_for=%lldms",
             (long long)j.remaining_ms);
    polite__px_own_json_error(
        r, 429, "throttled",
        "Throttled: another request on this key was told to wait (polite "
        "proxy); see Retry-After");
  }
  /* The told wait: the remaining time (never a new deadline), or under
   * --penalty the whole wait again, from when this answer leaves. */
  polite__px_send_retry_after(
      r, secs, j.verdict == PX_JUDGE_EARLY && c->penalty ? PX_TELL_RESTART : 0);
  px_lim *l = limiter(r);
  if (l) {
    px_lim_state st;
    polite__px_lim_admit(l, now_us, 0, &st);
    polite__px_rate_headers(r, &st, r->now.wall_ms);
  }
  return 1;
}

/* More than N in flight on the concurrency key: 429 or 503 with
 * Retry-After. Otherwise the request holds a slot until it is finished. */
static int check_concurrency(px_req *r, int64_t now_us, const char *body,
                             size_t body_len) {
  (void)now_us;
  (void)body;
  (void)body_len;
  const px_config *c = r->s->cfg;
  if (c->concurrency <= 0)
    return 0;
  char *k = key_for(r, c->conc_scope);
  if (k == NULL)
    return 0;
  int64_t *n = polite__px_keyed(r->s->st, PX_TAB_CONC, k);
  if (n == NULL)
    n = polite__px_keyed_put(r->s->st, PX_TAB_CONC, k, calloc(1, sizeof *n),
                             free);
  if (n == NULL || *n < c->concurrency) {
    if (n) {
      (*n)++;
      r->conc_key = k;
    } else {
      free(k);
    }
    return 0;
  }
  free(k);
  r->kind = PX_KIND_CONCURRENCY;
  char msg[160];
  snprintf(msg, sizeof msg,
           "More than %lld requests in flight (polite proxy); see Retry-After",
           (long long)c->concurrency);
  polite__px_own_json_error(r, c->conc_status, "concurrency_limited", msg);
  polite__px_send_retry_after(r, c->conc_retry_after_s, 0);
  return 1;
}

/* Gives back the concurrency slot r holds, if any (polite__px_finish). */
void polite__px_release(px_req *r) {
  if (r->conc_key == NULL)
    return;
  int64_t *n = polite__px_keyed(r->s->st, PX_TAB_CONC, r->conc_key);
  if (n && *n > 0)
    (*n)--;
  free(r->conc_key);
  r->conc_key = NULL;
}

/* whenLimitExceeded Custom: the response file, its Retry-After @dynamic
 * replaced by the seconds to the reset. */
static void limit_custom(px_req *r, const px_lim_state *st) {
  const px_response *resp = &r->s->cfg->limit_response.rules[0].responses[0];
  polite__px_own_canned_wait(r, resp, secs_up(st->wait_us));
}

static int check_rate(px_req *r, int64_t now_us, const char *body,
                      size_t body_len) {
  (void)body;
  (void)body_len;
  px_lim *l = limiter(r);
  if (l == NULL)
    return 0;
  px_lim_state st;
  polite__px_lim_admit(l, now_us, 1, &st);
  polite__px_rate_headers(r, &st, r->now.wall_ms);
  if (st.admitted)
    return 0;
  r->kind = PX_KIND_RATE;
  if (r->s->cfg->limit_response.n > 0) {
    limit_custom(r, &st);
    return 1;
  }
  if (r->s->cfg->rate_headers & PX_HDR_OPENAI) {
    /* OpenAI's RPM body. */
    char buf[320];
    int n = snprintf(buf, sizeof buf,
                     "{\"error\":{\"message\":\"Rate limit reached for "
                     "requests per window: Limit %lld. (polite proxy)\","
                     "\"type\":\"requests\",\"param\":null,\"code\":\"rate_"
                     "limit_exceeded\"}}",
                     (long long)st.quota);
    polite__px_own(r, 429, "application/json", buf, (size_t)n);
  } else {
    polite__px_own_json_error(
        r, 429, "rate_limited",
        "Rate limit exceeded (polite proxy); see Retry-After");
  }
  /* Time until capacity returns, rounded up: binds this client only (the
   * limiter itself answers the others). */
  polite__px_send_retry_after(r, secs_up(st.wait_us), 0);
  return 1;
}

/* The token window (one for the proxy), created on first use. */
static px_tok *tokens(px_req *r) {
  const px_config *c = r->s->cfg;
  if (c->tok.prompt_limit <= 0 && c->tok.completion_limit <= 0)
    return NULL;
  px_tok *t = polite__px_keyed(r->s->st, PX_TAB_TOKENS, "tokens");
  if (t == NULL)
    t = polite__px_keyed_put(r->s->st, PX_TAB_TOKENS, "tokens",
                             calloc(1, sizeof *t), free);
  return t;
}

/* Tokens spent in this window: 429 with OpenAI's TPM body and the wait to
 * the window's end. Tokens are charged after the answer (from its usage),
 * so the request that overshoots still passes, as in Dev Proxy. */
static int check_tokens(px_req *r, int64_t now_us, const char *body,
                        size_t body_len) {
  (void)body;
  (void)body_len;
  px_tok *t = tokens(r);
  if (t == NULL)
    return 0;
  px_tok_state st;
  int ok = polite__px_tok_admit(&r->s->cfg->tok, t, now_us, &st);
  polite__px_openai_headers(r, "tokens", st.limit, st.remaining,
                            (st.reset_us + 999) / 1000);
  r->charge_tokens = 1;
  if (ok)
    return 0;
  r->charge_tokens = 0;
  r->kind = PX_KIND_TOKENS;
  int64_t secs = secs_up(st.reset_us);
  char buf[400];
  int n = snprintf(
      buf, sizeof buf,
      "{\"error\":{\"message\":\"Rate limit reached for %s tokens per "
      "window: Limit %lld, Used %lld. Please try again in %llds. (polite "
      "proxy)\",\"type\":\"tokens\",\"param\":null,\"code\":\"rate_limit_"
      "exceeded\"}}",
      st.spent == PX_TOK_PROMPT ? "prompt" : "completion", (long long)st.limit,
      (long long)st.used, (long long)secs);
  polite__px_own(r, 429, "application/json", buf, (size_t)n);
  polite__px_send_retry_after(r, secs, 0);
  return 1;
}

void polite__px_charge_tokens(px_req *r, const char *body, size_t len) {
  if (!r->charge_tokens)
    return;
  r->charge_tokens = 0;
  px_tok *t = tokens(r);
  int64_t p, c;
  if (t && polite__px_tok_usage(body, len, &p, &c) == 0)
    polite__px_tok_charge(&r->s->cfg->tok, t, r->now.mono_us, p, c);
}

/* Spent quota: 429 insufficient_quota and no Retry-After (waiting a normal
 * deadline does not help). The body says when it renews, if it does. */
static int check_quota(px_req *r, int64_t now_us, const char *body,
                       size_t body_len) {
  (void)body;
  (void)body_len;
  const px_config *c = r->s->cfg;
  if (c->quota < 0)
    return 0;
  px_quota *q = polite__px_keyed(r->s->st, PX_TAB_QUOTA, "quota");
  if (q == NULL)
    q = polite__px_keyed_put(r->s->st, PX_TAB_QUOTA, "quota",
                             calloc(1, sizeof *q), free);
  if (q == NULL)
    return 0;
  int64_t wall = r->now.wall_ms, renew = -1;
  if (polite__px_quota_admit(&c->quota_cfg, q, wall, now_us / 1000, &renew))
    return 0;
  r->kind = PX_KIND_QUOTA;
  char when[80] = "";
  if (renew >= 0) {
    time_t t = (time_t)(renew / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, " It renews at %Y-%m-%dT%H:%M:%SZ.", &tm);
  }
  char buf[320];
  int n = snprintf(buf, sizeof buf,
                   "{\"error\":{\"code\":\"insufficient_quota\",\"type\":"
                   "\"insufficient_quota\",\"message\":\"You exceeded your "
                   "quota of %lld requests (polite proxy).%s\"}}",
                   (long long)c->quota, when);
  polite__px_own(r, 429, "application/json", buf, (size_t)n);
  return 1;
}

static int check_failure(px_req *r, int64_t now_us, const char *body,
                         size_t body_len) {
  (void)now_us;
  px_server *s = r->s;
  const px_config *c = s->cfg;
  if (c->failure_rate <= 0)
    return 0;
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
    polite__px_own_canned(r, &u->responses[i]);
    return 1;
  }
  r->kind = PX_KIND_FAILURE;
  polite__px_own_json_error(
      r, 429, "too_many_requests",
      "Too many requests (injected by polite proxy); see Retry-After");
  polite__px_send_retry_after(r, c->retry_after_s, PX_TELL_THROTTLE);
  return 1;
}

/* The checks in order, each with the Dev Proxy plugin whose urlsToWatch
 * it follows; the first that answers wins. The judge always runs (it notes
 * every watched request's client) and looks at its own list itself. */
static const struct {
  int (*check)(px_req *, int64_t, const char *, size_t);
  px_plugin plugin;
} checks[] = {
    {check_judge, PX_PLUG_NONE}, {check_concurrency, PX_PLUG_NONE},
    {check_rate, PX_PLUG_RATE},  {check_tokens, PX_PLUG_TOKENS},
    {check_quota, PX_PLUG_NONE}, {check_failure, PX_PLUG_ERRORS},
};

int polite__px_decide(px_req *r, const char *body, size_t body_len) {
  /* One reading of the clock for the whole decision: the request's. */
  int64_t now_us = r->now.mono_us;
  for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
    if (polite__px_plugin_watches(r->s->cfg, checks[i].plugin, r->raw_url,
                                  r->path) &&
        checks[i].check(r, now_us, body, body_len))
      return 1;
  return 0;
}
