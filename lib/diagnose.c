/* Diagnosis of a throttled answer: which layer sent it and what limit it is.
 *
 * Headers are fed one at a time; each recognised one sets a signal bit and
 * an evidence sentence. polite_diagnosis_finish then looks at the body and
 * picks the layer that *produced* the answer, in this order: origin APIs,
 * then gateways, then proxies that say they limited, then CDNs, then the
 * default error pages of proxies. The order matters because layers in front
 * of an origin stamp their headers on the origin's own errors (an OpenAI 429
 * carries `server: cloudflare` and cf-ray): a header seen on every response
 * that passes through a layer only puts that layer in `through`, it never
 * makes it the culprit. Pure: no I/O, no clock, no allocation. */
#include <polite/diagnose.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bodies are only searched this far, as polite_body_quota_hint does. */
#define BODY_SCAN_MAX ((size_t)64 * 1024)

/* Signals: one bit each in d->_sig. */
/* One vendor per line reads better than one signal per line. */
// clang-format off
enum sig {
  S_CF_RAY, S_CF_SERVER, S_CF_MITIGATED, S_CF_1015,          /* Cloudflare */
  S_CFR_ID, S_CFR_XCACHE_ERR, S_CFR_VIA, S_CFR_SERVER, S_CFR_BODY, /* CloudFront */
  S_FASTLY_HDR, S_FASTLY_BODY, S_VARNISH_HDR, S_VARNISH_BODY,
  S_AKAMAI_HDR, S_AKAMAI_SERVER, S_AKAMAI_BODY,
  S_AFD_REF, S_AFD_BODY,                                     /* Azure Front Door */
  S_GFE_SERVER, S_GOOG_HDR, S_GOOGLE_HTML, S_GAPI_BODY,      /* Google */
  S_AMZN_REQID, S_APIGW_ID, S_APIGW_ERR_THROTTLE, S_APIGW_ERR_LIMIT,
  S_APIGW_BODY_THROTTLE, S_APIGW_BODY_LIMIT,                 /* API Gateway */
  S_KONG_HDR, S_KONG_UPSTREAM, S_KONG_BODY,
  S_ENVOY_RATELIMITED, S_ENVOY_SERVER, S_ENVOY_UPSTREAM, S_ENVOY_OVERLOADED,
  S_ENVOY_BODY_LOCAL, S_ENVOY_BODY_UPSTREAM, S_ENVOY_BODY_OVERFLOW,
  S_NGINX_SERVER, S_NGINX_BODY, S_HAPROXY_BODY_429, S_HAPROXY_BODY_503,
  S_TRAEFIK,
  S_APIM_RATE, S_APIM_QUOTA,                                 /* Azure APIM */
  S_APIGEE_SPIKE, S_APIGEE_QUOTA, S_APIGEE_CONC,
  S_OPENAI_HDR, S_OPENAI_BODY, S_AOAI_BODY,                  /* OpenAI, Azure OpenAI */
  S_ANTHROPIC_HDR, S_ANTHROPIC_BODY, S_ANTHROPIC_TOKENS0, S_ANTHROPIC_REQ0,
  S_GITHUB_HDR, S_GITHUB_SECONDARY, S_GITHUB_PRIMARY_BODY, S_GITHUB_DOCS,
  S_MSGRAPH_HDR, S_AZURE_HDR, S_AZURE_BODY,                  /* Microsoft */
  S_REQID_REQ, S_STRIPE_HDR, S_STRIPE_RATE, S_STRIPE_LOCK,   /* Stripe */
  S_SHOPIFY, S_SHOPIFY_BODY, S_SLACK, S_SLACK_BODY,
  S_DISCORD, S_DISCORD_GLOBAL, S_DISCORD_SHARED, S_TWITTER, S_TWITTER_24H0,
  S_OPENAI_REMAIN_TOKENS0, S_REMAINING0, S_CONCURRENT_BODY,  /* generic */
  S_COUNT
};
// clang-format on

_Static_assert(S_COUNT <= 128, "signals must fit in _sig[2]");

static void sig_set(polite_diagnosis *d, enum sig s) {
  d->_sig[s / 64] |= UINT64_C(1) << (s % 64);
}

static int sig(const polite_diagnosis *d, enum sig s) {
  return (d->_sig[s / 64] >> (s % 64)) & 1;
}

/* ---- small string helpers (lengths given, nothing NUL-terminated) ----- */

static int ci_eq(const char *s, size_t n, const char *lit) {
  size_t m = strlen(lit);
  if (n != m)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (tolower((unsigned char)s[i]) != tolower((unsigned char)lit[i]))
      return 0;
  return 1;
}

static int ci_prefix(const char *s, size_t n, const char *lit) {
  size_t m = strlen(lit);
  if (n < m)
    return 0;
  return ci_eq(s, m, lit);
}

/* Case-insensitive search of a NUL-terminated needle in hay[0..n). */
static const char *ci_find(const char *hay, size_t n, const char *needle) {
  size_t m = strlen(needle);
  if (m == 0 || hay == NULL || n < m)
    return NULL;
  int first = tolower((unsigned char)needle[0]);
  for (size_t i = 0; i + m <= n; i++) {
    if (tolower((unsigned char)hay[i]) != first)
      continue;
    size_t j = 1;
    while (j < m && tolower((unsigned char)hay[i + j]) ==
                        tolower((unsigned char)needle[j]))
      j++;
    if (j == m)
      return hay + i;
  }
  return NULL;
}

static void trim(const char **s, size_t *n) {
  while (*n > 0 && (**s == ' ' || **s == '\t')) {
    (*s)++;
    (*n)--;
  }
  while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t' ||
                    (*s)[*n - 1] == '\r' || (*s)[*n - 1] == '\n'))
    (*n)--;
}

/* 1 when the value is a whole number equal to zero ("0", "00", "0.0"). */
static int is_zero(const char *v, size_t n) {
  if (n == 0)
    return 0;
  int digits = 0, dot = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] == '0')
      digits++;
    else if (v[i] == '.' && !dot && digits > 0)
      dot = 1;
    else
      return 0;
  }
  return digits > 0;
}

/* Finds `"key"` followed by optional spaces, ':' and optional spaces, then
 * the JSON string `"value"` (both compared without case). Good enough for
 * the small, flat error objects vendors send; no full JSON parse needed,
 * and it never reads past len. */
static int json_kv(const char *b, size_t n, const char *key,
                   const char *value) {
  char qkey[48];
  int kl = snprintf(qkey, sizeof qkey, "\"%s\"", key);
  if (kl <= 0 || (size_t)kl >= sizeof qkey)
    return 0;
  size_t vl = strlen(value);
  const char *p = b, *end = b + n;
  while (p < end) {
    const char *k = ci_find(p, (size_t)(end - p), qkey);
    if (k == NULL)
      return 0;
    const char *q = k + kl;
    while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
      q++;
    if (q < end && *q == ':') {
      q++;
      while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n'))
        q++;
      if (q < end && *q == '"' && (size_t)(end - q - 1) >= vl + 1 &&
          ci_eq(q + 1, vl, value) && q[1 + vl] == '"')
        return 1;
      /* Numbers too: "error_code": 1015. */
      if (q < end && isdigit((unsigned char)*q) && (size_t)(end - q) >= vl &&
          ci_eq(q, vl, value) &&
          (q + vl == end || !isdigit((unsigned char)q[vl])))
        return 1;
    }
    p = k + 1;
  }
  return 0;
}

/* ---- evidence, ids, through ------------------------------------------- */

