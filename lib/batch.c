/* polite batch engine: many logical requests over one libcurl multi handle,
 * driven by one thread, under one shared budget (start rate + concurrency),
 * with every retry decided by polite_decide. `polite run` and polite_client
 * both run on it. */
#define _GNU_SOURCE
#include <polite/batch.h>
#include <polite/clock.h>
#include <polite/version.h>

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define NO_TIME INT64_MAX

/* One logical request while it is in memory: waiting (for its first start,
 * a retry or the budget) or in flight. */
typedef struct job {
  struct job *next; /* waiting list (sorted by due, then seq) or in-flight */
  polite_request *req;
  const char *method;
  char *key; /* budget account (host with --budget-scope host) or NULL */
  uint64_t seq;
  char idem[40]; /* auto idempotency key */
  const char *idem_sent;
  int has_key;
  unsigned attempts;
  int prompt_used;
  int64_t first_start_us; /* -1 before the first attempt */
  int64_t due_us;
  int64_t deadline_us; /* NO_TIME: none */

  /* In flight. */
  CURL *easy;
  struct curl_slist *hdrs;
  char errbuf[CURL_ERROR_SIZE];
  int64_t attempt_start_us, attempt_start_wall;
  char *body;
  size_t body_len, body_cap;
  int truncated;
  size_t max_body;
  polite_headers ph;
  char retry_after[128];
  int has_retry_after;
  char reqid[128];
  char reqid_name[64];
  int status; /* last HTTP status */
  /* The diagnosis of a 429/503 answer: allocated only when a status line
   * says 429 or 503 and freed once the attempt is reported, so memory stays
   * flat however many requests wait (it is ~3.5 KiB). */
  polite_diagnosis *diag;
  int diag_on; /* the current response is a 429/503 being diagnosed */
} job;

struct polite_batch {
  polite_batch_options o;
  CURLM *multi;
  uint64_t rng;
  uint64_t seq;
  job *waiting;  /* sorted by due_us, then seq */
  job *inflight; /* unordered */
  unsigned n_waiting;
  int input_done;
  int stop_reading;
  int run_deadline_hit;
  volatile sig_atomic_t cancel_flag;
  int cancelling;
  int64_t cancel_at_us;
  int64_t t0_us;
  int64_t run_deadline_us;
  int64_t last_now_us;
  int64_t last_tick_us;
  int64_t last_start_abs_us;
  int64_t pause_end_us; /* latest account pause seen (stats, progress) */
  int64_t last_heartbeat_us;
  int fatal;
  char errstr[256];
  polite_batch_stats st;
  int64_t *intervals;
  polite_throttle_count throttled[POLITE_BATCH_MAX_THROTTLED];
};

const char *polite_outcome_name(polite_outcome o) {
  static const char *const names[POLITE_OUT_COUNT] = {"ok",
                                                      "http_error",
                                                      "retries_exhausted",
                                                      "deadline",
                                                      "quota_exhausted",
                                                      "not_retried_unsafe",
                                                      "network_error",
                                                      "invalid_input",
                                                      "cancelled"};
  return (unsigned)o < POLITE_OUT_COUNT ? names[o] : "unknown";
}

void polite_batch_options_init(polite_batch_options *o) {
  memset(o, 0, sizeof *o);
  o->max_attempts = 5;
  o->deadline_ms = -1;
  o->run_deadline_ms = -1;
  o->connect_timeout_ms = 10000;
  o->timeout_ms = 30000;
  o->spread_ms = 250;
  o->backoff.base_ms = 1000;
  o->backoff.cap_ms = 30000;
  o->max_body = 16u << 20;
  o->cancel_grace_ms = 2000;
  o->heartbeat_ms = 1000;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void init_curl(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_ALL);
}

polite_batch *polite_batch_new(const polite_batch_options *o, char *err,
                               size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (o == NULL || o->next == NULL || o->on_result == NULL ||
      o->max_attempts < 1) {
    if (err)
      snprintf(err, errlen,
               "batch options need next, on_result and "
               "max_attempts >= 1");
    return NULL;
  }
  pthread_once(&curl_once, init_curl);
  if (curl_init_rc != CURLE_OK) {
    if (err)
      snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(curl_init_rc));
    return NULL;
  }
  polite_batch *b = calloc(1, sizeof *b);
  if (b == NULL)
    return NULL;
  b->o = *o;
  if (b->o.max_pending == 0) {
    unsigned c = o->budget ? o->budget->cfg.concurrency : 0;
    b->o.max_pending = (c ? 2 * c : 64) + 64;
  }
  b->multi = curl_multi_init();
  b->intervals = malloc(POLITE_BATCH_MAX_INTERVALS * sizeof(int64_t));
  if (b->multi == NULL || b->intervals == NULL) {
    if (err)
      snprintf(err, errlen, "out of memory");
    polite_batch_free(b);
    return NULL;
  }
  b->rng = o->seed ? o->seed : polite_random_seed();
  b->st.first_start_us = -1;
  b->st.last_start_us = -1;
  b->st.intervals_us = b->intervals;
  b->st.throttled = b->throttled;
  return b;
}

