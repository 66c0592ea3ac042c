/* polite client: a blocking call for one logical request, run as a
 * one-request batch so that it shares the engine (decisions, budget,
 * pauses, idempotency keys, the learned rate) with `polite run`. */
#include <polite/client.h>

#include "ratectl_calls.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct polite_client {
  polite_client_options o;
  polite_budget *own_budget; /* created when the caller gave none */
  polite_rate_mode mode;     /* o.rate_mode resolved (client.h's rules) */
  /* The learned rate's controller (mode AUTO), kept between calls: each
   * call starts from a copy and writes its copy back when it ends (see
   * rc_take_back); idle time between calls does not count as probing. The
   * rate itself lives in the budget, which paces the calls running at the
   * same time. */
  pthread_mutex_t mu;
  polite_ratectl rc;
  int64_t idle_accounted_us; /* see polite__ratectl_resume */
};

void polite_client_options_init(polite_client_options *o) {
  memset(o, 0, sizeof *o);
  o->burst = 1;
  o->concurrency = 4;
  o->max_attempts = 5;
  o->deadline_ms = -1;
  o->connect_timeout_ms = 10000;
  o->timeout_ms = 30000;
  o->rate_mode = POLITE_RATE_AUTO;
  o->budget_outage_ms = 60000;
}

/* The rate mode the client runs its calls with (client.h's rules), or -1
 * for options that contradict each other. */
static int resolve_mode(const polite_client_options *o) {
  if (isnan(o->rate_per_s) || isnan(o->max_rate_per_s))
    return -1;
  switch (o->rate_mode) {
  case POLITE_RATE_AUTO:
    return o->rate_per_s > 0 ? POLITE_RATE_FIXED : POLITE_RATE_AUTO;
  case POLITE_RATE_FIXED: return POLITE_RATE_FIXED;
  case POLITE_RATE_NONE: return o->rate_per_s > 0 ? -1 : POLITE_RATE_NONE;
  default: return -1;
  }
}

polite_client *polite_client_new(const polite_client_options *o) {
  int mode = o ? resolve_mode(o) : -1;
  if (o == NULL || o->max_attempts < 1 || mode < 0)
    return NULL;
  polite_client *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->o = *o;
  c->mode = (polite_rate_mode)mode;
  if (c->o.budget == NULL) {
    /* A learned rate's budget is opened with the cap as its rate, as
     * polite/ratectl.h says; unpaced ones with none. */
    double rate = mode == POLITE_RATE_FIXED  ? o->rate_per_s
                  : mode == POLITE_RATE_AUTO ? fmax(o->max_rate_per_s, 0)
                                             : 0;
    polite_budget_config bc = {rate, o->burst ? o->burst : 1, o->concurrency};
    if (polite_budget_local_new(&bc, &c->own_budget) != 0) {
      free(c);
      return NULL;
    }
    c->o.budget = c->own_budget;
  }
  if (pthread_mutex_init(&c->mu, NULL) != 0) {
    polite_budget_close(c->own_budget);
    free(c);
    return NULL;
  }
  polite_ratectl_config rcfg = {0, o->max_rate_per_s, 0,
                                c->o.budget->cfg.concurrency};
  polite_ratectl_init(&c->rc, &rcfg, polite_env_mono_us(c->o.env));
  return c;
}

void polite_client_free(polite_client *c) {
  if (c == NULL)
    return;
  pthread_mutex_destroy(&c->mu);
  polite_budget_close(c->own_budget);
  free(c);
}

double polite_client_rate_per_s(polite_client *c) {
  if (c == NULL)
    return 0;
  const polite_budget *b = c->o.budget;
  double fixed = b->cfg.rate_per_s > 0 ? b->cfg.rate_per_s : 0;
  if (c->mode != POLITE_RATE_AUTO)
    return fixed;
  polite_shared_rate sr;
  double learned = 0;
  if (polite_budget_shared_rate(c->o.budget, NULL, &sr) == 0)
    learned = sr.rate_per_s;
  if (!(learned > 0)) {
    pthread_mutex_lock(&c->mu);
    learned = polite_ratectl_rate(&c->rc, polite_env_mono_us(c->o.env));
    pthread_mutex_unlock(&c->mu);
  }
  return fixed > 0 && fixed < learned ? fixed : learned;
}

