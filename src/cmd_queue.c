/* `polite queue push|status|results|retry-dead URI`: fills, watches and
 * empties a work queue that `polite run --queue` workers share
 * (docs/queue.md); four subcommands, each with its own option table. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <polite/polite.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  int json;
  const char *out_path;
  unsigned max_errors;
} queue_opts;

#define Q queue_opts
/* name, short, kind, arg, min, max, default, default as shown, env, help,
 * group, where, setter, choices, flags */
#define JSON_ROW(what)                                                         \
  {                                                                            \
    "json", 0, CLI_FLAG, NULL, 1, 0, NULL, "off", NULL, what, "Options",       \
        CLI_AT(Q, json), NULL, NULL, 0                                         \
  }
static const cli_opt push_table[] = {
    JSON_ROW("print the counts as one JSON object"),
    {"max-errors", 0, CLI_UINT, "N", 0, 1000000, "20", NULL, NULL,
     "invalid lines reported one by one at most (the rest are counted)", NULL,
     CLI_AT(Q, max_errors), NULL, NULL, 0},
    CLI_ROW_END};
static const cli_opt status_table[] = {JSON_ROW("print one JSON object"),
                                       CLI_ROW_END};
static const cli_opt results_table[] = {
    {"out", 'o', CLI_STRING, "FILE", 0, 0, NULL, "stdout", NULL,
     "write the result lines to FILE", "Options", CLI_AT(Q, out_path), NULL,
     NULL, 0},
    CLI_ROW_END};
static const cli_opt no_options[] = {CLI_ROW_END};
#undef Q

#define URI_NOTE                                                               \
  "URI: redis[s]://[[USER]:PASSWORD@]HOST[:PORT]/NAME[?timeout=DURATION]\n"    \
  "(rediss://: TLS, with cacert=, cert=, key=, insecure=1).\n"
#define EXIT_NOTE                                                              \
  "Exit: 0 done; 1 Redis could not be used; 2 usage error. See "               \
  "docs/queue.md.\n"

static const cli_command queue_push = {
    "queue push",
    "[OPTIONS] URI [FILE|-]",
    "put a batch into a queue (an id already there is skipped)",
    "Pushes every request line of FILE (or stdin; the input format of\n"
    "polite run) into the queue as it is written. An id already in the\n"
    "queue is skipped, so pushing a file twice adds nothing; invalid lines\n"
    "are named and not pushed.\n" URI_NOTE,
    push_table,
    "Exit: 0 done; 1 Redis could not be used, or invalid lines (the valid\n"
    "ones are pushed); 2 usage error. See docs/queue.md.\n",
    NULL,
    2,
    NULL,
    NULL};
static const cli_command queue_status = {
    "queue status",
    "[OPTIONS] URI",
    "what a queue holds: pending, in flight by worker, done, failed, dead",
    "Prints, in one round trip: entries pushed, pending (with the wait of\n"
    "the next), in flight by worker, done, failed, dead, and the "
    "lease.\n" URI_NOTE,
    status_table,
    EXIT_NOTE,
    NULL,
    1,
    NULL,
    NULL};
static const cli_command queue_results = {
    "queue results",
    "[OPTIONS] URI",
    "one JSON line per id, as the workers recorded them",
    "Writes the recorded results, one JSON line per id, in the order they\n"
    "were recorded.\n" URI_NOTE,
    results_table,
    EXIT_NOTE,
    NULL,
    1,
    NULL,
    NULL};
static const cli_command queue_retry_dead = {
    "queue retry-dead",
    "URI",
    "put the dead letters back in the queue",
    "Puts every dead letter back in the queue with its deliveries counted\n"
    "from 0 (those whose id has a result by now are dropped).\n" URI_NOTE,
    no_options,
    EXIT_NOTE,
    NULL,
    1,
    NULL,
    NULL};

/* Parses a subcommand's command line and opens its queue (pos->v[0]).
 * Returns -1 to go on with *q open, else an exit status. */
static int open_queue(const cli_command *cmd, int argc, char **argv,
                      queue_opts *o, cli_args *pos, polite_queue **q) {
  memset(o, 0, sizeof *o);
  int rc = cli_defaults(cmd, o);
  if (rc == 0)
    rc = cli_parse(cmd, argc, argv, o, pos);
  if (rc >= 0)
    return rc;
  if (pos->n == 0)
    return cli_usage(cmd->name, "needs a queue URI (redis://HOST:PORT/NAME)");
  char err[400];
  if ((rc = polite_queue_open(pos->v[0], q, err, sizeof err)) != 0) {
    fprintf(stderr, "polite %s: %s\n", cmd->name, err);
    return rc == POLITE_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAILED;
  }
  return -1;
}

