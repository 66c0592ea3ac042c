/* polite batch engine, the libcurl adapter: easy handles, their callbacks
 * and the multi loop that drives the pure scheduler (lib/scheduler.c). One
 * thread drives every transfer; `polite run` and polite_client both run on
 * it. The clocks are read once per loop turn, from the options' env. */
#define _GNU_SOURCE
#include <polite/batch.h>
#include <polite/clock.h>
#include <polite/version.h>

#include "resp_head.h"
#include "scheduler.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* Longest sleep on the start timer alone, the transfers' sockets unwatched
 * (see wait_until): 1 ms, so a response is handled at most that late. */
#define COALESCE_US 1000
/* Finished transfers kept for reuse (their easy handle reset, their body
 * buffer kept up to POOL_BODY_MAX), so a start allocates nothing. */
#define POOL_MAX 64
#define POOL_BODY_MAX (64u << 10)

/* One attempt's transfer: the easy handle and what its callbacks collect,
 * so each response is parsed once, as it arrives (the head in
 * lib/resp_head.c, shared with the engine's transports). */
typedef struct {
  polite_batch *b;
  CURL *easy;
  struct curl_slist *hdrs;
  char errbuf[CURL_ERROR_SIZE];
  char *body;
  size_t body_len, body_cap;
  int truncated;
  size_t max_body;
  polite__head head;
} transfer;

struct polite_batch {
  polite_batch_options o;
  polite__sched *s;
  CURLM *multi;
  int tfd;                  /* timerfd for sub-millisecond wake-ups, or -1 */
  int64_t armed;            /* the time the timerfd is set for (0: disarmed) */
  unsigned started;         /* transfers added in this turn */
  transfer *pool[POOL_MAX]; /* finished transfers for reuse */
  unsigned npool;
  polite__now now; /* this loop turn's clocks */
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
                                                      "cancelled",
                                                      "wait_too_long",
                                                      "queue_full",
                                                      "tls_error"};
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
  o->max_wait_ms = 15 * 60 * 1000;
  o->budget_outage_ms = 60000;
}

/* ---- callbacks ------------------------------------------------------------
 */

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

static size_t header_cb(char *buf, size_t size, size_t n, void *ud) {
  transfer *t = ud;
  size_t len = size * n;
  /* A status line begins a new answer (also after 100-continue). */
  if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0)
    polite__head_begin(&t->head, status_of(buf, len), t->b->now.wall_ms);
  else
    polite__head_line(&t->head, buf, len);
  return len;
}

/* Keeps at most max_body bytes of the response (the rest is counted as
 * truncated, not an error: the status still decides). */
static size_t write_cb(char *data, size_t size, size_t n, void *ud) {
  transfer *t = ud;
  size_t len = size * n;
  size_t limit = t->max_body;
  size_t keep = len;
  if (t->body_len >= limit) {
    t->truncated = 1;
    return len;
  }
  if (keep > limit - t->body_len) {
    keep = limit - t->body_len;
    t->truncated = 1;
  }
  if (t->body_len + keep + 1 > t->body_cap) {
    size_t nc = t->body_cap ? t->body_cap : 1024;
    while (nc < t->body_len + keep + 1)
      nc *= 2;
    char *nb = realloc(t->body, nc);
    if (nb == NULL) {
      t->truncated = 1;
      return len;
    }
    t->body = nb;
    t->body_cap = nc;
  }
  memcpy(t->body + t->body_len, data, keep);
  t->body_len += keep;
  t->body[t->body_len] = '\0';
  return len;
}

/* ---- transfers --------------------------------------------------------------
 */

static void transfer_free(transfer *t) {
  if (t == NULL)
    return;
  if (t->easy) {
    curl_multi_remove_handle(t->b->multi, t->easy);
    curl_easy_cleanup(t->easy);
  }
  curl_slist_free_all(t->hdrs);
  free(t->body);
  polite__head_free(&t->head);
  free(t);
}

/* Sets the method and body of e for request r sent as method m. */
static void set_method(CURL *e, const polite_request *r, const char *m) {
  if (strcmp(m, "HEAD") == 0) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (r->has_body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body ? r->body : "");
    if (strcmp(m, "POST") != 0)
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
  } else if (strcmp(m, "POST") == 0) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
  } else if (strcmp(m, "GET") != 0) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
  }
}

