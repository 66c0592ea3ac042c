/* Unit tests of the local budget (lib/budget_local.c, lib/budget.c, the
 * shared rules of lib/budget_base.c) on a
 * fake clock: rate spacing, concurrency slots, account pauses, scopes,
 * URIs, and several threads sharing one budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include <polite/budget.h>

#include "budget_backends.h"

#define SEC INT64_C(1000000)
#define T0 (INT64_C(1000) * SEC)

static polite_budget *mk(double rate, unsigned burst, unsigned conc) {
  polite_budget_config c = {rate, burst, conc};
  polite_budget *b = NULL;
  assert_int_equal(polite_budget_local_new(&c, &b), 0);
  return b;
}

static void rate_spaces_starts_evenly(void **state) {
  (void)state;
  polite_budget *b = mk(10, 1, 0); /* 10/s: one start per 100 ms */
  int64_t w = -5;
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(w, 0);
  /* A second start at the same instant must wait the whole interval. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 100000);
  /* Just before the interval: still waits 1 us. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 99999, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 1);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 100000, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  /* After a long idle time, no catch-up burst beyond burst 1. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 10 * SEC, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 10 * SEC, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  polite_budget_close(b);
}

static void burst_allows_back_to_back(void **state) {
  (void)state;
  polite_budget *b = mk(10, 3, 0);
  int64_t w;
  for (int i = 0; i < 3; i++)
    assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                     POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_true(w > 0 && w <= 100000);
  polite_budget_close(b);
}

static void slots_cap_concurrency_without_spending_rate(void **state) {
  (void)state;
  polite_budget *b = mk(1000, 1, 2);
  int64_t w;
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + SEC, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 2 * SEC, 1, 1, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  assert_int_equal(w, -1);
  polite_budget_release(b, NULL, 1);
  /* The refused attempt did not consume a start: admitted at once. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 2 * SEC, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  /* A cost larger than the whole concurrency can never fit. */
  polite_budget_release(b, NULL, 2);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 3 * SEC, 1, 3, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  /* Releasing more than held does not underflow. */
  polite_budget_release(b, NULL, 10);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 4 * SEC, 1, 2, &w),
                   POLITE_BUDGET_ADMITTED);
  polite_budget_close(b);
}

/* A request of cost N asks for N rate units and ONE slot: the rate is
 * charged N intervals, the concurrency limit counts one request. Units 0
 * is a slot only, slots 0 a rate charge only; each refusal takes nothing. */
static void cost_charges_units_with_one_slot(void **state) {
  (void)state;
  polite_budget *b = mk(10, 1, 2);
  int64_t w;
  /* Cost 5 above burst 1 on an idle account: admitted at once. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 5, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  /* 5 units charged: the next start waits 5 intervals. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 500000);
  /* One slot taken (of 2): one slot-only acquire fits, then none. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 0, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 0, 1, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  /* Neither the slot-only acquire nor the refusals charged the rate. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 0, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 500000);
  /* Due by the rate but no slot: refused without charging the rate... */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 500000, 1, 1, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  /* ...so a rate-only charge (slots 0, never waits for a slot) of 2 units
   * above the burst still finds the account idle. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 500000, 2, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  /* A slot back, the rate not yet: the rate wait takes no slot. */
  polite_budget_release(b, NULL, 1);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 500000, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 200000);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 700000, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  /* Units 0 and slots 0 (the shared backends' lease renewal) takes
   * nothing: the rate and the slots are as before. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 800000, 0, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 800000, 1, 0, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 800000, 0, 1, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  /* A pause blocks every acquire, the renewal too. */
  polite_budget_pause_until(b, NULL, T0 + 800000, T0 + SEC);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 900000, 0, 0, &w),
                   POLITE_BUDGET_WAIT_PAUSE);
  assert_int_equal(w, 100000);
  polite_budget_close(b);
}

