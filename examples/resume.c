/* examples/resume.c: a batch that survives kill -9. Run it again with the
 * same journal and it resumes: finished requests are not sent again, and a
 * write that was in flight is sent again with the same idempotency key.
 *
 *   example_resume JOURNAL INPUT OUT
 *
 * INPUT has one request per line (polite run's format, docs/input-format.md).
 * The first run creates JOURNAL; a run that finds it resumes. Writes without
 * a key get one, recorded before they are sent. When every request has a
 * result, OUT gets one JSON line per request ({"id":..,"outcome":..}) from
 * the journal, which is the record of what is finished. Exits 0 when the
 * batch completed, 1 otherwise. */
#include <polite/polite.h>

#include <polite/journal.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  polite_input *input;
  unsigned long results;
} run_state;

static int next_line(void *ud, polite_request **out) {
  return polite_input_next(((run_state *)ud)->input, out);
}

/* Results are recorded by the journal; here they are only counted. */
static void on_result(void *ud, const polite_result *r) {
  (void)r;
  ((run_state *)ud)->results++;
}

/* Writes OUT from the journal's live results (one per id). */
static FILE *out_file;
static void write_result(void *ud, const char *id, const char *outcome) {
  (void)ud;
  fprintf(out_file, "{\"id\":\"%s\",\"outcome\":\"%s\"}\n", id, outcome);
}

/* Opens the journal (creating it on the first run) and records a session
 * with the input's fingerprint. NULL after printing why. */
static polite_journal *open_journal(const char *path, const char *input,
                                    const char *out) {
  int resume = access(path, F_OK) == 0;
  polite_journal *j = NULL;
  char err[600], fp[65];
  if (polite_sha256_file(input, fp) != 0) {
    perror(input);
    return NULL;
  }
  if (polite_journal_open(
          path, resume ? POLITE_JOURNAL_RESUME : POLITE_JOURNAL_CREATE, &j, err,
          sizeof err) != 0) {
    fprintf(stderr, "example_resume: %s\n", err);
    return NULL;
  }
  polite_journal_session s = {resume ? "resume" : "run", fp, input, out, "", 0};
  if (polite_journal_begin(j, &s) < 0) {
    fprintf(stderr, "example_resume: %s\n", polite_journal_errstr(j));
    polite_journal_close(j);
    return NULL;
  }
  return j;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: example_resume JOURNAL INPUT OUT\n");
    return 2;
  }
  polite_journal *j = open_journal(argv[1], argv[2], argv[3]);
  FILE *in = j ? fopen(argv[2], "r") : NULL;
  if (in == NULL) {
    polite_journal_close(j);
    return 1;
  }
  polite_budget_config bc = {20, 1, 4}; /* 20/s, 4 in flight */
  polite_budget *budget = NULL;
  polite_budget_local_new(&bc, &budget);
  run_state rs = {polite_input_open(in, NULL), 0};

  polite_batch_options bo;
  polite_batch_options_init(&bo);
  bo.budget = budget;
  bo.idempotency_auto = 1;
  bo.next = next_line;
  bo.on_result = on_result;
  bo.ud = &rs;
  polite_journal_run *run = NULL;
  char err[256];
  polite_batch *b = NULL;
  int rc = 1;
  if (polite_journal_attach(j, &bo, NULL, &run) == 0 &&
      (b = polite_batch_new(&bo, err, sizeof err)) != NULL) {
    polite_journal_run_set_batch(run, b);
    int erc = polite_batch_run(b);
    polite_journal_run_status st;
    polite_journal_run_status_get(run, &st);
    fprintf(stderr,
            "example_resume: %llu handed over, %lu finished now, %llu "
            "already done\n",
            (unsigned long long)st.handed, rs.results,
            (unsigned long long)st.skipped);
    if (erc != 0 || st.failed || st.input_failed) {
      fprintf(stderr, "example_resume: %s\n",
              erc ? polite_batch_errstr(b) : st.error);
    } else if ((out_file = fopen(argv[3], "w")) != NULL) {
      rc = polite_journal_each_result(j, write_result, NULL) == 0 &&
                   fclose(out_file) == 0
               ? 0
               : 1;
    }
  }
  polite_batch_free(b);
  polite_journal_run_free(run);
  polite_input_close(rs.input);
  fclose(in);
  polite_budget_close(budget);
  polite_journal_close(j);
  return rc;
}