void polite_batch_cancel(polite_batch *b) {
  b->cancel_flag = 1;
}

const polite_batch_stats *polite_batch_stats_get(const polite_batch *b) {
  return &b->st;
}

const char *polite_batch_errstr(const polite_batch *b) {
  return b->errstr;
}

static void job_free_transfer(job *j) {
  if (j->hdrs) {
    curl_slist_free_all(j->hdrs);
    j->hdrs = NULL;
  }
  if (j->easy) {
    curl_easy_cleanup(j->easy);
    j->easy = NULL;
  }
}

static void job_free(job *j) {
  if (j == NULL)
    return;
  job_free_transfer(j);
  polite_request_free(j->req);
  free(j->key);
  free(j->body);
  free(j->diag);
  free(j);
}

void polite_batch_free(polite_batch *b) {
  if (b == NULL)
    return;
  for (job *j = b->inflight, *n; j; j = n) {
    n = j->next;
    if (b->multi && j->easy)
      curl_multi_remove_handle(b->multi, j->easy);
    job_free(j);
  }
  for (job *j = b->waiting, *n; j; j = n) {
    n = j->next;
    job_free(j);
  }
  if (b->multi)
    curl_multi_cleanup(b->multi);
  free(b->intervals);
  free(b);
}

/* ---- bookkeeping ------------------------------------------------------- */

static void waiting_insert(polite_batch *b, job *j) {
  job **pp = &b->waiting;
  while (*pp && ((*pp)->due_us < j->due_us ||
                 ((*pp)->due_us == j->due_us && (*pp)->seq < j->seq)))
    pp = &(*pp)->next;
  j->next = *pp;
  *pp = j;
  b->n_waiting++;
}

static void inflight_remove(polite_batch *b, job *j) {
  for (job **pp = &b->inflight; *pp; pp = &(*pp)->next)
    if (*pp == j) {
      *pp = j->next;
      j->next = NULL;
      b->st.in_flight--;
      return;
    }
}

/* Time left before the request's or the run's deadline, or NO_TIME. */
static int64_t time_left_us(const polite_batch *b, const job *j, int64_t now) {
  int64_t end = j->deadline_us;
  if (b->run_deadline_us < end)
    end = b->run_deadline_us;
  return end == NO_TIME ? NO_TIME : end - now;
}

/* Emits the final result of j and frees it. */
static void finish(polite_batch *b, job *j, polite_outcome out, int status,
                   const char *error, int64_t now) {
  polite_result r;
  memset(&r, 0, sizeof r);
  r.req = j->req;
  r.method = j->method;
  r.outcome = out;
  r.status = status;
  r.attempts = j->attempts;
  r.elapsed_ms = j->first_start_us >= 0 ? (now - j->first_start_us) / 1000 : 0;
  r.body = j->body;
  r.body_len = j->body_len;
  r.body_truncated = j->truncated;
  r.error = error;
  r.idempotency_key = j->idem_sent;
  if (out == POLITE_OUT_QUOTA_EXHAUSTED)
    b->st.quota_stop = 1;
  b->st.results++;
  b->st.by_outcome[out]++;
  b->o.on_result(b->o.ud, &r);
  job_free(j);
}

/* The account key of a URL: its host (lower-cased), for host scope. */
static char *host_key(const char *url) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 : url;
  size_t n = strcspn(p, "/?#");
  const char *at = memchr(p, '@', n);
  if (at) {
    n -= (size_t)(at + 1 - p);
    p = at + 1;
  }
  char *k = strndup(p, n);
  if (k)
    for (char *c = k; *c; c++)
      if (*c >= 'A' && *c <= 'Z')
        *c = (char)(*c - 'A' + 'a');
  return k;
}

/* ---- one attempt --------------------------------------------------------- */

static size_t write_cb(char *data, size_t size, size_t n, void *ud);

/* The status code of a status line ("HTTP/1.1 429 Too Many Requests",
 * "HTTP/2 429"), or 0. */
static int status_of(const char *buf, size_t len) {
  const char *sp = memchr(buf, ' ', len);
  if (sp == NULL || (size_t)(sp - buf) + 4 > len)
    return 0;
  int code = 0;
  for (int i = 1; i <= 3; i++) {
    char c = sp[i];
    if (c < '0' || c > '9')
      return 0;
    code = code * 10 + (c - '0');
  }
  return code;
}

/* Starts diagnosing the response when its status is 429 or 503 (the
 * buffer is allocated on the first such answer of the request). */
