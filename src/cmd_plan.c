/* `polite plan`: rate and Little's-law arithmetic for a batch (docs/plan.md).
 */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <polite/core.h>

/* The default target is this share of the allowance: room for other callers
 * of the same account, for retries (they spend the same budget) and for
 * clock differences between us and the server's window. */
#define DEFAULT_TARGET_SHARE 0.75

/* A JSON/text number: integers and large values without an exponent, the
 * rest with 6 significant digits (1.5, 666.667, 0.0166667). */
static void put_num(FILE *f, double x) {
  if (fabs(x) >= 1e6 || x == floor(x)) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.3f", x);
    char *e = buf + strlen(buf) - 1;
    while (*e == '0')
      *e-- = '\0';
    if (*e == '.')
      *e = '\0';
    fputs(buf, f);
  } else {
    fprintf(f, "%.6g", x);
  }
}

/* A rate as a flag value that polite_rate_parse accepts: in the largest unit
 * that gives a whole number (8/s stays "8/s", 1.5/s becomes "90/min"),
 * else in the smallest unit that gives a number >= 1. */
static void put_rate(FILE *f, double per_s) {
  static const struct {
    double mult;
    const char *unit;
  } units[] = {{1, "/s"}, {60, "/min"}, {3600, "/h"}, {86400, "/day"}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    double v = per_s * units[i].mult;
    if (v >= 1 && fabs(v - round(v)) < 1e-9 * v) {
      put_num(f, round(v));
      fputs(units[i].unit, f);
      return;
    }
  }
  if (per_s * 60 >= 1) {
    put_num(f, per_s * 60);
    fputs("/min", f);
  } else if (per_s * 3600 >= 1) {
    put_num(f, per_s * 3600);
    fputs("/h", f);
  } else {
    put_num(f, per_s * 86400);
    fputs("/day", f);
  }
}

/* Seconds as "400 s (6m 40s)" for reading. */
static void put_secs(FILE *f, double s) {
  put_num(f, s);
  fputs(" s", f);
  if (s >= 60) {
    int64_t t = (int64_t)ceil(s);
    int64_t d = t / 86400, h = t / 3600 % 24, m = t / 60 % 60, sec = t % 60;
    fputs(" (", f);
    if (d)
      fprintf(f, "%" PRId64 "d ", d);
    if (d || h)
      fprintf(f, "%" PRId64 "h ", h);
    fprintf(f, "%" PRId64 "m %" PRId64 "s)", m, sec);
  }
}

struct plan {
  const char *allowance_text, *target_text;
  double allowance, target; /* per second */
  int target_default;
  int64_t requests;    /* -1: not given */
  int64_t latency_ms;  /* -1: not given */
  int64_t deadline_ms; /* -1: not given */
  int json;

  /* Results. */
  double interval_exact_ms;
  int64_t interval_ms;
  double min_duration_s; /* requests / rate */
  double finish_s;       /* last start + latency */
  double in_flight;
  long long concurrency;
  int exceeds_allowance;
  int fits_deadline;
  double needed_per_s;
  long long max_in_deadline;
};

/* --allowance and --target keep the text as given (the output quotes it)
 * beside the rate per second. */
static int set_rate_text(void *opts, const cli_opt *o, const char *val,
                         char *err, size_t errlen) {
  struct plan *p = opts;
  double r;
  if (polite_rate_parse(val, &r) != 0) {
    snprintf(err, errlen,
             "expected a rate N/UNIT such as 120/min, 2/s, 5000/h or 1.5/s "
             "(N > 0; units s, min, h, day), got '%.64s'",
             val);
    return -1;
  }
  if (o->name[0] == 'a') {
    p->allowance = r;
    p->allowance_text = val;
  } else {
    p->target = r;
    p->target_text = val;
  }
  return 0;
}

#define P struct plan
static const cli_opt plan_opts_table[] = {
    {"allowance", 0, CLI_CUSTOM, "N/UNIT", 0, 0, NULL, "required", NULL,
     "what the account may start (units /s, /min, /h, /day)", "Options", 0, 0,
     set_rate_text, NULL, 0},
    {"target", 0, CLI_CUSTOM, "N/UNIT", 0, 0, NULL, "75% of the allowance",
     NULL, "what to plan for", NULL, 0, 0, set_rate_text, NULL, 0},
    {"requests", 0, CLI_INT, "N", 1, 1000000000000LL, NULL, NULL, NULL,
     "number of requests in the batch", NULL, CLI_AT(P, requests), NULL, NULL,
     0},
    {"latency", 0, CLI_DURATION, "DURATION", 0, INT64_MAX, NULL, NULL, NULL,
     "typical time from start to response (e.g. 2s, 350ms)", NULL,
     CLI_AT(P, latency_ms), NULL, NULL, 0},
    {"deadline", 0, CLI_DURATION, "DURATION", 1, INT64_MAX, NULL, NULL, NULL,
     "time the whole batch may take, above zero (e.g. 10m, 1h30m)", NULL,
     CLI_AT(P, deadline_ms), NULL, NULL, 0},
    {"json", 0, CLI_FLAG, NULL, 1, 0, NULL, NULL, NULL, "print one JSON object",
     NULL, CLI_AT(P, json), NULL, NULL, 0},
    CLI_ROW_END};