/* Ends a subcommand: the queue closed, stdout flushed. */
static int close_queue(polite_queue *q, int rc) {
  polite_queue_close(q);
  if (fflush(stdout) != 0 && rc == CLI_EXIT_OK)
    rc = CLI_EXIT_FAILED;
  return rc;
}

/* ---- push
 * -------------------------------------------------------------------- */

typedef struct {
  const char *name;
  unsigned shown, max;
} invalid_ctx;

static void on_invalid(void *ud, long line, const char *error) {
  invalid_ctx *c = ud;
  if (c->shown++ < c->max)
    fprintf(stderr, "polite queue push: %s line %ld: %s (not pushed)\n",
            c->name, line, error);
}

static int do_push(polite_queue *q, const queue_opts *o, const char *path) {
  FILE *in = stdin;
  if (path && strcmp(path, "-") != 0 && (in = fopen(path, "r")) == NULL)
    return cli_usage("queue push", "cannot open '%s': %s", path,
                     strerror(errno));
  invalid_ctx ic = {path && strcmp(path, "-") != 0 ? path : "standard input", 0,
                    o->max_errors};
  polite_queue_push_stats st;
  int rc = polite_queue_push(q, in, &st, on_invalid, &ic);
  if (in != stdin)
    fclose(in);
  if (ic.shown > ic.max)
    fprintf(stderr, "polite queue push: ... and %u more invalid line(s)\n",
            ic.shown - ic.max);
  if (rc != 0)
    fprintf(stderr,
            "polite queue push: %s (what was pushed stays; pushing "
            "the same input again adds the rest)\n",
            polite_queue_errstr(q));
  if (o->json) {
    printf("{\"queue\":");
    cli_json_string(stdout, polite_queue_uri(q));
    printf(",\"lines\":%" PRIu64 ",\"added\":%" PRIu64 ",\"skipped\":%" PRIu64
           ",\"invalid\":%" PRIu64 ",\"complete\":%s}\n",
           st.lines, st.added, st.skipped, st.invalid,
           rc == 0 ? "true" : "false");
  } else {
    printf("pushed to %s: %" PRIu64 " added, %" PRIu64
           " skipped (their id is in the queue already), %" PRIu64 " invalid\n",
           polite_queue_uri(q), st.added, st.skipped, st.invalid);
  }
  return rc != 0 || st.invalid ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

/* ---- status
 * ------------------------------------------------------------------ */

static void status_json(polite_queue *q, const polite_queue_status *s) {
  printf("{\"queue\":");
  cli_json_string(stdout, polite_queue_uri(q));
  printf(",\"exists\":%s,\"pushed\":%" PRIu64 ",\"pending\":%" PRIu64
         ",\"in_flight\":%" PRIu64 ",\"done\":%" PRIu64 ",\"failed\":%" PRIu64
         ",\"dead\":%" PRIu64 ",\"oldest_pending_ms\":",
         s->exists ? "true" : "false", s->pushed, s->pending, s->in_flight,
         s->ok, s->failed, s->dead);
  if (s->oldest_pending_ms >= 0)
    printf("%" PRId64, s->oldest_pending_ms);
  else
    printf("null");
  printf(",\"lease_ms\":%" PRId64 ",\"workers\":[", s->lease_ms);
  for (size_t i = 0; i < s->n_workers; i++) {
    printf("%s{\"worker\":", i ? "," : "");
    cli_json_string(stdout, s->workers[i].name);
    printf(",\"in_flight\":%" PRIu64 ",\"idle_ms\":%" PRId64 "}",
           s->workers[i].in_flight, s->workers[i].idle_ms);
  }
  printf("]}\n");
}

static void status_text(polite_queue *q, const polite_queue_status *s) {
  printf("queue: %s\n", polite_queue_uri(q));
  if (!s->exists) {
    printf("(nothing was ever pushed to it)\n");
    return;
  }
  printf("pushed: %" PRIu64 "\n", s->pushed);
  printf("pending: %" PRIu64, s->pending);
  if (s->oldest_pending_ms >= 0)
    printf(" (the next has waited %.1f s)",
           (double)s->oldest_pending_ms / 1000.0);
  printf("\nin flight: %" PRIu64 "\n", s->in_flight);
  for (size_t i = 0; i < s->n_workers; i++)
    printf("  worker %s: %" PRIu64 " in flight, seen %.1f s ago\n",
           s->workers[i].name, s->workers[i].in_flight,
           (double)s->workers[i].idle_ms / 1000.0);
  printf("done: %" PRIu64 " ok, %" PRIu64 " failed\n", s->ok, s->failed);
  printf("dead: %" PRIu64 "\n", s->dead);
  if (s->lease_ms > 0)
    printf("lease: %.1f s\n", (double)s->lease_ms / 1000.0);
}

/* ---- results
 * ----------------------------------------------------------------- */

typedef struct {
  FILE *f;
  uint64_t n;
} results_ctx;

static int write_result(void *ud, const char *id, const char *line,
                        size_t len) {
  results_ctx *c = ud;
  (void)id;
  if (fwrite(line, 1, len, c->f) != len || fputc('\n', c->f) == EOF)
    return 1;
  c->n++;
  return 0;
}

static int do_results(polite_queue *q, const queue_opts *o) {
  results_ctx c = {stdout, 0};
  if (o->out_path && (c.f = fopen(o->out_path, "w")) == NULL)
    return cli_usage("queue results", "--out: cannot open '%s': %s",
                     o->out_path, strerror(errno));
  int rc = polite_queue_results(q, write_result, &c);
  int werr = rc == 1 || ferror(c.f) || fflush(c.f) != 0;
  if (c.f != stdout && fclose(c.f) != 0)
    werr = 1;
  if (werr)
    fprintf(stderr, "polite queue results: cannot write '%s': %s\n",
            o->out_path ? o->out_path : "standard output", strerror(errno));
  else if (rc != 0)
    fprintf(stderr, "polite queue results: %s\n", polite_queue_errstr(q));
  else if (o->out_path)
    fprintf(stderr, "polite queue results: %" PRIu64 " result(s) to %s\n", c.n,
            o->out_path);
  return rc != 0 || werr ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

/* ---- the subcommands -------------------------------------------------------
 */

static int cmd_queue_push(int argc, char **argv) {
  queue_opts o;
  cli_args pos = {{NULL}, 0};
  polite_queue *q = NULL;
  int rc = open_queue(&queue_push, argc, argv, &o, &pos, &q);
  if (rc >= 0)
    return rc;
  return close_queue(q, do_push(q, &o, pos.n > 1 ? pos.v[1] : NULL));
}

static int cmd_queue_status(int argc, char **argv) {
  queue_opts o;
  cli_args pos = {{NULL}, 0};
  polite_queue *q = NULL;
  int rc = open_queue(&queue_status, argc, argv, &o, &pos, &q);
  if (rc >= 0)
    return rc;
  polite_queue_status st;
  rc = polite_queue_status_get(q, &st) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
  if (rc == CLI_EXIT_OK && o.json)
    status_json(q, &st);
  else if (rc == CLI_EXIT_OK)
    status_text(q, &st);
  else
    fprintf(stderr, "polite queue status: %s\n", polite_queue_errstr(q));
  polite_queue_status_free(&st);
  return close_queue(q, rc);
}

static int cmd_queue_results(int argc, char **argv) {
  queue_opts o;
  cli_args pos = {{NULL}, 0};
  polite_queue *q = NULL;
  int rc = open_queue(&queue_results, argc, argv, &o, &pos, &q);
  if (rc >= 0)
    return rc;
  return close_queue(q, do_results(q, &o));
}

static int cmd_queue_retry_dead(int argc, char **argv) {
  queue_opts o;
  cli_args pos = {{NULL}, 0};
  polite_queue *q = NULL;
  int rc = open_queue(&queue_retry_dead, argc, argv, &o, &pos, &q);
  if (rc >= 0)
    return rc;
  uint64_t moved = 0;
  rc = polite_queue_retry_dead(q, &moved) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
  if (rc == CLI_EXIT_OK)
    printf("moved %" PRIu64 " dead letter(s) back to %s\n", moved,
           polite_queue_uri(q));
  else
    fprintf(stderr, "polite queue retry-dead: %s\n", polite_queue_errstr(q));
  return close_queue(q, rc);
}

static const cli_sub queue_subs[] = {
    {"push", &queue_push, cmd_queue_push},
    {"status", &queue_status, cmd_queue_status},
    {"results", &queue_results, cmd_queue_results},
    {"retry-dead", &queue_retry_dead, cmd_queue_retry_dead},
    {NULL, NULL, NULL}};

const cli_command cli_cmd_queue = {
    "queue",
    "push|status|results|retry-dead [OPTIONS] URI",
    "share a batch between workers on many hosts (Redis Streams)",
    "A work queue in Redis Streams for `polite run --queue URI` workers on\n"
    "any number of hosts: leases renewed while they wait, a dead worker's\n"
    "entries claimed by the others, one result per id.\n" URI_NOTE,
    NULL,
    "'polite queue push --help' describes one subcommand. See "
    "docs/queue.md.\n",
    NULL,
    0,
    NULL,
    queue_subs};

int cmd_queue(int argc, char **argv) {
  return cli_subcommand(&cli_cmd_queue, argc, argv);
}