static void start_diagnosis(job *j, int status) {
  j->diag_on = 0;
  if (status != 429 && status != 503)
    return;
  if (j->diag == NULL && (j->diag = malloc(sizeof *j->diag)) == NULL)
    return;
  polite_diagnosis_init(j->diag, status, polite_wall_ms());
  j->diag_on = 1;
}

static size_t header_cb(char *buf, size_t size, size_t n, void *ud) {
  job *j = ud;
  size_t len = size * n;
  if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
    /* A new response (after 100-continue, for instance): start over. */
    polite_headers_init(&j->ph, j->ph.now_ms);
    j->has_retry_after = 0;
    j->reqid[0] = '\0';
    j->reqid_name[0] = '\0';
    start_diagnosis(j, status_of(buf, len));
    return len;
  }
  size_t l = len;
  while (l > 0 && (buf[l - 1] == '\n' || buf[l - 1] == '\r'))
    l--;
  if (j->diag_on && l > 0)
    polite_diagnosis_feed_line(j->diag, buf, l);
  if (polite_headers_feed_line(&j->ph, buf, l) == 1) {
    const char *colon = memchr(buf, ':', l);
    if (colon) {
      size_t nl = (size_t)(colon - buf);
      const char *v = colon + 1;
      while (v < buf + l && (*v == ' ' || *v == '\t'))
        v++;
      snprintf(j->reqid_name, sizeof j->reqid_name, "%.*s", (int)nl, buf);
      snprintf(j->reqid, sizeof j->reqid, "%.*s", (int)(buf + l - v), v);
    }
  }
  if (l > 12 && strncasecmp(buf, "retry-after:", 12) == 0) {
    const char *v = buf + 12, *e = buf + l;
    while (v < e && (*v == ' ' || *v == '\t'))
      v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
      e--;
    snprintf(j->retry_after, sizeof j->retry_after, "%.*s", (int)(e - v), v);
    j->has_retry_after = 1;
  }
  return len;
}

/* Generates a random 128-bit key in UUID form (version 4). */
static void make_key(polite_batch *b, char out[40]) {
  unsigned char r[16];
  if (polite_random_bytes(r, sizeof r) != 0) {
    uint64_t a = polite_rand_next(&b->rng), c = polite_rand_next(&b->rng);
    memcpy(r, &a, 8);
    memcpy(r + 8, &c, 8);
  }
  r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
  r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
  snprintf(
      out, 40,
      "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
      r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11],
      r[12], r[13], r[14], r[15]);
}

static int has_header(const polite_request *r, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < r->nheaders; i++)
    if (strncasecmp(r->headers[i], name, n) == 0 && r->headers[i][n] == ':')
      return 1;
  return 0;
}

/* Builds and adds the transfer for j's next attempt. The caller holds a
 * budget slot for it. Returns 0, -1 with j->errbuf set, or 1 when
 * on_attempt_start vetoed the attempt (nothing was counted or sent). */
