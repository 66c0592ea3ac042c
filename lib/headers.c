/* Rate-limit response headers: the reader that merges Retry-After, the
 * RateLimit fields (parsed in sfv.c) and the vendors' x-ratelimit-* families
 * into one wait. Go durations are in duration.c, body hints in body_hint.c. */
#include <polite/core.h>

#include "http_syntax.h"
#include "sfv.h"

#include <string.h>

/* The shared HTTP syntax helpers (http_syntax.c) under this file's short
 * names. name_is compares with a lowercase literal, which ci_eq covers. */
#define trim_ows(s, n) polite__trim_ows(s, n)
#define name_is(s, n, lit) polite__ci_eq(s, n, lit)
#define is_tchar(c) polite__is_tchar((unsigned char)(c))

/* Every wait and reset this file produces is capped here (the cap
 * delay-seconds saturates at), so that callers can add to it safely. */
#define CAP_MS (POLITE_RA_MAX_SECONDS * 1000)

static int64_t min_known(int64_t cur, int64_t v) {
  return cur < 0 || v < cur ? v : cur;
}
static int64_t max_i64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

/* A plain non-negative integer (1*DIGIT), saturated at POLITE__NUM_SAT. */
static int parse_uint(const char *s, size_t len, int64_t *out) {
  if (len == 0)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (!polite__is_digit(s[i]))
      return 0;
  return polite__decimal_scaled(s, len, 1, out);
}

static int64_t cap_ms(int64_t v) {
  return v > CAP_MS ? CAP_MS : v;
}

/* A reset given in seconds, told apart from an epoch by size: values of at
 * least 1e12 are epoch milliseconds, at least 1e9 (September 2001 as an
 * epoch, 31 years as a delta) epoch seconds, anything smaller delta seconds.
 * Epochs become a delta against now_ms; a past epoch gives 0. v_ms is the
 * value times 1000, rounded up. *abs is set to 1 for an epoch, else 0. */
static int64_t reset_to_delta_ms(int64_t v_ms, int64_t now_ms, int *abs) {
  *abs = v_ms >= INT64_C(1000000000000);
  if (!*abs)
    return cap_ms(v_ms);
  __int128 epoch_ms = v_ms >= INT64_C(1000000000000000)
                          ? (__int128)(v_ms / 1000) /* epoch in ms */
                          : (__int128)v_ms;
  __int128 d = epoch_ms - now_ms;
  if (d <= 0)
    return 0;
  return d > CAP_MS ? CAP_MS : (int64_t)d;
}

/* A reset in seconds (epoch or delta, see reset_to_delta_ms) or, as some
 * servers send in x-ratelimit-reset, a Go duration ("1m30s"). */
static int parse_reset_ms(const char *s, size_t len, int64_t now_ms,
                          int64_t *out, int *abs) {
  int64_t v;
  *abs = 0;
  if (polite__decimal_scaled(s, len, 1000, &v)) {
    *out = reset_to_delta_ms(v, now_ms, abs);
    return 1;
  }
  return polite_go_duration_ms(s, len, out) == 0;
}

static int digits_at(const char *s, size_t len, size_t at, int n, int *out) {
  int v = 0;
  if (at + (size_t)n > len)
    return 0;
  for (int i = 0; i < n; i++) {
    if (!polite__is_digit(s[at + i]))
      return 0;
    v = v * 10 + (s[at + i] - '0');
  }
  *out = v;
  return 1;
}

/* An RFC 3339 timestamp ("2024-05-01T12:00:30Z", "...30.5+02:00") as Anthropic
 * sends in anthropic-ratelimit-*-reset, turned into the time until then in
 * ms (rounded up; a past time gives 0). Returns 1, or 0 when malformed. */
