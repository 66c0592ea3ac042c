/* polite diagnose: vendor knowledge as data (included by diagnose.c only).
 *
 * Four tables, each walked by one small function in diagnose.c:
 *   header_rules[]  a response header (name glob + value test) -> signals
 *   body_rules[]    a marker in the body (text or JSON key/value) -> signal
 *   vendors[]       signals -> the layer that produced the answer, in order
 *                   of precedence, each with its own limit rules
 *   through_rules[] signals -> layers the answer only passed through
 * Adding a vendor is rows here plus a fixture in tests/fixtures/diagnose
 * (docs/diagnose.md lists what each vendor documents). Evidence texts may
 * hold %n (the header name as sent) and %v (its value, cut short). */
#ifndef POLITE_DIAGNOSE_RULES_H
#define POLITE_DIAGNOSE_RULES_H

/* Signals: one bit each in d->_sig. S_NONE (0) ends lists and means
 * "nothing". Signals named S_B_* are body facts with no evidence of their
 * own: they only feed the vendor rules. */
// clang-format off
enum sig {
  S_NONE,
  S_CF_RAY, S_CF_SERVER, S_CF_MITIGATED, S_CF_1015,          /* Cloudflare */
  S_CFR_ID, S_CFR_XCACHE_ERR, S_CFR_VIA, S_CFR_SERVER, S_CFR_BODY, /* CloudFront */
  S_FASTLY_HDR, S_FASTLY_BODY, S_VARNISH_HDR, S_VARNISH_BODY,
  S_AKAMAI_HDR, S_AKAMAI_SERVER, S_AKAMAI_BODY,
  S_AFD_REF, S_AFD_BODY,                                     /* Azure Front Door */
  S_GFE_SERVER, S_GOOG_HDR, S_GOOGLE_HTML, S_GAPI_BODY,      /* Google */
  S_AMZN_REQID, S_APIGW_ID, S_APIGW_ERR_THROTTLE, S_APIGW_ERR_LIMIT,
  S_APIGW_BODY_THROTTLE, S_APIGW_BODY_LIMIT,                 /* API Gateway */
  S_KONG_HDR, S_KONG_UPSTREAM, S_KONG_BODY, S_KONG_PERIOD0, S_KONG_LONG0,
  S_ENVOY_RATELIMITED, S_ENVOY_SERVER, S_ENVOY_UPSTREAM, S_ENVOY_OVERLOADED,
  S_ENVOY_BODY_LOCAL, S_ENVOY_BODY_UPSTREAM, S_ENVOY_BODY_OVERFLOW,
  S_NGINX_SERVER, S_NGINX_BODY, S_HAPROXY_BODY_429, S_HAPROXY_BODY_503,
  S_TRAEFIK, S_POLITE_SERVER, S_POLITE_POLICY,
  S_APIM_RATE, S_APIM_QUOTA,                                 /* Azure APIM */
  S_APIGEE_SPIKE, S_APIGEE_QUOTA, S_APIGEE_CONC,
  S_OPENAI_HDR, S_OPENAI_BODY, S_AOAI_BODY,                  /* OpenAI, Azure OpenAI */
  S_ANTHROPIC_HDR, S_ANTHROPIC_BODY, S_ANTHROPIC_TOKENS0, S_ANTHROPIC_REQ0,
  S_GITHUB_HDR, S_GITHUB_SECONDARY, S_GITHUB_PRIMARY_BODY, S_GITHUB_DOCS,
  S_MSGRAPH_HDR, S_AZURE_HDR, S_AZURE_BODY,                  /* Microsoft */
  S_REQID_REQ, S_STRIPE_HDR, S_STRIPE_RATE, S_STRIPE_LOCK,   /* Stripe */
  S_SHOPIFY, S_SHOPIFY_BODY, S_SLACK, S_SLACK_BODY,
  S_DISCORD, S_DISCORD_GLOBAL, S_DISCORD_SHARED, S_TWITTER, S_TWITTER_24H0,
  S_OPENAI_REMAIN_TOKENS0, S_REMAINING0, S_CORE_REMAINING0,  /* generic */
  S_CONCURRENT_BODY,
  S_B_CODE429, S_B_RATE_LIMIT, S_B_TOKEN_RATE_LIMIT, S_B_QUOTA_WORD,
  S_B_DAILY, S_B_QUOTA_HINT, S_B_INSUFFICIENT, S_B_OAI_TOKENS,
  S_B_OAI_REQUESTS, S_B_TOKENS_WORD, S_B_CREDIT, S_B_GAPI_DAILY,
  S_COUNT
};
// clang-format on

_Static_assert(S_COUNT <= 128, "signals must fit in _sig[2]");

/* ---- Headers ----------------------------------------------------------- */

/* How a header rule tests the value (the name is always a glob). */
enum vtest { V_ANY, V_EQ, V_PREFIX, V_CONTAINS, V_ZERO };
/* What a header rule does besides signals and evidence. */
enum hact { A_NONE, A_SHOULD_RETRY };

/* Fields in the order a row reads (name, test, value, signals, evidence);
 * the padding this costs is a few bytes per row. */
// NOLINTNEXTLINE(clang-analyzer-optin.performance.Padding)
typedef struct {
  const char *name; /* lower case; '*' matches any run of characters */
  unsigned char vtest;
  const char *value; /* for V_EQ, V_PREFIX, V_CONTAINS (any case) */
  unsigned char sig, sig2;
  const char *ev; /* evidence; NULL for none */
  unsigned char act;
} header_rule;

/* Walked in order; the first row whose name and value match is the only
 * one applied. So a specific row comes before the glob that covers it. */
