/* polite report: one self-contained HTML page from one or more attempt
 * logs (`polite run --log`). */
#include "cli.h"
#include "report_model.h"
#include "report_tap.h"

#include <string.h>

typedef struct {
  const char *out;
} report_opts;

static const cli_opt report_table[] = {
    {"out", 'o', CLI_STRING, "FILE.html", 0, 0, "report.html", NULL, NULL,
     "where to write the page (written to FILE.html.tmpPID, then renamed "
     "into place)",
     "Options", CLI_AT(report_opts, out), NULL, NULL, 0},
    CLI_ROW_END};

const cli_command cli_cmd_report = {
    "report",
    "[-o FILE.html] LOG...",
    "draw an HTML timeline of runs from their logs",
    "Draws one self-contained HTML page (inline SVG and CSS; no script,\n"
    "font or image is loaded) from one or more attempt logs written by\n"
    "'polite run --log'. Several hosts' logs sharing one budget make one\n"
    "picture on one time axis. LOG '-' reads stdin; at most 64 logs.\n"
    "\n"
    "The page shows request starts per second against the planned or\n"
    "learned rate, 429/503 answers by sender, server pauses, requests in\n"
    "flight against the concurrency limit and Little's law, retries and\n"
    "their waits, outcomes, a latency histogram and the summary table.\n"
    "It stays under 300 KB whatever the size of the logs.\n",
    report_table,
    "Malformed lines are skipped, counted on the page and named on stderr\n"
    "as FILE:LINE. Exit: 0 page written; 1 a log could not be read (the\n"
    "page is written from the others) or the page could not be written; 2\n"
    "usage error. See docs/report.md.\n",
    NULL,
    RP_SOURCES,
    NULL,
    NULL};

int cmd_report(int argc, char **argv) {
  report_opts o = {NULL};
  cli_args pos = {{NULL}, 0};
  int rc = cli_defaults(&cli_cmd_report, &o);
  if (rc == 0)
    rc = cli_parse(&cli_cmd_report, argc, argv, &o, &pos);
  if (rc >= 0)
    return rc;
  if (pos.n == 0)
    return cli_usage("report", "give at least one attempt log (polite run "
                               "--log FILE)");
  rp_model *m = rp_model_new();
  if (m == NULL) {
    fprintf(stderr, "polite report: out of memory\n");
    return CLI_EXIT_FAILED;
  }
  rc = CLI_EXIT_OK;
  char err[512];
  for (int i = 0; i < pos.n; i++)
    if (rp_model_read_file(m, pos.v[i], err, sizeof err) != 0) {
      fprintf(stderr, "polite report: %s\n", err);
      rc = CLI_EXIT_FAILED;
    }
  if (report_write_file(m, o.out, err, sizeof err) != 0) {
    fprintf(stderr, "polite report: %s\n", err);
    rc = CLI_EXIT_FAILED;
  } else if (m->bad_lines) {
    fprintf(stderr, "polite report: %llu malformed line(s) skipped\n",
            (unsigned long long)m->bad_lines);
  }
  rp_model_free(m);
  return rc;
}
