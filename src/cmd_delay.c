/* `polite delay`: explains the wait for one Retry-After value (docs/delay.md).
 */
#include "cli.h"

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <polite/clock.h>
#include <polite/core.h>

/* The latest --now accepted: 9999-12-31T23:59:59Z, far inside int64 ms. */
#define MAX_NOW_UNIX INT64_C(253402300799)

/* Human form of a duration in ms: "450 ms", "12 s", "1.5 s", "2m 5s",
 * "24855d 3h 14m 8s". Writes into buf (>= 64 bytes). */
static const char *human_ms(int64_t ms, char *buf, size_t size) {
  if (ms < 1000) {
    snprintf(buf, size, "%" PRId64 " ms", ms);
  } else if (ms < 60000) {
    if (ms % 1000 == 0)
      snprintf(buf, size, "%" PRId64 " s", ms / 1000);
    else
      snprintf(buf, size, "%.3g s", (double)ms / 1000);
  } else {
    int64_t s = (ms + 999) / 1000; /* a wait shown shorter would mislead */
    int64_t d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    int n = 0;
    buf[0] = '\0';
    if (d)
      n += snprintf(buf + n, size - (size_t)n, "%" PRId64 "d ", d);
    if (d || h)
      n += snprintf(buf + n, size - (size_t)n, "%" PRId64 "h ", h);
    snprintf(buf + n, size - (size_t)n, "%" PRId64 "m %" PRId64 "s", m, sec);
  }
  return buf;
}

/* Prints a user-supplied value on a terminal line: control bytes become
 * '?' so that a pasted header cannot move the cursor or fake output. */
static void print_value(const char *v) {
  for (const unsigned char *p = (const unsigned char *)v; *p; p++)
    putchar(*p < 0x20 || *p == 0x7f ? '?' : *p);
}

struct delay_opts {
  int json;
  int has_seed;
  int64_t now_unix; /* -1: the clock */
  unsigned attempt;
  uint64_t seed;
  polite_backoff backoff;
  const char *value;
};

/* --seed also records that a seed was given (0 is a seed too). */
static int set_seed(void *opts, const cli_opt *o, const char *val, char *err,
                    size_t errlen) {
  struct delay_opts *d = opts;
  unsigned long long u;
  if (cli_parse_uint(val, UINT64_MAX, &u) != 0) {
    snprintf(err, errlen,
             "expected a whole number from 0 to 18446744073709551615, got "
             "'%.64s'",
             val);
    return -1;
  }
  d->seed = u;
  d->has_seed = 1;
  return 0;
}

#define D struct delay_opts
static const cli_opt delay_opts_table[] = {
    {"now", 0, CLI_INT, "UNIX_SECONDS", 0, MAX_NOW_UNIX, NULL, "the clock",
     NULL,
     "the current time, for HTTP-dates and the two-digit years of RFC 850 "
     "dates",
     "Options", CLI_AT(D, now_unix), NULL, NULL, 0},
    {"attempt", 0, CLI_UINT, "N", 1, UINT32_MAX, "1", NULL, NULL,
     "attempts made so far; the backoff window is base * 2^(N-1), capped", NULL,
     CLI_AT(D, attempt), NULL, NULL, 0},
    {"seed", 0, CLI_CUSTOM, "N", 0, 0, NULL, "random", NULL,
     "seed of the backoff draw (0 .. 2^64-1); the same seed gives the same "
     "delay",
     NULL, 0, 0, set_seed, NULL, 0},
    {"base", 0, CLI_DURATION, "DURATION", 1, INT64_MAX, "1s", NULL, NULL,
     "first backoff window", NULL, CLI_AT(D, backoff.base_ms), NULL, NULL, 0},
    {"cap", 0, CLI_DURATION, "DURATION", 1, INT64_MAX, "30s", NULL, NULL,
     "largest backoff window", NULL, CLI_AT(D, backoff.cap_ms), NULL, NULL, 0},
    {"json", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL,
     "print one JSON object instead of sentences", NULL, CLI_AT(D, json), NULL,
     NULL, 0},
    CLI_ROW_END};
#undef D

const cli_command cli_cmd_delay = {
    "delay",
    "[OPTIONS] VALUE",
    "explain the wait for one Retry-After value",
    "Explains the wait for one Retry-After VALUE: delay-seconds (\"120\"),\n"
    "an HTTP-date in any RFC 9110 form, or empty/invalid (then the\n"
    "backoff wait polite would use instead).\n",
    delay_opts_table,
    "A VALUE that starts with '-' goes after '--'. Exit status: 0, or 2\n"
    "for a usage error.\n",
    " (a VALUE that starts with '-' goes after '--')",
    CLI_MAX_POSITIONAL,
    NULL,
    NULL};

/* Parses the command line into *o. Returns -1 to go on, else an exit
 * status (help printed, or a usage error reported). */
static int parse_args(int argc, char **argv, struct delay_opts *o) {
  cli_args pos = {{NULL}, 0};
  int rc = cli_defaults(&cli_cmd_delay, o);
  if (rc == 0)
    rc = cli_parse(&cli_cmd_delay, argc, argv, o, &pos);
  if (rc >= 0)
    return rc;
  if (pos.n != 1)
    return cli_usage("delay",
                     "expected one Retry-After VALUE (use \"\" for an "
                     "empty one), got %d",
                     pos.n);
  o->value = pos.v[0];
  return -1;
}

