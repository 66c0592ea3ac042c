/* polite budget, Redis backend: hosts share accounts kept in Redis (or
 * Valkey); each call is one EVALSHA of one Lua script that reads Redis TIME
 * as its only clock, so client clocks never need to agree. */
#define _GNU_SOURCE
#include "budget_backends.h"

#include <polite/clock.h>

#include <hiredis/hiredis.h>

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "budget_redis_script.h"
#include "budget_redis_window.h"
#include "clock_wait.h"
#include "redis_uri.h"

#define BACKOFF_MIN_US INT64_C(100000)
#define BACKOFF_MAX_US INT64_C(5000000)

/* Every account this client used, with what it last learnt about the
 * account's pause (monotonic time here), so that paused_for needs no round
 * trip and close can give back slots in each account. */
typedef struct pause_memo {
  struct pause_memo *next;
  char *key;
  int64_t until_us;
  polite_shared_rate sr; /* as the last admission returned it */
  unsigned owed;      /* slots released while the server could not be reached:
                         given back at the next call that reaches it, so that
                         a lease renewed by the heartbeat does not keep them */
  unsigned in_use;    /* the account's slots after the last admission with
                         one (polite_budget_in_use) */
  unsigned cap;       /* the in-flight cap this participant last stored */
  polite__rw_memo rw; /* the admission count and the window */
} pause_memo;

typedef struct {
  polite_budget base;
  pthread_mutex_t mu;
  redisContext *c; /* NULL while disconnected */
  char *safe_uri;  /* the URI with any password replaced by "***" */
  char *host, *user, *pass, *name;
  int port;
  char *seed_host; /* the URI's host: where to go back when a node that */
  int seed_port;   /* redirected us (Cluster MOVED) is unreachable */
  int64_t lease_us, timeout_ms;
  char owner[96]; /* this participant's lease id */
  char sha[41];
  double interval_us, tau_us;
  int64_t next_connect_us, backoff_us;
  int64_t failed_at_us; /* when the connection last failed or broke */
  char last_cause[120]; /* why */
  uint64_t round_trips;
  pause_memo *memos;
  /* The opener's (NULL: real): the clock of the calls given no now_us, so
   * their backoff is on every other call's clock; the lease id's random. */
  const polite_env *env;
} redis_budget;

static struct timeval tv_ms(int64_t ms) {
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
  return tv;
}

static void drop_conn(redis_budget *rb) {
  if (rb->c != NULL)
    redisFree(rb->c);
  rb->c = NULL;
}

/* Sends one command and counts the round trip. NULL means the connection
 * is broken (rb->c->errstr says why). */
static redisReply *command(redis_budget *rb, int argc, const char **argv,
                           const size_t *lens) {
  rb->round_trips++;
  return redisCommandArgv(rb->c, argc, argv, lens);
}

/* What a broken context's error means: hiredis reports a timeout as
 * EAGAIN's text ("Resource temporarily unavailable"), which says nothing
 * to someone reading it; into buf. */
static const char *io_cause(const redis_budget *rb, const redisContext *c,
                            char *buf, size_t len) {
  const char *e = c && c->errstr[0] ? c->errstr : "no reply";
  if (strcmp(e, "Resource temporarily unavailable") == 0) {
    snprintf(buf, len, "no answer within the timeout of %lld ms",
             (long long)rb->timeout_ms);
    return buf;
  }
  return e;
}

/* Connects, authenticates and loads the script. Called with the mutex held
 * and only when rb->c is NULL. Returns 0, or POLITE_EBUDGET with errbuf
 * set (the caller schedules the next attempt). */