static int start_attempt(polite_batch *b, job *j, int64_t now) {
  const polite_request *r = j->req;
  int64_t wall = polite_wall_ms();
  /* Reported before anything of the attempt exists, so a journal can make
   * its start durable before the first byte goes out, and a veto leaves no
   * trace in the counters. */
  if (b->o.on_attempt_start) {
    polite_attempt_start s = {r, j->method, j->attempts + 1, wall,
                              j->idem_sent};
    if (b->o.on_attempt_start(b->o.ud, &s) != 0)
      return 1;
  }
  if (j->attempts == 0) {
    j->first_start_us = now;
    if (b->o.deadline_ms >= 0)
      j->deadline_us = now + b->o.deadline_ms * 1000;
    b->st.first_attempts++;
  } else {
    b->st.retries++;
  }
  j->attempts++;
  b->st.attempts++;
  b->st.units += r->cost ? r->cost : 1;
  /* Gaps that contain a server pause say nothing about the planned
   * spacing; they are left out of the interval statistics. */
  if (b->last_start_abs_us >= 0) {
    int64_t gap = now - b->last_start_abs_us;
    if (b->pause_end_us > b->last_start_abs_us) {
      b->st.paused_gaps++;
    } else {
      b->st.unpaused_gap_sum_us += gap;
      b->st.unpaused_gaps++;
      if (b->st.n_intervals < POLITE_BATCH_MAX_INTERVALS)
        b->intervals[b->st.n_intervals++] = gap;
    }
  }
  b->last_start_abs_us = now;
  if (b->st.first_start_us < 0)
    b->st.first_start_us = now - b->t0_us;
  b->st.last_start_us = now - b->t0_us;

  j->attempt_start_us = now;
  j->attempt_start_wall = wall;
  polite_headers_init(&j->ph, j->attempt_start_wall);
  j->has_retry_after = 0;
  j->reqid[0] = j->reqid_name[0] = '\0';
  j->errbuf[0] = '\0';
  j->status = 0;
  j->diag_on = 0;
  free(j->body);
  j->body = NULL;
  j->body_len = j->body_cap = 0;
  j->truncated = 0;
  j->max_body = b->o.max_body;

  CURL *e = curl_easy_init();
  if (e == NULL) {
    snprintf(j->errbuf, sizeof j->errbuf, "cannot create a transfer");
    return -1;
  }
  j->easy = e;
  curl_easy_setopt(e, CURLOPT_URL, r->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, j);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
  if (b->o.insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  polite__transport_apply(e, b->o.transport);
  if (b->o.connect_timeout_ms > 0)
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)b->o.connect_timeout_ms);
  /* The attempt never outlives the deadline: a transfer still running when
   * the deadline passes ends it with outcome `deadline`. */
  int64_t tmo = b->o.timeout_ms > 0 ? b->o.timeout_ms : 0;
  int64_t left = time_left_us(b, j, now);
  if (left != NO_TIME) {
    /* Rounded up: a timeout that fires before the deadline would let the
     * next request start in the last sub-millisecond of the run. */
    int64_t lm = left > 0 ? (left + 999) / 1000 : 1;
    if (tmo == 0 || lm < tmo)
      tmo = lm;
  }
  if (tmo > 0)
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)tmo);

  const char *m = j->method;
  if (strcmp(m, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (r->has_body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
    if (strcmp(m, "POST") != 0)
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
  } else if (strcmp(m, "GET") != 0) {
    if (strcmp(m, "POST") == 0) {
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    } else {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
    }
  }

  struct curl_slist *h = NULL;
  for (size_t i = 0; i < r->nheaders; i++)
    h = curl_slist_append(h, r->headers[i]);
  if (j->idem_sent && !has_header(r, "Idempotency-Key")) {
    char line[200];
    snprintf(line, sizeof line, "Idempotency-Key: %s", j->idem_sent);
    h = curl_slist_append(h, line);
  }
  /* No "Expect: 100-continue" round trip for bodies. */
  h = curl_slist_append(h, "Expect:");
  j->hdrs = h;
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
  if (!has_header(r, "User-Agent"))
    curl_easy_setopt(e, CURLOPT_USERAGENT,
                     b->o.user_agent ? b->o.user_agent
                                     : "polite/" POLITE_VERSION_STR);

  if (curl_multi_add_handle(b->multi, e) != CURLM_OK) {
    snprintf(j->errbuf, sizeof j->errbuf, "cannot add the transfer");
    job_free_transfer(j);
    return -1;
  }
  j->next = b->inflight;
  b->inflight = j;
  b->st.in_flight++;
  if (b->st.in_flight > b->st.peak_in_flight)
    b->st.peak_in_flight = b->st.in_flight;
  return 0;
}

/* Keeps at most max_body bytes of the response (the rest is counted as
 * truncated, not an error: the status still decides). */
static size_t write_cb(char *data, size_t size, size_t n, void *ud) {
  job *j = ud;
  size_t len = size * n;
  size_t limit = j->max_body;
  size_t keep = len;
  if (j->body_len >= limit) {
    j->truncated = 1;
    return len;
  }
  if (keep > limit - j->body_len) {
    keep = limit - j->body_len;
    j->truncated = 1;
  }
  if (j->body_len + keep + 1 > j->body_cap) {
    size_t nc = j->body_cap ? j->body_cap : 1024;
    while (nc < j->body_len + keep + 1)
      nc *= 2;
    char *nb = realloc(j->body, nc);
    if (nb == NULL) {
      j->truncated = 1;
      return len;
    }
    j->body = nb;
    j->body_cap = nc;
  }
  memcpy(j->body + j->body_len, data, keep);
  j->body_len += keep;
  j->body[j->body_len] = '\0';
  return len;
}

/* ---- decisions ----------------------------------------------------------- */

static polite_outcome outcome_of(polite_reason r) {
  switch (r) {
  case POLITE_R_OK: return POLITE_OUT_OK;
  case POLITE_R_HTTP_ERROR: return POLITE_OUT_HTTP_ERROR;
  case POLITE_R_RETRIES_EXHAUSTED: return POLITE_OUT_RETRIES_EXHAUSTED;
  case POLITE_R_DEADLINE: return POLITE_OUT_DEADLINE;
  case POLITE_R_QUOTA_EXHAUSTED: return POLITE_OUT_QUOTA_EXHAUSTED;
  case POLITE_R_NOT_RETRIED_UNSAFE: return POLITE_OUT_NOT_RETRIED_UNSAFE;
  default: return POLITE_OUT_NETWORK_ERROR;
  }
}

/* Records an account pause (for the summary and the progress line). */
static void note_pause(polite_batch *b, int64_t now, int64_t until) {
  int64_t from = b->pause_end_us > now ? b->pause_end_us : now;
  if (until > from) {
    b->st.paused_ms += (until - from) / 1000;
    b->pause_end_us = until;
  }
}

/* Counts one 429/503 answer under its sender and limit kind (d NULL: the
 * diagnosis could not be made, counted as unknown). Distinct pairs beyond
 * the table's size are counted together as "other". */
static void count_throttled(polite_batch *b, const polite_diagnosis *d) {
  const char *comp = d ? polite_diagnosis_component(d) : "unknown";
  polite_limit_kind lim = d ? d->limit : POLITE_LIMIT_UNKNOWN;
  size_t n = b->st.n_throttled;
  for (size_t i = 0; i < n; i++)
    if (b->throttled[i].limit == lim &&
        strcmp(b->throttled[i].component, comp) == 0) {
      b->throttled[i].count++;
      return;
    }
  if (n == POLITE_BATCH_MAX_THROTTLED) { /* the last entry is "other" */
    b->throttled[n - 1].count++;
    return;
  }
  if (n == POLITE_BATCH_MAX_THROTTLED - 1) {
    comp = "other";
    lim = POLITE_LIMIT_UNKNOWN;
  }
  polite_throttle_count *t = &b->throttled[n];
  snprintf(t->component, sizeof t->component, "%s", comp);
  t->limit = lim;
  t->count = 1;
  b->st.n_throttled = n + 1;
}

/* A transfer ended: release what it held, ask polite_decide what next, and
 * either finish the request or put it back to wait. Resources (the handle,
 * the slot, the body of a response that will be retried) are released
 * before any wait. */
static void on_done(polite_batch *b, job *j, CURLcode res, int64_t now) {
  long code = 0;
  curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &code);
  int status = res == CURLE_OK ? (int)code : 0;
  char terr[CURL_ERROR_SIZE + 64] = "";
  if (res != CURLE_OK)
    snprintf(terr, sizeof terr, "%s%s%s", curl_easy_strerror(res),
             j->errbuf[0] ? ": " : "", j->errbuf);
  curl_multi_remove_handle(b->multi, j->easy);
  job_free_transfer(j);
  inflight_remove(b, j);
  polite_budget_release(b->o.budget, j->key, 1);
  b->st.latency_sum_us += now - j->attempt_start_us;
  j->status = status;
  if (status == 429)
    b->st.n429++;
  else if (status == 503)
    b->st.n503++;
  const polite_diagnosis *diag = NULL;
  if (status == 429 || status == 503) {
    if (j->diag_on) {
      polite_diagnosis_finish(j->diag, j->body, j->body_len);
      diag = j->diag;
    }
    count_throttled(b, diag);
  }
  j->diag_on = 0;

  int64_t left = time_left_us(b, j, now);
  polite_decide_in in;
  memset(&in, 0, sizeof in);
  in.method = j->method;
  in.has_idempotency_key = j->has_key;
  in.retry_unsafe = b->o.retry_unsafe;
  in.status = status;
  in.headers = status ? &j->ph : NULL;
  in.body_quota = status >= 400 && j->body
                      ? polite_body_quota_hint(j->body, j->body_len)
                      : 0;
  in.attempt = j->attempts;
  in.max_attempts = b->o.max_attempts;
  in.time_left_ms = left == NO_TIME ? -1 : (left > 0 ? left / 1000 : 0);
  in.prompt_retry_used = j->prompt_used;
  in.backoff = b->o.backoff;
  in.spread_ms = b->o.spread_ms;
  in.rnd = polite_rand_next(&b->rng);
  polite_decision d;
  polite_decide(&in, &d);

  /* A transport error caused by the deadline clamp is the deadline. */
  if (d.action != POLITE_DONE && left != NO_TIME && left <= 0) {
    d.action = POLITE_STOP;
    d.reason = POLITE_R_DEADLINE;
    d.why = "the deadline passed during the attempt";
  }
  if (b->o.on_attempt) {
    polite_attempt a;
    memset(&a, 0, sizeof a);
    a.req = j->req;
    a.method = j->method;
    a.attempt = j->attempts;
    a.start_wall_ms = j->attempt_start_wall;
    a.end_wall_ms = polite_wall_ms();
    a.status = status;
    a.retry_after = j->has_retry_after ? j->retry_after : NULL;
    a.request_id = j->reqid[0] ? j->reqid : NULL;
    a.request_id_header = j->reqid_name[0] ? j->reqid_name : NULL;
    a.error = terr[0] ? terr : NULL;
    a.decision = d;
    a.diagnosis = diag;
    b->o.on_attempt(b->o.ud, &a);
  }
  free(j->diag);
  j->diag = NULL;

  /* The account is throttled: pause the whole budget, even when this
   * request gives up (STOP), so the others hold off too. A retry's wait
   * already carries the spread; otherwise draw one. */
  if (d.account_pause && d.server_wait_ms > 0) {
    int64_t pause_ms =
        d.action == POLITE_RETRY
            ? d.wait_ms
            : d.server_wait_ms +
                  polite_rand_uniform(polite_rand_next(&b->rng),
                                      b->o.spread_ms > 0 ? b->o.spread_ms : 0);
    if (pause_ms < d.server_wait_ms)
      pause_ms = d.server_wait_ms;
    int64_t until = now + pause_ms * 1000;
    polite_budget_pause_until(b->o.budget, j->key, now, until);
    note_pause(b, now, until);
  }
  if (d.action == POLITE_RETRY) {
    if (b->cancelling || b->st.quota_stop) {
      finish(b, j, POLITE_OUT_CANCELLED, status,
             b->cancelling ? "interrupted before the retry"
                           : "not retried: the quota is spent",
             now);
      return;
    }
    if (d.reason == POLITE_R_RETRY_PROMPT)
      j->prompt_used = 1;
    b->st.retry_wait_ms += d.wait_ms;
    free(j->body);
    j->body = NULL;
    j->body_len = j->body_cap = 0;
    j->due_us = now + d.wait_ms * 1000;
    waiting_insert(b, j);
    return;
  }
  polite_outcome out = outcome_of(d.reason);
  const char *err = NULL;
  char msg[CURL_ERROR_SIZE + 200];
  if (out == POLITE_OUT_NETWORK_ERROR ||
      (status == 0 && out != POLITE_OUT_OK)) {
    if (terr[0])
      snprintf(msg, sizeof msg, "%s (%s)", terr, d.why ? d.why : "");
    else
      snprintf(msg, sizeof msg, "%s", d.why ? d.why : "");
    err = msg;
  } else if (out != POLITE_OUT_OK) {
    err = d.why;
  }
  finish(b, j, out, status, err, now);
}

