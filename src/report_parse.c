/* polite report: reads attempt logs line by line (streaming, bounded line
 * length) and feeds attempts and events to the model. */
#include "report_model.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Longest line read; a longer one is counted as malformed and skipped. */
#define RP_MAX_LINE (1024 * 1024)

/* Integer field: 1 and *out, 0 when absent or null, -1 when of another
 * type. */
static int get_int(const json_t *o, const char *k, int64_t *out) {
  const json_t *v = json_object_get(o, k);
  if (v == NULL || json_is_null(v))
    return 0;
  if (!json_is_integer(v))
    return -1;
  *out = (int64_t)json_integer_value(v);
  return 1;
}

static int get_num(const json_t *o, const char *k, double *out) {
  const json_t *v = json_object_get(o, k);
  if (v == NULL || json_is_null(v))
    return 0;
  if (!json_is_number(v))
    return -1;
  *out = json_number_value(v);
  return isfinite(*out) ? 1 : -1;
}

static const char *get_str(const json_t *o, const char *k) {
  const json_t *v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Sets why to a message about field k and returns -1. */
static int field_err(char *why, size_t n, const char *kind, const char *k,
                     const char *expect) {
  snprintf(why, n, "%s: field '%s': expected %s", kind, k, expect);
  return -1;
}

static int parse_attempt(rp_model *m, const json_t *o, char *why, size_t n) {
  rp_attempt a;
  memset(&a, 0, sizeof a);
  int64_t v = 0;
  if (get_int(o, "start_ms", &a.start_ms) != 1)
    return field_err(why, n, "attempt", "start_ms", "an integer (Unix ms)");
  if (get_int(o, "end_ms", &a.end_ms) != 1)
    return field_err(why, n, "attempt", "end_ms", "an integer (Unix ms)");
  if (get_int(o, "attempt", &v) != 1 || v < 1 || v > 1000000)
    return field_err(why, n, "attempt", "attempt", "an integer >= 1");
  a.attempt = (unsigned)v;
  v = 0;
  if (get_int(o, "status", &v) < 0 || v < 0 || v > 999)
    return field_err(why, n, "attempt", "status", "an HTTP status or null");
  a.status = (int)v;
  const char *act = get_str(o, "action");
  if (act && strcmp(act, "retry") == 0)
    a.action = RP_ACT_RETRY;
  else if (act && strcmp(act, "stop") == 0)
    a.action = RP_ACT_STOP;
  else if (act && strcmp(act, "done") == 0)
    a.action = RP_ACT_DONE;
  else
    return field_err(why, n, "attempt", "action", "retry, stop or done");
  a.reason = get_str(o, "reason");
  a.wait_ms = a.server_wait_ms = -1;
  if (get_int(o, "wait_ms", &a.wait_ms) < 0)
    return field_err(why, n, "attempt", "wait_ms", "an integer or null");
  if (get_int(o, "server_wait_ms", &a.server_wait_ms) < 0)
    return field_err(why, n, "attempt", "server_wait_ms", "an integer or null");
  a.account_pause = json_is_true(json_object_get(o, "account_pause"));
  const json_t *d = json_object_get(o, "diagnosis");
  if (json_is_object(d)) {
    a.component = get_str(d, "component");
    a.limit = get_str(d, "limit");
  }
  rp_model_attempt(m, &a);
  return 0;
}

static int parse_run(rp_model *m, const json_t *o, char *why, size_t n) {
  rp_run r = {0, 0, 0, 0, -1, -1};
  int64_t v;
  if (get_num(o, "rate_per_s", &r.rate_per_s) < 0 || r.rate_per_s < 0)
    return field_err(why, n, "run", "rate_per_s", "a number >= 0 or null");
  if (get_int(o, "concurrency", &v) < 0)
    return field_err(why, n, "run", "concurrency", "an integer");
  r.concurrency = get_int(o, "concurrency", &v) == 1 ? (long)v : 0;
  r.max_attempts = get_int(o, "max_attempts", &v) == 1 ? (long)v : 0;
  r.burst = get_int(o, "burst", &v) == 1 ? (long)v : 0;
  if (get_int(o, "started_wall_ms", &v) == 1)
    r.started_wall_ms = v;
  if (get_int(o, "deadline_ms", &v) == 1)
    r.deadline_ms = v;
  rp_model_run(m, &r);
  return 0;
}

static int parse_result(rp_model *m, const json_t *o, char *why, size_t n) {
  rp_result r = {get_str(o, "outcome"), 0, 1};
  int64_t v = 0;
  if (r.outcome == NULL)
    return field_err(why, n, "result", "outcome", "a string");
  if (get_int(o, "attempts", &v) < 0 || v < 0 || v > 1000000)
    return field_err(why, n, "result", "attempts", "an integer >= 0");
  r.attempts = (unsigned)v;
  v = 1;
  if (get_int(o, "cost", &v) < 0 || v < 1 || v > 1000000000)
    return field_err(why, n, "result", "cost", "an integer >= 1");
  r.cost = (unsigned)v;
  rp_model_result(m, &r);
  return 0;
}

static int parse_rate(rp_model *m, const json_t *o, char *why, size_t n) {
  int64_t t;
  double rate;
  if (get_int(o, "wall_ms", &t) != 1)
    return field_err(why, n, "rate", "wall_ms", "an integer (Unix ms)");
  if (get_num(o, "rate_per_s", &rate) != 1 || rate < 0)
    return field_err(why, n, "rate", "rate_per_s", "a number >= 0");
  rp_model_rate(m, t, rate);
  return 0;
}

static int parse_end(rp_model *m, const json_t *o, char *why, size_t n) {
  int64_t t;
  if (get_int(o, "wall_ms", &t) != 1)
    return field_err(why, n, "end", "wall_ms", "an integer (Unix ms)");
  rp_model_end(m, t);
  return 0;
}

/* Event kinds the page draws; others are skipped (and counted). */
static const struct {
  const char *name;
  int (*parse)(rp_model *, const json_t *, char *, size_t);
} EVENTS[] = {{"run", parse_run},
              {"result", parse_result},
              {"rate", parse_rate},
              {"end", parse_end}};

int rp_model_feed_line(rp_model *m, const char *line, size_t len, long lineno) {
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
    len--;
  size_t k = 0;
  while (k < len && (line[k] == ' ' || line[k] == '\t'))
    k++;
  if (k == len)
    return 0; /* blank */
  json_error_t je;
  char why[256];
  json_t *o = json_loadb(line, len, 0, &je);
  if (o == NULL) {
    snprintf(why, sizeof why, "not JSON: %s (column %d)", je.text, je.column);
    rp_model_bad_line(m, lineno, why);
    return -1;
  }
  int rc = -1;
  if (!json_is_object(o)) {
    snprintf(why, sizeof why, "not a JSON object");
  } else if (json_object_get(o, "event") == NULL) {
    rc = parse_attempt(m, o, why, sizeof why);
  } else {
    const char *ev = get_str(o, "event");
    rc = 0;
    size_t i = 0;
    for (; ev && i < sizeof EVENTS / sizeof EVENTS[0]; i++)
      if (strcmp(EVENTS[i].name, ev) == 0) {
        rc = EVENTS[i].parse(m, o, why, sizeof why);
        break;
      }
    if (ev == NULL) {
      snprintf(why, sizeof why, "field 'event': expected a string");
      rc = -1;
    } else if (i == sizeof EVENTS / sizeof EVENTS[0]) {
      m->unknown_events++;
    }
  }
  json_decref(o);
  if (rc != 0)
    rp_model_bad_line(m, lineno, why);
  return rc;
}

/* Reads one line of at most RP_MAX_LINE bytes into *buf (grown as needed).
 * Returns its length, -1 at the end of the file, or -2 for a longer line
 * (the rest of it is skipped). */
static long read_line(FILE *f, char **buf, size_t *cap) {
  size_t n = 0;
  int c, over = 0;
  while ((c = getc_unlocked(f)) != EOF) {
    if (c == '\n')
      return over ? -2 : (long)n;
    if (over)
      continue;
    if (n + 1 >= *cap) {
      if (*cap >= RP_MAX_LINE) {
        over = 1;
        continue;
      }
      size_t nc = *cap ? *cap * 2 : 4096;
      char *nb = realloc(*buf, nc);
      if (nb == NULL) {
        over = 1;
        continue;
      }
      *buf = nb;
      *cap = nc;
    }
    (*buf)[n++] = (char)c;
  }
  if (over)
    return -2;
  return n > 0 ? (long)n : -1;
}

int rp_model_read_file(rp_model *m, const char *path, char *err, size_t n) {
  int is_stdin = strcmp(path, "-") == 0;
  FILE *f = is_stdin ? stdin : fopen(path, "rb");
  if (f == NULL) {
    snprintf(err, n, "cannot open '%s': %s", path, strerror(errno));
    return -1;
  }
  if (rp_model_source(m, is_stdin ? "(stdin)" : path) != 0) {
    snprintf(err, n, "at most %d logs in one page", RP_SOURCES);
    if (!is_stdin)
      fclose(f);
    return -1;
  }
  rp_source *src = &m->src[m->nsrc - 1];
  char *buf = NULL;
  size_t cap = 0;
  long len, lineno = 0;
  while ((len = read_line(f, &buf, &cap)) != -1) {
    lineno++;
    src->lines++;
    if (len == -2)
      rp_model_bad_line(m, lineno, "line longer than 1 MiB");
    else
      rp_model_feed_line(m, buf, (size_t)len, lineno);
  }
  int bad = ferror(f);
  free(buf);
  if (!is_stdin)
    fclose(f);
  rp_model_source_end(m);
  if (bad) {
    snprintf(err, n, "cannot read '%s': %s", path, strerror(errno));
    return -1;
  }
  return 0;
}
