/* libFuzzer target: the file budget on arbitrary bytes (lib/budget_file.c
 * and lib/budget_file_store.c read a file that anyone sharing the budget
 * can write). Two modes, chosen by the first byte:
 *  - even: the rest is the whole file; a participant opens it (or is
 *    refused) and, when it can, uses it;
 *  - odd: two participants use a sound file while the rest of the input,
 *    read as patches (truncate to N, or write bytes at an offset), damages
 *    it between their calls.
 * Every call must return one of the answers the interface allows, and
 * nothing may crash, leak or read out of bounds (ASan, UBSan). */
#define _GNU_SOURCE
#include <polite/budget.h>

#include "budget_backends.h"
#include "budget_file_store.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64], uri[80];

static void check_rc(int rc) {
  if (!(rc == POLITE_EBUDGET || (rc >= 0 && rc <= POLITE_BUDGET_WAIT_SLOT)))
    abort();
}

/* One round of every call a participant makes, at fake time t. */
static void use(polite_budget *b, int64_t t, unsigned r) {
  int64_t w = 0;
  int rc = polite_budget_acquire(b, r & 1 ? "h" : NULL, t, 1 + (r & 3), 1, &w);
  check_rc(rc);
  if (rc > 0 && w < 0)
    abort();
  if (rc == POLITE_BUDGET_ADMITTED)
    polite_budget_release(b, r & 1 ? "h" : NULL, 1);
  check_rc(polite_budget_acquire(b, NULL, t, 0, 0, &w));
  int prc = polite_budget_pause_until(b, NULL, t, t + (int64_t)(r % 5) * 1000);
  if (prc != 0 && prc != POLITE_EBUDGET)
    abort();
  if (polite_budget_paused_for(b, NULL, t) < 0)
    abort();
  polite_shared_rate sr = {1.0 + (r % 7), 2.0, r % 3, 0};
  int pub = polite_budget_publish_rate(b, NULL, t, &sr, (int)(r & 1));
  if (pub != 0 && pub != 1 && pub != POLITE_EBUDGET)
    abort();
  polite_budget_state st;
  int irc = polite_budget_inspect(b, NULL, t, &st);
  if (irc != 0 && irc != POLITE_EBUDGET)
    abort();
  if (irc == 0 && st.n_holders > POLITE_BUDGET_MAX_HOLDERS)
    abort();
}

static polite_budget *join(void) {
  polite_budget_config c = {50, 2, 3};
  polite_budget *b = NULL;
  char err[256];
  int rc = polite__budget_file_new(uri, &c, &b, err, sizeof err);
  if (rc != 0 && (b != NULL || err[0] == '\0'))
    abort(); /* a refusal always says why and hands out nothing */
  return b;
}

/* Applies one patch from data at *at: truncate (op 0) or write (op 1).
 * Returns 0 when the input is used up. */
static int patch(const uint8_t *data, size_t size, size_t *at) {
  if (*at + 5 > size)
    return 0;
  uint8_t op = data[*at];
  uint32_t off = ((uint32_t)data[*at + 1] | (uint32_t)data[*at + 2] << 8 |
                  (uint32_t)data[*at + 3] << 16) %
                 (uint32_t)(PF_FILE_SIZE + 64);
  size_t len = data[*at + 4];
  *at += 5;
  int fd = open(path, O_WRONLY);
  if (fd < 0)
    return 1; /* removed by an earlier patch: the participants remake it */
  if (op % 3 == 0) {
    if (ftruncate(fd, (off_t)off) != 0)
      abort();
  } else if (op % 3 == 1) {
    if (len > size - *at)
      len = size - *at;
    if (len > 0 && pwrite(fd, data + *at, len, (off_t)off) < 0)
      abort();
    *at += len;
  } else {
    unlink(path);
  }
  close(fd);
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (path[0] == '\0') {
    snprintf(path, sizeof path, "/dev/shm/polite-fuzz-bf-%d", (int)getpid());
    snprintf(uri, sizeof uri, "file:%s", path);
  }
  if (size == 0)
    return 0;
  unlink(path);
  int64_t t = INT64_C(5000) * 1000000;
  if ((data[0] & 1) == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
      return 0;
    if (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1))
      abort();
    close(fd);
    polite_budget *b = join();
    for (unsigned r = 0; b && r < 4; r++)
      use(b, t + (int64_t)r * 150000, r + data[0]);
    polite_budget_close(b);
    polite_budget *v = NULL;
    char err[256];
    if (polite_budget_open_inspect(uri, &v, err, sizeof err) == 0) {
      polite_budget_state st;
      int irc = polite_budget_inspect(v, NULL, t, &st);
      if (irc != 0 && irc != POLITE_EBUDGET)
        abort();
      polite_budget_close(v);
    }
  } else {
    polite_budget *a = join(), *b = join();
    if (a == NULL || b == NULL)
      abort(); /* a fresh file is always usable */
    size_t at = 1;
    unsigned r = 0;
    do {
      use(r & 1 ? a : b, t, r);
      t += 30000 + (int64_t)(r % 5) * 40000;
      r++;
    } while (patch(data, size, &at) && r < 64);
    use(a, t + 3000000, r);
    use(b, t + 3000000, r + 1);
    polite_budget_close(a);
    polite_budget_close(b);
  }
  unlink(path);
  return 0;
}