static void evidence(polite_diagnosis *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void evidence(polite_diagnosis *d, const char *fmt, ...) {
  if (d->n_evidence >= POLITE_DIAG_MAX_EVIDENCE)
    return;
  char *slot = d->evidence[d->n_evidence];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(slot, POLITE_DIAG_EVIDENCE_SIZE, fmt, ap);
  va_end(ap);
  for (size_t i = 0; i < d->n_evidence; i++)
    if (strcmp(d->evidence[i], slot) == 0)
      return; /* the same header twice says nothing new */
  d->n_evidence++;
}

/* Copies at most size-1 bytes of a header value into dst, replacing
 * control bytes so that logs and JSON stay one line. */
static void copy_value(char *dst, size_t size, const char *v, size_t n) {
  if (n > size - 1)
    n = size - 1;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)v[i];
    dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  dst[n] = '\0';
}

/* Evidence "header NAME: VALUE" with the value cut short; only ever called
 * for the vendor headers below, never for credentials. */
static void ev_header(polite_diagnosis *d, const char *lname, const char *v,
                      size_t vn) {
  char val[48];
  copy_value(val, sizeof val, v, vn);
  evidence(d, "header %s: %s", lname, val);
}

static void add_id(polite_diagnosis *d, const char *name, size_t nlen,
                   const char *v, size_t vn) {
  if (vn == 0 || d->n_ids >= POLITE_DIAG_MAX_IDS)
    return;
  for (size_t i = 0; i < d->n_ids; i++)
    if (ci_eq(name, nlen, d->ids[i].name))
      return; /* first value wins */
  polite_diag_id *id = &d->ids[d->n_ids++];
  if (nlen > sizeof id->name - 1)
    nlen = sizeof id->name - 1;
  for (size_t i = 0; i < nlen; i++)
    id->name[i] = (char)tolower((unsigned char)name[i]);
  id->name[nlen] = '\0';
  copy_value(id->value, sizeof id->value, v, vn);
}

static void add_through(polite_diagnosis *d, const char *comp) {
  if (strcmp(d->component, comp) == 0)
    return;
  for (size_t i = 0; i < d->n_through; i++)
    if (strcmp(d->through[i], comp) == 0)
      return;
  if (d->n_through >= POLITE_DIAG_MAX_THROUGH)
    return;
  snprintf(d->through[d->n_through++], sizeof d->through[0], "%s", comp);
}

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

/* Kong's per-window headers, from the shortest window to the longest. */
static const char *const kong_periods[] = {"second", "minute", "hour",
                                           "day",    "month",  "year"};

/* ---- the public API ---------------------------------------------------- */

void polite_diagnosis_init(polite_diagnosis *d, int status, int64_t now_ms) {
  memset(d, 0, sizeof *d);
  d->status = status;
  d->wait_ms = -1;
  d->_should_retry = -1;
  snprintf(d->component, sizeof d->component, "unknown");
  polite_headers_init(&d->headers, now_ms);
}

