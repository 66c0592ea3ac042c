/* polite client: one blocking call per logical request, with the same
 * retry decisions and shared budget as `polite run` (it runs a one-request
 * batch on the calling thread). Thread-safe: any number of threads may call
 * polite_client_request on one client; they share its budget. */
#ifndef POLITE_CLIENT_H
#define POLITE_CLIENT_H

#include <polite/batch.h>
#include <polite/budget.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  polite_budget *budget;      /* shared budget, not owned; NULL: the client
                                 creates a local one from rate/concurrency */
  double rate_per_s;          /* used when budget is NULL; <= 0 unlimited */
  unsigned burst;             /* default 1 */
  unsigned concurrency;       /* default 4 */
  unsigned max_attempts;      /* default 5 */
  int64_t deadline_ms;        /* per request; < 0 none (default) */
  int64_t connect_timeout_ms; /* default 10 s */
  int64_t timeout_ms;         /* per attempt; default 30 s */
  int insecure;
  int retry_unsafe;
  int idempotency_auto; /* random key for POST/PATCH without one */
} polite_client_options;

/* The defaults above. */
POLITE_EXTERN void polite_client_options_init(polite_client_options *o);

typedef struct {
  int status;             /* final HTTP status, 0 for none */
  polite_outcome outcome; /* polite_outcome_name() gives the word */
  unsigned attempts;
  int64_t elapsed_ms;
  char *body; /* malloc'ed, NUL-terminated; may be NULL */
  size_t body_len;
  char *error; /* malloc'ed message or NULL */
} polite_response;

typedef struct polite_client polite_client;

/* Returns NULL when out of memory or when the options are invalid. */
POLITE_EXTERN polite_client *polite_client_new(const polite_client_options *o);

/* Runs one logical request (copied; the caller keeps req) with retries
 * under the client's budget, blocking until it ends. Fills *resp (free it
 * with polite_response_free). Returns 0 when a result was produced (look
 * at resp->outcome), or a negative polite_errno when the engine could not
 * run (resp->error says why). */
POLITE_EXTERN int polite_client_request(polite_client *c,
                                        const polite_request *req,
                                        polite_response *resp);

POLITE_EXTERN void polite_response_free(polite_response *resp);
POLITE_EXTERN void polite_client_free(polite_client *c);

#ifdef __cplusplus
}
#endif

#endif
