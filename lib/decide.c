/* The retry decision: one response plus the attempt state in, RETRY after N
 * ms, STOP with a reason, or DONE out (pure; see docs/decisions.md). */
#include <polite/core.h>

#include <string.h>

/* Methods whose repetition has the same effect as one call (RFC 9110
 * §9.2.2), so they are retried without an idempotency key. Matching is
 * ASCII case-insensitive so that "get" typed by a user is still a read;
 * anything unknown (POST, PATCH, CONNECT, custom verbs) counts as a write. */
int polite_method_idempotent(const char *method) {
  static const char *const safe[] = {"GET",     "HEAD",  "PUT", "DELETE",
                                     "OPTIONS", "TRACE", NULL};
  if (method == NULL)
    return 1; /* NULL means GET */
  for (const char *const *m = safe; *m; m++) {
    const char *a = method, *b = *m;
    while (*a && *b) {
      char c = *a;
      if (c >= 'a' && c <= 'z')
        c = (char)(c - 'a' + 'A');
      if (c != *b)
        break;
      a++, b++;
    }
    if (*a == '\0' && *b == '\0')
      return 1;
  }
  return 0;
}

const char *polite_reason_outcome(polite_reason r) {
  switch (r) {
  case POLITE_R_OK: return "ok";
  case POLITE_R_HTTP_ERROR: return "http_error";
  case POLITE_R_RETRIES_EXHAUSTED: return "retries_exhausted";
  case POLITE_R_DEADLINE: return "deadline";
  case POLITE_R_QUOTA_EXHAUSTED: return "quota_exhausted";
  case POLITE_R_NOT_RETRIED_UNSAFE: return "not_retried_unsafe";
  case POLITE_R_NETWORK_ERROR: return "network_error";
  case POLITE_R_WAIT_TOO_LONG: return "wait_too_long";
  case POLITE_R_TLS_ERROR: return "tls_error";
  case POLITE_R_CANCELLED: return "cancelled";
  case POLITE_R_RETRY_SERVER:
  case POLITE_R_RETRY_PROMPT:
  case POLITE_R_RETRY_BACKOFF: return NULL;
  }
  return NULL;
}

const char *polite_reason_name(polite_reason r) {
  switch (r) {
  case POLITE_R_RETRY_SERVER: return "server";
  case POLITE_R_RETRY_PROMPT: return "prompt";
  case POLITE_R_RETRY_BACKOFF: return "backoff";
  default: break;
  }
  const char *o = polite_reason_outcome(r);
  return o != NULL ? o : "unknown";
}

/* Statuses worth another attempt: timeouts and "too early" (408, 425), rate
 * limits (429), and the gateway/overload family (500, 502, 503, 504). 501,
 * 505 and other 5xx say the request itself cannot work; retrying them only
 * spends budget. Status 0 (no response) is handled separately. */
static int retryable_status(int s) {
  return s == 408 || s == 425 || s == 429 || s == 500 || s == 502 || s == 503 ||
         s == 504;
}

static void finish(polite_decision *out, polite_action a, polite_reason r,
                   const char *why) {
  out->action = a;
  out->reason = r;
  out->why = why;
}

