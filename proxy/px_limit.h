/* polite proxy: the simulated limits (rate windows, GCRA, concurrency,
 * quotas) as pure functions of their state and `now`. */
#ifndef POLITE_PX_LIMIT_H
#define POLITE_PX_LIMIT_H

#include <polite/core.h>

#include <stdint.h>

/* ---- Rate limiters --------------------------------------------------------
 *
 * One limiter state per scope key. Every mode answers with the same
 * px_lim_state, including the (r, t) pair of the planner contract shared
 * with polite run (docs/proxy-limits.md): a client may start r requests
 * spread evenly over t seconds, the first t/r after the answer arrived, or
 * wait t when r = 0. Each mode chooses r and t so that such a client is
 * never refused, and so that a client following them keeps up with q/w. */

typedef enum {
  PX_LIM_GCRA = 0,   /* nginx limit_req: even spacing with a burst */
  PX_LIM_FIXED = 1,  /* Dev Proxy's RateLimitingPlugin window */
  PX_LIM_SLIDING = 2 /* a sliding log, as Redis-based limiters keep */
} px_lim_mode;

typedef struct {
  px_lim_mode mode;
  int64_t limit;     /* q: units per window, >= 1 */
  int64_t window_us; /* w, >= 1 s */
  unsigned burst;    /* gcra: requests at once, >= 1 */
  int64_t cost;      /* units per request, 1..limit */
} px_lim_cfg;

/* Largest limit the sliding log accepts (it keeps one entry per request). */
#define PX_SLIDING_MAX 100000

typedef struct px_lim px_lim;

/* A limiter state for cfg (which must outlive it); NULL when out of memory
 * or when cfg is invalid. */
px_lim *polite__px_lim_new(const px_lim_cfg *cfg);
void polite__px_lim_free(void *l);

typedef struct {
  int admitted;
  int64_t wait_us;    /* refused: until capacity returns (>= 1) */
  int64_t remaining;  /* r (requests) */
  int64_t reset_s;    /* t (whole seconds, >= 0; >= 1 when r = 0) */
  int64_t quota;      /* q (requests per window) */
  int64_t window_s;   /* w */
  int64_t units_left; /* fixed: resources remaining (Dev Proxy headers) */
  int64_t reset_us;   /* fixed: until the window resets; else = t */
} px_lim_state;

/* Asks the limiter to admit one request at now_us (take = 1), or only looks
 * at what it would answer (take = 0: nothing recorded, `admitted` says
 * whether a request now would pass). Fills *out. */
void polite__px_lim_admit(px_lim *l, int64_t now_us, int take,
                          px_lim_state *out);

/* ---- Quotas ---------------------------------------------------------------
 *
 * A count of requests that resets never (total), every day at a stated UTC
 * hour, or every fixed window from the first request. */

typedef enum {
  PX_QUOTA_TOTAL = 0,
  PX_QUOTA_DAY = 1,
  PX_QUOTA_WINDOW = 2
} px_quota_period;

typedef struct {
  int64_t limit; /* -1: none */
  px_quota_period period;
  int reset_hour;    /* PX_QUOTA_DAY: 0-23 UTC */
  int64_t window_ms; /* PX_QUOTA_WINDOW */
} px_quota_cfg;

typedef struct {
  int64_t used;
  int64_t period_end_ms; /* wall clock (day) or monotonic (window); 0: unset */
} px_quota;

/* Counts one request and returns 1 when one was left, else 0. wall_ms is
 * the wall clock (for day periods), mono_ms the monotonic clock. *reset_ms
 * (may be NULL) gets the wall-clock time the quota renews, or -1 never. */
int polite__px_quota_admit(const px_quota_cfg *c, px_quota *q, int64_t wall_ms,
                           int64_t mono_ms, int64_t *reset_wall_ms);

/* ---- Token limits ---------------------------------------------------------
 *
 * Prompt and completion tokens per window (Dev Proxy's
 * LanguageModelRateLimitingPlugin), charged after the answer from its
 * usage, so the request that overshoots succeeds and the next ones are
 * refused until the window ends. */

typedef struct {
  int64_t prompt_limit;     /* per window; 0: none */
  int64_t completion_limit; /* per window; 0: none */
  int64_t window_us;
} px_tok_cfg;

typedef struct {
  int64_t window_end_us; /* 0 before the first request */
  int64_t prompt, completion;
} px_tok;

#define PX_TOK_PROMPT 1
#define PX_TOK_COMPLETION 2
/* Answers longer than this are not read for usage (nothing charged). */
#define PX_TOK_BODY_MAX (1024 * 1024)

typedef struct {
  int spent;         /* PX_TOK_* that is spent, 0 when admitted */
  int64_t limit;     /* the limit closest to being spent */
  int64_t remaining; /* its tokens left (>= 0) */
  int64_t used;      /* its tokens used in the window */
  int64_t reset_us;  /* until the window ends */
} px_tok_state;

/* 1 when a request may go now, 0 when the prompt or completion tokens of
 * the window are spent (out->spent says which). Fills *out either way. */
int polite__px_tok_admit(const px_tok_cfg *c, px_tok *t, int64_t now_us,
                         px_tok_state *out);
/* Counts an answer's tokens in the window of now_us. */
void polite__px_tok_charge(const px_tok_cfg *c, px_tok *t, int64_t now_us,
                           int64_t prompt, int64_t completion);
/* usage.prompt_tokens / completion_tokens (chat completions) or
 * input_tokens / output_tokens (responses API) of a JSON body. 0, or -1
 * when the body has no usage (both then 0). */
int polite__px_tok_usage(const char *body, size_t len, int64_t *prompt,
                         int64_t *completion);

#endif