static int connect_now(redis_budget *rb, char *errbuf, size_t errlen) {
  rb->round_trips++;
  redisContext *c =
      redisConnectWithTimeout(rb->host, rb->port, tv_ms(rb->timeout_ms));
  if (c == NULL || c->err) {
    char t[80];
    polite__budget_errf(errbuf, errlen, rb->safe_uri, "cannot connect: %s",
                        c ? io_cause(rb, c, t, sizeof t) : "out of memory");
    if (c)
      redisFree(c);
    return POLITE_EBUDGET;
  }
  redisSetTimeout(c, tv_ms(rb->timeout_ms));
  rb->c = c;
  if (rb->pass != NULL) {
    const char *argv[3] = {"AUTH", rb->user ? rb->user : rb->pass, rb->pass};
    int argc = rb->user ? 3 : 2;
    redisReply *r = command(rb, argc, argv, NULL);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
      /* The server's message never contains the password. */
      char t[80];
      polite__budget_errf(errbuf, errlen, rb->safe_uri,
                          "authentication failed: %s",
                          r ? r->str : io_cause(rb, c, t, sizeof t));
      freeReplyObject(r);
      drop_conn(rb);
      return POLITE_EBUDGET;
    }
    freeReplyObject(r);
  }
  const char *argv[3] = {"SCRIPT", "LOAD", SCRIPT};
  redisReply *r = command(rb, 3, argv, NULL);
  if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
    char t[80];
    polite__budget_errf(errbuf, errlen, rb->safe_uri,
                        "cannot load the script: %s",
                        r == NULL ? io_cause(rb, c, t, sizeof t)
                        : r->type == REDIS_REPLY_ERROR ? r->str
                                                       : "unexpected reply");
    freeReplyObject(r);
    drop_conn(rb);
    return POLITE_EBUDGET;
  }
  memcpy(rb->sha, r->str, 40);
  rb->sha[40] = '\0';
  freeReplyObject(r);
  return 0;
}

/* Keeps the cause part of errstr (after "budget '...': ") for the
 * messages given while waiting for the next connection attempt. */
static void remember_cause(redis_budget *rb) {
  const char *p = strstr(rb->base.errstr, "': ");
  snprintf(rb->last_cause, sizeof rb->last_cause, "%.119s",
           p ? p + 3 : rb->base.errstr);
}

/* Makes sure a connection exists at now_us, without hammering a server
 * that is down: attempts are spaced by a backoff that doubles from 100 ms
 * to 5 s and resets on success. Returns 0 or POLITE_EBUDGET (errstr set). */
static int ensure_conn(redis_budget *rb, int64_t now_us) {
  if (rb->c != NULL)
    return 0;
  if (now_us < rb->next_connect_us) {
    polite__budget_errf(rb->base.errstr, sizeof rb->base.errstr, rb->safe_uri,
                        "%s (%lld ms ago; reconnecting with a backoff)",
                        rb->last_cause,
                        (long long)((now_us - rb->failed_at_us + 999) / 1000));
    return POLITE_EBUDGET;
  }
  if (connect_now(rb, rb->base.errstr, sizeof rb->base.errstr) != 0) {
    remember_cause(rb);
    if (rb->port != rb->seed_port || strcmp(rb->host, rb->seed_host) != 0) {
      char *h = strdup(rb->seed_host);
      if (h != NULL) {
        free(rb->host);
        rb->host = h;
        rb->port = rb->seed_port;
      }
    }
    rb->backoff_us = rb->backoff_us ? rb->backoff_us * 2 : BACKOFF_MIN_US;
    if (rb->backoff_us > BACKOFF_MAX_US)
      rb->backoff_us = BACKOFF_MAX_US;
    rb->next_connect_us = now_us + rb->backoff_us;
    rb->failed_at_us = now_us;
    return POLITE_EBUDGET;
  }
  rb->backoff_us = 0;
  return 0;
}

/* Redis Cluster answers "MOVED SLOT HOST:PORT" when another node owns the
 * budget's slot: switch to that node (connect and load the script there).
 * Returns 1 when connected to the new node, else 0 (errstr set). */
static int follow_moved(redis_budget *rb, const char *msg) {
  const char *sp = strchr(msg + 6, ' ');
  const char *colon = sp ? strrchr(sp, ':') : NULL;
  if (colon == NULL)
    return 0;
  long port = strtol(colon + 1, NULL, 10);
  char *h = strndup(sp + 1, (size_t)(colon - sp - 1));
  if (h == NULL || port < 1 || port > 65535) {
    free(h);
    return 0;
  }
  free(rb->host);
  rb->host = h;
  rb->port = (int)port;
  drop_conn(rb);
  return connect_now(rb, rb->base.errstr, sizeof rb->base.errstr) == 0;
}