static const header_rule header_rules[] = {
    /* Cloudflare */
    {"cf-ray", V_ANY, NULL, S_CF_RAY, 0,
     "header cf-ray: the answer passed through Cloudflare", 0},
    {"cf-mitigated", V_ANY, NULL, S_CF_MITIGATED, 0, "header cf-mitigated: %v",
     0},
    /* Server names */
    {"server", V_PREFIX, "cloudflare", S_CF_SERVER, 0,
     "header server: cloudflare (also sent on the origin's own errors)", 0},
    {"server", V_EQ, "cloudfront", S_CFR_SERVER, 0,
     "header server: CloudFront (CloudFront wrote this answer)", 0},
    {"server", V_PREFIX, "akamaighost", S_AKAMAI_SERVER, 0,
     "header server: AkamaiGHost (Akamai wrote this answer)", 0},
    {"server", V_PREFIX, "gfe", S_GFE_SERVER, 0, "header server: %v", 0},
    {"server", V_PREFIX, "gse", S_GFE_SERVER, 0, "header server: %v", 0},
    {"server", V_EQ, "google frontend", S_GFE_SERVER, 0, "header server: %v",
     0},
    {"server", V_PREFIX, "esf", S_GOOG_HDR, 0, "header server: %v", 0},
    {"server", V_PREFIX, "scaffolding on httpserver2", S_GOOG_HDR, 0,
     "header server: %v", 0},
    {"server", V_PREFIX, "envoy", S_ENVOY_SERVER, 0, "header server: %v", 0},
    {"server", V_PREFIX, "istio-envoy", S_ENVOY_SERVER, 0, "header server: %v",
     0},
    {"server", V_PREFIX, "nginx", S_NGINX_SERVER, 0, "header server: %v", 0},
    {"server", V_PREFIX, "openresty", S_NGINX_SERVER, 0, "header server: %v",
     0},
    {"server", V_PREFIX, "kong", S_KONG_HDR, 0, "header server: %v", 0},
    {"server", V_PREFIX, "varnish", S_VARNISH_HDR, 0, "header server: %v", 0},
    /* polite proxy's own answers (proxy/px_answer.c): "polite-proxy/0.1.0" */
    {"server", V_PREFIX, "polite-proxy", S_POLITE_SERVER, 0,
     "header server: %v (polite proxy wrote this answer)", 0},
    /* CloudFront */
    {"x-amz-cf-id", V_ANY, NULL, S_CFR_ID, 0,
     "header x-amz-cf-id: the answer passed through CloudFront", 0},
    {"x-amz-cf-pop", V_ANY, NULL, S_CFR_ID, 0,
     "header x-amz-cf-id: the answer passed through CloudFront", 0},
    {"x-cache", V_CONTAINS, "error from cloudfront", S_CFR_XCACHE_ERR, 0,
     "header x-cache: Error from cloudfront (CloudFront labels origin errors "
     "this way too)",
     0},
    {"via", V_CONTAINS, "cloudfront", S_CFR_VIA, 0, "header via: %v", 0},
    {"via", V_CONTAINS, "kong", S_KONG_HDR, 0, "header via: %v", 0},
    {"via", V_CONTAINS, "varnish", S_VARNISH_HDR, 0, "header via: %v", 0},
    /* Fastly, Varnish */
    {"x-served-by", V_PREFIX, "cache-", S_FASTLY_HDR, 0,
     "header x-served-by: %v", 0},
    {"fastly-*", V_ANY, NULL, S_FASTLY_HDR, 0, "header %n (Fastly)", 0},
    {"x-fastly-*", V_ANY, NULL, S_FASTLY_HDR, 0, "header %n (Fastly)", 0},
    {"x-varnish", V_ANY, NULL, S_VARNISH_HDR, 0,
     "header x-varnish (Varnish cache)", 0},
    /* Akamai */
    {"akamai-grn", V_ANY, NULL, S_AKAMAI_HDR, 0,
     "header %n: the answer passed through Akamai", 0},
    {"x-akamai-*", V_ANY, NULL, S_AKAMAI_HDR, 0,
     "header %n: the answer passed through Akamai", 0},
    /* Azure Front Door */
    {"x-azure-ref", V_ANY, NULL, S_AFD_REF, 0,
     "header %n: the answer passed through Azure Front Door", 0},
    {"x-msedge-ref", V_ANY, NULL, S_AFD_REF, 0,
     "header %n: the answer passed through Azure Front Door", 0},
    /* Google */
    {"x-goog-*", V_ANY, NULL, S_GOOG_HDR, 0, "header %n (Google)", 0},
    {"x-guploader-*", V_ANY, NULL, S_GOOG_HDR, 0, "header %n (Google)", 0},
    /* AWS API Gateway */
    {"x-amzn-requestid", V_ANY, NULL, S_AMZN_REQID, 0,
     "header x-amzn-RequestId (AWS)", 0},
    {"x-amz-apigw-id", V_ANY, NULL, S_APIGW_ID, 0,
     "header x-amz-apigw-id (AWS API Gateway)", 0},
    {"x-amzn-errortype", V_PREFIX, "TooManyRequestsException",
     S_APIGW_ERR_THROTTLE, 0, "header x-amzn-ErrorType: %v", 0},
    {"x-amzn-errortype", V_PREFIX, "LimitExceededException", S_APIGW_ERR_LIMIT,
     0, "header x-amzn-ErrorType: %v", 0},
    {"x-amzn-errortype", V_ANY, NULL, S_NONE, 0, "header x-amzn-ErrorType: %v",
     0},
    /* Kong: it reached the upstream (which may have said 429) */
    {"x-kong-upstream-latency", V_ANY, NULL, S_KONG_HDR, S_KONG_UPSTREAM,
     "header %n: Kong forwarded the request upstream", 0},
    {"x-kong-proxy-latency", V_ANY, NULL, S_KONG_HDR, S_KONG_UPSTREAM,
     "header %n: Kong forwarded the request upstream", 0},
    {"x-kong-*", V_ANY, NULL, S_KONG_HDR, 0, "header %n (Kong)", 0},
    /* Kong's per-window counters: a day, month or year window with nothing
     * left is a quota in all but name. */
    {"x-ratelimit-remaining-second", V_ZERO, NULL, S_KONG_PERIOD0, 0,
     "header x-ratelimit-remaining-second: 0", 0},
    {"x-ratelimit-remaining-minute", V_ZERO, NULL, S_KONG_PERIOD0, 0,
     "header x-ratelimit-remaining-minute: 0", 0},
    {"x-ratelimit-remaining-hour", V_ZERO, NULL, S_KONG_PERIOD0, 0,
     "header x-ratelimit-remaining-hour: 0", 0},
    {"x-ratelimit-remaining-day", V_ZERO, NULL, S_KONG_PERIOD0, S_KONG_LONG0,
     "header x-ratelimit-remaining-day: 0", 0},
    {"x-ratelimit-remaining-month", V_ZERO, NULL, S_KONG_PERIOD0, S_KONG_LONG0,
     "header x-ratelimit-remaining-month: 0", 0},
    {"x-ratelimit-remaining-year", V_ZERO, NULL, S_KONG_PERIOD0, S_KONG_LONG0,
     "header x-ratelimit-remaining-year: 0", 0},
    /* Envoy */
    {"x-envoy-ratelimited", V_ANY, NULL, S_ENVOY_RATELIMITED, 0,
     "header x-envoy-ratelimited: Envoy's rate limit filter", 0},
    {"x-envoy-overloaded", V_ANY, NULL, S_ENVOY_OVERLOADED, 0,
     "header x-envoy-overloaded: Envoy shed load (circuit breaker or overload "
     "manager)",
     0},
    {"x-envoy-upstream-service-time", V_ANY, NULL, S_ENVOY_UPSTREAM, 0,
     "header x-envoy-upstream-service-time: Envoy forwarded the request "
     "upstream",
     0},
    /* Traefik */
    {"x-retry-in", V_ANY, NULL, S_TRAEFIK, 0, "header x-retry-in: %v", 0},
    /* OpenAI */
    {"openai-*", V_ANY, NULL, S_OPENAI_HDR, 0, "header %n (OpenAI)", 0},
    {"x-ratelimit-remaining-tokens", V_ZERO, NULL, S_OPENAI_REMAIN_TOKENS0, 0,
     "header %n: 0", 0},
    {"x-ratelimit-remaining-requests", V_ZERO, NULL, S_REMAINING0, 0,
     "header %n: 0", 0},
    /* Anthropic */
    {"anthropic-ratelimit-*tokens*-remaining", V_ZERO, NULL, S_ANTHROPIC_HDR,
     S_ANTHROPIC_TOKENS0, "header %n: 0", 0},
    {"anthropic-ratelimit-*-remaining", V_ZERO, NULL, S_ANTHROPIC_HDR,
     S_ANTHROPIC_REQ0, "header %n: 0", 0},
    {"anthropic-*", V_ANY, NULL, S_ANTHROPIC_HDR, 0,
     "header anthropic-* (Anthropic)", 0},
    /* GitHub */
    {"x-github-request-id", V_ANY, NULL, S_GITHUB_HDR, 0, "header %n (GitHub)",
     0},
    {"x-github-media-type", V_ANY, NULL, S_GITHUB_HDR, 0, "header %n (GitHub)",
     0},
    {"x-github-api-version-selected", V_ANY, NULL, S_GITHUB_HDR, 0,
     "header %n (GitHub)", 0},
    {"x-ratelimit-resource", V_ANY, NULL, S_GITHUB_HDR, 0,
     "header x-ratelimit-resource: %v", 0},
    {"x-ratelimit-remaining", V_ZERO, NULL, S_REMAINING0, 0, "header %n: 0", 0},
    {"ratelimit-remaining", V_ZERO, NULL, S_REMAINING0, 0, "header %n: 0", 0},
    /* polite proxy's limiter names its policy "polite" (IETF draft form) */
    {"ratelimit-policy", V_CONTAINS, "\"polite\"", S_POLITE_POLICY, 0,
     "header ratelimit-policy: the policy \"polite\" (polite proxy)", 0},
    {"ratelimit", V_CONTAINS, "\"polite\"", S_POLITE_POLICY, 0,
     "header ratelimit: the policy \"polite\" (polite proxy)", 0},
    /* Microsoft Graph, Azure */
    {"x-ms-ags-diagnostic", V_ANY, NULL, S_MSGRAPH_HDR, 0,
     "header x-ms-ags-diagnostic (Microsoft Graph)", 0},
    {"x-ms-ratelimit-remaining-*", V_ANY, NULL, S_AZURE_HDR, 0,
     "header %n (Azure)", 0},
    {"x-ms-request-id", V_ANY, NULL, S_AZURE_HDR, 0, "header %n (Azure)", 0},
    {"apim-request-id", V_ANY, NULL, S_NONE, 0,
     "header apim-request-id (Azure API Management)", 0},
    /* OpenAI and Anthropic tell their SDKs whether to retry; so does Stripe */
    {"x-should-retry", V_ANY, NULL, S_NONE, 0, "header x-should-retry: %v",
     A_SHOULD_RETRY},
    {"stripe-should-retry", V_ANY, NULL, S_STRIPE_HDR, 0,
     "header stripe-should-retry: %v", A_SHOULD_RETRY},
    {"stripe-version", V_ANY, NULL, S_STRIPE_HDR, 0,
     "header stripe-version (Stripe)", 0},
    /* Shopify */
    {"x-shopify-shop-api-call-limit", V_ANY, NULL, S_SHOPIFY, 0,
     "header x-shopify-shop-api-call-limit: %v", 0},
    {"x-shopify-*", V_ANY, NULL, S_SHOPIFY, 0, "header %n (Shopify)", 0},
    {"x-shopid", V_ANY, NULL, S_SHOPIFY, 0, "header %n (Shopify)", 0},
    /* Slack */
    {"x-slack-*", V_ANY, NULL, S_SLACK, 0, "header %n (Slack)", 0},
    /* Discord */
    {"x-ratelimit-bucket", V_ANY, NULL, S_DISCORD, 0,
     "header x-ratelimit-bucket (Discord)", 0},
    {"x-ratelimit-scope", V_EQ, "global", S_DISCORD, S_DISCORD_GLOBAL,
     "header x-ratelimit-scope: %v", 0},
    {"x-ratelimit-scope", V_EQ, "shared", S_DISCORD, S_DISCORD_SHARED,
     "header x-ratelimit-scope: %v", 0},
    {"x-ratelimit-scope", V_ANY, NULL, S_DISCORD, 0,
     "header x-ratelimit-scope: %v", 0},
    {"x-ratelimit-global", V_ANY, NULL, S_DISCORD, S_DISCORD_GLOBAL,
     "header x-ratelimit-global: %v", 0},
    /* Twitter / X */
    {"x-rate-limit-remaining", V_ZERO, NULL, S_TWITTER, S_REMAINING0,
     "header x-rate-limit-remaining: 0 (Twitter/X)", 0},
    {"x-rate-limit-*", V_ANY, NULL, S_TWITTER, 0,
     "header x-rate-limit-* (Twitter/X)", 0},
    {"x-app-limit-24hour-remaining", V_ZERO, NULL, S_TWITTER, S_TWITTER_24H0,
     "header %n: 0 (a 24-hour cap)", 0},
    {"x-user-limit-24hour-remaining", V_ZERO, NULL, S_TWITTER, S_TWITTER_24H0,
     "header %n: 0 (a 24-hour cap)", 0},
    {"x-app-limit-24hour-remaining", V_ANY, NULL, S_TWITTER, 0,
     "header %n (Twitter/X)", 0},
    {"x-user-limit-24hour-remaining", V_ANY, NULL, S_TWITTER, 0,
     "header %n (Twitter/X)", 0},
    /* "req_..." request ids are what Stripe and Anthropic send */
    {"request-id", V_PREFIX, "req_", S_REQID_REQ, 0, NULL, 0},
};

