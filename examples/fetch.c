/* examples/fetch.c: fetch URLs politely from several threads that share one
 * budget, with libpolite's blocking client.
 *
 *   example_fetch [--rate N/UNIT|auto|none] [--max-rate N/UNIT]
 *                 [--threads N] [--budget URI] URL...
 *
 * Each URL is one logical request: polite retries it when the server says
 * so (Retry-After, backoff), pauses every thread when the account is
 * throttled, and never makes more than 5 network attempts. Without --rate
 * (or with --rate auto) the start rate is learned from the server's
 * answers and shared by the threads; --max-rate caps it; --rate none does
 * not pace. --budget file:PATH (or redis://...) shares the budget, and the
 * learned rate with it, with other processes that open the same one.
 * Prints one line per URL: outcome, status, attempts, bytes, and at the
 * end the start rate the client would use now. Exits 0 when all were ok. */
#include <polite/polite.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE                                                                  \
  "usage: fetch [--rate N/UNIT|auto|none] [--max-rate N/UNIT] [--threads N] "  \
  "[--budget URI] URL...\n"

typedef struct {
  polite_client *client;
  char **urls;
  int n;
  int next; /* next URL to take, under mu */
  int failed;
  pthread_mutex_t mu;
} work;

static void *worker(void *arg) {
  work *w = arg;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    int i = w->next < w->n ? w->next++ : -1;
    pthread_mutex_unlock(&w->mu);
    if (i < 0)
      return NULL;
    polite_request *req = polite_request_new();
    if (req == NULL)
      return NULL;
    req->url = strdup(w->urls[i]);
    polite_response resp;
    int rc = polite_client_request(w->client, req, &resp);
    pthread_mutex_lock(&w->mu);
    if (rc != 0 || resp.outcome != POLITE_OUT_OK)
      w->failed++;
    /* The URL is printed as the user gave it; a real program would pass it
     * through polite_redact_url before logging it. */
    char *shown = polite_redact_url(w->urls[i]);
    printf("%s %s status=%d attempts=%u bytes=%zu%s%s\n",
           polite_outcome_name(resp.outcome), shown ? shown : "?", resp.status,
           resp.attempts, resp.body_len, resp.error ? " error=" : "",
           resp.error ? resp.error : "");
    pthread_mutex_unlock(&w->mu);
    free(shown);
    polite_response_free(&resp);
    polite_request_free(req);
  }
}

/* Reads the options into o, *threads and *budget_uri; returns the index of
 * the first URL, or -1 after a message. */
static int parse_args(int argc, char **argv, polite_client_options *o,
                      int *threads, const char **budget_uri) {
  int i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(argv[i], "--rate") == 0 && v) {
      o->rate_per_s = 0;
      o->rate_mode =
          strcmp(v, "none") == 0 ? POLITE_RATE_NONE : POLITE_RATE_AUTO;
      /* AUTO with a rate > 0 is that fixed rate (polite/client.h). */
      if (o->rate_mode == POLITE_RATE_AUTO && strcmp(v, "auto") != 0 &&
          polite_rate_parse(v, &o->rate_per_s) != 0) {
        fprintf(stderr, "fetch: --rate: invalid rate '%s'\n", v);
        return -1;
      }
    } else if (strcmp(argv[i], "--max-rate") == 0 && v) {
      if (polite_rate_parse(v, &o->max_rate_per_s) != 0) {
        fprintf(stderr, "fetch: --max-rate: invalid rate '%s'\n", v);
        return -1;
      }
    } else if (strcmp(argv[i], "--threads") == 0 && v) {
      *threads = atoi(v);
      if (*threads < 1 || *threads > 64) {
        fprintf(stderr, "fetch: --threads: expected 1..64\n");
        return -1;
      }
    } else if (strcmp(argv[i], "--budget") == 0 && v) {
      *budget_uri = v;
    } else {
      break;
    }
    i++; /* the value */
  }
  if (i >= argc || argv[i][0] == '-') {
    fputs(USAGE, stderr);
    return -1;
  }
  return i;
}

int main(int argc, char **argv) {
  polite_client_options o;
  polite_client_options_init(&o);
  int threads = 3;
  const char *budget_uri = NULL;
  int i = parse_args(argc, argv, &o, &threads, &budget_uri);
  if (i < 0)
    return 2;
  o.concurrency = (unsigned)threads;
  polite_budget *budget = NULL;
  if (budget_uri != NULL) {
    /* Every process sharing it opens it with the same settings: a learned
     * rate's budget has the cap (or none) as its rate. */
    polite_budget_config bc = {
        o.rate_per_s > 0 ? o.rate_per_s : o.max_rate_per_s, 1, o.concurrency};
    char err[256];
    if (polite_budget_open(budget_uri, &bc, &budget, err, sizeof err) != 0) {
      fprintf(stderr, "fetch: --budget: %s\n", err);
      return 2;
    }
    o.budget = budget;
  }
  work w = {polite_client_new(&o),    argv + i, argc - i, 0, 0,
            PTHREAD_MUTEX_INITIALIZER};
  if (w.client == NULL) {
    fprintf(stderr, "fetch: cannot create the client\n");
    polite_budget_close(budget);
    return 1;
  }
  pthread_t t[64];
  for (int k = 0; k < threads; k++)
    pthread_create(&t[k], NULL, worker, &w);
  for (int k = 0; k < threads; k++)
    pthread_join(t[k], NULL);
  fprintf(stderr, "fetch: start rate now %.2f/s\n",
          polite_client_rate_per_s(w.client));
  polite_client_free(w.client);
  polite_budget_close(budget); /* after the client that uses it */
  return w.failed ? 1 : 0;
}
