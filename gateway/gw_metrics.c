/* polite gateway: its counters and their Prometheus text (exposition
 * format 0.0.4, checked with `promtool check metrics`) for GET
 * /__polite/metrics: client requests and their own retries, attempts by
 * layer, answers by status and source, the queue waits as a histogram,
 * pauses, and per account the queue, the pause left and the start rate
 * (docs/gateway.md "Metrics"). The series per account are bounded: a
 * hostile client can name any host. */
#define _GNU_SOURCE
#include "gateway.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The label of the default account (--budget-scope run) and of the
 * accounts beyond GW_METRICS_MAX_ACCOUNTS. */
#define DEFAULT_ACCOUNT "default"
#define OTHER_ACCOUNTS "other"

static const double wait_bounds[GW_WAIT_BUCKETS] = {
    0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};

typedef struct {
  char name[GW_ACCOUNT_MAX];
  uint64_t pauses;
  int64_t pause_ms;
} acct_count;

struct gw_metrics {
  uint64_t first, client_retries, early;
  uint64_t attempts_first, attempts_retry;
  uint64_t answers[600][2]; /* [status][relayed] */
  uint64_t outcomes[POLITE_OUT_COUNT];
  uint64_t wait_bucket[GW_WAIT_BUCKETS], wait_over, wait_count;
  double wait_sum_s;
  acct_count accts[GW_METRICS_MAX_ACCOUNTS + 1]; /* the last: "other" */
  size_t naccts;
};

gw_metrics *polite__gw_metrics_new(void) {
  gw_metrics *m = calloc(1, sizeof *m);
  if (m)
    snprintf(m->accts[GW_METRICS_MAX_ACCOUNTS].name, GW_ACCOUNT_MAX, "%s",
             OTHER_ACCOUNTS);
  return m;
}

void polite__gw_metrics_free(gw_metrics *m) {
  free(m);
}

void polite__gw_metrics_request(gw_metrics *m, int client_retry, int early) {
  if (client_retry)
    m->client_retries++;
  else
    m->first++;
  if (early)
    m->early++;
}

void polite__gw_metrics_attempt(gw_metrics *m, unsigned attempt) {
  if (attempt <= 1)
    m->attempts_first++;
  else
    m->attempts_retry++;
}

void polite__gw_metrics_queue_wait(gw_metrics *m, int64_t wait_us) {
  double s = (double)(wait_us < 0 ? 0 : wait_us) / 1e6;
  m->wait_count++;
  m->wait_sum_s += s;
  for (int i = 0; i < GW_WAIT_BUCKETS; i++)
    if (s <= wait_bounds[i]) {
      m->wait_bucket[i]++;
      return;
    }
  m->wait_over++;
}

/* The counts of account `name` (NULL: the default account): its own, or
 * "other" once GW_METRICS_MAX_ACCOUNTS have their own. */
static acct_count *acct_of(gw_metrics *m, const char *name) {
  if (name == NULL)
    name = DEFAULT_ACCOUNT;
  for (size_t i = 0; i < m->naccts; i++)
    if (strcmp(m->accts[i].name, name) == 0)
      return &m->accts[i];
  if (m->naccts == GW_METRICS_MAX_ACCOUNTS)
    return &m->accts[GW_METRICS_MAX_ACCOUNTS];
  acct_count *a = &m->accts[m->naccts++];
  snprintf(a->name, sizeof a->name, "%s", name);
  return a;
}

void polite__gw_metrics_totals(const gw_metrics *m, gw_totals *t) {
  memset(t, 0, sizeof *t);
  t->requests = m->first + m->client_retries;
  t->client_retries = m->client_retries;
  t->client_early = m->early;
  t->attempts_client = m->attempts_first;
  t->attempts_gateway = m->attempts_retry;
}

void polite__gw_metrics_pause(gw_metrics *m, const char *account,
                              int64_t pause_ms) {
  acct_count *a = acct_of(m, account);
  a->pauses++;
  a->pause_ms += pause_ms > 0 ? pause_ms : 0;
}