static int parse_rfc3339_delta_ms(const char *s, size_t len, int64_t now_ms,
                                  int64_t *out) {
  static const int k_mdays[12] = {31, 29, 31, 30, 31, 30,
                                  31, 31, 30, 31, 30, 31};
  int y, mo, d, h, mi, sec, oh = 0, om = 0;
  if (len < 20 || !digits_at(s, len, 0, 4, &y) || s[4] != '-' ||
      !digits_at(s, len, 5, 2, &mo) || s[7] != '-' ||
      !digits_at(s, len, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !digits_at(s, len, 11, 2, &h) || s[13] != ':' ||
      !digits_at(s, len, 14, 2, &mi) || s[16] != ':' ||
      !digits_at(s, len, 17, 2, &sec))
    return 0;
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > k_mdays[mo - 1] ||
      (mo == 2 && d == 29 && !leap) || h > 23 || mi > 59 || sec > 60)
    return 0;
  size_t i = 19;
  int64_t frac_ms = 0;
  if (i < len && s[i] == '.') {
    size_t start = ++i;
    int64_t scale = 100;
    int rest = 0;
    while (i < len && polite__is_digit(s[i])) {
      if (scale > 0)
        frac_ms += (s[i] - '0') * scale;
      else if (s[i] != '0')
        rest = 1;
      scale /= 10;
      i++;
    }
    if (i == start)
      return 0;
    frac_ms += rest; /* round up: never early */
  }
  int sign = 0;
  if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
    i++;
  } else if (i < len && (s[i] == '+' || s[i] == '-')) {
    sign = s[i] == '+' ? 1 : -1;
    if (!digits_at(s, len, i + 1, 2, &oh) || i + 3 >= len || s[i + 3] != ':' ||
        !digits_at(s, len, i + 4, 2, &om) || oh > 23 || om > 59)
      return 0;
    i += 6;
  } else {
    return 0;
  }
  if (i != len)
    return 0;
  int64_t t = polite__days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 +
              sec - sign * (oh * 3600 + om * 60);
  __int128 delta = (__int128)t * 1000 + frac_ms - now_ms;
  *out = delta <= 0 ? 0 : delta > CAP_MS ? CAP_MS : (int64_t)delta;
  return 1;
}

/* ---- Merging ----------------------------------------------------------
 *
 * Order independence: every field is combined with an operation that does
 * not depend on arrival order. Remaining takes the minimum, reset the
 * maximum (the most restrictive reading of several sources), limit the
 * minimum with its policy window riding along. */

static void merge_remaining(polite_headers *h, int64_t v) {
  h->remaining = min_known(h->remaining, v);
}
static void merge_reset(polite_headers *h, int64_t ms) {
  h->reset_ms = max_i64(h->reset_ms, ms);
}
/* One source's pair: within a source the most restrictive reading of
 * several fields (least remaining, longest reset), as above. */
static void merge_pair(polite_headers *h, polite_rl_source src, int64_t rem,
                       int64_t reset_ms) {
  polite_rl_pair *p = &h->pairs[src];
  if (rem >= 0)
    p->remaining = min_known(p->remaining, rem);
  if (reset_ms >= 0)
    p->reset_ms = max_i64(p->reset_ms, reset_ms);
}

/* 1 when (r1, t1) allows less than (r2, t2): nothing left beats something
 * left (the longer wait first); otherwise the smaller rate r/t. A pair with
 * no reset is only restrictive when nothing is left. */
static int pair_tighter(int64_t r1, int64_t t1, int64_t r2, int64_t t2) {
  if (r2 < 0)
    return 1;
  if (r1 == 0 || r2 == 0)
    return r1 == 0 && (r2 != 0 || t1 > t2);
  if (t1 <= 0 || t2 <= 0)
    return t2 <= 0 && t1 > 0;
  return (__int128)r1 * t2 < (__int128)r2 * t1;
}

/* The most restrictive average q/w (quota per window, seconds). */
static void merge_average(polite_headers *h, int64_t q, int64_t w) {
  if (q <= 0 || w <= 0)
    return;
  if (h->avg_quota < 0 ||
      (__int128)q * h->avg_window_s < (__int128)h->avg_quota * w) {
    h->avg_quota = q;
    h->avg_window_s = w;
  }
}