void polite_response_free(polite_response *r) {
  if (r == NULL)
    return;
  free(r->body);
  free(r->error);
  memset(r, 0, sizeof *r);
}

/* State of one call: the request to hand out once, the response to fill. */
typedef struct {
  polite_request *req;
  polite_response *resp;
  int got;
} one_call;

static int one_next(void *ud, polite_request **out) {
  one_call *oc = ud;
  if (oc->req == NULL)
    return 0;
  *out = oc->req;
  oc->req = NULL; /* the engine owns it now */
  return 1;
}

static void one_result(void *ud, const polite_result *r) {
  one_call *oc = ud;
  polite_response *p = oc->resp;
  oc->got = 1;
  p->status = r->status;
  p->outcome = r->outcome;
  p->attempts = r->attempts;
  p->elapsed_ms = r->elapsed_ms;
  if (r->body) {
    p->body = malloc(r->body_len + 1);
    if (p->body) {
      memcpy(p->body, r->body, r->body_len);
      p->body[r->body_len] = '\0';
      p->body_len = r->body_len;
    }
  }
  if (r->error)
    p->error = strdup(r->error);
}

/* Writes a call's controller back into the client's. Calls that ran at the
 * same time each started from a copy: the merge keeps the state of the one
 * that saw the latest cut and the measurements of all (ratectl_calls.h).
 * The budget's shared rate holds every cut anyway, and each call adopts it
 * at its first admission. */
static void rc_take_back(polite_client *c, const polite_ratectl *mine) {
  pthread_mutex_lock(&c->mu);
  polite__ratectl_merge(&c->rc, mine);
  pthread_mutex_unlock(&c->mu);
}

int polite_client_request(polite_client *c, const polite_request *req,
                          polite_response *resp) {
  if (resp == NULL)
    return POLITE_EINVAL;
  memset(resp, 0, sizeof *resp);
  if (c == NULL || req == NULL || req->url == NULL)
    return POLITE_EINVAL;
  one_call oc = {polite_request_dup(req), resp, 0};
  if (oc.req == NULL)
    return POLITE_ENOMEM;
  if (oc.req->id == NULL)
    oc.req->id = strdup("request");
  polite_batch_options bo;
  polite_batch_options_init(&bo);
  bo.budget = c->o.budget;
  bo.max_attempts = c->o.max_attempts;
  bo.deadline_ms = c->o.deadline_ms;
  bo.connect_timeout_ms = c->o.connect_timeout_ms;
  bo.timeout_ms = c->o.timeout_ms;
  bo.insecure = c->o.insecure;
  bo.retry_unsafe = c->o.retry_unsafe;
  bo.idempotency_auto = c->o.idempotency_auto;
  bo.max_pending = 1;
  bo.rate_mode = c->mode;
  bo.max_rate_per_s = c->o.max_rate_per_s;
  bo.budget_outage_ms = c->o.budget_outage_ms;
  bo.env = c->o.env;
  bo.next = one_next;
  bo.on_result = one_result;
  bo.ud = &oc;
  polite_ratectl mine; /* this call's copy of the controller */
  if (c->mode == POLITE_RATE_AUTO) {
    pthread_mutex_lock(&c->mu);
    polite__ratectl_resume(&c->rc, &c->idle_accounted_us,
                           polite_env_mono_us(c->o.env));
    mine = c->rc;
    pthread_mutex_unlock(&c->mu);
    bo.ratectl = &mine;
  }
  char err[256];
  polite_batch *b = polite_batch_new(&bo, err, sizeof err);
  if (b == NULL) {
    polite_request_free(oc.req);
    resp->error = strdup(err);
    return POLITE_ENOMEM;
  }
  int rc = polite_batch_run(b);
  if (bo.ratectl != NULL && rc == 0)
    rc_take_back(c, &mine);
  if (rc != 0 && (!oc.got || resp->outcome != POLITE_OUT_OK)) {
    /* The engine's reason (the budget's outage, say) is the one to give. */
    free(resp->error);
    resp->error = strdup(polite_batch_errstr(b));
  }
  polite_batch_free(b);
  polite_request_free(oc.req); /* NULL unless the engine never took it */
  if (rc != 0 && oc.got && resp->outcome == POLITE_OUT_OK)
    return 0; /* the answer came before the budget failed */
  return rc ? rc : (oc.got ? 0 : POLITE_ECANCELED);
}