/* ---- scheduling ---------------------------------------------------------- */

static int can_read(const polite_batch *b) {
  return !b->input_done && !b->stop_reading && !b->cancelling &&
         !b->st.quota_stop && !b->run_deadline_hit &&
         b->st.in_flight + b->n_waiting < b->o.max_pending &&
         (b->o.max_requests == 0 || b->st.read < b->o.max_requests);
}

/* Pulls one request from the source. Invalid lines are answered at once.
 * Returns the new job (due now), or NULL when nothing was queued. */
static job *read_one(polite_batch *b, int64_t now) {
  polite_request *r = NULL;
  int rc = b->o.next(b->o.ud, &r);
  if (rc <= 0 || r == NULL) {
    if (rc < 0)
      snprintf(b->errstr, sizeof b->errstr, "reading the input failed: %s",
               polite_strerror(rc));
    b->input_done = 1;
    b->st.input_done = 1;
    return NULL;
  }
  b->st.read++;
  job *j = calloc(1, sizeof *j);
  if (j == NULL) {
    polite_request_free(r);
    b->fatal = POLITE_ENOMEM;
    snprintf(b->errstr, sizeof b->errstr, "out of memory");
    return NULL;
  }
  j->req = r;
  j->method = polite_request_method(r);
  j->seq = ++b->seq;
  j->first_start_us = -1;
  j->deadline_us = NO_TIME;
  j->due_us = now;
  if (r->error) {
    finish(b, j, POLITE_OUT_INVALID_INPUT, 0, r->error, now);
    return NULL;
  }
  if (b->run_deadline_hit) {
    finish(b, j, POLITE_OUT_DEADLINE, 0, "the run deadline passed", now);
    return NULL;
  }
  if (b->o.scope_host)
    j->key = host_key(r->url);
  if (r->idempotency_key)
    j->idem_sent = r->idempotency_key;
  else if (b->o.idempotency_auto && !polite_method_idempotent(j->method) &&
           !has_header(r, "Idempotency-Key")) {
    make_key(b, j->idem);
    j->idem_sent = j->idem;
  }
  j->has_key = j->idem_sent != NULL || has_header(r, "Idempotency-Key");
  return j;
}

