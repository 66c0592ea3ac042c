/* polite proxy --report-html: the proxy's side as an HTML page (internal;
 * called where the proxy writes its reports). */
#ifndef POLITE_REPORT_PROXY_H
#define POLITE_REPORT_PROXY_H

#include "px.h"

#include <stdio.h>

/* Writes cfg->report_html (atomically) from the proxy's JSON report (made
 * from st) and its request log (cfg->log when it names a file; `log` is
 * the open log, flushed first, and may be stderr or NULL). Returns 0, or -1
 * with a message on stderr. */
int polite__px_report_html(const px_config *cfg, const px_state *st,
                           int64_t started_wall_ms, int64_t now_wall_ms,
                           FILE *log);

#endif