static void merge_limit(polite_headers *h, int64_t limit, int64_t window_s) {
  merge_average(h, limit, window_s);
  if (h->limit < 0 || limit < h->limit) {
    h->limit = limit;
    h->window_s = window_s;
  } else if (limit == h->limit) {
    h->window_s = max_i64(h->window_s, window_s);
  }
}

/* RateLimit: either the current draft's list ("default";r=50;t=30, ...),
 * where the most restrictive member wins (least remaining, then longest
 * reset), or draft-07's dictionary (limit=100, remaining=50, reset=30). */
static void feed_ratelimit(polite_headers *h, const char *v, size_t len) {
  const char *p = v, *end = v + len;
  polite__sf_member m;
  int64_t best_r = -1, best_t = -1;
  if (!polite__sf_valid(v, len))
    return;
  while (polite__sf_next(&p, end, &m) == 1) {
    if (m.key != NULL) {
      if (m.int_item < 0)
        continue;
      if (m.key_len == 5 && memcmp(m.key, "limit", 5) == 0)
        merge_limit(h, m.int_item, m.w);
      else if (m.key_len == 9 && memcmp(m.key, "remaining", 9) == 0) {
        merge_remaining(h, m.int_item);
        merge_pair(h, POLITE_RL_DICT, m.int_item, -1);
      } else if (m.key_len == 5 && memcmp(m.key, "reset", 5) == 0) {
        int abs;
        int64_t ms = reset_to_delta_ms(m.int_item > POLITE__NUM_SAT
                                           ? POLITE__NUM_SAT * 1000
                                           : m.int_item * 1000,
                                       h->now_ms, &abs);
        merge_reset(h, ms);
        merge_pair(h, POLITE_RL_DICT, -1, ms);
        if (abs)
          h->reset_absolute |= 1u << POLITE_RL_DICT;
      }
      continue;
    }
    if (m.r < 0)
      continue;
    if (best_r < 0 || m.r < best_r || (m.r == best_r && m.t > best_t)) {
      best_r = m.r;
      best_t = m.t;
    }
    /* For the planner: the member allowing the least rate, its r and t
     * kept together (several fields combine the same way). */
    int64_t t_ms = m.t >= 0 ? cap_ms(m.t * 1000) : -1;
    polite_rl_pair *ip =
        &h->pairs[m.r == 0 ? POLITE_RL_IETF_SPENT : POLITE_RL_IETF];
    if (pair_tighter(m.r, t_ms, ip->remaining, ip->reset_ms)) {
      ip->remaining = m.r;
      ip->reset_ms = t_ms;
    }
  }
  if (best_r >= 0) {
    merge_remaining(h, best_r);
    if (best_t >= 0)
      merge_reset(h, cap_ms(best_t * 1000));
  }
}

/* RateLimit-Policy: "name";q=100;w=60 members (or the older 100;w=60). The
 * member with the smallest quota wins, ties to the longest window. */
static void feed_policy(polite_headers *h, const char *v, size_t len) {
  const char *p = v, *end = v + len;
  polite__sf_member m;
  if (!polite__sf_valid(v, len))
    return;
  while (polite__sf_next(&p, end, &m) == 1) {
    int64_t q = m.q >= 0 ? m.q : m.int_item;
    if (m.key != NULL || q < 0 || m.qu_other)
      continue;
    merge_limit(h, q, m.w);
  }
}

/* RateLimit-Limit of the older drafts: "100" or "100, 100;w=60". */
static void feed_old_limit(polite_headers *h, const char *v, size_t len) {
  const char *p = v, *end = v + len;
  polite__sf_member m;
  int64_t w = -1, q = -1;
  if (!polite__sf_valid(v, len))
    return;
  while (polite__sf_next(&p, end, &m) == 1) {
    if (m.key != NULL || m.int_item < 0)
      continue;
    if (q < 0)
      q = m.int_item; /* the first member is the limit itself */
    if (m.int_item == q && m.w > w)
      w = m.w;
  }
  if (q >= 0)
    merge_limit(h, q, w);
}