/* Starts every due request the budget admits; returns the next time
 * something becomes due (NO_TIME when only a release can help). */
static int64_t schedule(polite_batch *b, int64_t now) {
  int64_t wake = NO_TIME;
  unsigned blocked = 0;
  unsigned lookahead = b->o.scope_host ? 64 : 0;
  job **pp = &b->waiting;
  for (;;) {
    job *j = *pp;
    if (j == NULL || j->due_us > now) {
      if (!can_read(b) || blocked > lookahead || b->fatal)
        break;
      job *nj = read_one(b, now);
      if (nj != NULL) {
        nj->next = *pp;
        *pp = nj;
        b->n_waiting++;
      }
      continue;
    }
    /* `cost` rate units and ONE slot, both or neither: the concurrency
     * limit counts requests, also when the rate counts tokens. Every
     * attempt, retries included, pays its cost. */
    /* Less than a millisecond before the deadline, an attempt cannot
     * finish in time: end it without spending the budget. */
    int64_t jl = time_left_us(b, j, now);
    if (jl != NO_TIME && jl < 1000) {
      *pp = j->next;
      b->n_waiting--;
      finish(b, j, POLITE_OUT_DEADLINE, j->status,
             "the deadline passed before the attempt could start", now);
      continue;
    }
    int64_t w = 0;
    int rc = polite_budget_acquire(b->o.budget, j->key, now,
                                   j->req->cost ? j->req->cost : 1, 1, &w);
    if (rc < 0) {
      snprintf(b->errstr, sizeof b->errstr, "the budget failed: %s",
               polite_budget_errstr(b->o.budget));
      b->fatal = rc;
      break;
    }
    if (rc == POLITE_BUDGET_ADMITTED) {
      *pp = j->next;
      b->n_waiting--;
      int sa = start_attempt(b, j, now);
      if (sa != 0) {
        polite_budget_release(b->o.budget, j->key, 1);
        if (sa > 0)
          finish(b, j, POLITE_OUT_CANCELLED, j->status,
                 "not started: the attempt could not be recorded", now);
        else
          finish(b, j, POLITE_OUT_NETWORK_ERROR, 0, j->errbuf, now);
      }
      continue;
    }
    if (rc == POLITE_BUDGET_WAIT_SLOT) {
      /* Shared backends give a poll hint: a release in another process
       * wakes nobody here. With no transfer of our own (polite_client
       * threads sharing a local budget), the release will come from
       * another thread, so look again soon. */
      if (w <= 0 && b->st.in_flight == 0)
        w = 5000;
      if (w > 0 && now + w < wake)
        wake = now + w;
    } else {
      int64_t left = time_left_us(b, j, now);
      if (left != NO_TIME && w > left) {
        *pp = j->next;
        b->n_waiting--;
        finish(b, j, POLITE_OUT_DEADLINE, j->status,
               rc == POLITE_BUDGET_WAIT_PAUSE
                   ? "the server's pause does not end before the deadline"
                   : "the planned start rate cannot start it before the "
                     "deadline",
               now);
        continue;
      }
      if (now + w < wake)
        wake = now + w;
    }
    if (!b->o.scope_host)
      break;
    blocked++;
    pp = &j->next;
  }
  for (job *j = b->waiting; j; j = j->next)
    if (j->due_us > now) {
      if (j->due_us < wake)
        wake = j->due_us;
      break;
    }
  return wake;
}

