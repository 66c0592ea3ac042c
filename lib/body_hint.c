/* Quota hints in response bodies: whether a 429's body says the allowance
 * is spent (waiting does not help) or only that the pace was too fast. Pure:
 * bytes in, a yes or no out. */
#include <polite/core.h>

#include "http_syntax.h"

#include <stddef.h>

/* 1 when s[0..len) holds one of the NULL-terminated list's lowercase words
 * in any case. */
static int contains_any(const char *s, size_t len, const char *const *list) {
  for (; *list != NULL; list++)
    if (polite__ci_find(s, len, *list) != NULL)
      return 1;
  return 0;
}

/* Decides in three tiers (all case-insensitive, first 64 KiB):
 *  1. strong markers only ever mean "the allowance is spent": 1;
 *  2. weak markers mean "a quota was exceeded", which Google, Gemini and the
 *     IETF draft's "#quota-exceeded" problem type also say for per-minute
 *     limits: 1 when a long window (per day/month, daily...) is named, 0 when
 *     a short window or a "try again in" is named, else 1;
 *  3. anything else (rate_limit_exceeded, "Rate limit reached"): 0. */
int polite_body_quota_hint(const char *body, size_t len) {
  if (body == NULL)
    return 0;
  if (len > 65536)
    len = 65536;
  static const char *const strong[] = {
      "insufficient_quota", "credit balance is too low",
      "spend limit",        "spending limit",
      "billing_hard_limit", "billing hard limit",
      "daily limit",        "daily quota",
      "monthly quota",      "monthly limit",
      "usage limit",        NULL};
  static const char *const weak[] = {"exceeded your current quota",
                                     "quota exceeded",
                                     "quota_exceeded",
                                     "quota-exceeded",
                                     "quotaexceeded",
                                     "exceeded quota",
                                     "billing",
                                     NULL};
  static const char *const long_window[] = {
      "per day",   "perday", "per_day", "per month", "permonth",
      "per_month", "daily",  "monthly", NULL};
  static const char *const short_window[] = {
      "per minute", "perminute", "per_minute",   "per second", "persecond",
      "per_second", "per hour",  "perhour",      "per_hour",   "rate limit",
      "rate_limit", "ratelimit", "try again in", "retry in",   "retry after",
      "seconds",    NULL};
  if (contains_any(body, len, strong))
    return 1;
  if (!contains_any(body, len, weak))
    return 0;
  if (contains_any(body, len, long_window))
    return 1;
  return contains_any(body, len, short_window) ? 0 : 1;
}