/* ---- Request ids --------------------------------------------------------- */

/* Headers that identify a request to the vendor's support. */
static const char *const k_request_ids[] = {"x-request-id",
                                            "request-id",
                                            "x-amzn-requestid",
                                            "x-amz-request-id",
                                            "x-amz-cf-id",
                                            "cf-ray",
                                            "x-github-request-id",
                                            "x-ms-request-id",
                                            "apim-request-id",
                                            "x-correlation-id",
                                            "x-cloud-trace-context",
                                            "x-amzn-trace-id",
                                            "x-ms-client-request-id",
                                            "x-trace-id"};

static int is_request_id(const char *n, size_t len) {
  for (size_t i = 0; i < sizeof k_request_ids / sizeof k_request_ids[0]; i++)
    if (name_is(n, len, k_request_ids[i]))
      return 1;
  return 0;
}

/* ---- The reader -------------------------------------------------------- */

void polite_headers_init(polite_headers *h, int64_t now_ms) {
  if (h == NULL)
    return;
  memset(h, 0, sizeof *h);
  h->now_ms = now_ms;
  h->retry_after.kind = POLITE_RA_NONE;
  h->retry_after_ms = -1;
  h->date_unix = -1;
  h->limit = h->remaining = h->reset_ms = h->window_s = -1;
  h->tokens_limit = h->tokens_remaining = h->tokens_reset_ms = -1;
  for (int i = 0; i < POLITE_RL_SOURCES; i++)
    h->pairs[i].remaining = h->pairs[i].reset_ms = -1;
  h->avg_quota = h->avg_window_s = -1;
}

static int64_t now_unix_of(const polite_headers *h) {
  return h->now_ms >= 0 ? h->now_ms / 1000 : -((-(h->now_ms + 1)) / 1000) - 1;
}

/* Several Retry-After fields (a malformed response): a valid one beats an
 * invalid one, and between valid ones the longer wait wins, judged against
 * the local clock. */
static void merge_retry_after(polite_headers *h, const polite_retry_after *ra) {
  if (ra->kind == POLITE_RA_NONE)
    return;
  polite_retry_after *cur = &h->retry_after;
  if (cur->kind == POLITE_RA_NONE || cur->kind == POLITE_RA_INVALID) {
    if (ra->kind != POLITE_RA_INVALID || cur->kind == POLITE_RA_NONE)
      *cur = *ra;
    return;
  }
  if (ra->kind == POLITE_RA_INVALID)
    return;
  /* Ties are broken so that the result is the same in any order: seconds
   * before a date (they do not depend on the Date header), then the later
   * date. */
  int64_t dn = polite_retry_after_delay_ms(ra, h->now_ms, -1);
  int64_t dc = polite_retry_after_delay_ms(cur, h->now_ms, -1);
  if (dn > dc)
    *cur = *ra;
  else if (dn == dc && cur->kind == POLITE_RA_DATE &&
           (ra->kind == POLITE_RA_SECONDS || ra->date_unix > cur->date_unix))
    *cur = *ra;
}

/* How one x-ratelimit-* header is read. */
typedef enum {
  XR_LIMIT,         /* integer: the request limit */
  XR_REMAINING,     /* integer: requests remaining */
  XR_RESET,         /* epoch or delta seconds, or a Go duration */
  XR_RESET_SECONDS, /* decimal seconds (Discord's reset-after) */
  XR_RESET_DURATION /* Go duration or decimal seconds (OpenAI) */
} xr_kind;

/* The x-ratelimit-* family (GitHub, Discord, OpenAI, Kong and many others):
 * one row per name after "x-ratelimit-". Kong's per-window rows carry the
 * window in seconds (its reset is not sent: the window bounds it). */