#undef P

const cli_command cli_cmd_plan = {
    "plan",
    "--allowance N/UNIT [OPTIONS]",
    "rate and Little's-law arithmetic for a batch",
    "Rate and Little's-law arithmetic for a batch: the start interval, the\n"
    "minimum duration, the expected number in flight, the concurrency to\n"
    "configure, and whether the batch fits a deadline.\n",
    plan_opts_table,
    "Example: polite plan --allowance 120/min --target 90/min --requests 600 "
    "--latency 2s\n",
    NULL,
    0,
    NULL,
    NULL};

static int parse_args(int argc, char **argv, struct plan *p) {
  cli_args pos = {{NULL}, 0};
  int rc = cli_parse(&cli_cmd_plan, argc, argv, p, &pos);
  if (rc >= 0)
    return rc;
  if (p->allowance_text == NULL)
    return cli_usage("plan", "--allowance: required (for example "
                             "--allowance 120/min)");
  return -1;
}

/* The arithmetic (docs/plan.md explains each line). */
static void compute(struct plan *p) {
  if (p->target_text == NULL) {
    p->target = p->allowance * DEFAULT_TARGET_SHARE;
    p->target_default = 1;
  }
  const double r = p->target;
  p->exceeds_allowance = r > p->allowance * (1 + 1e-12);
  p->interval_exact_ms = 1000.0 / r;
  /* Rounded up, with a hair of slack for binary fractions (90/min is
   * exactly 666.67 ms, 120/min exactly 500 ms, not 500.0000001). */
  p->interval_ms = (int64_t)ceil(p->interval_exact_ms - 1e-9);
  if (p->requests > 0) {
    p->min_duration_s = (double)p->requests / r;
    p->finish_s = (double)(p->requests - 1) / r +
                  (p->latency_ms > 0 ? (double)p->latency_ms / 1000 : 0);
  }
  if (p->latency_ms >= 0) {
    /* Little's law: L = lambda * W. The count in flight fluctuates around
     * L; for arrivals that are not perfectly regular it is close to a
     * Poisson count with standard deviation sqrt(L), so L + 2 sqrt(L)
     * covers about 98% of the time (square-root staffing). Too few slots
     * silently cap the rate at concurrency / latency, below the target;
     * extra slots cost nothing because the rate limiter still spaces the
     * starts. */
    p->in_flight = r * (double)p->latency_ms / 1000;
    double c = ceil(p->in_flight + 2 * sqrt(p->in_flight) - 1e-9);
    p->concurrency = c < 1 ? 1 : (long long)c;
  }
  if (p->deadline_ms > 0) {
    double d = (double)p->deadline_ms / 1000;
    p->max_in_deadline = (long long)floor(d * r + 1e-9);
    if (p->requests > 0) {
      p->fits_deadline = p->finish_s <= d + 1e-9;
      p->needed_per_s = (double)p->requests / d;
    }
  }
}