/* Request-id headers worth quoting to support, by vendor documentation. */
static const char *const id_headers[] = {"x-request-id",
                                         "request-id",
                                         "x-amzn-requestid",
                                         "x-amz-apigw-id",
                                         "x-amz-cf-id",
                                         "cf-ray",
                                         "x-github-request-id",
                                         "x-ms-request-id",
                                         "client-request-id",
                                         "x-ms-client-request-id",
                                         "apim-request-id",
                                         "x-azure-ref",
                                         "x-msedge-ref",
                                         "akamai-grn",
                                         "x-slack-req-id",
                                         "x-transaction-id",
                                         "x-kong-request-id",
                                         "x-amzn-trace-id",
                                         "x-correlation-id",
                                         "x-cloud-trace-context",
                                         NULL};

/* ---- Bodies ------------------------------------------------------------ */

enum mkind {
  M_FIND,      /* a: text anywhere (any case) */
  M_FIND2,     /* a and b both anywhere */
  M_JSON,      /* "a": "b" (or the number b) somewhere in a JSON object */
  M_QUOTA_HINT /* polite_body_quota_hint (lib/headers.c) says so */
};

/* Fields in the order a row reads; the padding is a few bytes per row. */
// NOLINTNEXTLINE(clang-analyzer-optin.performance.Padding)
typedef struct {
  unsigned char group; /* consecutive rows of one group: the first hit wins */
  unsigned char kind;
  const char *a, *b;
  unsigned char sig;
  unsigned char needs; /* a signal that must be set already, or S_NONE */
  const char *ev;      /* NULL: a fact for the vendor rules, no evidence */
} body_rule;