static const struct {
  const char *suffix;
  xr_kind kind;
  int tokens; /* OpenAI's -tokens family: the token fields */
  polite_rl_source src;
  int64_t window_s; /* Kong: the window the name states; else -1 */
} k_x_ratelimit[] = {
    {"limit", XR_LIMIT, 0, POLITE_RL_X, -1},
    {"remaining", XR_REMAINING, 0, POLITE_RL_X, -1},
    {"reset", XR_RESET, 0, POLITE_RL_X, -1},
    {"reset-after", XR_RESET_SECONDS, 0, POLITE_RL_X, -1},
    {"limit-requests", XR_LIMIT, 0, POLITE_RL_OPENAI, -1},
    {"remaining-requests", XR_REMAINING, 0, POLITE_RL_OPENAI, -1},
    {"reset-requests", XR_RESET_DURATION, 0, POLITE_RL_OPENAI, -1},
    {"limit-tokens", XR_LIMIT, 1, POLITE_RL_TOKENS, -1},
    {"remaining-tokens", XR_REMAINING, 1, POLITE_RL_TOKENS, -1},
    {"reset-tokens", XR_RESET_DURATION, 1, POLITE_RL_TOKENS, -1},
    {"limit-second", XR_LIMIT, 0, POLITE_RL_KONG_SECOND, 1},
    {"remaining-second", XR_REMAINING, 0, POLITE_RL_KONG_SECOND, 1},
    {"limit-minute", XR_LIMIT, 0, POLITE_RL_KONG_MINUTE, 60},
    {"remaining-minute", XR_REMAINING, 0, POLITE_RL_KONG_MINUTE, 60},
    {"limit-hour", XR_LIMIT, 0, POLITE_RL_KONG_HOUR, 3600},
    {"remaining-hour", XR_REMAINING, 0, POLITE_RL_KONG_HOUR, 3600},
    {"limit-day", XR_LIMIT, 0, POLITE_RL_KONG_DAY, 86400},
    {"remaining-day", XR_REMAINING, 0, POLITE_RL_KONG_DAY, 86400},
    {"limit-month", XR_LIMIT, 0, POLITE_RL_KONG_MONTH, 2592000},
    {"remaining-month", XR_REMAINING, 0, POLITE_RL_KONG_MONTH, 2592000},
    {"limit-year", XR_LIMIT, 0, POLITE_RL_KONG_YEAR, 31536000},
    {"remaining-year", XR_REMAINING, 0, POLITE_RL_KONG_YEAR, 31536000},
};

/* Stores one parsed x-ratelimit-* value: into the request fields or the
 * token fields (the most restrictive reading wins in each), and into its
 * source's pair for the planner. */
static void store_x(polite_headers *h, xr_kind kind, int tokens,
                    polite_rl_source src, int64_t window_s, int64_t x) {
  if (kind == XR_LIMIT) {
    if (tokens)
      h->tokens_limit = min_known(h->tokens_limit, x);
    else
      merge_limit(h, x, window_s);
  } else if (kind == XR_REMAINING) {
    if (tokens)
      h->tokens_remaining = min_known(h->tokens_remaining, x);
    else
      merge_remaining(h, x);
    merge_pair(h, src, x, -1);
  } else {
    if (tokens)
      h->tokens_reset_ms = max_i64(h->tokens_reset_ms, x);
    else
      merge_reset(h, x);
    merge_pair(h, src, -1, x);
  }
}