/* One call of the script: what to send, and what came back. */
typedef struct {
  const char *op;
  unsigned units, slots;
  int64_t pause_us;
  const polite_shared_rate *pub; /* op "rate" */
  int is_cut;
  int keep;        /* 1: hand the whole reply over in `whole` (op "show") */
  char (*win)[40]; /* op "win": its six arguments (polite__rw_args) */
  /* out */
  long long st, val;
  int has_rate;
  polite_shared_rate sr;
  redisReply *whole;
} script_call;

/* The script's argument vector for one call: EVALSHA, the sha, the five
 * keys, the op, the owner and eighteen numbers. The numbers live here and
 * the keys in one malloc'ed block, so that argv can point into them. */
#define SCRIPT_ARGC 29
typedef struct {
  const char *argv[SCRIPT_ARGC];
  size_t lens[SCRIPT_ARGC];
  char num[19][40];
  char *keys;
} script_args;

/* Fills a for sc->op on account key. Returns 0 (the caller frees a->keys)
 * or POLITE_ENOMEM with errstr set. */
static int script_args_fill(redis_budget *rb, const char *key,
                            const script_call *sc, script_args *a) {
  /* Keys: polite:{NAME}:KEY:x. The first {...} is the Cluster hash tag,
   * so every key of every account of this budget lives in one slot. */
  size_t need = strlen(rb->name) + strlen(key) + 24;
  a->keys = malloc(5 * need);
  if (a->keys == NULL) {
    snprintf(rb->base.errstr, sizeof rb->base.errstr, "out of memory");
    return POLITE_ENOMEM;
  }
  static const char *suffix[5] = {"tat", "pause", "leases", "units", "rate"};
  a->argv[0] = "EVALSHA";
  a->argv[1] = rb->sha;
  a->argv[2] = "5";
  for (int i = 0; i < 5; i++) {
    char *k = a->keys + i * need;
    snprintf(k, need, "polite:{%s}:%s:%s", rb->name, key, suffix[i]);
    a->argv[3 + i] = k;
  }
  a->argv[8] = sc->op;
  a->argv[9] = rb->owner;
  const polite_shared_rate none = {0, 0, 0, 0};
  const polite_shared_rate *pub = sc->pub ? sc->pub : &none;
  char(*num)[40] = a->num;
  snprintf(num[0], sizeof num[0], "%lld", (long long)rb->lease_us);
  snprintf(num[1], sizeof num[1], "%.6f", rb->interval_us);
  snprintf(num[2], sizeof num[2], "%.6f", rb->tau_us);
  snprintf(num[3], sizeof num[3], "%u", rb->base.cfg.concurrency);
  snprintf(num[4], sizeof num[4], "%u", sc->units);
  snprintf(num[5], sizeof num[5], "%u", sc->slots);
  snprintf(num[6], sizeof num[6], "%lld", (long long)sc->pause_us);
  snprintf(num[7], sizeof num[7], "%u", rb->base.cfg.burst);
  snprintf(num[8], sizeof num[8], "%.6f", pub->rate_per_s);
  snprintf(num[9], sizeof num[9], "%.6f", pub->limit_per_s);
  snprintf(num[10], sizeof num[10], "%llu",
           (unsigned long long)pub->generation);
  snprintf(num[11], sizeof num[11], "%d", sc->is_cut ? 1 : 0);
  for (int i = 0; i < 6; i++)
    snprintf(num[12 + i], sizeof num[12 + i], "%s", sc->win ? sc->win[i] : "0");
  snprintf(num[18], sizeof num[18], "%.6f", pub->ceiling_per_s);
  for (int i = 0; i < 19; i++)
    a->argv[10 + i] = num[i];
  for (int i = 0; i < SCRIPT_ARGC; i++)
    a->lens[i] = strlen(a->argv[i]);
  return 0;
}

/* Sends the call in a, three tries in all: a MOVED redirect (Cluster) is
 * followed, and after NOSCRIPT (the server restarted or flushed its
 * scripts) the script is loaded again. Returns the last reply, or NULL when
 * the connection broke or (*lost set) a redirect could not be followed. */