#define EV_CF1015                                                              \
  "body: Cloudflare error 1015 (a rate limiting rule of the site)"
#define EV_AKAMAI "body: Akamai error page (\"Reference #...\")"
#define EV_AFD "body: Azure Front Door error page"
#define EV_GFE "body: Google front end error page"
#define EV_GAPI "body: Google API error (RESOURCE_EXHAUSTED / usageLimits)"
#define EV_ENVOY_UP "body: Envoy upstream error text"
#define EV_NGINX "body: nginx default error page"
#define EV_APIM_Q "body: \"Out of call volume quota\" (APIM quota policy)"
#define EV_OAI_Q "body: OpenAI error code insufficient_quota"
#define EV_AZURE "body: Microsoft error code (ServerBusy/TooManyRequests)"
#define EV_SLACK "body: \"error\": \"ratelimited\""
#define EV_CONC "body mentions concurrent requests"

static const body_rule body_rules[] = {
    /* Cloudflare's own error 1015 page (HTML, text and JSON forms) */
    {1, M_FIND, "error code: 1015", NULL, S_CF_1015, 0, EV_CF1015},
    {1, M_FIND, "error 1015", NULL, S_CF_1015, 0, EV_CF1015},
    {1, M_JSON, "error_code", "1015", S_CF_1015, 0, EV_CF1015},
    {1, M_FIND2, "1015", "cf-error-code", S_CF_1015, 0, EV_CF1015},
    {2, M_FIND, "generated by cloudfront", NULL, S_CFR_BODY, 0,
     "body: \"Generated by cloudfront (CloudFront)\""},
    {3, M_FIND, "reference #", NULL, S_AKAMAI_BODY, 0, EV_AKAMAI},
    {3, M_FIND, "reference&#32;#", NULL, S_AKAMAI_BODY, 0, EV_AKAMAI},
    {3, M_FIND, "errors.edgesuite.net", NULL, S_AKAMAI_BODY, 0, EV_AKAMAI},
    {4, M_FIND, "our services aren't available right now", NULL, S_AFD_BODY, 0,
     EV_AFD},
    {4, M_FIND, "our services aren&#39;t available right now", NULL, S_AFD_BODY,
     0, EV_AFD},
    /* Fastly's "Guru Mediation" page names Varnish; Varnish's own says
     * "Meditation" */
    {5, M_FIND2, "guru mediation", "varnish", S_FASTLY_BODY, 0,
     "body: \"Guru Mediation\" (Fastly's error page)"},
    {5, M_FIND, "fastly error", NULL, S_FASTLY_BODY, 0,
     "body: \"Fastly error\""},
    {5, M_FIND, "guru meditation", NULL, S_VARNISH_BODY, 0,
     "body: \"Guru Meditation\" (Varnish's error page)"},
    {6, M_FIND, "(too many requests)!!1", NULL, S_GOOGLE_HTML, 0, EV_GFE},
    {6, M_FIND, "that\xe2\x80\x99s an error", NULL, S_GOOGLE_HTML, 0, EV_GFE},
    {6, M_FIND, "that's an error", NULL, S_GOOGLE_HTML, 0, EV_GFE},
    {6, M_FIND, "our systems have detected unusual traffic", NULL,
     S_GOOGLE_HTML, 0, EV_GFE},
    {7, M_JSON, "status", "RESOURCE_EXHAUSTED", S_GAPI_BODY, 0, EV_GAPI},
    {7, M_JSON, "reason", "rateLimitExceeded", S_GAPI_BODY, 0, EV_GAPI},
    {7, M_JSON, "reason", "userRateLimitExceeded", S_GAPI_BODY, 0, EV_GAPI},
    {7, M_JSON, "reason", "dailyLimitExceeded", S_GAPI_BODY, 0, EV_GAPI},
    {7, M_JSON, "reason", "quotaExceeded", S_GAPI_BODY, 0, EV_GAPI},
    {7, M_JSON, "domain", "usageLimits", S_GAPI_BODY, 0, EV_GAPI},
    {7, M_JSON, "domain", "googleapis.com", S_GAPI_BODY, 0, EV_GAPI},
    /* AWS API Gateway: a throttle, or a usage-plan quota */
    {8, M_JSON, "message", "Too Many Requests", S_APIGW_BODY_THROTTLE, 0,
     "body: {\"message\":\"Too Many Requests\"}"},
    {8, M_JSON, "message", "Limit Exceeded", S_APIGW_BODY_LIMIT, 0,
     "body: {\"message\":\"Limit Exceeded\"}"},
    {9, M_JSON, "message", "API rate limit exceeded", S_KONG_BODY, 0,
     "body: {\"message\":\"API rate limit exceeded\"}"},
    {10, M_FIND, "local_rate_limited", NULL, S_ENVOY_BODY_LOCAL, 0,
     "body: local_rate_limited (Envoy local rate limit)"},
    {11, M_FIND, "upstream connect error or disconnect/reset", NULL,
     S_ENVOY_BODY_UPSTREAM, 0, EV_ENVOY_UP},
    {11, M_FIND, "no healthy upstream", NULL, S_ENVOY_BODY_UPSTREAM, 0,
     EV_ENVOY_UP},
    {12, M_FIND, "reset reason: overflow", NULL, S_ENVOY_BODY_OVERFLOW,
     S_ENVOY_BODY_UPSTREAM,
     "body: reset reason: overflow (Envoy circuit breaker)"},
    {13, M_FIND, "<center>nginx", NULL, S_NGINX_BODY, 0, EV_NGINX},
    {13, M_FIND, "<center>openresty", NULL, S_NGINX_BODY, 0, EV_NGINX},
    {14, M_FIND, "you have sent too many requests in a given amount of time",
     NULL, S_HAPROXY_BODY_429, 0, "body: HAProxy default 429 page"},
    {15, M_FIND, "no server is available to handle this request", NULL,
     S_HAPROXY_BODY_503, 0, "body: HAProxy default 503 page"},
    {16, M_FIND, "rate limit is exceeded. try again in", NULL, S_APIM_RATE, 0,
     "body: \"Rate limit is exceeded. Try again in N seconds.\""},
    {17, M_FIND, "out of call volume quota", NULL, S_APIM_QUOTA, 0, EV_APIM_Q},
    {17, M_FIND, "out of bandwidth quota", NULL, S_APIM_QUOTA, 0, EV_APIM_Q},
    {18, M_FIND, "policies.ratelimit.SpikeArrestViolation", NULL,
     S_APIGEE_SPIKE, 0, "body: policies.ratelimit.SpikeArrestViolation"},
    {19, M_FIND, "policies.ratelimit.QuotaViolation", NULL, S_APIGEE_QUOTA, 0,
     "body: policies.ratelimit.QuotaViolation"},
    {20, M_FIND, "policies.concurrentratelimit.", NULL, S_APIGEE_CONC, 0,
     "body: policies.concurrentratelimit (Apigee)"},
    {21, M_JSON, "code", "rate_limit_exceeded", S_OPENAI_BODY, 0,
     "body: OpenAI error code rate_limit_exceeded"},
    {21, M_JSON, "code", "insufficient_quota", S_OPENAI_BODY, 0, EV_OAI_Q},
    {21, M_JSON, "type", "insufficient_quota", S_OPENAI_BODY, 0, EV_OAI_Q},
    {22, M_FIND, "azure openai", NULL, S_AOAI_BODY, 0,
     "body: mentions Azure OpenAI"},
    {23, M_JSON, "type", "rate_limit_error", S_ANTHROPIC_BODY, 0,
     "body: error type rate_limit_error (Anthropic)"},
    {24, M_FIND, "secondary rate limit", NULL, S_GITHUB_SECONDARY, 0,
     "body: \"You have exceeded a secondary rate limit\""},
    {24, M_FIND, "api rate limit exceeded for", NULL, S_GITHUB_PRIMARY_BODY, 0,
     "body: \"API rate limit exceeded for ...\" (GitHub)"},
    {25, M_FIND, "docs.github.com/", NULL, S_GITHUB_DOCS, 0,
     "body: documentation_url on docs.github.com"},
    {26, M_JSON, "code", "ServerBusy", S_AZURE_BODY, 0, EV_AZURE},
    {26, M_JSON, "code", "SubscriptionRequestsThrottled", S_AZURE_BODY, 0,
     EV_AZURE},
    {26, M_JSON, "code", "TooManyRequests", S_AZURE_BODY, 0, EV_AZURE},
    {26, M_FIND, "<Code>ServerBusy</Code>", NULL, S_AZURE_BODY, 0, EV_AZURE},
    {27, M_JSON, "code", "rate_limit", S_STRIPE_RATE, 0,
     "body: error code rate_limit (Stripe)"},
    {28, M_JSON, "code", "lock_timeout", S_STRIPE_LOCK, 0,
     "body: error code lock_timeout (another request holds the object)"},
    {29, M_FIND, "calls per second for api client", NULL, S_SHOPIFY_BODY, 0,
     "body: \"Exceeded N calls per second for api client\""},
    {30, M_JSON, "error", "ratelimited", S_SLACK_BODY, 0, EV_SLACK},
    {30, M_JSON, "error", "rate_limited", S_SLACK_BODY, 0, EV_SLACK},
    {31, M_FIND, "too many concurrent", NULL, S_CONCURRENT_BODY, 0, EV_CONC},
    {31, M_FIND, "concurrency limit", NULL, S_CONCURRENT_BODY, 0, EV_CONC},
    {31, M_FIND, "concurrent requests", NULL, S_CONCURRENT_BODY, 0, EV_CONC},
    {31, M_FIND, "concurrent request limit", NULL, S_CONCURRENT_BODY, 0,
     EV_CONC},
    /* Facts for the vendor limit rules below (no evidence of their own) */
    {32, M_JSON, "code", "429", S_B_CODE429, 0, NULL},
    {33, M_FIND, "rate limit", NULL, S_B_RATE_LIMIT, 0, NULL},
    {34, M_FIND, "token rate limit", NULL, S_B_TOKEN_RATE_LIMIT, 0, NULL},
    {35, M_FIND, "quota", NULL, S_B_QUOTA_WORD, 0, NULL},
    /* a per-day (or longer) allowance: it does not come back within a run */
    {36, M_FIND, "per day", NULL, S_B_DAILY, 0, NULL},
    {36, M_FIND, "(TPD)", NULL, S_B_DAILY, 0, NULL},
    {36, M_FIND, "(RPD)", NULL, S_B_DAILY, 0, NULL},
    {36, M_FIND, "daily", NULL, S_B_DAILY, 0, NULL},
    {37, M_QUOTA_HINT, NULL, NULL, S_B_QUOTA_HINT, 0, NULL},
    {38, M_JSON, "code", "insufficient_quota", S_B_INSUFFICIENT, 0, NULL},
    {38, M_JSON, "type", "insufficient_quota", S_B_INSUFFICIENT, 0, NULL},
    {39, M_JSON, "type", "tokens", S_B_OAI_TOKENS, 0, NULL},
    {39, M_FIND, "tokens per min", NULL, S_B_OAI_TOKENS, 0, NULL},
    {40, M_JSON, "type", "requests", S_B_OAI_REQUESTS, 0, NULL},
    {40, M_FIND, "requests per min", NULL, S_B_OAI_REQUESTS, 0, NULL},
    {40, M_JSON, "code", "rate_limit_exceeded", S_B_OAI_REQUESTS, 0, NULL},
    {41, M_FIND, "tokens", NULL, S_B_TOKENS_WORD, 0, NULL},
    {42, M_FIND, "credit balance", NULL, S_B_CREDIT, 0, NULL},
    {43, M_JSON, "reason", "dailyLimitExceeded", S_B_GAPI_DAILY, 0, NULL},
    {43, M_FIND, "per day", NULL, S_B_GAPI_DAILY, 0, NULL},
};