static void feed_x_ratelimit(polite_headers *h, const char *n, size_t nl,
                             const char *v, size_t vl) {
  for (size_t i = 0; i < sizeof k_x_ratelimit / sizeof k_x_ratelimit[0]; i++) {
    if (!name_is(n, nl, k_x_ratelimit[i].suffix))
      continue;
    xr_kind kind = k_x_ratelimit[i].kind;
    int64_t x;
    int ok, abs = 0;
    if (kind == XR_LIMIT || kind == XR_REMAINING)
      ok = parse_uint(v, vl, &x);
    else if (kind == XR_RESET)
      ok = parse_reset_ms(v, vl, h->now_ms, &x, &abs);
    else if (kind == XR_RESET_SECONDS)
      ok = polite__decimal_scaled(v, vl, 1000, &x);
    else
      ok = polite_go_duration_ms(v, vl, &x) == 0 ||
           polite__decimal_scaled(v, vl, 1000, &x);
    if (ok)
      store_x(h, kind, k_x_ratelimit[i].tokens, k_x_ratelimit[i].src,
              k_x_ratelimit[i].window_s, kind >= XR_RESET ? cap_ms(x) : x);
    if (ok && abs && !k_x_ratelimit[i].tokens)
      h->reset_absolute |= 1u << k_x_ratelimit[i].src;
    return;
  }
}

/* Anthropic: anthropic-ratelimit-{requests,tokens,input-tokens,
 * output-tokens}-{limit,remaining,reset}; resets are RFC 3339 times. All
 * three token families feed the token fields (the most restrictive wins).
 * `n` is the name after "anthropic-ratelimit-". */
static void feed_anthropic(polite_headers *h, const char *n, size_t nl,
                           const char *v, size_t vl) {
  static const char *const k_token_families[] = {"tokens-", "input-tokens-",
                                                 "output-tokens-"};
  int64_t x;
  const char *field = NULL;
  size_t fl = 0;
  int tokens = 0;
  if (nl > 9 && name_is(n, 9, "requests-")) {
    field = n + 9;
    fl = nl - 9;
  } else {
    for (int i = 0; i < 3; i++) {
      size_t pl = strlen(k_token_families[i]);
      if (nl > pl && name_is(n, pl, k_token_families[i])) {
        field = n + pl;
        fl = nl - pl;
        tokens = 1;
        break;
      }
    }
  }
  if (field == NULL)
    return;
  if (name_is(field, fl, "limit")) {
    if (!parse_uint(v, vl, &x))
      return;
    if (tokens)
      h->tokens_limit = min_known(h->tokens_limit, x);
    else
      merge_limit(h, x, -1);
  } else if (name_is(field, fl, "remaining")) {
    if (!parse_uint(v, vl, &x))
      return;
    if (tokens)
      h->tokens_remaining = min_known(h->tokens_remaining, x);
    else
      merge_remaining(h, x);
    merge_pair(h, tokens ? POLITE_RL_TOKENS : POLITE_RL_ANTHROPIC, x, -1);
  } else if (name_is(field, fl, "reset")) {
    if (!parse_rfc3339_delta_ms(v, vl, h->now_ms, &x))
      return;
    if (tokens)
      h->tokens_reset_ms = max_i64(h->tokens_reset_ms, x);
    else
      merge_reset(h, x);
    merge_pair(h, tokens ? POLITE_RL_TOKENS : POLITE_RL_ANTHROPIC, -1, x);
    if (!tokens) /* an RFC 3339 time */
      h->reset_absolute |= 1u << POLITE_RL_ANTHROPIC;
  }
}