/* Sets the signals one header gives. `n`/`v` are trimmed, not owned. */
static void classify_header(polite_diagnosis *d, const char *n, size_t nl,
                            const char *v, size_t vl) {
  /* --- Cloudflare --- */
  if (ci_eq(n, nl, "cf-ray")) {
    sig_set(d, S_CF_RAY);
    evidence(d, "header cf-ray: the answer passed through Cloudflare");
  } else if (ci_eq(n, nl, "cf-mitigated")) {
    sig_set(d, S_CF_MITIGATED);
    ev_header(d, "cf-mitigated", v, vl);
  } else if (ci_eq(n, nl, "server")) {
    copy_value(d->_server, sizeof d->_server, v, vl);
    for (char *p = d->_server; *p; p++)
      *p = (char)tolower((unsigned char)*p);
    if (ci_prefix(v, vl, "cloudflare")) {
      sig_set(d, S_CF_SERVER);
      evidence(d, "header server: cloudflare (also sent on the origin's own "
                  "errors)");
    } else if (ci_eq(v, vl, "cloudfront")) {
      sig_set(d, S_CFR_SERVER);
      evidence(d, "header server: CloudFront (CloudFront wrote this answer)");
    } else if (ci_prefix(v, vl, "akamaighost")) {
      sig_set(d, S_AKAMAI_SERVER);
      evidence(d, "header server: AkamaiGHost (Akamai wrote this answer)");
    } else if (ci_prefix(v, vl, "gfe") || ci_prefix(v, vl, "gse") ||
               ci_eq(v, vl, "google frontend")) {
      sig_set(d, S_GFE_SERVER);
      ev_header(d, "server", v, vl);
    } else if (ci_prefix(v, vl, "esf") ||
               ci_prefix(v, vl, "scaffolding on httpserver2")) {
      sig_set(d, S_GOOG_HDR);
      ev_header(d, "server", v, vl);
    } else if (ci_prefix(v, vl, "envoy") || ci_prefix(v, vl, "istio-envoy")) {
      sig_set(d, S_ENVOY_SERVER);
      ev_header(d, "server", v, vl);
    } else if (ci_prefix(v, vl, "nginx") || ci_prefix(v, vl, "openresty")) {
      sig_set(d, S_NGINX_SERVER);
      ev_header(d, "server", v, vl);
    } else if (ci_prefix(v, vl, "kong")) {
      sig_set(d, S_KONG_HDR);
      ev_header(d, "server", v, vl);
    } else if (ci_prefix(v, vl, "varnish")) {
      sig_set(d, S_VARNISH_HDR);
      ev_header(d, "server", v, vl);
    }
  }
  /* --- CloudFront --- */
  else if (ci_eq(n, nl, "x-amz-cf-id") || ci_eq(n, nl, "x-amz-cf-pop")) {
    sig_set(d, S_CFR_ID);
    evidence(d, "header x-amz-cf-id: the answer passed through CloudFront");
  } else if (ci_eq(n, nl, "x-cache")) {
    if (ci_find(v, vl, "error from cloudfront")) {
      sig_set(d, S_CFR_XCACHE_ERR);
      evidence(d, "header x-cache: Error from cloudfront (CloudFront labels "
                  "origin errors this way too)");
    }
  } else if (ci_eq(n, nl, "via")) {
    if (ci_find(v, vl, "cloudfront")) {
      sig_set(d, S_CFR_VIA);
      ev_header(d, "via", v, vl);
    } else if (ci_find(v, vl, "kong")) {
      sig_set(d, S_KONG_HDR);
      ev_header(d, "via", v, vl);
    } else if (ci_find(v, vl, "varnish")) {
      sig_set(d, S_VARNISH_HDR);
      ev_header(d, "via", v, vl);
    }
  }
  /* --- Fastly, Varnish --- */
  else if (ci_eq(n, nl, "x-served-by")) {
    if (ci_prefix(v, vl, "cache-")) {
      sig_set(d, S_FASTLY_HDR);
      ev_header(d, "x-served-by", v, vl);
    }
  } else if (ci_prefix(n, nl, "fastly-") || ci_prefix(n, nl, "x-fastly-")) {
    sig_set(d, S_FASTLY_HDR);
    evidence(d, "header %.*s (Fastly)", (int)(nl > 40 ? 40 : nl), n);
  } else if (ci_eq(n, nl, "x-varnish")) {
    sig_set(d, S_VARNISH_HDR);
    evidence(d, "header x-varnish (Varnish cache)");
  }
  /* --- Akamai --- */
  else if (ci_eq(n, nl, "akamai-grn") || ci_prefix(n, nl, "x-akamai-")) {
    sig_set(d, S_AKAMAI_HDR);
    evidence(d, "header %.*s: the answer passed through Akamai",
             (int)(nl > 40 ? 40 : nl), n);
  }
  /* --- Azure Front Door --- */
  else if (ci_eq(n, nl, "x-azure-ref") || ci_eq(n, nl, "x-msedge-ref")) {
    sig_set(d, S_AFD_REF);
    evidence(d, "header %.*s: the answer passed through Azure Front Door",
             (int)nl, n);
  }
  /* --- Google --- */
  else if (ci_prefix(n, nl, "x-goog-") || ci_prefix(n, nl, "x-guploader-")) {
    sig_set(d, S_GOOG_HDR);
    evidence(d, "header %.*s (Google)", (int)(nl > 40 ? 40 : nl), n);
  }
  /* --- AWS API Gateway --- */
  else if (ci_eq(n, nl, "x-amzn-requestid")) {
    sig_set(d, S_AMZN_REQID);
    evidence(d, "header x-amzn-RequestId (AWS)");
  } else if (ci_eq(n, nl, "x-amz-apigw-id")) {
    sig_set(d, S_APIGW_ID);
    evidence(d, "header x-amz-apigw-id (AWS API Gateway)");
  } else if (ci_eq(n, nl, "x-amzn-errortype")) {
    if (ci_prefix(v, vl, "TooManyRequestsException"))
      sig_set(d, S_APIGW_ERR_THROTTLE);
    else if (ci_prefix(v, vl, "LimitExceededException"))
      sig_set(d, S_APIGW_ERR_LIMIT);
    ev_header(d, "x-amzn-ErrorType", v, vl);
  }
  /* --- Kong --- */
  else if (ci_eq(n, nl, "x-kong-upstream-latency") ||
           ci_eq(n, nl, "x-kong-proxy-latency")) {
    /* Kong reached the upstream: the upstream may have said 429. */
    sig_set(d, S_KONG_HDR);
    sig_set(d, S_KONG_UPSTREAM);
    evidence(d, "header %.*s: Kong forwarded the request upstream", (int)nl, n);
  } else if (ci_prefix(n, nl, "x-kong-")) {
    sig_set(d, S_KONG_HDR);
    evidence(d, "header %.*s (Kong)", (int)(nl > 40 ? 40 : nl), n);
  } else if (ci_prefix(n, nl, "x-ratelimit-remaining-") && nl > 22 &&
             !ci_eq(n, nl, "x-ratelimit-remaining-requests") &&
             !ci_eq(n, nl, "x-ratelimit-remaining-tokens")) {
    for (int i = 0; i < 6; i++)
      if (ci_eq(n + 22, nl - 22, kong_periods[i]) && is_zero(v, vl)) {
        if (i + 1 > d->_kong_period)
          d->_kong_period = i + 1;
        evidence(d, "header x-ratelimit-remaining-%s: 0", kong_periods[i]);
      }
  }
  /* --- Envoy --- */
  else if (ci_eq(n, nl, "x-envoy-ratelimited")) {
    sig_set(d, S_ENVOY_RATELIMITED);
    evidence(d, "header x-envoy-ratelimited: Envoy's rate limit filter");
  } else if (ci_eq(n, nl, "x-envoy-overloaded")) {
    sig_set(d, S_ENVOY_OVERLOADED);
    evidence(d, "header x-envoy-overloaded: Envoy shed load (circuit "
                "breaker or overload manager)");
  } else if (ci_eq(n, nl, "x-envoy-upstream-service-time")) {
    sig_set(d, S_ENVOY_UPSTREAM);
    evidence(d, "header x-envoy-upstream-service-time: Envoy forwarded the "
                "request upstream");
  }
  /* --- Traefik --- */
  else if (ci_eq(n, nl, "x-retry-in")) {
    sig_set(d, S_TRAEFIK);
    ev_header(d, "x-retry-in", v, vl);
  }
  /* --- OpenAI --- */
  else if (ci_prefix(n, nl, "openai-")) {
    sig_set(d, S_OPENAI_HDR);
    evidence(d, "header %.*s (OpenAI)", (int)(nl > 40 ? 40 : nl), n);
  } else if (ci_eq(n, nl, "x-ratelimit-remaining-tokens") ||
             ci_eq(n, nl, "x-ratelimit-remaining-requests")) {
    if (is_zero(v, vl)) {
      sig_set(d, ci_eq(n, nl, "x-ratelimit-remaining-tokens")
                     ? S_OPENAI_REMAIN_TOKENS0
                     : S_REMAINING0);
      evidence(d, "header %.*s: 0", (int)nl, n);
    }
  }
  /* --- Anthropic --- */
  else if (ci_prefix(n, nl, "anthropic-")) {
    sig_set(d, S_ANTHROPIC_HDR);
    if (ci_prefix(n, nl, "anthropic-ratelimit-") && nl > 10 &&
        ci_eq(n + nl - 10, 10, "-remaining") && is_zero(v, vl)) {
      sig_set(d, ci_find(n, nl, "tokens") ? S_ANTHROPIC_TOKENS0
                                          : S_ANTHROPIC_REQ0);
      evidence(d, "header %.*s: 0", (int)(nl > 60 ? 60 : nl), n);
    } else {
      evidence(d, "header anthropic-* (Anthropic)");
    }
  }
  /* --- GitHub --- */
  else if (ci_eq(n, nl, "x-github-request-id") ||
           ci_eq(n, nl, "x-github-media-type") ||
           ci_eq(n, nl, "x-github-api-version-selected")) {
    sig_set(d, S_GITHUB_HDR);
    evidence(d, "header %.*s (GitHub)", (int)nl, n);
  } else if (ci_eq(n, nl, "x-ratelimit-resource")) {
    sig_set(d, S_GITHUB_HDR);
    ev_header(d, "x-ratelimit-resource", v, vl);
  } else if (ci_eq(n, nl, "x-ratelimit-remaining") ||
             ci_eq(n, nl, "ratelimit-remaining")) {
    if (is_zero(v, vl)) {
      sig_set(d, S_REMAINING0);
      evidence(d, "header %.*s: 0", (int)nl, n);
    }
  }
  /* --- Microsoft Graph, Azure --- */
  else if (ci_eq(n, nl, "x-ms-ags-diagnostic")) {
    sig_set(d, S_MSGRAPH_HDR);
    evidence(d, "header x-ms-ags-diagnostic (Microsoft Graph)");
  } else if (ci_prefix(n, nl, "x-ms-ratelimit-remaining-") ||
             ci_eq(n, nl, "x-ms-request-id")) {
    sig_set(d, S_AZURE_HDR);
    evidence(d, "header %.*s (Azure)", (int)(nl > 60 ? 60 : nl), n);
  } else if (ci_eq(n, nl, "apim-request-id")) {
    evidence(d, "header apim-request-id (Azure API Management)");
  }
  /* --- Stripe --- */
  else if (ci_eq(n, nl, "x-should-retry")) {
    /* OpenAI and Anthropic tell their SDKs whether to retry. */
    d->_should_retry = ci_eq(v, vl, "true")    ? 1
                       : ci_eq(v, vl, "false") ? 0
                                               : d->_should_retry;
    ev_header(d, "x-should-retry", v, vl);
  } else if (ci_eq(n, nl, "stripe-version") ||
             ci_eq(n, nl, "stripe-should-retry")) {
    sig_set(d, S_STRIPE_HDR);
    if (ci_eq(n, nl, "stripe-should-retry")) {
      d->_should_retry = ci_eq(v, vl, "true")    ? 1
                         : ci_eq(v, vl, "false") ? 0
                                                 : -1;
      ev_header(d, "stripe-should-retry", v, vl);
    } else {
      evidence(d, "header stripe-version (Stripe)");
    }
  }
  /* --- Shopify --- */
  else if (ci_eq(n, nl, "x-shopify-shop-api-call-limit")) {
    sig_set(d, S_SHOPIFY);
    ev_header(d, "x-shopify-shop-api-call-limit", v, vl);
  } else if (ci_prefix(n, nl, "x-shopify-") || ci_eq(n, nl, "x-shopid")) {
    sig_set(d, S_SHOPIFY);
    evidence(d, "header %.*s (Shopify)", (int)(nl > 40 ? 40 : nl), n);
  }
  /* --- Slack --- */
  else if (ci_eq(n, nl, "x-slack-req-id") || ci_prefix(n, nl, "x-slack-")) {
    sig_set(d, S_SLACK);
    evidence(d, "header %.*s (Slack)", (int)(nl > 40 ? 40 : nl), n);
  }
  /* --- Discord --- */
  else if (ci_eq(n, nl, "x-ratelimit-bucket")) {
    sig_set(d, S_DISCORD);
    evidence(d, "header x-ratelimit-bucket (Discord)");
  } else if (ci_eq(n, nl, "x-ratelimit-scope")) {
    sig_set(d, S_DISCORD);
    if (ci_eq(v, vl, "global"))
      sig_set(d, S_DISCORD_GLOBAL);
    else if (ci_eq(v, vl, "shared"))
      sig_set(d, S_DISCORD_SHARED);
    ev_header(d, "x-ratelimit-scope", v, vl);
  } else if (ci_eq(n, nl, "x-ratelimit-global")) {
    sig_set(d, S_DISCORD);
    sig_set(d, S_DISCORD_GLOBAL);
    ev_header(d, "x-ratelimit-global", v, vl);
  }
  /* --- Twitter / X --- */
  else if (ci_prefix(n, nl, "x-rate-limit-")) {
    sig_set(d, S_TWITTER);
    if (ci_eq(n, nl, "x-rate-limit-remaining") && is_zero(v, vl)) {
      sig_set(d, S_REMAINING0);
      evidence(d, "header x-rate-limit-remaining: 0 (Twitter/X)");
    } else {
      evidence(d, "header x-rate-limit-* (Twitter/X)");
    }
  } else if ((ci_eq(n, nl, "x-app-limit-24hour-remaining") ||
              ci_eq(n, nl, "x-user-limit-24hour-remaining"))) {
    sig_set(d, S_TWITTER);
    if (is_zero(v, vl)) {
      sig_set(d, S_TWITTER_24H0);
      evidence(d, "header %.*s: 0 (a 24-hour cap)", (int)nl, n);
    } else {
      evidence(d, "header %.*s (Twitter/X)", (int)nl, n);
    }
  }

  /* request-id: "req_..." is what Stripe and Anthropic send. */
  if (ci_eq(n, nl, "request-id") && ci_prefix(v, vl, "req_"))
    sig_set(d, S_REQID_REQ);
}