/* ---- Conditions over signals ----------------------------------------- */

/* Status tests a clause may add. */
enum stest { ST_NONE, ST_ALWAYS, ST_429, ST_429_503, ST_THROTTLE };

/* All of `all`, none of `none`, and the status test. */
typedef struct {
  unsigned char all[3];
  unsigned char none[2];
  unsigned char status;
} clause;

/* True when any clause is (unused clauses are all zero). */
#define MAX_CLAUSES 5
typedef struct {
  clause c[MAX_CLAUSES];
} cond;

#define IF(...)                                                                \
  {                                                                            \
    .all = { __VA_ARGS__ }                                                     \
  }
#define IF_NOT(not, ...)                                                       \
  {                                                                            \
    .all = {__VA_ARGS__}, .none = { not }                                      \
  }
#define ALWAYS                                                                 \
  {                                                                            \
    {                                                                          \
      { .status = ST_ALWAYS }                                                  \
    }                                                                          \
  }
#define ANY(...)                                                               \
  {                                                                            \
    { __VA_ARGS__ }                                                            \
  }

/* ---- Limits ----------------------------------------------------------- */

#define L_NOTE (-1) /* evidence only: the walk goes on */
#define L_END (-2)  /* ends a limit list */

/* The first row (not L_NOTE) whose condition holds decides the limit. */
typedef struct {
  cond when;
  int limit; /* polite_limit_kind, L_NOTE or L_END */
  const char *ev;
  int64_t fallback_ms; /* the vendor's documented wait when the headers
                          give none, or 0 */
} limit_rule;

