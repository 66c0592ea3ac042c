/* polite report: one self-contained HTML page from one or more attempt
 * logs (`polite run --log`). */
#include "cli.h"
#include "report_model.h"
#include "report_tap.h"

#include <string.h>

static const char USAGE[] =
    "Usage: polite report [-o FILE.html] LOG...\n"
    "\n"
    "Draws one self-contained HTML page (inline SVG and CSS; no script,\n"
    "font or image is loaded) from one or more attempt logs written by\n"
    "'polite run --log'. Several hosts' logs sharing one budget make one\n"
    "picture on one time axis. LOG '-' reads stdin.\n"
    "\n"
    "The page shows request starts per second against the planned or\n"
    "learned rate, 429/503 answers by sender, server pauses, requests in\n"
    "flight against the concurrency limit and Little's law, retries and\n"
    "their waits, outcomes, a latency histogram and the summary table.\n"
    "It stays under 300 KB whatever the size of the logs.\n"
    "\n"
    "Options:\n"
    "  -o, --out FILE.html    where to write the page (default report.html)\n"
    "  -h, --help             this text\n"
    "\n"
    "Malformed lines are skipped, counted on the page and named on stderr\n"
    "as FILE:LINE. Exit: 0 page written; 1 a log could not be read (the\n"
    "page is written from the others) or the page could not be written; 2\n"
    "usage error. See docs/report.md.\n";

int cmd_report(int argc, char **argv) {
  const char *out = "report.html";
  int nlogs = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(USAGE, stdout);
      return CLI_EXIT_OK;
    } else if (strcmp(a, "-o") == 0 || strcmp(a, "--out") == 0) {
      if (i + 1 >= argc)
        return cli_usage("report", "%s needs a file name", a);
      out = argv[++i];
    } else if (strncmp(a, "--out=", 6) == 0) {
      out = a + 6;
    } else if (a[0] == '-' && a[1] != '\0') {
      return cli_usage("report", "unknown option '%s'", a);
    } else {
      nlogs++;
    }
  }
  if (nlogs == 0)
    return cli_usage("report", "give at least one attempt log (polite run "
                               "--log FILE)");
  if (nlogs > RP_SOURCES)
    return cli_usage("report", "at most %d logs in one page, got %d",
                     RP_SOURCES, nlogs);
  rp_model *m = rp_model_new();
  if (m == NULL) {
    fprintf(stderr, "polite report: out of memory\n");
    return CLI_EXIT_FAILED;
  }
  int rc = CLI_EXIT_OK;
  char err[512];
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-o") == 0 || strcmp(a, "--out") == 0) {
      i++;
      continue;
    }
    if (strncmp(a, "--out=", 6) == 0)
      continue;
    if (rp_model_read_file(m, a, err, sizeof err) != 0) {
      fprintf(stderr, "polite report: %s\n", err);
      rc = CLI_EXIT_FAILED;
    }
  }
  if (report_write_file(m, out, err, sizeof err) != 0) {
    fprintf(stderr, "polite report: %s\n", err);
    rc = CLI_EXIT_FAILED;
  } else if (m->bad_lines) {
    fprintf(stderr, "polite report: %llu malformed line(s) skipped\n",
            (unsigned long long)m->bad_lines);
  }
  rp_model_free(m);
  return rc;
}
