/* polite proxy: token limits of language-model APIs (prompt and completion
 * tokens per window), charged from OpenAI-style usage in the answers. Pure:
 * `now` is an argument. */
#include "px_limit.h"

#include <jansson.h>
#include <string.h>

/* The window starts with the first request and restarts with the first
 * one after it ended, as Dev Proxy's LanguageModelRateLimitingPlugin. */
static void roll(const px_tok_cfg *c, px_tok *t, int64_t now_us) {
  if (t->window_end_us == 0 || now_us >= t->window_end_us) {
    t->window_end_us = now_us + c->window_us;
    t->prompt = t->completion = 0;
  }
}

int polite__px_tok_admit(const px_tok_cfg *c, px_tok *t, int64_t now_us,
                         px_tok_state *out) {
  roll(c, t, now_us);
  memset(out, 0, sizeof *out);
  out->reset_us = t->window_end_us - now_us;
  out->limit = c->prompt_limit > 0 ? c->prompt_limit : c->completion_limit;
  out->remaining =
      out->limit - (c->prompt_limit > 0 ? t->prompt : t->completion);
  if (c->prompt_limit > 0 && c->completion_limit > 0 &&
      c->completion_limit - t->completion < out->remaining) {
    out->limit = c->completion_limit;
    out->remaining = c->completion_limit - t->completion;
  }
  out->used = out->limit - out->remaining;
  if (out->remaining < 0)
    out->remaining = 0;
  if (c->prompt_limit > 0 && t->prompt >= c->prompt_limit) {
    out->spent = PX_TOK_PROMPT;
    return 0;
  }
  if (c->completion_limit > 0 && t->completion >= c->completion_limit) {
    out->spent = PX_TOK_COMPLETION;
    return 0;
  }
  return 1;
}

void polite__px_tok_charge(const px_tok_cfg *c, px_tok *t, int64_t now_us,
                           int64_t prompt, int64_t completion) {
  roll(c, t, now_us);
  if (prompt > 0)
    t->prompt += prompt;
  if (completion > 0)
    t->completion += completion;
}

/* One integer member of usage, under either of two names. */
static int64_t usage_field(json_t *usage, const char *a, const char *b) {
  json_t *v = json_object_get(usage, a);
  if (!json_is_integer(v))
    v = json_object_get(usage, b);
  return json_is_integer(v) && json_integer_value(v) > 0
             ? (int64_t)json_integer_value(v)
             : 0;
}

int polite__px_tok_usage(const char *body, size_t len, int64_t *prompt,
                         int64_t *completion) {
  *prompt = *completion = 0;
  if (body == NULL || len == 0 || len > PX_TOK_BODY_MAX)
    return -1;
  json_t *root = json_loadb(body, len, 0, NULL);
  json_t *usage = json_is_object(root) ? json_object_get(root, "usage") : NULL;
  int rc = -1;
  if (json_is_object(usage)) {
    /* Chat completions: prompt_tokens / completion_tokens; the responses
     * API: input_tokens / output_tokens. */
    *prompt = usage_field(usage, "prompt_tokens", "input_tokens");
    *completion = usage_field(usage, "completion_tokens", "output_tokens");
    rc = 0;
  }
  json_decref(root);
  return rc;
}