#define END                                                                    \
  { ALWAYS, L_END, NULL, 0 }
#define RATE POLITE_LIMIT_RATE
#define QUOTA POLITE_LIMIT_QUOTA
#define TOKENS POLITE_LIMIT_TOKENS
#define CONC POLITE_LIMIT_CONCURRENCY

static const limit_rule no_limits[] = {END};
static const limit_rule polite_limits[] = {
    {ANY(IF(S_B_INSUFFICIENT), IF(S_B_QUOTA_HINT)), QUOTA, NULL, 0},
    {ALWAYS, RATE, NULL, 0},
    END};
static const limit_rule aoai_limits[] = {
    {ANY(IF(S_B_TOKEN_RATE_LIMIT)), TOKENS, NULL, 0},
    {ANY(IF(S_B_QUOTA_WORD, S_B_DAILY)), QUOTA, NULL, 0},
    {ALWAYS, RATE, NULL, 0},
    END};
static const limit_rule openai_limits[] = {
    {ANY(IF(S_B_INSUFFICIENT), IF(S_B_QUOTA_HINT)), QUOTA, NULL, 0},
    {ANY(IF(S_B_DAILY)), QUOTA,
     "body: a per-day limit (RPD/TPD): not back within a run", 0},
    {ANY(IF(S_OPENAI_REMAIN_TOKENS0), IF(S_B_OAI_TOKENS)), TOKENS, NULL, 0},
    {ANY(IF(S_REMAINING0), IF(S_B_OAI_REQUESTS)), RATE, NULL, 0},
    END};
static const limit_rule anthropic_limits[] = {
    {ANY(IF(S_B_QUOTA_HINT), IF(S_B_CREDIT)), QUOTA, NULL, 0},
    {ANY(IF(S_ANTHROPIC_TOKENS0), IF(S_B_TOKENS_WORD)), TOKENS, NULL, 0},
    {ANY(IF(S_ANTHROPIC_REQ0), IF(S_ANTHROPIC_BODY)), RATE, NULL, 0},
    END};
/* GitHub's secondary limits are, by its own description, mostly per-minute
 * limits (points, CPU time, content creation per minute) with concurrent
 * requests as one cause among several: a rate limit unless the body says
 * it was concurrency. With no retry-after and no reset GitHub asks for at
 * least one minute. */
static const limit_rule github_limits[] = {
    {ANY(IF(S_GITHUB_SECONDARY, S_CONCURRENT_BODY)), CONC, NULL, 60000},
    {ANY(IF(S_GITHUB_SECONDARY)), RATE, NULL, 60000},
    {ANY(IF(S_REMAINING0), IF(S_GITHUB_PRIMARY_BODY)), RATE, NULL, 0},
    END};