/* The request headers of j: the request's own, the idempotency key, and no
 * "Expect: 100-continue" round trip for bodies. NULL when out of memory. */
static struct curl_slist *request_headers(const polite__job *j) {
  const polite_request *r = j->req;
  struct curl_slist *h = NULL, *n;
  for (size_t i = 0; i < r->nheaders; i++) {
    if ((n = curl_slist_append(h, r->headers[i])) == NULL)
      goto fail;
    h = n;
  }
  if (j->idem_sent && !polite_request_has_header(r, "Idempotency-Key")) {
    char line[200];
    snprintf(line, sizeof line, "Idempotency-Key: %s", j->idem_sent);
    if ((n = curl_slist_append(h, line)) == NULL)
      goto fail;
    h = n;
  }
  if ((n = curl_slist_append(h, "Expect:")) == NULL)
    goto fail;
  return n;
fail:
  curl_slist_free_all(h);
  return NULL;
}

/* The one place an easy handle is configured: every option of every
 * attempt is set here (transport options such as a CA file or a proxy
 * belong here too). Returns 0 or -1 with a message in err. */
static int transfer_setup(polite_batch *b, transfer *t, const polite__job *j,
                          char *err, size_t errlen) {
  const polite_request *r = j->req;
  CURL *e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, r->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)j);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
  if (b->o.insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  polite_transport_apply(e, b->o.transport);
  if (b->o.connect_timeout_ms > 0)
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)b->o.connect_timeout_ms);
  if (j->timeout_ms > 0)
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)j->timeout_ms);
  set_method(e, r, j->method);
  if ((t->hdrs = request_headers(j)) == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->hdrs);
  if (!polite_request_has_header(r, "User-Agent"))
    curl_easy_setopt(e, CURLOPT_USERAGENT,
                     b->o.user_agent ? b->o.user_agent
                                     : "polite/" POLITE_VERSION_STR);
  return 0;
}

/* A transfer for a new attempt: a pooled one, or a new one (NULL when out
 * of memory). */
static transfer *transfer_get(polite_batch *b) {
  if (b->npool > 0)
    return b->pool[--b->npool];
  transfer *t = calloc(1, sizeof *t);
  if (t == NULL || (t->easy = curl_easy_init()) == NULL) {
    free(t);
    return NULL;
  }
  t->b = b;
  return t;
}

/* Gives back a finished transfer, already off the multi: into the pool
 * with its handle reset (curl_easy_reset keeps nothing of the last
 * attempt's options; the connections stay in the multi's pool either
 * way), or freed when the pool is full. */
static void transfer_put(polite_batch *b, transfer *t) {
  if (b->npool == POOL_MAX) {
    transfer_free(t);
    return;
  }
  curl_easy_reset(t->easy);
  curl_slist_free_all(t->hdrs);
  t->hdrs = NULL;
  if (t->body_cap > POOL_BODY_MAX) {
    free(t->body);
    t->body = NULL;
    t->body_cap = 0;
  }
  /* The head is begun again by io_start; its diagnosis buffer stays
   * allocated for the next 429. */
  t->errbuf[0] = '\0';
  t->body_len = 0;
  t->truncated = 0;
  b->pool[b->npool++] = t;
}

/* polite__sched_io.start: builds and adds j's transfer. */
static int io_start(void *ud, polite__job *j, char *err, size_t errlen) {
  polite_batch *b = ud;
  transfer *t = transfer_get(b);
  if (t == NULL) {
    snprintf(err, errlen, "cannot create a transfer");
    return -1;
  }
  t->max_body = b->o.max_body;
  polite__head_begin(&t->head, 0, b->now.wall_ms);
  if (transfer_setup(b, t, j, err, errlen) != 0) {
    transfer_free(t);
    return -1;
  }
  if (curl_multi_add_handle(b->multi, t->easy) != CURLM_OK) {
    curl_easy_cleanup(t->easy);
    t->easy = NULL;
    transfer_free(t);
    snprintf(err, errlen, "cannot add the transfer");
    return -1;
  }
  j->io = t;
  b->started++;
  return 0;
}