static redisReply *send_script(redis_budget *rb, script_args *a, int *lost) {
  redisReply *r = NULL;
  *lost = 0;
  for (int attempt = 0; attempt < 3; attempt++) {
    r = command(rb, SCRIPT_ARGC, a->argv, a->lens);
    if (r != NULL && r->type == REDIS_REPLY_ERROR &&
        strncmp(r->str, "MOVED ", 6) == 0 && attempt < 2) {
      int moved = follow_moved(rb, r->str);
      freeReplyObject(r);
      r = NULL;
      if (!moved) {
        *lost = 1;
        return NULL;
      }
      a->argv[1] = rb->sha;
      continue;
    }
    if (r == NULL || r->type != REDIS_REPLY_ERROR ||
        strncmp(r->str, "NOSCRIPT", 8) != 0 || attempt == 2)
      break;
    freeReplyObject(r);
    r = NULL;
    const char *lv[3] = {"SCRIPT", "LOAD", SCRIPT};
    redisReply *l = command(rb, 3, lv, NULL);
    int ok = l && l->type == REDIS_REPLY_STRING && l->len == 40;
    if (ok)
      memcpy(rb->sha, l->str, 40);
    freeReplyObject(l);
    if (!ok)
      break;
  }
  return r;
}

/* After a call the connection cannot carry on from: it is dropped, and the
 * next connect waits the first backoff step. */
static void call_broke(redis_budget *rb, int64_t now_us) {
  remember_cause(rb);
  drop_conn(rb);
  rb->backoff_us = BACKOFF_MIN_US;
  rb->next_connect_us = now_us + rb->backoff_us;
  rb->failed_at_us = now_us;
}

/* Runs the script once for sc->op on account key: one round trip (two when
 * the server forgot the script, NOSCRIPT: load, then retry). Fills sc's
 * outputs from the {status, value[, rate, limit, generation, ...]} reply.
 * Called with the mutex held. Returns 0 or POLITE_EBUDGET with errstr
 * naming the URI and the cause. */
static int run_script(redis_budget *rb, const char *key, int64_t now_us,
                      script_call *sc) {
  int rc = ensure_conn(rb, now_us);
  if (rc != 0)
    return rc;
  script_args a;
  if ((rc = script_args_fill(rb, key != NULL ? key : "", sc, &a)) != 0)
    return rc;
  int lost;
  redisReply *r = send_script(rb, &a, &lost);
  free(a.keys);
  if (lost) {
    call_broke(rb, now_us);
    return POLITE_EBUDGET;
  }
  if (r == NULL) {
    char t[80];
    polite__budget_errf(rb->base.errstr, sizeof rb->base.errstr, rb->safe_uri,
                        "lost the connection: %s",
                        io_cause(rb, rb->c, t, sizeof t));
  } else if (r->type == REDIS_REPLY_ERROR) {
    polite__budget_errf(rb->base.errstr, sizeof rb->base.errstr, rb->safe_uri,
                        "the server refused: %.60s", r->str);
    if (!polite__rw_fatal(r)) {
      freeReplyObject(r);
      return POLITE_EBUDGET;
    }
  } else if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
             r->element[0]->type != REDIS_REPLY_INTEGER ||
             r->element[1]->type != REDIS_REPLY_INTEGER) {
    polite__budget_errf(rb->base.errstr, sizeof rb->base.errstr, rb->safe_uri,
                        "unexpected reply from the script");
    freeReplyObject(r);
    return POLITE_EBUDGET;
  } else {
    sc->st = r->element[0]->integer;
    sc->val = r->element[1]->integer;
    sc->has_rate = polite__rw_rate(r, &sc->sr);
    if (sc->keep)
      sc->whole = r;
    else
      freeReplyObject(r);
    return 0;
  }
  /* Broken connection: reconnect later, after the first backoff step. */
  freeReplyObject(r);
  call_broke(rb, now_us);
  return POLITE_EBUDGET;
}

/* The memo of key (NULL: the default account), or NULL when this client
 * has none. */
static pause_memo *memo_find(const redis_budget *rb, const char *key) {
  pause_memo *m = rb->memos;
  while (m && strcmp(m->key, key != NULL ? key : "") != 0)
    m = m->next;
  return m;
}

