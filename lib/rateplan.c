/* The header planner: parsed rate-limit headers -> a planned start rate and
 * first start (pure), and the shared-rate publish rule every budget uses. */
#include <polite/ratectl.h>

#include "rateplan.h"

#include <string.h>

/* Kong's per-window pairs carry no reset: the window bounds it. */
static const int64_t k_kong_window_s[] = {1,     60,      3600,
                                          86400, 2592000, 31536000};

/* The reset of source i in ms, or -1 when neither stated nor implied. */
static int64_t pair_reset_ms(const polite_headers *h, int i) {
  if (h->pairs[i].reset_ms >= 0)
    return h->pairs[i].reset_ms;
  if (i >= POLITE_RL_KONG_SECOND && i <= POLITE_RL_KONG_YEAR)
    return k_kong_window_s[i - POLITE_RL_KONG_SECOND] * 1000;
  return -1;
}

int64_t polite__plan_interval_us(double period_us, double count) {
  double iv = period_us / count * (100.0 + POLITE_PLAN_MARGIN_PCT) / 100.0;
  if (iv > 9.0e15)
    iv = 9.0e15;
  return (int64_t)iv + 1 + POLITE_PLAN_MARGIN_US;
}

static const char *const k_why[] = {
    "the headers state no rate",
    "what remains is spread evenly over the time to its reset",
    "the policy's average (quota per window) is the lower rate",
    "nothing remains: wait for the reset",
    "the server asked to wait (Retry-After wins over the reset)"};

const char *polite_plan_reason_name(polite_plan_reason r) {
  static const char *const names[] = {"none", "spread", "average", "reset",
                                      "server"};
  return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "?";
}

int polite_rate_plan_headers(const polite_headers *h, int64_t now_us,
                             polite_rate_plan *out) {
  return polite_rate_plan_after(h, now_us, 0, out);
}

int polite_rate_plan_after(const polite_headers *h, int64_t now_us,
                           unsigned started_after, polite_rate_plan *out) {
  if (out == NULL)
    return 0;
  memset(out, 0, sizeof *out);
  out->remaining = out->reset_us = -1;
  out->why = k_why[0];
  out->not_before_us = now_us;
  if (h == NULL)
    return 0;
  int64_t spread_iv = 0, reset_wait = -1;
  int spread_src = -1, reset_src = -1;
  for (int i = 0; i < POLITE_RL_SOURCES; i++) {
    int64_t r = h->pairs[i].remaining, t = pair_reset_ms(h, i);
    if (r < 0 || t < 0)
      continue;
    /* What the client started after the answered request reached the
     * server after it, so this remaining does not count it yet. Token
     * pairs count tokens, not requests. */
    if (i != POLITE_RL_TOKENS && r > 0)
      r = r > (int64_t)started_after ? r - (int64_t)started_after : 0;
    if (r == 0) {
      if (t > reset_wait) {
        reset_wait = t;
        reset_src = i;
      }
    } else if (t > 0 && i != POLITE_RL_TOKENS) {
      int64_t iv = polite__plan_interval_us((double)t * 1000.0, (double)r);
      if (iv > spread_iv) {
        spread_iv = iv;
        spread_src = i;
        out->remaining = r;
        out->reset_us = t * 1000;
        out->reset_absolute = (int)(h->reset_absolute >> i & 1u);
      }
    }
  }
  int64_t avg_iv = 0;
  if (h->avg_quota > 0 && h->avg_window_s > 0) {
    avg_iv = polite__plan_interval_us((double)h->avg_window_s * 1e6,
                                      (double)h->avg_quota);
    out->average_per_s = 1e6 / (double)avg_iv;
  }
  int64_t iv = spread_iv > avg_iv ? spread_iv : avg_iv;
  if (iv > 0) {
    out->interval_us = iv;
    out->rate_per_s = 1e6 / (double)iv;
    out->reason =
        spread_iv >= avg_iv ? POLITE_PLAN_SPREAD : POLITE_PLAN_AVERAGE;
    /* source names the pair that remaining and reset_us describe, also
     * when the policy's average is the lower rate: labelled IETF while
     * remaining was another pair's, a plan with requests in flight (which
     * may move the spread to another pair) seemed to gain requests in the
     * same pair (fuzz_rateplan, issue #23). The average alone (no pair)
     * comes from the IETF policy. */
    out->source =
        spread_src >= 0 ? (polite_rl_source)spread_src : POLITE_RL_IETF;
    out->wait_us = iv;
  }
  polite_wait_source ws;
  int64_t server_ms = polite_headers_wait_ms(h, &ws);
  if (server_ms >= 0 && ws != POLITE_WAIT_RESET) {
    out->reason = POLITE_PLAN_WAIT_SERVER;
    out->wait_us = server_ms * 1000;
  } else if (reset_wait >= 0) {
    out->reason = POLITE_PLAN_WAIT_RESET;
    out->source = (polite_rl_source)reset_src;
    out->remaining = 0;
    out->reset_us = reset_wait * 1000;
    out->reset_absolute = (int)(h->reset_absolute >> reset_src & 1u);
    out->wait_us = polite__plan_interval_us((double)reset_wait * 1000.0, 1.0);
  }
  out->why = k_why[out->reason];
  out->not_before_us = now_us + out->wait_us;
  return out->reason != POLITE_PLAN_NONE;
}