static void print_json(const struct plan *p) {
  FILE *f = stdout;
  fputs("{\"allowance_per_s\":", f);
  put_num(f, p->allowance);
  fputs(",\"target_per_s\":", f);
  put_num(f, p->target);
  fprintf(f, ",\"target_default\":%s,\"target_share\":",
          p->target_default ? "true" : "false");
  put_num(f, p->target / p->allowance);
  fputs(",\"rate_per_s\":", f);
  put_num(f, p->target);
  fprintf(f, ",\"start_interval_ms\":%" PRId64 ",\"start_interval_ms_exact\":",
          p->interval_ms);
  put_num(f, p->interval_exact_ms);
  fprintf(f, ",\"exceeds_allowance\":%s",
          p->exceeds_allowance ? "true" : "false");
  if (p->requests > 0) {
    fprintf(f,
            ",\"requests\":%lld,\"min_duration_s\":", (long long)p->requests);
    put_num(f, p->min_duration_s);
    fputs(",\"finish_s\":", f);
    put_num(f, p->finish_s);
  } else {
    fputs(",\"requests\":null,\"min_duration_s\":null,\"finish_s\":null", f);
  }
  if (p->latency_ms >= 0) {
    fprintf(f, ",\"latency_ms\":%" PRId64 ",\"in_flight\":", p->latency_ms);
    put_num(f, p->in_flight);
    fprintf(f, ",\"concurrency\":%lld", p->concurrency);
    if (p->latency_ms > 0) {
      fputs(",\"max_rate_at_concurrency_per_s\":", f);
      put_num(f, (double)p->concurrency * 1000 / (double)p->latency_ms);
    }
  } else {
    fputs(",\"latency_ms\":null,\"in_flight\":null,\"concurrency\":null", f);
  }
  if (p->deadline_ms > 0) {
    fprintf(f, ",\"deadline_ms\":%" PRId64 ",\"max_requests_in_deadline\":%lld",
            p->deadline_ms, p->max_in_deadline);
    if (p->requests > 0) {
      fprintf(f, ",\"fits_deadline\":%s,\"needed_rate_per_s\":",
              p->fits_deadline ? "true" : "false");
      put_num(f, p->needed_per_s);
    } else {
      fputs(",\"fits_deadline\":null", f);
    }
  }
  fputs("}\n", f);
}

static void print_text(const struct plan *p) {
  FILE *f = stdout;
  fprintf(f, "allowance       %s = ", p->allowance_text);
  put_num(f, p->allowance);
  fputs(" requests/s\n", f);
  fputs("target          ", f);
  put_rate(f, p->target);
  fputs(" = ", f);
  put_num(f, p->target);
  fputs(" requests/s (", f);
  put_num(f, 100 * p->target / p->allowance);
  fprintf(f, "%% of the allowance%s)\n",
          p->target_default ? ", the default: room for other callers and "
                              "retries"
                            : "");
  fprintf(f, "start interval  one start every %" PRId64 " ms", p->interval_ms);
  if (fabs(p->interval_exact_ms - (double)p->interval_ms) > 1e-9) {
    fputs(" (exactly ", f);
    put_num(f, p->interval_exact_ms);
    fputs(" ms)", f);
  }
  fputs("\n", f);
  if (p->requests > 0) {
    char label[48];
    snprintf(label, sizeof label, "%lld requests", (long long)p->requests);
    fprintf(f, "%-15s take at least ", label);
    put_secs(f, p->min_duration_s);
    fprintf(f, " at the target rate (requests / rate)\n");
  }
  if (p->latency_ms >= 0) {
    fputs("in flight       ", f);
    put_num(f, p->target);
    fputs("/s x ", f);
    put_num(f, (double)p->latency_ms / 1000);
    fputs(" s = ", f);
    put_num(f, p->in_flight);
    fputs(" on average (Little's law)\n", f);
    fprintf(f,
            "concurrency     %lld = ceil(in flight + 2 x sqrt(in flight)): "
            "room for slow responses",
            p->concurrency);
    if (p->latency_ms > 0) {
      fputs("; it allows up to ", f);
      put_num(f, (double)p->concurrency * 1000 / (double)p->latency_ms);
      fputs("/s at this latency", f);
    }
    fputs("\n", f);
  }
  if (p->deadline_ms > 0) {
    fputs("deadline        ", f);
    put_secs(f, (double)p->deadline_ms / 1000);
    if (p->requests > 0) {
      fprintf(f, ": %s (the last response is expected after ",
              p->fits_deadline ? "fits" : "does NOT fit");
      put_secs(f, p->finish_s);
      fputs(")", f);
      if (!p->fits_deadline) {
        fputs("; it would need ", f);
        put_num(f, p->needed_per_s);
        fputs(" requests/s", f);
        if (p->needed_per_s > p->allowance)
          fputs(", more than the allowance", f);
      }
    }
    fprintf(f, "\n                at most %lld requests start within it\n",
            p->max_in_deadline);
  }
  fputs("configure       polite run --rate ", f);
  put_rate(f, p->target);
  if (p->latency_ms >= 0)
    fprintf(f, " --concurrency %lld", p->concurrency);
  fputs("\n", f);
}

int cmd_plan(int argc, char **argv) {
  struct plan p;
  memset(&p, 0, sizeof p);
  p.requests = -1;
  p.latency_ms = -1;
  p.deadline_ms = -1;
  int rc = parse_args(argc, argv, &p);
  if (rc >= 0)
    return rc;
  compute(&p);
  if (p.exceeds_allowance)
    fprintf(stderr,
            "polite plan: warning: --target %s is above --allowance %s; the "
            "server will throttle this plan\n",
            p.target_text, p.allowance_text);
  if (p.json)
    print_json(&p);
  else
    print_text(&p);
  return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
}