static void pause_stops_everything_then_resumes_spaced(void **state) {
  (void)state;
  polite_budget *b = mk(10, 1, 0);
  int64_t w;
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_pause_until(b, NULL, T0, T0 + 2 * SEC), 0);
  assert_int_equal(polite_budget_paused_for(b, NULL, T0 + SEC), SEC);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + SEC, 1, 1, &w),
                   POLITE_BUDGET_WAIT_PAUSE);
  assert_int_equal(w, SEC);
  /* A shorter pause never shortens the current one. */
  polite_budget_pause_until(b, NULL, T0 + SEC, T0 + SEC + 10);
  assert_int_equal(polite_budget_paused_for(b, NULL, T0 + SEC), SEC);
  /* At the end of the pause one start, then the planned spacing. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 2 * SEC, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_paused_for(b, NULL, T0 + 2 * SEC), 0);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 2 * SEC, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 100000);
  polite_budget_close(b);
}

static void pause_applies_without_rate(void **state) {
  (void)state;
  polite_budget *b = mk(0, 1, 0); /* unlimited rate */
  int64_t w;
  polite_budget_pause_until(b, NULL, T0, T0 + 500);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_WAIT_PAUSE);
  assert_int_equal(w, 500);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 500, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  polite_budget_close(b);
}

static void accounts_are_independent(void **state) {
  (void)state;
  polite_budget *b = mk(1, 1, 1);
  int64_t w;
  assert_int_equal(polite_budget_acquire(b, "a.example", T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, "b.example", T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  polite_budget_pause_until(b, "a.example", T0, T0 + 10 * SEC);
  assert_int_equal(polite_budget_paused_for(b, "b.example", T0), 0);
  /* NULL and "" name the same default account. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, "", T0 + 5 * SEC, 1, 1, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  polite_budget_close(b);
}

static void open_by_uri(void **state) {
  (void)state;
  polite_budget_config c = {5, 1, 2};
  polite_budget *b = NULL;
  char err[200];
  assert_int_equal(polite_budget_open("local", &c, &b, err, sizeof err), 0);
  assert_non_null(b);
  assert_string_equal(b->vt->scheme, "local");
  polite_budget_close(b);
  b = NULL;
  assert_int_equal(polite_budget_open("memcached://x", &c, &b, err, sizeof err),
                   POLITE_EINVAL);
  assert_null(b);
  assert_non_null(strstr(err, "memcached://x"));
  assert_int_equal(polite_budget_open("gopher://x", &c, &b, err, sizeof err),
                   POLITE_EINVAL);
  assert_non_null(strstr(err, "unknown backend"));
  /* A NULL budget admits everything (no budget configured). */
  int64_t w = 7;
  assert_int_equal(polite_budget_acquire(NULL, NULL, T0, 1, 1, &w), 0);
  assert_int_equal(w, 0);
  polite_budget_close(NULL);
}

/* Several threads hammer one budget with concurrency 3: the slot count must
 * never exceed 3 (checked with a shared counter under the same rules). */
typedef struct {
  polite_budget *b;
  pthread_mutex_t mu;
  int in_use, max_seen, admitted;
} shared;

static void *worker(void *arg) {
  shared *s = arg;
  for (int i = 0; i < 2000; i++) {
    int64_t w;
    if (polite_budget_acquire(s->b, NULL, T0 + i, 1, 1, &w) !=
        POLITE_BUDGET_ADMITTED)
      continue;
    pthread_mutex_lock(&s->mu);
    s->in_use++;
    s->admitted++;
    if (s->in_use > s->max_seen)
      s->max_seen = s->in_use;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->mu);
    s->in_use--;
    pthread_mutex_unlock(&s->mu);
    polite_budget_release(s->b, NULL, 1);
  }
  return NULL;
}

static void threads_share_slots_safely(void **state) {
  (void)state;
  shared s;
  memset(&s, 0, sizeof s);
  s.b = mk(0, 1, 3);
  pthread_mutex_init(&s.mu, NULL);
  pthread_t t[6];
  for (int i = 0; i < 6; i++)
    pthread_create(&t[i], NULL, worker, &s);
  for (int i = 0; i < 6; i++)
    pthread_join(t[i], NULL);
  assert_true(s.max_seen <= 3);
  assert_true(s.admitted > 0);
  /* Everything was released: 3 slots are free again. */
  int64_t w;
  for (int i = 0; i < 3; i++)
    assert_int_equal(polite_budget_acquire(s.b, NULL, T0, 1, 1, &w),
                     POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(s.b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  pthread_mutex_destroy(&s.mu);
  polite_budget_close(s.b);
}

/* The local backend holds a learned in-flight cap below the configured
 * concurrency and counts the account's slots for in_use
 * (polite_budget_in_use is 0 for a NULL budget; the shared backends are
 * checked by tests/tools/budget_contract.c). */
static void slot_cap_lowers_the_concurrency(void **state) {
  (void)state;
  polite_budget *b = mk(0, 1, 8);
  int64_t w;
  polite_budget_set_slot_cap(b, NULL, 2);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_in_use(b, NULL), 2);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_WAIT_SLOT);
  /* Another account has no cap. */
  assert_int_equal(polite_budget_acquire(b, "other", T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_in_use(b, "other"), 1);
  polite_budget_set_slot_cap(b, NULL, 0);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_in_use(b, NULL), 3);
  assert_int_equal(polite_budget_in_use(NULL, NULL), 0);
  polite_budget_close(b);
}

/* The slot rule every backend shares: a row is (configured concurrency,
 * learned cap, in use, slots asked) and what the rule says. */
static const struct {
  unsigned conc, cap;
  uint64_t in_use;
  unsigned slots;
  unsigned limit; /* polite__budget_slot_limit */
  int is_short;   /* polite__budget_slots_short */
} slot_rows[] = {
    {0, 0, 0, 1, 0, 0}, /* unlimited */
    {0, 3, 9, 1, 0, 0}, /* a cap does not limit an unlimited account */
    {4, 0, 3, 1, 4, 0}, /* the last slot */
    {4, 0, 4, 1, 4, 1}, /* none left */
    {4, 2, 1, 1, 2, 0}, /* the cap lowers the limit */
    {4, 2, 2, 1, 2, 1}, /* ... and holds */
    {4, 6, 4, 1, 4, 1}, /* a cap above the limit does not raise it */
    {4, 0, 0, 5, 4, 1}, /* more slots than the limit never fit */
    {4, 0, 4, 0, 4, 0}, /* asking for no slot never waits */
    {4, 0, 3, 2, 4, 1}, /* two do not fit beside three */
};

static void slot_rule_is_one_for_every_backend(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof slot_rows / sizeof slot_rows[0]; i++) {
    unsigned limit =
        polite__budget_slot_limit(slot_rows[i].conc, slot_rows[i].cap);
    if (limit != slot_rows[i].limit ||
        polite__budget_slots_short(limit, slot_rows[i].in_use,
                                   slot_rows[i].slots) != slot_rows[i].is_short)
      fail_msg("row %zu: limit %u", i, limit);
  }
}