void polite_diagnosis_feed_header(polite_diagnosis *d, const char *name,
                                  size_t nlen, const char *value, size_t vlen) {
  if (d == NULL || name == NULL)
    return;
  if (value == NULL)
    vlen = 0;
  const char *v = value ? value : "";
  trim(&name, &nlen);
  trim(&v, &vlen);
  if (nlen == 0)
    return;

  polite_headers_feed(&d->headers, name, nlen, v, vlen);
  /* Twitter/X spells GitHub's x-ratelimit-* (epoch reset) with an extra
   * dash; hand the core the spelling it knows rather than parse it twice. */
  if (ci_prefix(name, nlen, "x-rate-limit-") && nlen > 13) {
    char alias[40];
    int an = snprintf(alias, sizeof alias, "x-ratelimit-%.*s",
                      (int)(nlen - 13 > 20 ? 20 : nlen - 13), name + 13);
    if (an > 0 && (size_t)an < sizeof alias)
      polite_headers_feed(&d->headers, alias, (size_t)an, v, vlen);
  }

  for (const char *const *h = id_headers; *h; h++)
    if (ci_eq(name, nlen, *h)) {
      add_id(d, name, nlen, v, vlen);
      break;
    }
  classify_header(d, name, nlen, v, vlen);
}

int polite_diagnosis_feed_line(polite_diagnosis *d, const char *line,
                               size_t len) {
  const char *colon = memchr(line, ':', len);
  if (colon == NULL || colon == line)
    return POLITE_EINVAL;
  size_t nlen = (size_t)(colon - line);
  for (size_t i = 0; i < nlen; i++) {
    unsigned char c = (unsigned char)line[i];
    /* RFC 9110 token characters only; a space before the colon is an
     * error there too. */
    if (c <= 0x20 || c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", c))
      return POLITE_EINVAL;
  }
  polite_diagnosis_feed_header(d, line, nlen, colon + 1, len - nlen - 1);
  return 0;
}

/* Sets the signals the body gives (body already cut to BODY_SCAN_MAX). */
static void classify_body(polite_diagnosis *d, const char *b, size_t n) {
  if (n == 0)
    return;
  /* Cloudflare's own error 1015 page (HTML, text and JSON forms). */
  if (ci_find(b, n, "error code: 1015") || ci_find(b, n, "error 1015") ||
      json_kv(b, n, "error_code", "1015") ||
      (ci_find(b, n, "1015") && ci_find(b, n, "cf-error-code"))) {
    sig_set(d, S_CF_1015);
    evidence(d, "body: Cloudflare error 1015 (a rate limiting rule of the "
                "site)");
  }
  if (ci_find(b, n, "generated by cloudfront")) {
    sig_set(d, S_CFR_BODY);
    evidence(d, "body: \"Generated by cloudfront (CloudFront)\"");
  }
  if (ci_find(b, n, "reference #") || ci_find(b, n, "reference&#32;#") ||
      ci_find(b, n, "errors.edgesuite.net")) {
    sig_set(d, S_AKAMAI_BODY);
    evidence(d, "body: Akamai error page (\"Reference #...\")");
  }
  if (ci_find(b, n, "our services aren't available right now") ||
      ci_find(b, n, "our services aren&#39;t available right now")) {
    sig_set(d, S_AFD_BODY);
    evidence(d, "body: Azure Front Door error page");
  }
  if (ci_find(b, n, "guru mediation") && ci_find(b, n, "varnish")) {
    sig_set(d, S_FASTLY_BODY);
    evidence(d, "body: \"Guru Mediation\" (Fastly's error page)");
  } else if (ci_find(b, n, "fastly error")) {
    sig_set(d, S_FASTLY_BODY);
    evidence(d, "body: \"Fastly error\"");
  } else if (ci_find(b, n, "guru meditation")) {
    sig_set(d, S_VARNISH_BODY);
    evidence(d, "body: \"Guru Meditation\" (Varnish's error page)");
  }
  if (ci_find(b, n, "(too many requests)!!1") ||
      (ci_find(b, n, "that\xe2\x80\x99s an error") ||
       ci_find(b, n, "that's an error")) ||
      ci_find(b, n, "our systems have detected unusual traffic")) {
    sig_set(d, S_GOOGLE_HTML);
    evidence(d, "body: Google front end error page");
  }
  if (json_kv(b, n, "status", "RESOURCE_EXHAUSTED") ||
      json_kv(b, n, "reason", "rateLimitExceeded") ||
      json_kv(b, n, "reason", "userRateLimitExceeded") ||
      json_kv(b, n, "reason", "dailyLimitExceeded") ||
      json_kv(b, n, "reason", "quotaExceeded") ||
      json_kv(b, n, "domain", "usageLimits") ||
      json_kv(b, n, "domain", "googleapis.com")) {
    sig_set(d, S_GAPI_BODY);
    evidence(d, "body: Google API error (RESOURCE_EXHAUSTED / usageLimits)");
  }
  if (json_kv(b, n, "message", "Too Many Requests")) {
    sig_set(d, S_APIGW_BODY_THROTTLE);
    evidence(d, "body: {\"message\":\"Too Many Requests\"}");
  } else if (json_kv(b, n, "message", "Limit Exceeded")) {
    sig_set(d, S_APIGW_BODY_LIMIT);
    evidence(d, "body: {\"message\":\"Limit Exceeded\"}");
  }
  if (json_kv(b, n, "message", "API rate limit exceeded")) {
    sig_set(d, S_KONG_BODY);
    evidence(d, "body: {\"message\":\"API rate limit exceeded\"}");
  }
  if (ci_find(b, n, "local_rate_limited")) {
    sig_set(d, S_ENVOY_BODY_LOCAL);
    evidence(d, "body: local_rate_limited (Envoy local rate limit)");
  }
  if (ci_find(b, n, "upstream connect error or disconnect/reset") ||
      ci_find(b, n, "no healthy upstream")) {
    sig_set(d, S_ENVOY_BODY_UPSTREAM);
    evidence(d, "body: Envoy upstream error text");
    if (ci_find(b, n, "reset reason: overflow")) {
      sig_set(d, S_ENVOY_BODY_OVERFLOW);
      evidence(d, "body: reset reason: overflow (Envoy circuit breaker)");
    }
  }
  if (ci_find(b, n, "<center>nginx") || ci_find(b, n, "<center>openresty")) {
    sig_set(d, S_NGINX_BODY);
    evidence(d, "body: nginx default error page");
  }
  if (ci_find(b, n,
              "you have sent too many requests in a given amount of "
              "time")) {
    sig_set(d, S_HAPROXY_BODY_429);
    evidence(d, "body: HAProxy default 429 page");
  }
  if (ci_find(b, n, "no server is available to handle this request")) {
    sig_set(d, S_HAPROXY_BODY_503);
    evidence(d, "body: HAProxy default 503 page");
  }
  if (ci_find(b, n, "rate limit is exceeded. try again in")) {
    sig_set(d, S_APIM_RATE);
    evidence(d, "body: \"Rate limit is exceeded. Try again in N seconds.\"");
  }
  if (ci_find(b, n, "out of call volume quota") ||
      ci_find(b, n, "out of bandwidth quota")) {
    sig_set(d, S_APIM_QUOTA);
    evidence(d, "body: \"Out of call volume quota\" (APIM quota policy)");
  }
  if (ci_find(b, n, "policies.ratelimit.SpikeArrestViolation")) {
    sig_set(d, S_APIGEE_SPIKE);
    evidence(d, "body: policies.ratelimit.SpikeArrestViolation");
  }
  if (ci_find(b, n, "policies.ratelimit.QuotaViolation")) {
    sig_set(d, S_APIGEE_QUOTA);
    evidence(d, "body: policies.ratelimit.QuotaViolation");
  }
  if (ci_find(b, n, "policies.concurrentratelimit.")) {
    sig_set(d, S_APIGEE_CONC);
    evidence(d, "body: policies.concurrentratelimit (Apigee)");
  }
  if (json_kv(b, n, "code", "rate_limit_exceeded") ||
      json_kv(b, n, "code", "insufficient_quota") ||
      json_kv(b, n, "type", "insufficient_quota")) {
    sig_set(d, S_OPENAI_BODY);
    evidence(d, "body: OpenAI error code %s",
             json_kv(b, n, "code", "rate_limit_exceeded")
                 ? "rate_limit_exceeded"
                 : "insufficient_quota");
  }
  if (ci_find(b, n, "azure openai")) {
    sig_set(d, S_AOAI_BODY);
    evidence(d, "body: mentions Azure OpenAI");
  }
  if (json_kv(b, n, "type", "rate_limit_error")) {
    sig_set(d, S_ANTHROPIC_BODY);
    evidence(d, "body: error type rate_limit_error (Anthropic)");
  }
  if (ci_find(b, n, "secondary rate limit")) {
    sig_set(d, S_GITHUB_SECONDARY);
    evidence(d, "body: \"You have exceeded a secondary rate limit\"");
  } else if (ci_find(b, n, "api rate limit exceeded for")) {
    sig_set(d, S_GITHUB_PRIMARY_BODY);
    evidence(d, "body: \"API rate limit exceeded for ...\" (GitHub)");
  }
  if (ci_find(b, n, "docs.github.com/")) {
    sig_set(d, S_GITHUB_DOCS);
    evidence(d, "body: documentation_url on docs.github.com");
  }
  if (json_kv(b, n, "code", "ServerBusy") ||
      json_kv(b, n, "code", "SubscriptionRequestsThrottled") ||
      json_kv(b, n, "code", "TooManyRequests") ||
      ci_find(b, n, "<Code>ServerBusy</Code>")) {
    sig_set(d, S_AZURE_BODY);
    evidence(d, "body: Microsoft error code (ServerBusy/TooManyRequests)");
  }
  if (json_kv(b, n, "code", "rate_limit")) {
    sig_set(d, S_STRIPE_RATE);
    evidence(d, "body: error code rate_limit (Stripe)");
  }
  if (json_kv(b, n, "code", "lock_timeout")) {
    sig_set(d, S_STRIPE_LOCK);
    evidence(d, "body: error code lock_timeout (another request holds the "
                "object)");
  }
  if (ci_find(b, n, "calls per second for api client")) {
    sig_set(d, S_SHOPIFY_BODY);
    evidence(d, "body: \"Exceeded N calls per second for api client\"");
  }
  if (json_kv(b, n, "error", "ratelimited") ||
      json_kv(b, n, "error", "rate_limited")) {
    sig_set(d, S_SLACK_BODY);
    evidence(d, "body: \"error\": \"ratelimited\"");
  }
  if (ci_find(b, n, "too many concurrent") ||
      ci_find(b, n, "concurrency limit") ||
      ci_find(b, n, "concurrent requests") ||
      ci_find(b, n, "concurrent request limit")) {
    sig_set(d, S_CONCURRENT_BODY);
    evidence(d, "body mentions concurrent requests");
  }
}

/* A per-day (or longer) allowance in an LLM or Google error message: the
 * allowance does not come back within a run. */
static int body_says_daily(const char *b, size_t n) {
  return ci_find(b, n, "per day") || ci_find(b, n, "(TPD)") ||
         ci_find(b, n, "(RPD)") || ci_find(b, n, "daily") ||
         ci_find(b, n, "dailyLimitExceeded");
}

static void set_comp(polite_diagnosis *d, polite_component_kind k,
                     const char *vendor) {
  d->kind = k;
  snprintf(d->vendor, sizeof d->vendor, "%s", vendor);
  snprintf(d->component, sizeof d->component, "%s:%s",
           polite_component_kind_name(k), vendor);
}

/* Picks the producer and, where the vendor's shape says, the limit.
 * Returns a fallback wait in ms the vendor documents when the headers give
 * none (GitHub secondary limits: one minute), else -1. */
static int64_t choose(polite_diagnosis *d, const char *b, size_t n) {
  int st = d->status;
  polite_limit_kind L = POLITE_LIMIT_UNKNOWN;
  int64_t fallback = -1;

  /* ---- origin APIs: their own headers or error bodies ---- */
  if (sig(d, S_AOAI_BODY) &&
      (sig(d, S_OPENAI_REMAIN_TOKENS0) || sig(d, S_AZURE_HDR) ||
       json_kv(b, n, "code", "429") || ci_find(b, n, "rate limit"))) {
    set_comp(d, POLITE_COMP_ORIGIN, "azure-openai");
    if (ci_find(b, n, "token rate limit"))
      L = POLITE_LIMIT_TOKENS;
    else if (ci_find(b, n, "quota") && body_says_daily(b, n))
      L = POLITE_LIMIT_QUOTA;
    else
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_OPENAI_HDR) || sig(d, S_OPENAI_BODY)) {
    set_comp(d, POLITE_COMP_ORIGIN, "openai");
    if (json_kv(b, n, "code", "insufficient_quota") ||
        json_kv(b, n, "type", "insufficient_quota") ||
        polite_body_quota_hint(b, n)) {
      L = POLITE_LIMIT_QUOTA;
    } else if (body_says_daily(b, n)) {
      L = POLITE_LIMIT_QUOTA; /* RPD / TPD: back tomorrow */
      evidence(d, "body: a per-day limit (RPD/TPD): not back within a run");
    } else if (sig(d, S_OPENAI_REMAIN_TOKENS0) ||
               json_kv(b, n, "type", "tokens") ||
               ci_find(b, n, "tokens per min")) {
      L = POLITE_LIMIT_TOKENS;
    } else if (sig(d, S_REMAINING0) || json_kv(b, n, "type", "requests") ||
               ci_find(b, n, "requests per min") ||
               json_kv(b, n, "code", "rate_limit_exceeded")) {
      L = POLITE_LIMIT_RATE;
    }
  } else if (sig(d, S_ANTHROPIC_HDR) || sig(d, S_ANTHROPIC_BODY)) {
    set_comp(d, POLITE_COMP_ORIGIN, "anthropic");
    if (polite_body_quota_hint(b, n) || ci_find(b, n, "credit balance"))
      L = POLITE_LIMIT_QUOTA;
    else if (sig(d, S_ANTHROPIC_TOKENS0) || ci_find(b, n, "tokens"))
      L = POLITE_LIMIT_TOKENS;
    else if (sig(d, S_ANTHROPIC_REQ0) || sig(d, S_ANTHROPIC_BODY))
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_GITHUB_HDR) || sig(d, S_GITHUB_DOCS) ||
             (sig(d, S_GITHUB_SECONDARY) && !sig(d, S_KONG_HDR)) ||
             sig(d, S_GITHUB_PRIMARY_BODY)) {
    set_comp(d, POLITE_COMP_ORIGIN, "github");
    if (sig(d, S_GITHUB_SECONDARY)) {
      /* Secondary limits cover concurrent requests and points per minute;
       * GitHub says: honour retry-after, else the reset, else one minute. */
      L = POLITE_LIMIT_CONCURRENCY;
      fallback = 60000;
    } else if (sig(d, S_REMAINING0) || sig(d, S_GITHUB_PRIMARY_BODY)) {
      L = POLITE_LIMIT_RATE;
    }
  } else if (sig(d, S_MSGRAPH_HDR)) {
    set_comp(d, POLITE_COMP_ORIGIN, "microsoft-graph");
    if (st == 429 || st == 503 || st == 509 || sig(d, S_AZURE_BODY))
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_STRIPE_HDR) ||
             (sig(d, S_REQID_REQ) &&
              (sig(d, S_STRIPE_RATE) || sig(d, S_STRIPE_LOCK)))) {
    set_comp(d, POLITE_COMP_ORIGIN, "stripe");
    if (sig(d, S_STRIPE_LOCK) || sig(d, S_CONCURRENT_BODY))
      L = POLITE_LIMIT_CONCURRENCY;
    else if (sig(d, S_STRIPE_RATE) || st == 429)
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_SHOPIFY) || sig(d, S_SHOPIFY_BODY)) {
    set_comp(d, POLITE_COMP_ORIGIN, "shopify");
    if (st == 429 || sig(d, S_SHOPIFY_BODY))
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_SLACK)) {
    set_comp(d, POLITE_COMP_ORIGIN, "slack");
    if (st == 429 || sig(d, S_SLACK_BODY))
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_DISCORD)) {
    set_comp(d, POLITE_COMP_ORIGIN, "discord");
    if (st == 429)
      L = POLITE_LIMIT_RATE;
    if (sig(d, S_DISCORD_SHARED))
      evidence(d, "scope shared: a per-resource limit that does not count "
                  "against this bot");
    else if (sig(d, S_DISCORD_GLOBAL))
      evidence(d, "scope global: the bot's global limit across all routes");
  } else if (sig(d, S_TWITTER)) {
    set_comp(d, POLITE_COMP_ORIGIN, "twitter");
    if (sig(d, S_TWITTER_24H0))
      L = POLITE_LIMIT_QUOTA;
    else if (st == 429 || sig(d, S_REMAINING0))
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_GAPI_BODY)) {
    set_comp(d, POLITE_COMP_ORIGIN, "google-apis");
    if (json_kv(b, n, "reason", "dailyLimitExceeded") ||
        ci_find(b, n, "per day"))
      L = POLITE_LIMIT_QUOTA;
    else
      L = POLITE_LIMIT_RATE; /* per-minute quotas: Google says back off */
  } else if (sig(d, S_AZURE_HDR) && sig(d, S_AZURE_BODY)) {
    set_comp(d, POLITE_COMP_ORIGIN, "azure");
    L = POLITE_LIMIT_RATE;
  }

  /* ---- gateways that wrote the answer themselves ---- */
  else if (sig(d, S_APIGW_ID) || sig(d, S_APIGW_ERR_THROTTLE) ||
           sig(d, S_APIGW_ERR_LIMIT) ||
           (sig(d, S_AMZN_REQID) &&
            (sig(d, S_APIGW_BODY_THROTTLE) || sig(d, S_APIGW_BODY_LIMIT)))) {
    set_comp(d, POLITE_COMP_GATEWAY, "aws-api-gateway");
    /* "Limit Exceeded" is a usage-plan quota (back next period);
     * "Too Many Requests" a throttle (rate or burst). */
    if (sig(d, S_APIGW_BODY_LIMIT) || sig(d, S_APIGW_ERR_LIMIT))
      L = POLITE_LIMIT_QUOTA;
    else if (sig(d, S_APIGW_BODY_THROTTLE) || sig(d, S_APIGW_ERR_THROTTLE))
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_APIM_RATE) || sig(d, S_APIM_QUOTA)) {
    set_comp(d, POLITE_COMP_GATEWAY, "azure-apim");
    L = sig(d, S_APIM_QUOTA) ? POLITE_LIMIT_QUOTA : POLITE_LIMIT_RATE;
  } else if (sig(d, S_APIGEE_SPIKE) || sig(d, S_APIGEE_QUOTA) ||
             sig(d, S_APIGEE_CONC)) {
    set_comp(d, POLITE_COMP_GATEWAY, "apigee");
    L = sig(d, S_APIGEE_QUOTA)  ? POLITE_LIMIT_QUOTA
        : sig(d, S_APIGEE_CONC) ? POLITE_LIMIT_CONCURRENCY
                                : POLITE_LIMIT_RATE;
  } else if (sig(d, S_KONG_BODY) ||
             (sig(d, S_KONG_HDR) && !sig(d, S_KONG_UPSTREAM) &&
              (st == 429 || d->_kong_period > 0))) {
    set_comp(d, POLITE_COMP_GATEWAY, "kong");
    /* A day/month/year window with nothing left is a quota in all but
     * name; second/minute/hour windows are rates. */
    L = d->_kong_period >= 4 ? POLITE_LIMIT_QUOTA : POLITE_LIMIT_RATE;
  }

  /* ---- proxies that say they limited ---- */
  else if (sig(d, S_ENVOY_RATELIMITED) || sig(d, S_ENVOY_BODY_LOCAL) ||
           sig(d, S_ENVOY_OVERLOADED) || sig(d, S_ENVOY_BODY_OVERFLOW)) {
    set_comp(d, POLITE_COMP_PROXY, "envoy");
    L = (sig(d, S_ENVOY_OVERLOADED) || sig(d, S_ENVOY_BODY_OVERFLOW))
            ? POLITE_LIMIT_CONCURRENCY
            : POLITE_LIMIT_RATE;
  } else if (sig(d, S_TRAEFIK)) {
    set_comp(d, POLITE_COMP_PROXY, "traefik");
    L = POLITE_LIMIT_RATE;
  }

  /* ---- CDNs that wrote the answer themselves ---- */
  else if (sig(d, S_CF_1015) || sig(d, S_CF_MITIGATED)) {
    set_comp(d, POLITE_COMP_CDN, "cloudflare");
    if (sig(d, S_CF_1015))
      L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_CFR_BODY) || sig(d, S_CFR_SERVER)) {
    set_comp(d, POLITE_COMP_CDN, "cloudfront");
    if (st == 429)
      L = POLITE_LIMIT_RATE; /* a WAF rate-based rule */
  } else if (sig(d, S_AKAMAI_SERVER) || sig(d, S_AKAMAI_BODY)) {
    set_comp(d, POLITE_COMP_CDN, "akamai");
    if (st == 429)
      L = POLITE_LIMIT_RATE; /* Akamai rate controls */
  } else if (sig(d, S_AFD_BODY)) {
    set_comp(d, POLITE_COMP_CDN, "azure-front-door");
  } else if (sig(d, S_FASTLY_BODY) ||
             (sig(d, S_FASTLY_HDR) && sig(d, S_VARNISH_BODY))) {
    set_comp(d, POLITE_COMP_CDN, "fastly");
  } else if (sig(d, S_GOOGLE_HTML)) {
    set_comp(d, POLITE_COMP_CDN, "google");
    if (st == 429)
      L = POLITE_LIMIT_RATE;
  }

  /* ---- proxies' default error pages ---- */
  else if (sig(d, S_NGINX_BODY)) {
    /* limit_req and limit_conn both answer 503 (or their *_status) with
     * this page: rate or concurrency, the page does not say which. */
    set_comp(d, POLITE_COMP_PROXY, "nginx");
    evidence(d, "nginx limit_req (rate) or limit_conn (concurrency): the "
                "page does not say which");
  } else if (sig(d, S_HAPROXY_BODY_429)) {
    set_comp(d, POLITE_COMP_PROXY, "haproxy");
    L = POLITE_LIMIT_RATE;
  } else if (sig(d, S_HAPROXY_BODY_503)) {
    set_comp(d, POLITE_COMP_PROXY, "haproxy");
  } else if (sig(d, S_VARNISH_BODY)) {
    set_comp(d, POLITE_COMP_PROXY, "varnish");
  } else if (sig(d, S_ENVOY_BODY_UPSTREAM) ||
             (sig(d, S_ENVOY_SERVER) && !sig(d, S_ENVOY_UPSTREAM) &&
              (st == 429 || st == 503))) {
    set_comp(d, POLITE_COMP_PROXY, "envoy");
  }

  d->limit = L;
  return fallback;
}