/* The memo of key, created when missing; NULL only when out of memory
 * (then only the memo is lost: paused_for says 0, the shared rate 0). */
static pause_memo *memo_of(redis_budget *rb, const char *key) {
  if (key == NULL)
    key = "";
  pause_memo *m = memo_find(rb, key);
  if (m == NULL) {
    m = calloc(1, sizeof *m);
    if (m == NULL)
      return NULL;
    m->key = strdup(key);
    if (m->key == NULL) {
      free(m);
      return NULL;
    }
    m->next = rb->memos;
    rb->memos = m;
  }
  return m;
}

/* Remembers the pause of key as seen at now_us (until_us 0: not paused)
 * and, when the reply carried it, the learned rate. */
static void memo_pause(redis_budget *rb, const char *key, int64_t until_us,
                       const script_call *sc) {
  pause_memo *m = memo_of(rb, key);
  if (m == NULL)
    return;
  m->until_us = until_us;
  if (sc != NULL && sc->has_rate)
    m->sr = sc->sr;
}

/* Gives back the slots key's account is owed (see redis_release) when the
 * server can be reached at now_us; one round trip, only after an outage.
 * Called with the mutex held. */
static void pay_owed(redis_budget *rb, const char *key, int64_t now_us) {
  pause_memo *m = memo_find(rb, key);
  if (m == NULL || m->owed == 0)
    return;
  script_call sc = {.op = "rel", .slots = m->owed};
  if (run_script(rb, key, now_us, &sc) == 0)
    m->owed = 0;
}

/* Order inside the script is the local backend's: pause, slots, rate; one
 * EVALSHA whatever units and slots are. */
static int redis_acquire(polite_budget *b, const char *key, int64_t now_us,
                         unsigned units, unsigned slots, int64_t *wait_us) {
  redis_budget *rb = (redis_budget *)b;
  script_call sc = {.op = "acq", .units = units, .slots = slots, .keep = 1};
  pthread_mutex_lock(&rb->mu);
  pay_owed(rb, key, now_us);
  int rc = run_script(rb, key, now_us, &sc);
  long long st = sc.st, val = sc.val;
  if (rc == 0) {
    pause_memo *wm = memo_of(rb, key);
    if (wm != NULL)
      polite__rw_reply(&wm->rw, sc.whole, now_us,
                       st == POLITE_BUDGET_ADMITTED && units > 0);
    freeReplyObject(sc.whole);
    memo_pause(rb, key, st == POLITE_BUDGET_WAIT_PAUSE ? now_us + val : 0, &sc);
    pause_memo *m = st == POLITE_BUDGET_ADMITTED && slots > 0 && val > 0
                        ? memo_of(rb, key)
                        : NULL;
    if (m != NULL)
      m->in_use = val > UINT_MAX ? UINT_MAX : (unsigned)val;
    if (st == POLITE_BUDGET_WAIT_SLOT &&
        (val <= 0 || val > POLITE__BUDGET_SLOT_POLL_US))
      val = POLITE__BUDGET_SLOT_POLL_US;
    *wait_us = st == POLITE_BUDGET_ADMITTED ? 0 : val;
    rc = (int)st;
  }
  pthread_mutex_unlock(&rb->mu);
  return rc;
}

/* When the server cannot be reached the slots are owed: given back by the
 * next call that reaches it (were they left, the heartbeat's renewals of
 * this participant's lease would keep them taken for good). */
static void redis_release(polite_budget *b, const char *key, unsigned slots) {
  redis_budget *rb = (redis_budget *)b;
  script_call sc = {.op = "rel", .slots = slots};
  if (b->cfg.concurrency == 0 || slots == 0)
    return;
  pthread_mutex_lock(&rb->mu);
  if (rb->c == NULL ||
      run_script(rb, key, polite_env_mono_us(rb->env), &sc) != 0) {
    pause_memo *m = memo_of(rb, key);
    if (m != NULL)
      m->owed += slots;
  }
  pthread_mutex_unlock(&rb->mu);
}