static int same_key(const char *a, const char *c) {
  return a == NULL || c == NULL ? a == c : strcmp(a, c) == 0;
}

/* Renews the budget leases of every account with a transfer in flight,
 * once per heartbeat_ms: a shared budget keeps a participant's slots only
 * for its lease after its last call, so one request longer than the lease,
 * with no other start in between, would otherwise lose its slot while it
 * still runs and let another participant exceed the concurrency limit. An
 * acquire of 0 units and 0 slots takes nothing (see budget.h). A failure
 * is not fatal here: the next admission reports a broken budget, and a
 * missed renewal at worst lets the lease run out as without a heartbeat. */
static void heartbeat(polite_batch *b, int64_t now) {
  if (b->o.heartbeat_ms <= 0 || b->o.budget == NULL || b->inflight == NULL ||
      now - b->last_heartbeat_us < b->o.heartbeat_ms * 1000)
    return;
  b->last_heartbeat_us = now;
  for (job *j = b->inflight; j; j = j->next) {
    int seen = 0; /* one renewal per account */
    for (const job *k = b->inflight; k != j && !seen; k = k->next)
      seen = same_key(k->key, j->key);
    if (seen)
      continue;
    int64_t w = 0;
    (void)polite_budget_acquire(b->o.budget, j->key, now, 0, 0, &w);
  }
}

/* Ends every waiting request with `out` (cancel, quota stop, run deadline). */
static void flush_waiting(polite_batch *b, polite_outcome out, const char *why,
                          int64_t now) {
  while (b->waiting) {
    job *j = b->waiting;
    b->waiting = j->next;
    b->n_waiting--;
    finish(b, j, out, j->status, why, now);
  }
}

/* Aborts the transfers still running after the cancel grace. */
static void abort_inflight(polite_batch *b, int64_t now) {
  while (b->inflight) {
    job *j = b->inflight;
    curl_multi_remove_handle(b->multi, j->easy);
    job_free_transfer(j);
    inflight_remove(b, j);
    polite_budget_release(b->o.budget, j->key, 1);
    finish(b, j, POLITE_OUT_CANCELLED, 0,
           "interrupted while the attempt was in flight", now);
  }
}