/* Layers whose headers ride on every answer they pass (not the producer). */
static void fill_through(polite_diagnosis *d) {
  if (sig(d, S_CF_RAY) || sig(d, S_CF_SERVER))
    add_through(d, "cdn:cloudflare");
  if (sig(d, S_CFR_ID) || sig(d, S_CFR_VIA) || sig(d, S_CFR_XCACHE_ERR))
    add_through(d, "cdn:cloudfront");
  if (sig(d, S_FASTLY_HDR))
    add_through(d, "cdn:fastly");
  if (sig(d, S_AKAMAI_HDR))
    add_through(d, "cdn:akamai");
  if (sig(d, S_AFD_REF))
    add_through(d, "cdn:azure-front-door");
  if (sig(d, S_KONG_UPSTREAM))
    add_through(d, "gateway:kong");
  if (sig(d, S_ENVOY_UPSTREAM))
    add_through(d, "proxy:envoy");
  if (sig(d, S_VARNISH_HDR) && !sig(d, S_FASTLY_HDR))
    add_through(d, "proxy:varnish");
  if (sig(d, S_NGINX_SERVER) && !sig(d, S_NGINX_BODY))
    add_through(d, "proxy:nginx");
}

void polite_diagnosis_finish(polite_diagnosis *d, const char *body,
                             size_t len) {
  if (d == NULL || d->_finished)
    return;
  d->_finished = 1;
  if (body == NULL)
    len = 0;
  if (len > BODY_SCAN_MAX)
    len = BODY_SCAN_MAX;
  const char *b = body ? body : "";

  classify_body(d, b, len);
  int64_t fallback = choose(d, b, len);

  /* Vendor rules left the limit open: use what any server may say. */
  if (d->limit == POLITE_LIMIT_UNKNOWN) {
    if (len > 0 && polite_body_quota_hint(b, len)) {
      d->limit = POLITE_LIMIT_QUOTA;
      evidence(d, "body says the quota or credit is spent");
    } else if (sig(d, S_CONCURRENT_BODY)) {
      d->limit = POLITE_LIMIT_CONCURRENCY;
    } else if (sig(d, S_OPENAI_REMAIN_TOKENS0)) {
      d->limit = POLITE_LIMIT_TOKENS;
    } else if (sig(d, S_REMAINING0) || d->headers.remaining == 0) {
      d->limit = POLITE_LIMIT_RATE;
      if (!sig(d, S_REMAINING0))
        evidence(d, "rate-limit headers: nothing remaining in the window");
    }
  }

  /* Retry helps for rate, tokens and concurrency (after the wait, with
   * fewer in flight for concurrency); never for a spent quota. An unknown
   * limit is retried only on statuses that are temporary by definition
   * (429, 503, Anthropic's 529), with backoff. */
  switch (d->limit) {
  case POLITE_LIMIT_RATE:
  case POLITE_LIMIT_TOKENS:
  case POLITE_LIMIT_CONCURRENCY: d->retry_helps = 1; break;
  case POLITE_LIMIT_QUOTA: d->retry_helps = 0; break;
  default:
    d->retry_helps = d->status == 429 || d->status == 503 || d->status == 529;
  }
  if (sig(d, S_CF_MITIGATED) && !sig(d, S_CF_1015)) {
    d->retry_helps = 0; /* a bot challenge: a script does not pass it */
    evidence(d, "a Cloudflare challenge: retrying from a script does not "
                "pass it");
  }
  if (d->_should_retry == 0 && d->limit != POLITE_LIMIT_QUOTA)
    d->retry_helps = 0;
  else if (d->_should_retry == 1 && d->limit != POLITE_LIMIT_QUOTA)
    d->retry_helps = 1;

  d->wait_ms = polite_headers_wait_ms(&d->headers, &d->wait_source);
  if (d->wait_source == POLITE_WAIT_INVALID)
    evidence(d, "Retry-After is not valid delay-seconds or an HTTP-date: "
                "ignored, not guessed");
  if (d->wait_ms < 0 && fallback >= 0) {
    d->wait_ms = fallback;
    evidence(d, "no retry-after: GitHub asks for at least one minute");
  }
  if (d->kind == POLITE_COMP_UNKNOWN)
    evidence(d, "no vendor evidence for who sent it: not guessed");

  fill_through(d);
}