static void print_json(const struct delay_opts *o, const polite_retry_after *ra,
                       int64_t delay, int64_t now_unix, int64_t window,
                       unsigned retry) {
  printf("{\"source\":");
  if (ra->kind == POLITE_RA_SECONDS) {
    printf("\"seconds\",\"delay_ms\":%" PRId64 ",\"seconds\":%" PRId64
           ",\"saturated\":%s",
           delay, ra->seconds, ra->saturated ? "true" : "false");
  } else if (ra->kind == POLITE_RA_DATE) {
    char date[64];
    if (polite_http_date_format(ra->date_unix, date, sizeof date) < 0)
      date[0] = '\0';
    printf("\"date\",\"delay_ms\":%" PRId64 ",\"date_unix\":%" PRId64
           ",\"date\":",
           delay, ra->date_unix);
    cli_json_string(stdout, date);
    printf(",\"past\":%s", delay == 0 ? "true" : "false");
  } else {
    printf("\"backoff\",\"delay_ms\":%" PRId64 ",\"invalid\":%s"
           ",\"attempt\":%u,\"retry\":%u,\"window_ms\":%" PRId64
           ",\"base_ms\":%" PRId64 ",\"cap_ms\":%" PRId64,
           delay, ra->kind == POLITE_RA_INVALID ? "true" : "false", o->attempt,
           retry, window, o->backoff.base_ms, o->backoff.cap_ms);
    if (o->has_seed)
      printf(",\"seed\":%" PRIu64, o->seed);
  }
  printf(",\"now_unix\":%" PRId64 ",\"value\":", now_unix);
  cli_json_string(stdout, o->value);
  printf("}\n");
}

static void print_text(const struct delay_opts *o, const polite_retry_after *ra,
                       int64_t delay, int64_t now_unix, int64_t window,
                       unsigned retry) {
  char a[64], b[64], c[64];
  printf("Retry-After: ");
  print_value(o->value);
  printf("\n");
  if (ra->kind == POLITE_RA_SECONDS) {
    printf("The server asks for %" PRId64 " seconds: wait at least %s "
           "(%" PRId64 " ms) before the next request.\n",
           ra->seconds, human_ms(delay, a, sizeof a), delay);
    if (ra->saturated)
      printf("The number is larger than %" PRId64 " seconds (about 68 "
             "years), so it saturates to that instead of wrapping. No "
             "deadline fits such a wait: a client stops and says so.\n",
             POLITE_RA_MAX_SECONDS);
    printf("This is a minimum: add a small random spread so that many clients "
           "do not resume at the same instant, and never retry earlier.\n");
    return;
  }
  if (ra->kind == POLITE_RA_DATE) {
    polite_http_date_format(ra->date_unix, a, sizeof a);
    polite_http_date_format(now_unix, b, sizeof b);
    printf("The server asks not to retry before %s (Unix %" PRId64 ").\n", a,
           ra->date_unix);
    if (delay > 0) {
      printf("Now is %s (Unix %" PRId64 "), so wait at least %s (%" PRId64
             " ms).\n",
             b, now_unix, human_ms(delay, c, sizeof c), delay);
      printf("This is a minimum: add a small random spread, never retry "
             "earlier. polite measures the date against the response's Date "
             "header when there is one, so a skewed local clock does not "
             "shorten the wait.\n");
    } else {
      printf("Now is %s (Unix %" PRId64 "): that time has passed (%s ago).\n",
             b, now_unix,
             human_ms((now_unix - ra->date_unix) * 1000, c, sizeof c));
      printf("One prompt retry is allowed (delay 0 ms plus a small spread), "
             "not an unlimited stream of them; after that, backoff.\n");
    }
    return;
  }
  if (ra->kind == POLITE_RA_INVALID)
    printf("This is not a valid Retry-After: neither delay-seconds nor an "
           "HTTP-date in one of the three RFC 9110 forms. It is ignored, "
           "never guessed.\n");
  else
    printf("No Retry-After value.\n");
  printf("Without a usable header, polite uses capped exponential backoff "
         "with full jitter.\n");
  printf("Attempt %u (retry %u): window = min(cap %s, base %s x 2^%u) = %s; "
         "the wait is uniform in [0, %" PRId64 "] ms.\n",
         o->attempt, retry, human_ms(o->backoff.cap_ms, a, sizeof a),
         human_ms(o->backoff.base_ms, b, sizeof b), retry,
         human_ms(window, c, sizeof c), window);
  printf("This draw: %" PRId64 " ms", delay);
  if (o->has_seed)
    printf(" (seed %" PRIu64 ")", o->seed);
  printf(".\n");
}

int cmd_delay(int argc, char **argv) {
  struct delay_opts o;
  memset(&o, 0, sizeof o);
  o.now_unix = -1;
  int rc = parse_args(argc, argv, &o);
  if (rc >= 0)
    return rc;

  /* Read the clock once; everything below is the pure core. */
  int64_t now_ms = o.now_unix >= 0 ? o.now_unix * 1000 : polite_wall_ms();
  int64_t now_unix = now_ms >= 0 ? now_ms / 1000 : -((-now_ms + 999) / 1000);
  polite_retry_after ra;
  /* parse_args returns -1 only when it has set o.value (cli_usage returns
   * 2, which the analyzer cannot see from here). */
  // NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker)
  polite_retry_after_parse(o.value, strlen(o.value), now_unix, &ra);

  int64_t delay, window = 0;
  unsigned retry = o.attempt - 1;
  if (ra.kind == POLITE_RA_SECONDS || ra.kind == POLITE_RA_DATE) {
    /* No Date header here: the date is measured against --now. */
    delay = polite_retry_after_delay_ms(&ra, now_ms, -1);
  } else {
    uint64_t state = o.has_seed ? o.seed : polite_random_seed();
    window = polite_backoff_window_ms(&o.backoff, retry);
    delay =
        polite_backoff_delay_ms(&o.backoff, retry, polite_rand_next(&state));
  }
  if (o.json)
    print_json(&o, &ra, delay, now_unix, window, retry);
  else
    print_text(&o, &ra, delay, now_unix, window, retry);
  return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
