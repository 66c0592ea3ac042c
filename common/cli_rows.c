/* The setters of the rows several commands share (common/cli_rows.h). */
#include "cli_rows.h"

#include <string.h>

int cli_set_rate(void *opts, const cli_opt *o, const char *v, char *err,
                 size_t errlen) {
  cli_rate *r = (cli_rate *)((char *)opts + o->off);
  if (strcmp(v, "auto") == 0) {
    r->mode = POLITE_RATE_AUTO;
    r->per_s = 0;
    return 0;
  }
  if (cli_opt_store(o, opts, v, err, errlen) != 0)
    return -1; /* the message names the value */
  r->mode = strcmp(v, "none") == 0 ? POLITE_RATE_NONE : POLITE_RATE_FIXED;
  return 0;
}