/* polite__sched_io.abort. */
static void io_abort(void *ud, polite__job *j) {
  (void)ud;
  transfer_free(j->io);
  j->io = NULL;
}

/* A transfer ended: hand what it collected to the scheduler, then give it
 * back (the job may be gone by then). */
static void transfer_done(polite_batch *b, polite__job *j, CURLcode res) {
  transfer *t = j->io;
  j->io = NULL;
  long code = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
  char terr[CURL_ERROR_SIZE + 64] = "";
  if (res != CURLE_OK)
    snprintf(terr, sizeof terr, "%s%s%s", curl_easy_strerror(res),
             t->errbuf[0] ? ": " : "", t->errbuf);
  polite__response r;
  memset(&r, 0, sizeof r);
  polite__head_response(&t->head, &r);
  r.status = res == CURLE_OK ? (int)code : 0;
  r.error = terr[0] ? terr : NULL;
  r.timed_out = res == CURLE_OPERATION_TIMEDOUT;
  r.failure = polite_transport_failure(res);
  r.body = t->body;
  r.body_len = t->body_len;
  r.body_truncated = t->truncated;
  /* The handle is done: take it off the multi before the slot goes back. */
  curl_multi_remove_handle(b->multi, t->easy);
  polite__sched_response(b->s, j, &r, &b->now);
  transfer_put(b, t);
}

/* ---- the loop
 * ---------------------------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;
static void init_curl(void) {
  curl_init_rc = curl_global_init(CURL_GLOBAL_ALL);
}

polite_batch *polite_batch_new(const polite_batch_options *o, char *err,
                               size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  pthread_once(&curl_once, init_curl);
  if (curl_init_rc != CURLE_OK) {
    if (err)
      snprintf(err, errlen, "libcurl: %s", curl_easy_strerror(curl_init_rc));
    return NULL;
  }
  if (o == NULL || o->next == NULL) {
    /* Only the engine (polite/engine.h) takes submitted requests. */
    if (err)
      snprintf(err, errlen, "batch options need a request source (next)");
    return NULL;
  }
  polite_batch *b = calloc(1, sizeof *b);
  if (b == NULL)
    return NULL;
  b->tfd = -1;
  polite__sched_io io = {io_start, io_abort, b};
  if ((b->s = polite__sched_new(o, &io, err, errlen)) == NULL) {
    free(b);
    return NULL;
  }
  b->o = *o;
  b->multi = curl_multi_init();
  if (b->multi == NULL) {
    if (err)
      snprintf(err, errlen, "out of memory");
    polite_batch_free(b);
    return NULL;
  }
  b->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  return b;
}

void polite_batch_cancel(polite_batch *b) {
  polite__sched_cancel(b->s);
}

const polite_batch_stats *polite_batch_stats_get(const polite_batch *b) {
  return polite__sched_stats(b->s);
}

const char *polite_batch_errstr(const polite_batch *b) {
  return polite__sched_errstr(b->s);
}

void polite_batch_free(polite_batch *b) {
  if (b == NULL)
    return;
  polite__sched_free(b->s); /* aborts in-flight transfers first */
  while (b->npool > 0)
    transfer_free(b->pool[--b->npool]);
  if (b->multi)
    curl_multi_cleanup(b->multi);
  if (b->tfd >= 0)
    close(b->tfd);
  free(b);
}

static void read_clocks(polite_batch *b) {
  b->now.mono_us = polite_env_mono_us(b->o.env);
  b->now.wall_ms = polite_env_wall_ms(b->o.env);
}

/* Arms the timerfd for wake (absolute on the real monotonic clock, so time
 * spent in this turn does not delay it; relative with an injected clock).
 * Returns 0, or -1 when it cannot be used. */