const char *polite_diagnosis_component(const polite_diagnosis *d) {
  return d->component;
}

const char *polite_limit_name(polite_limit_kind k) {
  switch (k) {
  case POLITE_LIMIT_RATE: return "rate";
  case POLITE_LIMIT_CONCURRENCY: return "concurrency";
  case POLITE_LIMIT_QUOTA: return "quota";
  case POLITE_LIMIT_TOKENS: return "tokens";
  default: return "unknown";
  }
}

const char *polite_component_kind_name(polite_component_kind k) {
  switch (k) {
  case POLITE_COMP_ORIGIN: return "origin";
  case POLITE_COMP_CDN: return "cdn";
  case POLITE_COMP_GATEWAY: return "gateway";
  case POLITE_COMP_PROXY: return "proxy";
  default: return "unknown";
  }
}

const char *polite_diagnosis_advice(const polite_diagnosis *d) {
  if (d->limit == POLITE_LIMIT_QUOTA)
    return "quota spent: waiting will not help; check billing or the plan, "
           "or run again after the quota period resets";
  if (sig(d, S_CF_MITIGATED) && !sig(d, S_CF_1015))
    return "a CDN bot challenge, not a rate limit: retrying will not pass "
           "it; ask the site owner to allow this client";
  if (d->_should_retry == 0)
    return "the API says this request should not be retried as is";
  switch (d->limit) {
  case POLITE_LIMIT_CONCURRENCY:
    return "too many requests in flight: lower the concurrency; a retry "
           "helps once fewer are in flight";
  case POLITE_LIMIT_TOKENS:
    return "token rate limit: send fewer tokens per minute (shorter prompts, "
           "lower max_tokens) or slow down; retry after the wait";
  case POLITE_LIMIT_RATE:
    if (d->kind == POLITE_COMP_CDN)
      return "a CDN rule, not the API: it counts every request from this "
             "client or address, so slow the whole account down and retry "
             "after the wait";
    if (d->kind == POLITE_COMP_GATEWAY || d->kind == POLITE_COMP_PROXY)
      return "a gateway or proxy limit in front of the API: slow the whole "
             "account down to its rate and retry after the wait";
    return "the API's rate limit: slow the whole account down to the "
           "allowed rate and retry after the wait";
  default:
    if (!d->retry_helps)
      return "not recognised as a rate limit: retrying is unlikely to help";
    if (d->kind == POLITE_COMP_PROXY)
      return "a proxy limited it (rate or concurrency, not said): lower both "
             "the rate and the concurrency, retry with backoff";
    return "limit not recognised: back off with jitter and honour "
           "Retry-After; if it persists, quote the request ids to support";
  }
}

