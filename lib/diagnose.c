/* Diagnosis of a throttled answer: which layer sent it and what limit it is.
 *
 * The vendor knowledge is data (diagnose_rules.h): headers are fed one at a
 * time and each recognised one sets signal bits and an evidence sentence
 * (header_rules); polite_diagnosis_finish then reads the body's markers
 * (body_rules) and picks the layer that *produced* the answer, walking
 * vendors[] in order of precedence; the chosen vendor's limit rules say
 * what kind of limit it is. The order matters because layers in front of
 * an origin stamp their headers on the origin's own errors (an OpenAI 429
 * carries `server: cloudflare` and cf-ray): a header seen on every response
 * that passes through a layer only puts that layer in `through`, it never
 * makes it the culprit. Pure: no I/O, no clock, no allocation. */
#include <polite/diagnose.h>

#include "http_syntax.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "diagnose_rules.h"

/* Bodies are only searched this far, as polite_body_quota_hint does. */
#define BODY_SCAN_MAX ((size_t)64 * 1024)
/* Evidence quotes a header name or value at most this long. */
#define EV_NAME_MAX 60
#define EV_VALUE_MAX 47

static void sig_set(polite_diagnosis *d, unsigned s) {
  if (s != S_NONE)
    d->_sig[s / 64] |= UINT64_C(1) << (s % 64);
}

static int sig(const polite_diagnosis *d, unsigned s) {
  return (d->_sig[s / 64] >> (s % 64)) & 1;
}

/* ---- small string helpers (lengths given, nothing NUL-terminated) ----- */

/* Strips SP and HTAB on both ends, and CR/LF at the end (a header value
 * pasted with its line end). */