static int arm_timer(polite_batch *b, int64_t wake) {
  struct itimerspec its;
  memset(&its, 0, sizeof its);
  int flags = 0;
  int64_t us;
  if (b->armed == wake)
    return 0; /* still set for it: no system call */
  if (b->o.env == NULL || b->o.env->mono_us == NULL) {
    us = wake;
    flags = TFD_TIMER_ABSTIME;
  } else {
    us = wake - b->now.mono_us;
  }
  if (us <= 0)
    us = 1;
  its.it_value.tv_sec = us / 1000000;
  its.it_value.tv_nsec = (long)(us % 1000000) * 1000;
  if (timerfd_settime(b->tfd, flags, &its, NULL) != 0)
    return -1;
  b->armed = flags ? wake : 0; /* a relative timer is set again each time */
  return 0;
}

/* Sleeps until wake (or until a transfer needs service): the timerfd among
 * curl_multi_poll's descriptors gives sub-millisecond precision without a
 * busy loop; without it, whole milliseconds in poll and the rest in
 * nanosleep when no transfer needs service. */
static void wait_until(polite_batch *b, int64_t wake) {
  int64_t d = wake - b->now.mono_us;
  if (d <= 0)
    return;
  if (d <= COALESCE_US && polite__sched_in_flight(b->s) > 0) {
    /* A paced run at 1000/s and more: the next turn is due within a
     * millisecond, so sleep alone (one system call, no timerfd to set) and
     * service the transfers' sockets then, in the same wake-up as the next
     * start. Waking once more per response would double the wake-ups, and
     * the context switches are most of a paced start's CPU. A response is
     * seen at most COALESCE_US late, always before the next admission (the
     * loop reads the transfers first), so a 429 still stops the next
     * start. The run's timer slack is 1 ns (polite_batch_run). */
    struct timespec ts;
    if (b->o.env == NULL || b->o.env->mono_us == NULL) {
      ts.tv_sec = (time_t)(wake / 1000000);
      ts.tv_nsec = (long)(wake % 1000000) * 1000;
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    } else {
      ts.tv_sec = 0;
      ts.tv_nsec = (long)d * 1000;
      nanosleep(&ts, NULL);
    }
    return;
  }
  if (b->tfd >= 0 && arm_timer(b, wake) == 0) {
    struct curl_waitfd fd = {b->tfd, CURL_WAIT_POLLIN, 0};
    curl_multi_poll(b->multi, &fd, 1, (int)(d / 1000) + 1, NULL);
    /* Fired: it is set again before the next poll, and setting a timerfd
     * resets its expiration count, so it need not be read (one system call
     * less per paced start). */
    if (fd.revents & CURL_WAIT_POLLIN)
      b->armed = 0;
    return;
  }
  int ms = (int)(d / 1000);
  if (ms == 0 && polite__sched_in_flight(b->s) == 0) {
    struct timespec ts = {0, (long)d * 1000};
    nanosleep(&ts, NULL);
  } else {
    curl_multi_poll(b->multi, NULL, 0, ms, NULL);
  }
}

/* The multi loop of polite_batch_run. */
static int run_loop(polite_batch *b) {
  read_clocks(b);
  polite__sched_begin(b->s, &b->now);
  int rc;
  for (;;) {
    int running = 0;
    curl_multi_perform(b->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(b->multi, &left)) != NULL) {
      if (msg->msg != CURLMSG_DONE)
        continue;
      polite__job *j = NULL;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
      if (j != NULL && j->io != NULL)
        transfer_done(b, j, msg->data.result);
    }
    int64_t wake = POLITE__NO_TIME;
    b->started = 0;
    rc = polite__sched_step(b->s, &b->now, &wake);
    if (rc != 0)
      break;
    /* Send what was just started now, not after one more poll round (a
     * paced run would otherwise spend a turn per start doing nothing). */
    if (b->started)
      curl_multi_perform(b->multi, &running);
    wait_until(b, wake);
    read_clocks(b);
  }
  if (rc < 0)
    return rc;
  polite__sched_end(b->s, &b->now);
  return 0;
}

void polite_batch_wakeup(polite_batch *b) {
  if (b != NULL && b->multi != NULL)
    (void)curl_multi_wakeup(b->multi);
}

int polite_batch_run(polite_batch *b) {
  /* Paced sleeps end on time, not up to the default 50 us later (the
   * thread's timer slack is restored on return). */
  int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (slack > 1)
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  int rc = run_loop(b);
  if (slack > 1)
    (void)prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
  return rc;
}