static const limit_rule msgraph_limits[] = {
    {ANY({.status = ST_THROTTLE}, IF(S_AZURE_BODY)), RATE, NULL, 0}, END};
static const limit_rule stripe_limits[] = {
    {ANY(IF(S_STRIPE_LOCK), IF(S_CONCURRENT_BODY)), CONC, NULL, 0},
    {ANY(IF(S_STRIPE_RATE), {.status = ST_429}), RATE, NULL, 0},
    END};
static const limit_rule shopify_limits[] = {
    {ANY({.status = ST_429}, IF(S_SHOPIFY_BODY)), RATE, NULL, 0}, END};
static const limit_rule slack_limits[] = {
    {ANY({.status = ST_429}, IF(S_SLACK_BODY)), RATE, NULL, 0}, END};
static const limit_rule discord_limits[] = {
    {ANY(IF(S_DISCORD_SHARED)), L_NOTE,
     "scope shared: a per-resource limit that does not count against this bot",
     0},
    {ANY(IF_NOT(S_DISCORD_SHARED, S_DISCORD_GLOBAL)), L_NOTE,
     "scope global: the bot's global limit across all routes", 0},
    {ANY({.status = ST_429}), RATE, NULL, 0},
    END};
static const limit_rule twitter_limits[] = {
    {ANY(IF(S_TWITTER_24H0)), QUOTA, NULL, 0},
    {ANY({.status = ST_429}, IF(S_REMAINING0)), RATE, NULL, 0},
    END};
static const limit_rule gapi_limits[] = {
    {ANY(IF(S_B_GAPI_DAILY)), QUOTA, NULL, 0},
    /* per-minute quotas: Google says back off */
    {ALWAYS, RATE, NULL, 0},
    END};
static const limit_rule rate_limits[] = {{ALWAYS, RATE, NULL, 0}, END};
/* "Limit Exceeded" is a usage-plan quota (back next period); "Too Many
 * Requests" a throttle (rate or burst). */
static const limit_rule apigw_limits[] = {
    {ANY(IF(S_APIGW_BODY_LIMIT), IF(S_APIGW_ERR_LIMIT)), QUOTA, NULL, 0},
    {ANY(IF(S_APIGW_BODY_THROTTLE), IF(S_APIGW_ERR_THROTTLE)), RATE, NULL, 0},
    END};
static const limit_rule apim_limits[] = {
    {ANY(IF(S_APIM_QUOTA)), QUOTA, NULL, 0}, {ALWAYS, RATE, NULL, 0}, END};
static const limit_rule apigee_limits[] = {
    {ANY(IF(S_APIGEE_QUOTA)), QUOTA, NULL, 0},
    {ANY(IF(S_APIGEE_CONC)), CONC, NULL, 0},
    {ALWAYS, RATE, NULL, 0},
    END};
static const limit_rule kong_limits[] = {
    {ANY(IF(S_KONG_LONG0)), QUOTA, NULL, 0}, {ALWAYS, RATE, NULL, 0}, END};
static const limit_rule envoy_limits[] = {
    {ANY(IF(S_ENVOY_OVERLOADED), IF(S_ENVOY_BODY_OVERFLOW)), CONC, NULL, 0},
    {ALWAYS, RATE, NULL, 0},
    END};
static const limit_rule cf_limits[] = {{ANY(IF(S_CF_1015)), RATE, NULL, 0},
                                       END};
/* A CDN's 429 is its rate rule (CloudFront WAF rate-based rules, Akamai rate
 * controls, Google's front end). */
static const limit_rule cdn429_limits[] = {
    {ANY({.status = ST_429}), RATE, NULL, 0}, END};
/* limit_req and limit_conn both answer 503 (or their *_status) with this
 * page: rate or concurrency, the page does not say which. */
static const limit_rule nginx_limits[] = {
    {ALWAYS, L_NOTE,
     "nginx limit_req (rate) or limit_conn (concurrency): the page does not "
     "say which",
     0},
    END};
static const limit_rule haproxy_limits[] = {
    {ANY(IF(S_HAPROXY_BODY_429)), RATE, NULL, 0}, END};

/* What any server may say, when the vendor's rules left the limit open. */
static const limit_rule generic_limits[] = {
    {ANY(IF(S_B_QUOTA_HINT)), QUOTA, "body says the quota or credit is spent",
     0},
    {ANY(IF(S_CONCURRENT_BODY)), CONC, NULL, 0},
    {ANY(IF(S_OPENAI_REMAIN_TOKENS0)), TOKENS, NULL, 0},
    {ANY(IF(S_REMAINING0)), RATE, NULL, 0},
    {ANY(IF(S_CORE_REMAINING0)), RATE,
     "rate-limit headers: nothing remaining in the window", 0},
    END};

/* ---- Who produced the answer ------------------------------------------ */

typedef struct {
  polite_component_kind kind;
  const char *vendor;
  cond when;
  const limit_rule *limits;
} vendor_rule;

/* In order of precedence: the first row whose condition holds produced
 * the answer. polite's own proxy first (its error bodies imitate OpenAI's
 * shape), then origin APIs, gateways, proxies that say they limited, CDNs
 * that wrote the answer themselves, and the default error pages of
 * proxies. Layers in front of an origin stamp their headers on the
 * origin's own errors (an OpenAI 429 carries `server: cloudflare` and
 * cf-ray): such headers only appear in through_rules. */
