/* Unit tests of the token limits on a fake clock (proxy/px_limit_tokens.c):
 * usage read from chat-completions and responses bodies, charged after
 * the answer (the request that overshoots passes), the window's reset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "px_limit_tokens.c"

#define S INT64_C(1000000)

static void usage_of_both_apis(void **state) {
  (void)state;
  int64_t p, c;
  const char *chat = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\","
                     "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":"
                     "30,\"total_tokens\":42}}";
  assert_int_equal(polite__px_tok_usage(chat, strlen(chat), &p, &c), 0);
  assert_int_equal(p, 12);
  assert_int_equal(c, 30);
  const char *resp = "{\"object\":\"response\",\"usage\":{\"input_tokens\":7,"
                     "\"output_tokens\":9}}";
  assert_int_equal(polite__px_tok_usage(resp, strlen(resp), &p, &c), 0);
  assert_int_equal(p, 7);
  assert_int_equal(c, 9);
  assert_int_equal(polite__px_tok_usage("{\"ok\":1}", 8, &p, &c), -1);
  assert_int_equal(polite__px_tok_usage("not json", 8, &p, &c), -1);
  assert_int_equal(p + c, 0);
}

static void overshoot_passes_then_refused_until_reset(void **state) {
  (void)state;
  px_tok_cfg cfg = {100, 0, 60 * S};
  px_tok t = {0, 0, 0};
  px_tok_state st;
  int64_t now = 10 * S;
  for (int i = 0; i < 3; i++) {
    assert_true(polite__px_tok_admit(&cfg, &t, now, &st)); /* 0, 40, 80 */
    polite__px_tok_charge(&cfg, &t, now, 40, 5);
    now += S;
  }
  /* 120 > 100: the third (which overshot) passed; the fourth is refused. */
  assert_false(polite__px_tok_admit(&cfg, &t, now, &st));
  assert_int_equal(st.spent, PX_TOK_PROMPT);
  assert_int_equal(st.remaining, 0);
  assert_int_equal(st.used, 120);
  assert_int_equal(st.reset_us, 57 * S);
  /* At the window's end, a new one. */
  assert_true(polite__px_tok_admit(&cfg, &t, 70 * S, &st));
  assert_int_equal(st.remaining, 100);
  /* Completion limit: the closer one is reported. */
  px_tok_cfg both = {1000, 50, 60 * S};
  px_tok u = {0, 0, 0};
  polite__px_tok_charge(&both, &u, 0, 10, 40);
  assert_true(polite__px_tok_admit(&both, &u, 1, &st));
  assert_int_equal(st.limit, 50);
  assert_int_equal(st.remaining, 10);
  polite__px_tok_charge(&both, &u, 2, 10, 20);
  assert_false(polite__px_tok_admit(&both, &u, 3, &st));
  assert_int_equal(st.spent, PX_TOK_COMPLETION);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(usage_of_both_apis),
      cmocka_unit_test(overshoot_passes_then_refused_until_reset),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