static int redis_pause_until(polite_budget *b, const char *key, int64_t now_us,
                             int64_t until_us) {
  redis_budget *rb = (redis_budget *)b;
  if (until_us <= now_us)
    return 0;
  script_call sc = {.op = "pause", .pause_us = until_us - now_us};
  pthread_mutex_lock(&rb->mu);
  int rc = run_script(rb, key, now_us, &sc);
  if (rc == 0)
    memo_pause(rb, key, sc.val > 0 ? now_us + sc.val : 0, NULL);
  pthread_mutex_unlock(&rb->mu);
  return rc;
}

/* Answered from what the last call learnt, without a round trip (the
 * engine asks this every loop turn). A pause set by another host shows up
 * here at this client's next acquire. */
static int64_t redis_paused_for(polite_budget *b, const char *key,
                                int64_t now_us) {
  redis_budget *rb = (redis_budget *)b;
  int64_t left = 0;
  pthread_mutex_lock(&rb->mu);
  const pause_memo *m = memo_find(rb, key);
  if (m != NULL && m->until_us > now_us)
    left = m->until_us - now_us;
  pthread_mutex_unlock(&rb->mu);
  return left;
}

/* Gives back at once whatever slots this client still holds in the
 * accounts it used (one round trip each); unreachable: they expire. */
static void redis_close(polite_budget *b) {
  redis_budget *rb = (redis_budget *)b;
  for (pause_memo *m = rb->memos; m; m = m->next)
    if (rb->c != NULL && b->cfg.concurrency > 0) {
      script_call sc = {.op = "drop"};
      run_script(rb, m->key, polite_env_mono_us(rb->env), &sc);
    }
  drop_conn(rb);
  while (rb->memos) {
    pause_memo *m = rb->memos;
    rb->memos = m->next;
    free(m->key);
    free(m);
  }
  pthread_mutex_destroy(&rb->mu);
  free(rb->safe_uri);
  free(rb->host);
  free(rb->seed_host);
  free(rb->user);
  free(rb->pass);
  free(rb->name);
  free(rb);
}

uint64_t polite__budget_redis_round_trips(const polite_budget *b) {
  if (b == NULL || b->vt == NULL || strcmp(b->vt->scheme, "redis") != 0)
    return 0;
  return ((const redis_budget *)b)->round_trips;
}

/* One round trip, only when a participant's rate changes (a cut, or a
 * raise of 2% at most every 100 ms): admissions stay one round trip. */
static int redis_publish_rate(polite_budget *b, const char *key, int64_t now_us,
                              polite_shared_rate *r, int is_cut) {
  redis_budget *rb = (redis_budget *)b;
  script_call sc = {.op = "rate", .pub = r, .is_cut = is_cut};
  pthread_mutex_lock(&rb->mu);
  int rc = run_script(rb, key, now_us, &sc);
  if (rc == 0 && sc.has_rate) {
    *r = sc.sr;
    pause_memo *m = memo_of(rb, key);
    if (m != NULL)
      m->sr = sc.sr;
    rc = sc.st == 1;
  }
  pthread_mutex_unlock(&rb->mu);
  return rc;
}

static int redis_shared_rate(polite_budget *b, const char *key,
                             polite_shared_rate *out) {
  redis_budget *rb = (redis_budget *)b;
  pthread_mutex_lock(&rb->mu);
  const pause_memo *m = memo_find(rb, key);
  if (m != NULL)
    *out = m->sr;
  pthread_mutex_unlock(&rb->mu);
  return 0;
}

/* The reply of "show": the common six elements, then (owner, slots,
 * lease left) triples. */
static int redis_inspect(polite_budget *b, const char *key, int64_t now_us,
                         polite_budget_state *out) {
  redis_budget *rb = (redis_budget *)b;
  script_call sc = {.op = "show", .keep = 1};
  pthread_mutex_lock(&rb->mu);
  int rc = run_script(rb, key, now_us, &sc);
  pthread_mutex_unlock(&rb->mu);
  if (rc != 0)
    return rc;
  out->pause_left_us = sc.st > 0 ? sc.st : 0;
  if (sc.has_rate)
    out->rate = sc.sr;
  redisReply *r = sc.whole;
  for (size_t i = 6; r != NULL && i + 2 < r->elements; i += 3) {
    redisReply *o = r->element[i], *sl = r->element[i + 1],
               *left = r->element[i + 2];
    if (o->type != REDIS_REPLY_STRING || sl->type != REDIS_REPLY_INTEGER ||
        left->type != REDIS_REPLY_INTEGER)
      break;
    out->slots_in_use += (unsigned)sl->integer;
    if (out->n_holders < POLITE_BUDGET_MAX_HOLDERS) {
      polite_budget_holder *hd = &out->holders[out->n_holders++];
      snprintf(hd->id, sizeof hd->id, "%.95s", o->str);
      hd->slots = (unsigned)sl->integer;
      hd->lease_left_us = left->integer;
    }
  }
  freeReplyObject(r);
  return 0;
}