void polite__gw_metrics_answer(gw_metrics *m, int status, int relayed,
                               polite_outcome outcome) {
  if (status >= 100 && status < 600)
    m->answers[status][relayed != 0]++;
  if ((unsigned)outcome < POLITE_OUT_COUNT)
    m->outcomes[outcome]++;
}

/* ---- the text ------------------------------------------------------------ */

/* Writes label value v escaped as the exposition format asks (backslash,
 * double quote, line feed). */
static void label(FILE *f, const char *v) {
  for (; *v; v++) {
    if (*v == '\n') {
      fputs("\\n", f);
      continue;
    }
    if (*v == '\\' || *v == '"')
      fputc('\\', f);
    fputc(*v, f);
  }
}

static void family(FILE *f, const char *name, const char *type,
                   const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void requests(FILE *f, const gw_metrics *m) {
  family(f, "polite_gateway_requests_total", "counter",
         "Requests clients sent, by kind: first, or the client's own retry "
         "(a retry-count header, or the same method and URL after a 429/503 "
         "the gateway gave).");
  fprintf(f,
          "polite_gateway_requests_total{kind=\"first\"} %llu\n"
          "polite_gateway_requests_total{kind=\"client_retry\"} %llu\n",
          (unsigned long long)m->first, (unsigned long long)m->client_retries);
  family(f, "polite_gateway_client_early_retries_total", "counter",
         "Client retries that came before the Retry-After the gateway gave.");
  fprintf(f, "polite_gateway_client_early_retries_total %llu\n",
          (unsigned long long)m->early);
  family(f, "polite_gateway_attempts_total", "counter",
         "Attempts sent upstream, by layer: the client's request (its own "
         "retries included) or the gateway's retry of it.");
  fprintf(f,
          "polite_gateway_attempts_total{layer=\"client\"} %llu\n"
          "polite_gateway_attempts_total{layer=\"gateway\"} %llu\n",
          (unsigned long long)m->attempts_first,
          (unsigned long long)m->attempts_retry);
}

static void answers(FILE *f, const gw_metrics *m) {
  family(f, "polite_gateway_answers_total", "counter",
         "Answers clients got, by status and source: the upstream's answer "
         "relayed, or the gateway's own.");
  for (int s = 100; s < 600; s++)
    for (int r = 1; r >= 0; r--)
      if (m->answers[s][r])
        fprintf(f,
                "polite_gateway_answers_total{status=\"%d\",source=\"%s\"} "
                "%llu\n",
                s, r ? "upstream" : "gateway",
                (unsigned long long)m->answers[s][r]);
  family(f, "polite_gateway_outcomes_total", "counter",
         "Requests ended, by outcome (docs/run.md's outcomes, and "
         "queue_full).");
  for (int o = 0; o < POLITE_OUT_COUNT; o++)
    fprintf(f, "polite_gateway_outcomes_total{outcome=\"%s\"} %llu\n",
            polite_outcome_name((polite_outcome)o),
            (unsigned long long)m->outcomes[o]);
}

static void waits(FILE *f, const gw_metrics *m) {
  family(f, "polite_gateway_queue_wait_seconds", "histogram",
         "Time from a request's arrival to its first attempt.");
  uint64_t cum = 0;
  for (int i = 0; i < GW_WAIT_BUCKETS; i++) {
    cum += m->wait_bucket[i];
    fprintf(f, "polite_gateway_queue_wait_seconds_bucket{le=\"%g\"} %llu\n",
            wait_bounds[i], (unsigned long long)cum);
  }
  fprintf(f,
          "polite_gateway_queue_wait_seconds_bucket{le=\"+Inf\"} %llu\n"
          "polite_gateway_queue_wait_seconds_sum %.6f\n"
          "polite_gateway_queue_wait_seconds_count %llu\n",
          (unsigned long long)cum + m->wait_over, m->wait_sum_s,
          (unsigned long long)m->wait_count);
}

/* One counter family over the pause counts of each account (and of
 * "other" once it has any): seconds 0, the pauses; 1, their time. */
static void pause_family(FILE *f, const gw_metrics *m, const char *name,
                         const char *help, int seconds) {
  size_t n = m->naccts;
  family(f, name, "counter", help);
  for (size_t i = 0; i <= n; i++) {
    const acct_count *a =
        i < n ? &m->accts[i] : &m->accts[GW_METRICS_MAX_ACCOUNTS];
    if (i == n && a->pauses == 0)
      continue;
    fprintf(f, "%s{account=\"", name);
    label(f, a->name);
    if (seconds)
      fprintf(f, "\"} %.3f\n", (double)a->pause_ms / 1000);
    else
      fprintf(f, "\"} %llu\n", (unsigned long long)a->pauses);
  }
}

static void pauses(FILE *f, const gw_metrics *m) {
  pause_family(f, m, "polite_gateway_pauses_total",
               "Pauses of an account the upstream asked for (429/503 with a "
               "wait).",
               0);
  pause_family(f, m, "polite_gateway_pause_seconds_total",
               "Time accounts spent paused by the upstream.", 1);
}

/* One gauge per account of the engine's snapshot (the first
 * GW_METRICS_MAX_ACCOUNTS; the rest summed under "other", or for the rate,
 * left out: a sum of rates says nothing). which: 0 waiting, 1 in flight,
 * 2 pause left, 3 rate. */
static void account_gauge(FILE *f, const char *name, const char *help,
                          const polite_engine_account *acc, size_t n,
                          int which) {
  family(f, name, "gauge", help);
  double other = 0;
  for (size_t i = 0; i < n; i++) {
    const polite_engine_account *a = &acc[i];
    double v = which == 0   ? a->waiting
               : which == 1 ? a->in_flight
               : which == 2 ? (double)(a->pause_left_ms > a->refused_left_ms
                                           ? a->pause_left_ms
                                           : a->refused_left_ms) /
                                  1000
                            : a->rate_per_s;
    if (i >= GW_METRICS_MAX_ACCOUNTS) {
      other += v;
      continue;
    }
    fprintf(f, "%s{account=\"", name);
    label(f, a->key ? a->key : DEFAULT_ACCOUNT);
    fprintf(f, "\"} %.6g\n", v);
  }
  if (n > GW_METRICS_MAX_ACCOUNTS && which != 3)
    fprintf(f, "%s{account=\"%s\"} %.6g\n", name, OTHER_ACCOUNTS, other);
}

static void accounts(FILE *f, const polite_engine_account *acc, size_t n) {
  account_gauge(f, "polite_gateway_queue_length",
                "Requests waiting to start, per account.", acc, n, 0);
  account_gauge(f, "polite_gateway_in_flight",
                "Requests sent upstream and not yet ended, per account.", acc,
                n, 1);
  account_gauge(f, "polite_gateway_pause_remaining_seconds",
                "Time until the account opens again (its pause, or a "
                "refusal past max-wait or a spent quota).",
                acc, n, 2);
  account_gauge(f, "polite_gateway_start_rate",
                "Starts per second the account is paced at (learned, or "
                "--rate); 0 when none.",
                acc, n, 3);
}

static void upstream(FILE *f, const polite_batch_stats *st) {
  family(f, "polite_gateway_upstream_throttled_total", "counter",
         "429 and 503 answers from the upstream, whoever got them.");
  fprintf(f,
          "polite_gateway_upstream_throttled_total{status=\"429\"} %llu\n"
          "polite_gateway_upstream_throttled_total{status=\"503\"} %llu\n",
          (unsigned long long)st->n429, (unsigned long long)st->n503);
}

char *polite__gw_metrics_text(gw_metrics *m, const polite_engine_account *acc,
                              size_t n, const polite_batch_stats *st) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (f == NULL)
    return NULL;
  requests(f, m);
  answers(f, m);
  waits(f, m);
  pauses(f, m);
  accounts(f, acc, acc ? n : 0);
  if (st)
    upstream(f, st);
  if (fclose(f) != 0) {
    free(buf);
    return NULL;
  }
  return buf;
}