static const vendor_rule vendors[] = {
    {POLITE_COMP_PROXY, "polite", ANY(IF(S_POLITE_SERVER)), polite_limits},
    /* origin APIs: their own headers or error bodies */
    {POLITE_COMP_ORIGIN, "azure-openai",
     ANY(IF(S_AOAI_BODY, S_OPENAI_REMAIN_TOKENS0), IF(S_AOAI_BODY, S_AZURE_HDR),
         IF(S_AOAI_BODY, S_B_CODE429), IF(S_AOAI_BODY, S_B_RATE_LIMIT)),
     aoai_limits},
    {POLITE_COMP_ORIGIN, "openai", ANY(IF(S_OPENAI_HDR), IF(S_OPENAI_BODY)),
     openai_limits},
    {POLITE_COMP_ORIGIN, "anthropic",
     ANY(IF(S_ANTHROPIC_HDR), IF(S_ANTHROPIC_BODY)), anthropic_limits},
    {POLITE_COMP_ORIGIN, "github",
     ANY(IF(S_GITHUB_HDR), IF(S_GITHUB_DOCS),
         IF_NOT(S_KONG_HDR, S_GITHUB_SECONDARY), IF(S_GITHUB_PRIMARY_BODY)),
     github_limits},
    {POLITE_COMP_ORIGIN, "microsoft-graph", ANY(IF(S_MSGRAPH_HDR)),
     msgraph_limits},
    {POLITE_COMP_ORIGIN, "stripe",
     ANY(IF(S_STRIPE_HDR), IF(S_REQID_REQ, S_STRIPE_RATE),
         IF(S_REQID_REQ, S_STRIPE_LOCK)),
     stripe_limits},
    {POLITE_COMP_ORIGIN, "shopify", ANY(IF(S_SHOPIFY), IF(S_SHOPIFY_BODY)),
     shopify_limits},
    {POLITE_COMP_ORIGIN, "slack", ANY(IF(S_SLACK)), slack_limits},
    {POLITE_COMP_ORIGIN, "discord", ANY(IF(S_DISCORD)), discord_limits},
    {POLITE_COMP_ORIGIN, "twitter", ANY(IF(S_TWITTER)), twitter_limits},
    {POLITE_COMP_ORIGIN, "google-apis", ANY(IF(S_GAPI_BODY)), gapi_limits},
    {POLITE_COMP_ORIGIN, "azure", ANY(IF(S_AZURE_HDR, S_AZURE_BODY)),
     rate_limits},
    /* gateways that wrote the answer themselves */
    {POLITE_COMP_GATEWAY, "aws-api-gateway",
     ANY(IF(S_APIGW_ID), IF(S_APIGW_ERR_THROTTLE), IF(S_APIGW_ERR_LIMIT),
         IF(S_AMZN_REQID, S_APIGW_BODY_THROTTLE),
         IF(S_AMZN_REQID, S_APIGW_BODY_LIMIT)),
     apigw_limits},
    {POLITE_COMP_GATEWAY, "azure-apim", ANY(IF(S_APIM_RATE), IF(S_APIM_QUOTA)),
     apim_limits},
    {POLITE_COMP_GATEWAY, "apigee",
     ANY(IF(S_APIGEE_SPIKE), IF(S_APIGEE_QUOTA), IF(S_APIGEE_CONC)),
     apigee_limits},
    {POLITE_COMP_GATEWAY, "kong",
     ANY(IF(S_KONG_BODY),
         {.all = {S_KONG_HDR}, .none = {S_KONG_UPSTREAM}, .status = ST_429},
         IF_NOT(S_KONG_UPSTREAM, S_KONG_HDR, S_KONG_PERIOD0)),
     kong_limits},
    /* proxies that say they limited */
    {POLITE_COMP_PROXY, "envoy",
     ANY(IF(S_ENVOY_RATELIMITED), IF(S_ENVOY_BODY_LOCAL),
         IF(S_ENVOY_OVERLOADED), IF(S_ENVOY_BODY_OVERFLOW)),
     envoy_limits},
    {POLITE_COMP_PROXY, "traefik", ANY(IF(S_TRAEFIK)), rate_limits},
    /* CDNs that wrote the answer themselves */
    {POLITE_COMP_CDN, "cloudflare", ANY(IF(S_CF_1015), IF(S_CF_MITIGATED)),
     cf_limits},
    {POLITE_COMP_CDN, "cloudfront", ANY(IF(S_CFR_BODY), IF(S_CFR_SERVER)),
     cdn429_limits},
    {POLITE_COMP_CDN, "akamai", ANY(IF(S_AKAMAI_SERVER), IF(S_AKAMAI_BODY)),
     cdn429_limits},
    {POLITE_COMP_CDN, "azure-front-door", ANY(IF(S_AFD_BODY)), no_limits},
    {POLITE_COMP_CDN, "fastly",
     ANY(IF(S_FASTLY_BODY), IF(S_FASTLY_HDR, S_VARNISH_BODY)), no_limits},
    {POLITE_COMP_CDN, "google", ANY(IF(S_GOOGLE_HTML)), cdn429_limits},
    /* proxies' default error pages */
    {POLITE_COMP_PROXY, "nginx", ANY(IF(S_NGINX_BODY)), nginx_limits},
    {POLITE_COMP_PROXY, "haproxy",
     ANY(IF(S_HAPROXY_BODY_429), IF(S_HAPROXY_BODY_503)), haproxy_limits},
    {POLITE_COMP_PROXY, "varnish", ANY(IF(S_VARNISH_BODY)), no_limits},
    {POLITE_COMP_PROXY, "envoy",
     ANY(IF(S_ENVOY_BODY_UPSTREAM), {.all = {S_ENVOY_SERVER},
                                     .none = {S_ENVOY_UPSTREAM},
                                     .status = ST_429_503}),
     no_limits},
};

/* Layers whose headers ride on every answer they pass (not the producer),
 * in the order they are listed in `through`. */
typedef struct {
  cond when;
  const char *component;
} through_rule;

static const through_rule through_rules[] = {
    {ANY(IF(S_CF_RAY), IF(S_CF_SERVER)), "cdn:cloudflare"},
    {ANY(IF(S_CFR_ID), IF(S_CFR_VIA), IF(S_CFR_XCACHE_ERR)), "cdn:cloudfront"},
    {ANY(IF(S_FASTLY_HDR)), "cdn:fastly"},
    {ANY(IF(S_AKAMAI_HDR)), "cdn:akamai"},
    {ANY(IF(S_AFD_REF)), "cdn:azure-front-door"},
    {ANY(IF(S_KONG_UPSTREAM)), "gateway:kong"},
    {ANY(IF(S_ENVOY_UPSTREAM)), "proxy:envoy"},
    {ANY(IF_NOT(S_FASTLY_HDR, S_VARNISH_HDR)), "proxy:varnish"},
    {ANY(IF_NOT(S_NGINX_BODY, S_NGINX_SERVER)), "proxy:nginx"},
    {ANY(IF(S_POLITE_POLICY)), "proxy:polite"},
};

#undef IF
#undef IF_NOT
#undef ALWAYS
#undef ANY
#undef END
#undef RATE
#undef QUOTA
#undef TOKENS
#undef CONC

#endif