static int64_t add_sat(int64_t a, int64_t b) {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Decides what to do after one attempt. The rules, in the order they apply
 * (docs/decisions.md has them as a table):
 *  1. 1xx-3xx: DONE ok.
 *  2. 403 or 429 whose body says the quota/credit is spent: STOP
 *     quota_exhausted (waiting cannot help). Other 403s are http_error.
 *  3. Any other status that is not retryable (other 4xx, 501, 505, ...,
 *     anything outside 0..599): DONE http_error. No response (status 0)
 *     with failure POLITE_FAILURE_TLS: STOP tls_error (every attempt would
 *     fail the same way; curl does not retry it either).
 *  4. attempt >= max_attempts: STOP retries_exhausted, or network_error when
 *     the last attempt got no response. So network attempts never exceed
 *     max_attempts (max_attempts 0 is treated as 1).
 *  5. A write (polite_method_idempotent() == 0) without an idempotency key
 *     and without retry_unsafe: STOP not_retried_unsafe; for status 0 too,
 *     since the write may have landed before the connection broke. With
 *     retry_writes a 429 is the exception: an API that answers 429 has
 *     refused the request before doing any work (LLM APIs document it), so
 *     the write goes on to the rules below; a 503 or a broken connection
 *     may come after the work, so they still stop.
 *  6. time_left_ms == 0: STOP deadline (time_left_ms < 0 = no deadline).
 *  7. The server named a wait W (polite_headers_wait_ms):
 *     W > 0: W is a minimum. W > max_wait_ms (when > 0): STOP
 *     wait_too_long (the request ends now, never by sending early: the
 *     caller was not willing to wait that long). W > time left: STOP deadline
 * now (never sleep past the deadline, never retry early). Else RETRY server
 * after W + spread, spread uniform in [0, spread_ms], cut so the wait ends at
 *     the deadline at the latest (never below W).
 *     W == 0 (past date, "0"): one prompt RETRY after a spread in
 *     [0, spread_ms] (within the time left) if prompt_retry_used is 0;
 *     otherwise fall through to backoff.
 *  8. No usable header (none or invalid): RETRY backoff, full jitter in the
 *     window for retry index attempt - 1; backoff is our own choice, so its
 *     window is cut to the time left (the wait stays uniform in that range).
 * account_pause is 1 for a 429 or 503 with a server wait W > 0, whatever the
 * action (also STOP): the account is throttled, so the engine pauses the
 * whole budget for W (+ spread) even when this request gives up.
 * server_wait_ms is W or -1 and source says where W came from, whatever
 * the action. in and out must not be NULL. */
void polite_decide(const polite_decide_in *in, polite_decision *out) {
  memset(out, 0, sizeof *out);
  out->server_wait_ms = -1;
  out->source = POLITE_WAIT_NONE;

  const int st = in->status;
  int64_t w = -1;
  if (st != 0 && in->headers != NULL) {
    polite_wait_source src = POLITE_WAIT_NONE;
    w = polite_headers_wait_ms(in->headers, &src);
    out->source = src;
    if (w < 0 || src == POLITE_WAIT_NONE || src == POLITE_WAIT_INVALID)
      w = -1;
    out->server_wait_ms = w;
  }
  /* A fact about the response, whatever happens to this request: other
   * requests sharing the budget must hold off too. */
  out->account_pause = (st == 429 || st == 503) && w > 0;

  if (st >= 100 && st <= 399) {
    finish(out, POLITE_DONE, POLITE_R_OK, "The request succeeded.");
    return;
  }
  if ((st == 429 || st == 403) && in->body_quota) {
    finish(out, POLITE_STOP, POLITE_R_QUOTA_EXHAUSTED,
           "The response says the quota or credit is used up; waiting will "
           "not help.");
    return;
  }
  if (st != 0 && !retryable_status(st)) {
    finish(out, POLITE_DONE, POLITE_R_HTTP_ERROR,
           "The server answered with an error that a retry cannot fix.");
    return;
  }
  if (st == 0 && in->failure == POLITE_FAILURE_TLS) {
    finish(out, POLITE_STOP, POLITE_R_TLS_ERROR,
           "TLS failed in a way a retry cannot fix: the certificate did not "
           "verify, or a CA file or client certificate cannot be used; not "
           "retried.");
    return;
  }

  unsigned max = in->max_attempts > 0 ? in->max_attempts : 1;
  if (in->attempt >= max) {
    if (st == 0)
      finish(out, POLITE_STOP, POLITE_R_NETWORK_ERROR,
             "No response (network error) and no attempt left.");
    else
      finish(out, POLITE_STOP, POLITE_R_RETRIES_EXHAUSTED,
             "Every allowed attempt has been made.");
    return;
  }
  if (!polite_method_idempotent(in->method) && !in->has_idempotency_key &&
      !in->retry_unsafe && !(in->retry_writes && st == 429)) {
    finish(out, POLITE_STOP, POLITE_R_NOT_RETRIED_UNSAFE,
           st == 0 ? "A write without an idempotency key failed in transit; "
                     "it may have landed, so it is not sent again."
                   : "A write without an idempotency key is not retried: "
                     "a second copy could be applied twice.");
    return;
  }
  const int64_t left = in->time_left_ms;
  if (left == 0) {
    finish(out, POLITE_STOP, POLITE_R_DEADLINE,
           "The deadline has been reached.");
    return;
  }
  const int64_t spread_max = in->spread_ms > 0 ? in->spread_ms : 0;

  if (w > 0) {
    if (in->max_wait_ms > 0 && w > in->max_wait_ms) {
      finish(out, POLITE_STOP, POLITE_R_WAIT_TOO_LONG,
             "The server's wait is longer than the longest wait allowed "
             "(max-wait); not waiting, and not sending early.");
      return;
    }
    if (left >= 0 && w > left) {
      finish(out, POLITE_STOP, POLITE_R_DEADLINE,
             "The server's wait does not fit in the time left before the "
             "deadline.");
      return;
    }
    int64_t spread = polite_rand_uniform(in->rnd, spread_max);
    if (left >= 0 && spread > left - w)
      spread = left - w; /* end at the deadline, never before W */
    out->wait_ms = add_sat(w, spread);
    finish(out, POLITE_RETRY, POLITE_R_RETRY_SERVER,
           "The server said how long to wait; waiting at least that long, "
           "plus a small random spread.");
    return;
  }
  if (w == 0 && !in->prompt_retry_used) {
    int64_t cap = spread_max;
    if (left >= 0 && cap > left)
      cap = left;
    out->wait_ms = polite_rand_uniform(in->rnd, cap);
    finish(out, POLITE_RETRY, POLITE_R_RETRY_PROMPT,
           "The server's time has already passed; one prompt retry.");
    return;
  }

  unsigned retry = in->attempt > 0 ? in->attempt - 1 : 0;
  int64_t window = polite_backoff_window_ms(&in->backoff, retry);
  if (left >= 0 && window > left)
    window = left;
  out->wait_ms = polite_rand_uniform(in->rnd, window);
  finish(out, POLITE_RETRY, POLITE_R_RETRY_BACKOFF,
         w == 0 ? "The prompt retry was already used; backing off with "
                  "random jitter."
                : "No usable wait from the server; backing off with random "
                  "jitter.");
}