int polite_headers_feed(polite_headers *h, const char *name, size_t name_len,
                        const char *value, size_t value_len) {
  if (h == NULL || name == NULL)
    return 0;
  if (value == NULL)
    value_len = 0;
  const char *v = value ? value : "";
  size_t vl = value_len;
  trim_ows(&name, &name_len);
  trim_ows(&v, &vl);
  int64_t x;

  if (name_is(name, name_len, "retry-after")) {
    polite_retry_after ra;
    polite_retry_after_parse(v, vl, now_unix_of(h), &ra);
    merge_retry_after(h, &ra);
  } else if (name_is(name, name_len, "retry-after-ms") ||
             name_is(name, name_len, "x-ms-retry-after-ms")) {
    if (polite__decimal_scaled(v, vl, 1, &x))
      h->retry_after_ms = max_i64(h->retry_after_ms, cap_ms(x));
  } else if (name_is(name, name_len, "date")) {
    if (polite_http_date_parse(v, vl, now_unix_of(h), &x) == 0)
      h->date_unix = max_i64(h->date_unix, x);
  } else if (name_is(name, name_len, "ratelimit")) {
    feed_ratelimit(h, v, vl);
  } else if (name_is(name, name_len, "ratelimit-policy")) {
    feed_policy(h, v, vl);
  } else if (name_is(name, name_len, "ratelimit-limit")) {
    feed_old_limit(h, v, vl);
  } else if (name_is(name, name_len, "ratelimit-remaining")) {
    if (parse_uint(v, vl, &x)) {
      merge_remaining(h, x);
      merge_pair(h, POLITE_RL_FIELDS, x, -1);
    }
  } else if (name_is(name, name_len, "ratelimit-reset")) {
    int abs;
    if (parse_reset_ms(v, vl, h->now_ms, &x, &abs)) {
      merge_reset(h, x);
      merge_pair(h, POLITE_RL_FIELDS, -1, x);
      if (abs)
        h->reset_absolute |= 1u << POLITE_RL_FIELDS;
    }
  } else if (name_len > 12 && name_is(name, 12, "x-ratelimit-")) {
    feed_x_ratelimit(h, name + 12, name_len - 12, v, vl);
  } else if (name_len > 20 && name_is(name, 20, "anthropic-ratelimit-")) {
    feed_anthropic(h, name + 20, name_len - 20, v, vl);
  } else if (is_request_id(name, name_len)) {
    if (vl > 0) {
      h->saw_request_id = 1;
      return 1;
    }
  }
  return 0;
}

int polite_headers_feed_line(polite_headers *h, const char *line, size_t len) {
  if (h == NULL || line == NULL)
    return 0;
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
    len--;
  const char *colon = memchr(line, ':', len);
  if (colon == NULL || colon == line)
    return 0;
  /* The name must be an HTTP token: this skips status lines ("HTTP/1.1 429
   * Too Many Requests: x" has spaces and a slash), "Name : value" and
   * folded continuation lines. */
  for (const char *p = line; p < colon; p++)
    if (!is_tchar(*p))
      return 0;
  return polite_headers_feed(h, line, (size_t)(colon - line), colon + 1,
                             len - (size_t)(colon - line) - 1);
}

int64_t polite_headers_wait_ms(const polite_headers *h,
                               polite_wait_source *source) {
  polite_wait_source src = POLITE_WAIT_NONE;
  int64_t ms = -1;
  if (h == NULL) {
    /* nothing */
  } else if (h->retry_after_ms >= 0) {
    src = POLITE_WAIT_MS;
    ms = h->retry_after_ms;
  } else if (h->retry_after.kind == POLITE_RA_SECONDS ||
             h->retry_after.kind == POLITE_RA_DATE) {
    src = h->retry_after.kind == POLITE_RA_SECONDS ? POLITE_WAIT_SECONDS
                                                   : POLITE_WAIT_DATE;
    ms = polite_retry_after_delay_ms(&h->retry_after, h->now_ms, h->date_unix);
  } else if ((h->remaining == 0 && h->reset_ms >= 0) ||
             (h->tokens_remaining == 0 && h->tokens_reset_ms >= 0)) {
    src = POLITE_WAIT_RESET;
    if (h->remaining == 0 && h->reset_ms >= 0)
      ms = h->reset_ms;
    if (h->tokens_remaining == 0 && h->tokens_reset_ms > ms)
      ms = h->tokens_reset_ms;
  } else if (h->retry_after.kind == POLITE_RA_INVALID) {
    src = POLITE_WAIT_INVALID;
  }
  if (source != NULL)
    *source = src;
  return ms;
}
