/* polite proxy: the errors and mocks files reloaded when they change (as Dev
 * Proxy watches them), keeping the previous rules when a new text does not
 * load. */
#include "px.h"

#include <stdio.h>
#include <sys/stat.h>

int64_t polite__px_file_mtime_ns(const char *path) {
  struct stat st;
  if (path == NULL || stat(path, &st) != 0)
    return 0;
  return (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
}

/* One rules file: reload when its time changed; keep the old rules when the
 * new text does not load. */
static int reload_one(const char *path, px_rules_kind kind, size_t max,
                      px_rules *rules, int64_t *mtime, FILE *log) {
  if (path == NULL)
    return 0;
  int64_t m = polite__px_file_mtime_ns(path);
  if (m == 0 || m == *mtime)
    return 0;
  *mtime = m;
  px_rules fresh;
  char err[1024];
  if (polite__px_rules_load(&fresh, kind, path, max, err, sizeof err) < 0) {
    if (log)
      fprintf(log,
              "polite proxy: %s changed but does not load, keeping the "
              "previous one: %s\n",
              path, err);
    return 0;
  }
  polite__px_rules_free(rules);
  *rules = fresh;
  if (log)
    fprintf(log, "polite proxy: reloaded %s (%zu entries)\n", path, fresh.n);
  return 1;
}

int polite__px_config_reload(px_config *c, FILE *log) {
  return reload_one(c->errors_file, PX_RULES_ERRORS, c->max_file, &c->errors,
                    &c->errors_mtime_ns, log) +
         reload_one(c->mocks_file, PX_RULES_MOCKS, c->max_file, &c->mocks,
                    &c->mocks_mtime_ns, log);
}