static int redis_clear(polite_budget *b, const char *key, int64_t now_us) {
  redis_budget *rb = (redis_budget *)b;
  script_call sc = {.op = "clear"};
  pthread_mutex_lock(&rb->mu);
  int rc = run_script(rb, key, now_us, &sc);
  if (rc == 0)
    memo_pause(rb, key, 0, &sc);
  pthread_mutex_unlock(&rb->mu);
  return rc;
}

/* Stores the learned in-flight cap in the account's rate hash, where every
 * participant's admission reads it (one round trip, only when this
 * participant's cap changes: the scheduler gives it no more often). A
 * failure is left for the next admission to report, as a missed cap at
 * worst lets the account use its configured concurrency. */
static void redis_set_slot_cap(polite_budget *b, const char *key,
                               unsigned cap) {
  redis_budget *rb = (redis_budget *)b;
  script_call sc = {.op = "cap", .slots = cap};
  pthread_mutex_lock(&rb->mu);
  pause_memo *m = memo_of(rb, key);
  if ((m == NULL || m->cap != cap) &&
      run_script(rb, key, polite_env_mono_us(rb->env), &sc) == 0 && m != NULL)
    m->cap = cap;
  pthread_mutex_unlock(&rb->mu);
}

/* The account's slots in use after this participant's last admission with
 * a slot, as that admission's reply counted them (no round trip). */
static unsigned redis_in_use(polite_budget *b, const char *key) {
  redis_budget *rb = (redis_budget *)b;
  pthread_mutex_lock(&rb->mu);
  const pause_memo *m = memo_find(rb, key); /* a read creates no memo */
  unsigned n = m != NULL ? m->in_use : 0;
  pthread_mutex_unlock(&rb->mu);
  return n;
}

/* The account's admissions after this participant's last one, as its
 * reply counted them (no round trip). */
static uint64_t redis_admissions(polite_budget *b, const char *key) {
  redis_budget *rb = (redis_budget *)b;
  pthread_mutex_lock(&rb->mu);
  const pause_memo *m = memo_find(rb, key);
  uint64_t n = m != NULL ? m->rw.admits : 0;
  pthread_mutex_unlock(&rb->mu);
  return n;
}

/* A window that would not change the one of the last reply costs no
 * round trip (the engine offers its window at every start and answer);
 * one that would is merged inside the script, atomically. */
static int redis_window(polite_budget *b, const char *key,
                        polite_shared_window *w) {
  redis_budget *rb = (redis_budget *)b;
  int64_t now_us = polite_env_mono_us(rb->env);
  pthread_mutex_lock(&rb->mu);
  pause_memo *m = memo_of(rb, key);
  polite_shared_window seen = m != NULL ? m->rw.win : *w, in = *w;
  int rc = m != NULL ? 0 : POLITE_ENOMEM;
  if (m != NULL && m->rw.seen && !polite_shared_window_merge(&seen, &in)) {
    *w = in;
  } else if (m != NULL) {
    char args[6][40];
    polite__rw_args(&m->rw, w, now_us, args);
    script_call sc = {.op = "win", .win = args, .keep = 1};
    rc = run_script(rb, key, now_us, &sc);
    if (rc == 0 && !polite__rw_reply(&m->rw, sc.whole, now_us, 0))
      rc = POLITE_EBUDGET;
    if (rc == 0)
      *w = m->rw.win;
    freeReplyObject(sc.whole);
  }
  pthread_mutex_unlock(&rb->mu);
  return rc;
}

