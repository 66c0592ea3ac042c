/* examples/fetch.c: fetch URLs politely from several threads that share one
 * budget, with libpolite's blocking client.
 *
 *   example_fetch [--rate N/UNIT|auto|none] [--max-rate N/UNIT]
 *                 [--threads N] URL...
 *
 * Each URL is one logical request: polite retries it when the server says
 * so (Retry-After, backoff), pauses every thread when the account is
 * throttled, and never makes more than 5 network attempts. Without --rate
 * (or with --rate auto) the start rate is learned from the server's
 * answers and shared by the threads; --max-rate caps it; --rate none does
 * not pace. Prints one line per URL: outcome, status, attempts, bytes.
 * Exits 0 when all were ok. */
#include <polite/polite.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USAGE                                                                  \
  "usage: fetch [--rate N/UNIT|auto|none] [--max-rate N/UNIT] [--threads N] "  \
  "URL...\n"

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

int main(int argc, char **argv) {
  polite_client_options o;
  polite_client_options_init(&o);
  int threads = 3, i = 1;
  for (; i < argc && argv[i][0] == '-'; i++) {
    if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc) {
      i++;
      o.rate_per_s = 0;
      o.rate_mode =
          strcmp(argv[i], "none") == 0 ? POLITE_RATE_NONE : POLITE_RATE_AUTO;
      /* AUTO with a rate > 0 is that fixed rate (polite/client.h). */
      if (o.rate_mode == POLITE_RATE_AUTO && strcmp(argv[i], "auto") != 0 &&
          polite_rate_parse(argv[i], &o.rate_per_s) != 0) {
        fprintf(stderr, "fetch: --rate: invalid rate '%s'\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--max-rate") == 0 && i + 1 < argc) {
      if (polite_rate_parse(argv[++i], &o.max_rate_per_s) != 0) {
        fprintf(stderr, "fetch: --max-rate: invalid rate '%s'\n", argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = atoi(argv[++i]);
      if (threads < 1 || threads > 64) {
        fprintf(stderr, "fetch: --threads: expected 1..64\n");
        return 2;
      }
    } else {
      fputs(USAGE, stderr);
      return 2;
    }
  }
  if (i >= argc) {
    fputs(USAGE, stderr);
    return 2;
  }
  o.concurrency = (unsigned)threads;
  work w = {polite_client_new(&o),    argv + i, argc - i, 0, 0,
            PTHREAD_MUTEX_INITIALIZER};
  if (w.client == NULL) {
    fprintf(stderr, "fetch: cannot create the client\n");
    return 1;
  }
  pthread_t t[64];
  for (int k = 0; k < threads; k++)
    pthread_create(&t[k], NULL, worker, &w);
  for (int k = 0; k < threads; k++)
    pthread_join(t[k], NULL);
  polite_client_free(w.client);
  return w.failed ? 1 : 0;
}