static void update_stats(polite_batch *b, int64_t now) {
  if (b->last_now_us > 0 && now > b->last_now_us)
    b->st.in_flight_integral_s +=
        (double)b->st.in_flight * (double)(now - b->last_now_us) / 1e6;
  b->last_now_us = now;
  b->st.run_us = now - b->t0_us;
  b->st.waiting = b->n_waiting;
  b->st.cancelled = b->cancelling;
  int64_t p = b->o.scope_host
                  ? (b->pause_end_us > now ? b->pause_end_us - now : 0)
                  : polite_budget_paused_for(b->o.budget, NULL, now);
  b->st.paused_left_ms = p / 1000;
}

int polite_batch_run(polite_batch *b) {
  int64_t now = polite_mono_us();
  b->t0_us = now;
  b->last_now_us = now;
  b->last_start_abs_us = -1;
  b->last_heartbeat_us = now;
  b->run_deadline_us =
      b->o.run_deadline_ms >= 0 ? now + b->o.run_deadline_ms * 1000 : NO_TIME;
  for (;;) {
    now = polite_mono_us();
    update_stats(b, now);
    int running = 0;
    curl_multi_perform(b->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(b->multi, &left)) != NULL) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      job *j = NULL;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
      if (j != NULL)
        on_done(b, j, msg->data.result, polite_mono_us());
    }
    now = polite_mono_us();
    heartbeat(b, now);

    if (b->cancel_flag && !b->cancelling) {
      b->cancelling = 1;
      b->cancel_at_us = now;
      flush_waiting(b, POLITE_OUT_CANCELLED, "interrupted before the attempt",
                    now);
    }
    if (b->cancelling && now - b->cancel_at_us >= b->o.cancel_grace_ms * 1000)
      abort_inflight(b, now);
    if (b->st.quota_stop)
      flush_waiting(b, POLITE_OUT_CANCELLED,
                    "not started: another request found the quota spent", now);
    if (!b->run_deadline_hit && now >= b->run_deadline_us) {
      b->run_deadline_hit = 1;
      flush_waiting(b, POLITE_OUT_DEADLINE, "the run deadline passed", now);
    }
    if (b->run_deadline_hit && !b->cancelling && !b->st.quota_stop) {
      /* Every request read gets a result; drain the rest of the input
       * (bounded work per step so cancel stays responsive). */
      for (int k = 0; k < 4096 && !b->input_done; k++)
        if (b->o.max_requests && b->st.read >= b->o.max_requests)
          b->input_done = 1;
        else
          read_one(b, now);
    }

    int64_t wake = NO_TIME;
    if (!b->cancelling && !b->st.quota_stop && !b->run_deadline_hit &&
        !b->fatal)
      wake = schedule(b, now);
    if (b->fatal) {
      flush_waiting(b, POLITE_OUT_CANCELLED, b->errstr, now);
      abort_inflight(b, now);
      return b->fatal;
    }
    if (b->o.max_requests && b->st.read >= b->o.max_requests)
      b->st.input_done = 1;
    update_stats(b, now);
    if (b->o.on_tick && now - b->last_tick_us >= 100000) {
      b->last_tick_us = now;
      b->o.on_tick(b->o.ud, &b->st);
    }
    int reading_over = b->input_done || b->cancelling || b->st.quota_stop ||
                       b->run_deadline_hit ||
                       (b->o.max_requests && b->st.read >= b->o.max_requests);
    if (b->st.in_flight == 0 && b->waiting == NULL && reading_over)
      break;

    int64_t tmo_us = 100000; /* ticks, cancel checks */
    if (wake != NO_TIME && wake - now < tmo_us)
      tmo_us = wake - now;
    if (b->run_deadline_us != NO_TIME && b->run_deadline_us - now < tmo_us)
      tmo_us = b->run_deadline_us - now;
    if (b->o.heartbeat_ms > 0 && b->inflight != NULL &&
        b->last_heartbeat_us + b->o.heartbeat_ms * 1000 - now < tmo_us)
      tmo_us = b->last_heartbeat_us + b->o.heartbeat_ms * 1000 - now;
    if (tmo_us < 0)
      tmo_us = 0;
    /* Starts must not drift late: GCRA measures the next interval from the
     * actual start, so a wake rounded up to the next millisecond would cost
     * ~5% of the rate at 50/s. Sleep whole milliseconds in poll and the
     * sub-millisecond rest precisely (or poll without waiting when
     * transfers need service). */
    int tmo_ms = (int)(tmo_us / 1000);
    if (tmo_ms == 0 && tmo_us > 0 && b->st.in_flight == 0) {
      struct timespec ts = {0, (long)tmo_us * 1000};
      nanosleep(&ts, NULL);
    } else {
      curl_multi_poll(b->multi, NULL, 0, tmo_ms, NULL);
    }
  }
  now = polite_mono_us();
  update_stats(b, now);
  if (b->o.on_tick)
    b->o.on_tick(b->o.ud, &b->st);
  return 0;
}