/* The account's admissions are counted across participants (only those
 * that charge rate units), and a learned window holds the account to its
 * quota: past it every acquire waits until the window's next start. */
static void window_quota_holds_the_account(void **state) {
  (void)state;
  polite_budget *b = mk(0, 1, 0); /* no configured rate */
  int64_t w;
  assert_int_equal(polite_budget_admissions(b, NULL), 0);
  for (int i = 0; i < 3; i++)
    assert_int_equal(polite_budget_acquire(b, NULL, T0, 1, 1, &w),
                     POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0, 0, 1, &w),
                   POLITE_BUDGET_ADMITTED); /* no units: not counted */
  assert_int_equal(polite_budget_admissions(b, NULL), 3);
  /* A window opened after the first admission, quota 3: one more fits. */
  polite_shared_window win = {T0, 1, 5 * SEC, T0 + 5 * SEC, 0, 3};
  assert_int_equal(polite_budget_window(b, NULL, &win), 0);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + SEC, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 2 * SEC, 1, 1, &w),
                   POLITE_BUDGET_WAIT_RATE);
  assert_int_equal(w, 3 * SEC);
  assert_int_equal(polite_budget_admissions(b, NULL), 4);
  /* Another account is not held by it. */
  assert_int_equal(polite_budget_acquire(b, "other", T0 + 2 * SEC, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  /* From the next start on the account is admitted again. */
  assert_int_equal(polite_budget_acquire(b, NULL, T0 + 5 * SEC, 1, 1, &w),
                   POLITE_BUDGET_ADMITTED);
  assert_int_equal(polite_budget_window(NULL, NULL, &win), POLITE_EINVAL);
  assert_int_equal(polite_budget_admissions(NULL, NULL), 0);
  polite_budget_close(b);
}

/* The window's merge rule (every backend's): a later opening wins, a
 * retraction of the stored opening goes back, one opening keeps the
 * shorter period and the earlier next start, no quota stores nothing. */
static void window_merge_rule(void **state) {
  (void)state;
  polite_shared_window st = {0, 0, 0, 0, 0, 0};
  polite_shared_window none = {T0, 5, SEC, T0 + SEC, 0, 0};
  assert_int_equal(polite_shared_window_merge(&st, &none), 0);
  assert_int_equal(st.quota, 0);
  assert_int_equal(none.quota, 0); /* in became the stored one */
  polite_shared_window a = {T0, 10, 9 * SEC, T0 + 6 * SEC, 0, 100};
  assert_int_equal(polite_shared_window_merge(&st, &a), 1);
  assert_int_equal(st.open_us, T0);
  /* The same opening read again by another: the shorter period and the
   * earlier next start are kept, the newer quota taken. */
  polite_shared_window b = {T0, 10, 5 * SEC, T0 + 8 * SEC, 0, 97};
  assert_int_equal(polite_shared_window_merge(&st, &b), 1);
  assert_int_equal(st.period_us, 5 * SEC);
  assert_int_equal(st.next_us, T0 + 6 * SEC);
  assert_int_equal(st.quota, 97);
  assert_int_equal(b.period_us, 5 * SEC);
  /* An older opening does not win ... */
  polite_shared_window old = {T0 - SEC, 2, 5 * SEC, T0 + 4 * SEC, 0, 100};
  assert_int_equal(polite_shared_window_merge(&st, &old), 0);
  assert_int_equal(old.open_us, T0);
  /* ... a later one does ... */
  polite_shared_window later = {T0 + 5 * SEC,  110, 5 * SEC,
                                T0 + 10 * SEC, 0,   97};
  assert_int_equal(polite_shared_window_merge(&st, &later), 1);
  assert_int_equal(st.open_n, 110);
  /* ... and an older one that retracts it goes back, whole. */
  polite_shared_window back = {T0, 10, 5 * SEC, T0 + 5 * SEC, T0 + 5 * SEC, 97};
  assert_int_equal(polite_shared_window_merge(&st, &back), 1);
  assert_int_equal(st.open_us, T0);
  assert_int_equal(st.next_us, T0 + 5 * SEC);
  /* A retraction of another opening than the stored one is just old. */
  polite_shared_window stale = {T0 - SEC, 2, 5 * SEC, T0, T0 + 7 * SEC, 97};
  assert_int_equal(polite_shared_window_merge(&st, &stale), 0);
  assert_int_equal(st.open_us, T0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rate_spaces_starts_evenly),
      cmocka_unit_test(slot_cap_lowers_the_concurrency),
      cmocka_unit_test(burst_allows_back_to_back),
      cmocka_unit_test(slots_cap_concurrency_without_spending_rate),
      cmocka_unit_test(cost_charges_units_with_one_slot),
      cmocka_unit_test(pause_stops_everything_then_resumes_spaced),
      cmocka_unit_test(pause_applies_without_rate),
      cmocka_unit_test(accounts_are_independent),
      cmocka_unit_test(open_by_uri),
      cmocka_unit_test(threads_share_slots_safely),
      cmocka_unit_test(slot_rule_is_one_for_every_backend),
      cmocka_unit_test(window_quota_holds_the_account),
      cmocka_unit_test(window_merge_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