/* ---- raw responses as `curl -si` prints them ---------------------------- */

static void set_err(polite_diag_error *err, int line, const char *msg) {
  if (err == NULL)
    return;
  err->line = line;
  snprintf(err->message, sizeof err->message, "%s", msg);
}

/* Parses "HTTP/1.1 429 Reason" / "HTTP/2 429": sets *status. 0 or -1. */
static int parse_status_line(const char *s, size_t n, int *status,
                             int *conn_established) {
  if (n < 10 || memcmp(s, "HTTP/", 5) != 0)
    return -1;
  size_t i = 5;
  if (!isdigit((unsigned char)s[i]))
    return -1;
  while (i < n && isdigit((unsigned char)s[i]))
    i++;
  if (i < n && s[i] == '.') {
    i++;
    if (i >= n || !isdigit((unsigned char)s[i]))
      return -1;
    while (i < n && isdigit((unsigned char)s[i]))
      i++;
  }
  if (i >= n || s[i] != ' ')
    return -1;
  i++;
  if (i + 3 > n || !isdigit((unsigned char)s[i]) ||
      !isdigit((unsigned char)s[i + 1]) || !isdigit((unsigned char)s[i + 2]))
    return -1;
  int code = (s[i] - '0') * 100 + (s[i + 1] - '0') * 10 + (s[i + 2] - '0');
  i += 3;
  if (i < n && s[i] != ' ')
    return -1;
  if (code < 100)
    return -1;
  *status = code;
  *conn_established =
      code / 100 == 2 && ci_find(s + i, n - i, "connection established");
  return 0;
}