static const polite_budget_vtable redis_vt = {
    "redis",          redis_acquire, redis_release,      redis_pause_until,
    redis_paused_for, redis_close,   redis_publish_rate, redis_shared_rate,
    redis_inspect,    redis_clear,   redis_set_slot_cap, redis_in_use,
    redis_admissions, redis_window}; /* window: each participant keeps its own
                                      */

/* Parses redis://[[USER]:PASSWORD@]HOST[:PORT]/NAME[?lease=D&timeout=D]
 * into rb: what comes before '?' as every Redis URI of libpolite
 * (lib/redis_uri.c: %-decoded credentials, an IPv6 host in brackets, NAME's
 * characters), the parameters as the file: budget's. Messages name the URI
 * with the password masked. */
static int parse_uri(redis_budget *rb, const char *uri, char *errbuf,
                     size_t errlen) {
  const char *q = strchr(uri, '?');
  char *head = strndup(uri, q ? (size_t)(q - uri) : strlen(uri));
  polite__redis_uri u;
  char why[320];
  int rc =
      head ? polite__redis_uri_parse(head, &u, why, sizeof why) : POLITE_ENOMEM;
  free(head);
  if (rc != 0) {
    if (errbuf && errlen)
      snprintf(errbuf, errlen, "budget %s", why);
    return rc;
  }
  if (asprintf(&rb->safe_uri, "%s%s", u.safe, q ? q : "") < 0)
    rb->safe_uri = NULL;
  rb->host = u.host; /* taken from u, which frees the rest */
  rb->user = u.user;
  rb->pass = u.pass;
  rb->name = u.name;
  u.host = u.user = u.pass = u.name = NULL;
  rb->port = rb->seed_port = u.port;
  polite__redis_uri_free(&u);
  rb->seed_host = rb->host ? strdup(rb->host) : NULL;
  if (rb->safe_uri == NULL || rb->seed_host == NULL)
    return POLITE_ENOMEM;
  int64_t lease_ms = POLITE__BUDGET_LEASE_DEFAULT_MS, timeout_ms = 1000;
  const polite__budget_param params[] = {{"lease", &lease_ms, 0, NULL},
                                         {"timeout", &timeout_ms, 0, NULL}};
  rc = polite__budget_uri_params(q, params, 2, rb->safe_uri, errbuf, errlen);
  if (rc != 0)
    return rc;
  rb->lease_us = lease_ms * 1000;
  rb->timeout_ms = timeout_ms;
  return 0;
}

int polite__budget_redis_open(const char *uri, const polite_budget_config *cfg,
                              const polite_env *env, polite_budget **out,
                              char *errbuf, size_t errlen) {
  if (errbuf && errlen)
    errbuf[0] = '\0';
  if (out == NULL)
    return POLITE_EINVAL;
  *out = NULL;
  if (uri == NULL || cfg == NULL || strncmp(uri, "redis://", 8) != 0 ||
      cfg->rate_per_s != cfg->rate_per_s)
    return POLITE_EINVAL;
  redis_budget *rb = polite__budget_alloc(sizeof *rb, &redis_vt, cfg);
  if (rb == NULL)
    return POLITE_ENOMEM;
  pthread_mutex_init(&rb->mu, NULL);
  rb->env = env;
  int rc = parse_uri(rb, uri, errbuf, errlen);
  if (rc == 0 && cfg->rate_per_s > 0) {
    polite_gcra g;
    if (polite_gcra_init(&g, cfg->rate_per_s, rb->base.cfg.burst) != 0) {
      polite__budget_errf(errbuf, errlen, rb->safe_uri,
                          "rate %g/s is out of range", cfg->rate_per_s);
      rc = POLITE_EINVAL;
    }
    rb->interval_us = 1e6 / cfg->rate_per_s;
    rb->tau_us = (rb->base.cfg.burst - 1) * rb->interval_us;
  }
  if (rc == 0) {
    /* A lease id readable by operators and unique: host:pid:random. */
    polite__participant_id(rb->owner, sizeof rb->owner, env, 16);
    rc = connect_now(rb, errbuf, errlen);
  }
  if (rc != 0) {
    rb->c = NULL;
    redis_close(&rb->base);
    return rc;
  }
  *out = &rb->base;
  return 0;
}