static void trim(const char **s, size_t *n) {
  polite__trim_ows(s, n);
  while (*n > 0 && ((*s)[*n - 1] == '\r' || (*s)[*n - 1] == '\n' ||
                    polite__is_ows((*s)[*n - 1])))
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
    const char *k = polite__ci_find(p, (size_t)(end - p), qkey);
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
          polite__ci_eq(q + 1, vl, value) && q[1 + vl] == '"')
        return 1;
      /* Numbers too: "error_code": 1015. */
      if (q < end && isdigit((unsigned char)*q) && (size_t)(end - q) >= vl &&
          polite__ci_eq(q, vl, value) &&
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

static void add_id(polite_diagnosis *d, const char *name, size_t nlen,
                   const char *v, size_t vn) {
  if (vn == 0 || d->n_ids >= POLITE_DIAG_MAX_IDS)
    return;
  for (size_t i = 0; i < d->n_ids; i++)
    if (polite__ci_eq(name, nlen, d->ids[i].name))
      return; /* first value wins */
  polite_diag_id *id = &d->ids[d->n_ids++];
  if (nlen > sizeof id->name - 1)
    nlen = sizeof id->name - 1;
  for (size_t i = 0; i < nlen; i++)
    id->name[i] = polite__lower(name[i]);
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

/* ---- the public API ---------------------------------------------------- */

void polite_diagnosis_init(polite_diagnosis *d, int status, int64_t now_ms) {
  memset(d, 0, sizeof *d);
  d->status = status;
  d->wait_ms = -1;
  d->_should_retry = -1;
  snprintf(d->component, sizeof d->component, "unknown");
  polite_headers_init(&d->headers, now_ms);
}

/* 1 when name[0..n) matches the lower-case glob pat ('*': any run). */
static int name_glob(const char *pat, const char *name, size_t n) {
  const char *star = NULL;
  size_t i = 0, back = 0;
  while (i < n || *pat) {
    if (*pat == '*') {
      star = ++pat;
      back = i;
    } else if (i < n && *pat && polite__lower(name[i]) == *pat) {
      pat++;
      i++;
    } else if (star != NULL && back < n) {
      pat = star;
      i = ++back;
    } else {
      return 0;
    }
  }
  return 1;
}

static int value_test(const header_rule *r, const char *v, size_t vl) {
  switch (r->vtest) {
  case V_EQ: return polite__ci_eq(v, vl, r->value);
  case V_PREFIX: return polite__ci_prefix(v, vl, r->value);
  case V_CONTAINS: return polite__ci_find(v, vl, r->value) != NULL;
  case V_ZERO: return is_zero(v, vl);
  default: return 1;
  }
}

/* Appends s[0..n) (at most max bytes, control bytes as '?') to out. */
static size_t put_safe(char *out, size_t o, size_t cap, const char *s, size_t n,
                       size_t max) {
  for (size_t i = 0; i < n && i < max && o + 1 < cap; i++) {
    unsigned char c = (unsigned char)s[i];
    out[o++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
  }
  return o;
}

/* Evidence from a template: %n is the header name as sent, %v its value. */
static void ev_template(polite_diagnosis *d, const char *tpl, const char *n,
                        size_t nl, const char *v, size_t vl) {
  char out[POLITE_DIAG_EVIDENCE_SIZE];
  size_t o = 0;
  for (const char *p = tpl; *p && o + 1 < sizeof out; p++) {
    if (p[0] == '%' && p[1] == 'n') {
      o = put_safe(out, o, sizeof out, n, nl, EV_NAME_MAX);
      p++;
    } else if (p[0] == '%' && p[1] == 'v') {
      o = put_safe(out, o, sizeof out, v, vl, EV_VALUE_MAX);
      p++;
    } else {
      out[o++] = *p;
    }
  }
  out[o] = '\0';
  evidence(d, "%s", out);
}

/* Applies the first header rule that matches. `n`/`v` are trimmed. */
static void classify_header(polite_diagnosis *d, const char *n, size_t nl,
                            const char *v, size_t vl) {
  for (size_t i = 0; i < sizeof header_rules / sizeof *header_rules; i++) {
    const header_rule *r = &header_rules[i];
    if (!name_glob(r->name, n, nl) || !value_test(r, v, vl))
      continue;
    sig_set(d, r->sig);
    sig_set(d, r->sig2);
    if (r->ev)
      ev_template(d, r->ev, n, nl, v, vl);
    if (r->act == A_SHOULD_RETRY)
      d->_should_retry = polite__ci_eq(v, vl, "true")    ? 1
                         : polite__ci_eq(v, vl, "false") ? 0
                                                         : d->_should_retry;
    return;
  }
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
  if (polite__ci_prefix(name, nlen, "x-rate-limit-") && nlen > 13) {
    char alias[40];
    int an = snprintf(alias, sizeof alias, "x-ratelimit-%.*s",
                      (int)(nlen - 13 > 20 ? 20 : nlen - 13), name + 13);
    if (an > 0 && (size_t)an < sizeof alias)
      polite_headers_feed(&d->headers, alias, (size_t)an, v, vlen);
  }

  for (const char *const *h = id_headers; *h; h++)
    if (polite__ci_eq(name, nlen, *h)) {
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

static int body_hit(const body_rule *r, const char *b, size_t n) {
  switch (r->kind) {
  case M_FIND: return polite__ci_find(b, n, r->a) != NULL;
  case M_FIND2:
    return polite__ci_find(b, n, r->a) && polite__ci_find(b, n, r->b);
  case M_JSON: return json_kv(b, n, r->a, r->b);
  case M_QUOTA_HINT: return polite_body_quota_hint(b, n);
  default: return 0;
  }
}

/* Sets the signals the body gives (body already cut to BODY_SCAN_MAX):
 * in each group of rows only the first hit counts. */
static void classify_body(polite_diagnosis *d, const char *b, size_t n) {
  if (n == 0)
    return;
  int done_group = -1;
  for (size_t i = 0; i < sizeof body_rules / sizeof *body_rules; i++) {
    const body_rule *r = &body_rules[i];
    if (r->group == done_group || (r->needs && !sig(d, r->needs)) ||
        !body_hit(r, b, n))
      continue;
    sig_set(d, r->sig);
    if (r->ev)
      evidence(d, "%s", r->ev);
    done_group = r->group;
  }
}

static int status_ok(const polite_diagnosis *d, unsigned char st) {
  switch (st) {
  case ST_429: return d->status == 429;
  case ST_429_503: return d->status == 429 || d->status == 503;
  case ST_THROTTLE:
    return d->status == 429 || d->status == 503 || d->status == 509;
  default: return 1;
  }
}

/* 1 when any used clause of c holds. */
static int cond_holds(const polite_diagnosis *d, const cond *c) {
  for (size_t i = 0; i < MAX_CLAUSES; i++) {
    const clause *k = &c->c[i];
    if (k->all[0] == S_NONE && k->status == ST_NONE)
      continue; /* unused */
    int ok = status_ok(d, k->status);
    for (size_t j = 0; ok && j < sizeof k->all && k->all[j]; j++)
      ok = sig(d, k->all[j]);
    for (size_t j = 0; ok && j < sizeof k->none && k->none[j]; j++)
      ok = !sig(d, k->none[j]);
    if (ok)
      return 1;
  }
  return 0;
}

/* Walks a limit list: notes add evidence, the first deciding row sets
 * d->limit. Returns its fallback wait (ms), or -1. */
static int64_t apply_limits(polite_diagnosis *d, const limit_rule *r) {
  for (; r->limit != L_END; r++) {
    if (!cond_holds(d, &r->when))
      continue;
    if (r->ev)
      evidence(d, "%s", r->ev);
    if (r->limit == L_NOTE)
      continue;
    d->limit = (polite_limit_kind)r->limit;
    return r->fallback_ms > 0 ? r->fallback_ms : -1;
  }
  return -1;
}

static void set_comp(polite_diagnosis *d, polite_component_kind k,
                     const char *vendor) {
  d->kind = k;
  snprintf(d->vendor, sizeof d->vendor, "%s", vendor);
  snprintf(d->component, sizeof d->component, "%s:%s",
           polite_component_kind_name(k), vendor);
}

/* Picks the producer (the first vendor row that holds) and its limit.
 * Returns a fallback wait in ms the vendor documents when the headers give
 * none (GitHub secondary limits: one minute), else -1. */
static int64_t choose(polite_diagnosis *d) {
  d->limit = POLITE_LIMIT_UNKNOWN;
  for (size_t i = 0; i < sizeof vendors / sizeof *vendors; i++)
    if (cond_holds(d, &vendors[i].when)) {
      set_comp(d, vendors[i].kind, vendors[i].vendor);
      return apply_limits(d, vendors[i].limits);
    }
  return -1;
}

/* Layers whose headers ride on every answer they pass (not the producer). */
static void fill_through(polite_diagnosis *d) {
  for (size_t i = 0; i < sizeof through_rules / sizeof *through_rules; i++)
    if (cond_holds(d, &through_rules[i].when))
      add_through(d, through_rules[i].component);
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
  if (d->headers.remaining == 0)
    sig_set(d, S_CORE_REMAINING0);
  int64_t fallback = choose(d);

  /* Vendor rules left the limit open: use what any server may say. */
  if (d->limit == POLITE_LIMIT_UNKNOWN)
    apply_limits(d, generic_limits);

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
  *conn_established = code / 100 == 2 &&
                      polite__ci_find(s + i, n - i, "connection established");
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
