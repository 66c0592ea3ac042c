/* polite results files: reading back the JSON lines `polite run --out`
 * writes, as --resume does (docs/journal.md). */
#ifndef POLITE_RESULTS_H
#define POLITE_RESULTS_H

#include <polite/core.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called once per result line: its "id", its "outcome" ("" when absent or
 * not a string) and the raw line with its newline. The strings are valid
 * only during the call. A non-zero return stops the scan (it returns -1). */
typedef int (*polite_results_line_fn)(void *ud, const char *id,
                                      const char *outcome, const char *line,
                                      size_t len);

/* Scans f from the start: fn for each complete line that is a JSON object
 * with a string "id". Lines are parsed with JSON_ALLOW_NUL (a body may hold
 * \u0000). A torn last line is not an error: bytes after the last newline,
 * or a last line that does not parse but starts like a result line
 * ({"id":) or holds only NUL bytes (what a full disk or a crash leaves).
 * Returns 0 (*end = the offset just past the last good line, where the
 * caller truncates), the 1-based number of the first line that is not a
 * result line (a file that is not polite's: nothing may be removed), or -1
 * on a read error or when fn stopped the scan. */
POLITE_EXTERN long polite_results_scan(FILE *f, polite_results_line_fn fn,
                                       void *ud, long long *end);

#ifdef __cplusplus
}
#endif

#endif