/* Next line of raw[*pos..len): sets line and llen, CR/LF removed. */
static int next_line(const char *raw, size_t len, size_t *pos,
                     const char **line, size_t *llen) {
  if (*pos >= len)
    return 0;
  const char *s = raw + *pos;
  const char *nl = memchr(s, '\n', len - *pos);
  size_t n = nl ? (size_t)(nl - s) : len - *pos;
  *pos += n + (nl ? 1 : 0);
  if (n > 0 && s[n - 1] == '\r')
    n--;
  *line = s;
  *llen = n;
  return 1;
}

int polite_diagnose_response(polite_diagnosis *d, const char *raw, size_t len,
                             int64_t now_ms, polite_diag_error *err) {
  if (d == NULL || (raw == NULL && len > 0)) {
    set_err(err, 0, "no input");
    return POLITE_EINVAL;
  }
  size_t pos = 0;
  int lineno = 0;
  const char *line = NULL;
  size_t llen = 0;

  /* Skip leading blank lines (a copy-paste often starts with one). */
  for (;;) {
    size_t before = pos;
    if (!next_line(raw, len, &pos, &line, &llen)) {
      set_err(err, lineno + 1,
              "empty input: expected a status line like "
              "'HTTP/1.1 429 Too Many Requests'");
      return POLITE_EINVAL;
    }
    lineno++;
    if (llen > 0) {
      pos = before;
      lineno--;
      break;
    }
  }

  for (;;) {
    int status = 0, conn = 0;
    next_line(raw, len, &pos, &line, &llen);
    lineno++;
    if (parse_status_line(line, llen, &status, &conn) != 0) {
      set_err(err, lineno,
              "expected a status line like "
              "'HTTP/1.1 429 Too Many Requests' or 'HTTP/2 429'");
      return POLITE_EINVAL;
    }
    polite_diagnosis_init(d, status, now_ms);
    /* Headers up to the blank line (or the end of the input). */
    for (;;) {
      if (!next_line(raw, len, &pos, &line, &llen))
        break;
      lineno++;
      if (llen == 0)
        break;
      if (line[0] == ' ' || line[0] == '\t')
        continue; /* obsolete line folding: ignored */
      if (polite_diagnosis_feed_line(d, line, llen) != 0) {
        set_err(err, lineno, "expected a header line 'Name: value'");
        return POLITE_EINVAL;
      }
    }
    /* Another header block follows when curl went on: after 1xx, a
     * redirect it followed, or a proxy's CONNECT answer. */
    int more = status / 100 == 1 || status / 100 == 3 || conn;
    if (more && len - pos >= 5 && memcmp(raw + pos, "HTTP/", 5) == 0)
      continue;
    if (status / 100 == 1 && pos >= len) {
      set_err(err, lineno, "only an interim 1xx response: no final status");
      return POLITE_EINVAL;
    }
    break;
  }
  polite_diagnosis_finish(d, raw + pos, len - pos);
  return 0;
}
