/* Option rows that several commands share, written once so that an option
 * keeps its name, kind and meaning wherever it appears: the scheduler's
 * rows of `polite run` and `polite gateway` (--rate, --budget,
 * --max-attempts, ...), and the network rows of `polite proxy` and `polite
 * gateway` (--listen, --watch, --connect-to, ...). Like src/cli_curl.h's
 * TLS rows, each macro is one or more table rows for options struct T; the
 * field arguments are member designators of T. */
#ifndef POLITE_CLI_ROWS_H
#define POLITE_CLI_ROWS_H

#include "cli.h"

#include <limits.h>
#include <polite/batch.h>

/* What --rate says: the start rate (per second; 0 with AUTO and NONE) and
 * how it is chosen. The row lands in one of these; the command copies mode
 * to polite_batch_options.rate_mode after parsing. Set mode to the
 * command's default (AUTO: learned) before cli_parse. */
typedef struct {
  double per_s;
  polite_rate_mode mode;
} cli_rate;

/* The --rate row's setter: "auto", "none" or N/UNIT into a cli_rate. */
int cli_set_rate(void *opts, const cli_opt *o, const char *v, char *err,
                 size_t errlen);

/* Member designators for offsetof cannot be put in parentheses. */
// NOLINTBEGIN(bugprone-macro-parentheses)
/* clang-format off */

/* ---- The scheduler's rows (polite run, polite gateway) ------------------ */

/* --rate (into a cli_rate RATE), --max-rate, --burst, --concurrency (its
 * default CONC) for options struct T whose polite_batch_options member is
 * BO, the budget's settings BURST and CONCF; G starts the help group. */
#define CLI_ROWS_RATE(T, RATE, BO, BURST, CONCF, CONC, G)                      \
  {"rate", 0, CLI_RATE, "N/UNIT|auto|none", 0, 0, NULL,                        \
   "auto (learned at run time)", NULL,                                         \
   "planned starts: 10/s, 90/min, 1000/h, 5000/day; 'auto' learns the "        \
   "start rate from rate-limit headers and 429/503 answers; 'none' turns "     \
   "pacing off", G, CLI_AT(T, RATE), cli_set_rate, NULL, CLI_F_NONE},          \
  {"max-rate", 0, CLI_RATE, "N/UNIT", 0, 0, NULL, NULL, NULL,                  \
   "cap of the learned rate (--rate auto)", NULL,                              \
   CLI_AT(T, BO.max_rate_per_s), NULL, NULL, CLI_F_NONE},                      \
  {"burst", 0, CLI_UINT, "N", 1, 1000000, "1", NULL, NULL,                     \
   "starts allowed back to back; 1 spaces every start evenly", NULL,           \
   CLI_AT(T, BURST), NULL, NULL, 0},                                           \
  {"concurrency", 0, CLI_UINT, "N", 1, 100000, CONC, NULL, NULL,               \
   "requests in flight at most (a request holds one slot whatever its "        \
   "cost)", NULL, CLI_AT(T, CONCF), NULL, NULL, 0}

/* --budget (a URI string URI) and --budget-scope (default SCOPE: "run" or
 * "host"). */
#define CLI_ROWS_BUDGET(T, URI, BO, SCOPE)                                     \
  {"budget", 0, CLI_STRING, "URI", 0, 0, "local", NULL, NULL,                  \
   "the budget backend: local (this process), file:PATH (processes on one "    \
   "host), redis://HOST:PORT/NAME (hosts); see fleet.md", NULL,                \
   CLI_AT(T, URI), NULL, NULL, 0},                                             \
  {"budget-scope", 0, CLI_ENUM, "run|host", 0, 0, SCOPE, NULL, NULL,           \
   "run: one account for every request; host: one account per URL "           \
   "authority, each with the same rate, burst and concurrency, and each "      \
   "with its own learned rate", NULL, CLI_AT(T, BO.scope_host), NULL,          \
   "run|host", 0}

/* --budget-outage: how long an unusable budget is waited out; each command
 * says what happens after that (HELP). */
#define CLI_ROW_BUDGET_OUTAGE(T, BO, HELP)                                     \
  {"budget-outage", 0, CLI_DURATION, "DURATION", 0, LONG_MAX, "60s", NULL,     \
   NULL, HELP, NULL, CLI_AT(T, BO.budget_outage_ms), NULL, NULL, 0}

/* --max-attempts; G starts the help group. */
#define CLI_ROW_MAX_ATTEMPTS(T, BO, G)                                         \
  {"max-attempts", 0, CLI_UINT, "N", 1, 100, "5", NULL, NULL,                  \
   "network attempts per request, first included: polite never sends more",   \
   G, CLI_AT(T, BO.max_attempts), NULL, NULL, 0}

/* --deadline and --max-wait; each command says from when the deadline runs
 * and what a wait past --max-wait becomes (HELP_D, HELP_W). */
#define CLI_ROWS_WAIT(T, BO, HELP_D, HELP_W)                                   \
  {"deadline", 0, CLI_DURATION, "DURATION", 1, INT64_MAX / 1000, "none",       \
   NULL, NULL, HELP_D, NULL, CLI_AT(T, BO.deadline_ms), NULL, NULL,            \
   CLI_F_NONE},                                                                \
  {"max-wait", 0, CLI_DURATION, "DURATION", 0, LONG_MAX, "15m", NULL, NULL,    \
   HELP_W, NULL, CLI_AT(T, BO.max_wait_ms), NULL, NULL, 0}

/* --idempotency-key; G starts the help group. */
#define CLI_ROW_IDEMPOTENCY_KEY(T, BO, G)                                      \
  {"idempotency-key", 0, CLI_ENUM, "off|auto", 0, 0, "off", NULL, NULL,        \
   "auto: a random key (UUID form) per logical POST/PATCH without one, "       \
   "sent as Idempotency-Key on every attempt", G,                              \
   CLI_AT(T, BO.idempotency_auto), NULL, "off|auto", 0}

/* --log FILE: the attempt log (a string F). */
#define CLI_ROW_ATTEMPT_LOG(T, F, G)                                           \
  {"log", 0, CLI_STRING, "FILE", 0, 0, NULL, "none", NULL,                     \
   "one JSON line per network attempt", G, CLI_AT(T, F), NULL, NULL, 0}

/* ---- The network rows (polite proxy, polite gateway) -------------------- */

/* Each takes the setter SET of the command (NULL: the kind's own), so that
 * a command may check or keep the value its own way. */

/* --listen (default DEF as shown, help HELP); G starts the help group. */
#define CLI_ROW_LISTEN(T, F, SET, DEF, HELP, G)                                \
  {"listen", 0, CLI_CUSTOM, "ADDR:PORT", 0, 0, NULL, DEF, NULL, HELP, G,       \
   CLI_AT(T, F), SET, NULL, 0}

/* --upstream-cacert, --upstream-insecure (into an int F2). */
#define CLI_ROWS_UPSTREAM_TLS(T, F, SET, F2, SET2)                             \
  {"upstream-cacert", 0, CLI_CUSTOM, "FILE", 0, 0, NULL, "the system store",   \
   NULL, "https upstream: trust the CAs in FILE", NULL, CLI_AT(T, F), SET,     \
   NULL, 0},                                                                   \
  {"upstream-insecure", 0, CLI_FLAG, NULL, 1, 1, NULL, NULL, NULL,             \
   "https upstream: do not verify its certificate", NULL, CLI_AT(T, F2),       \
   SET2, NULL, 0}

/* --allow-host, --connect-to, --watch: repeatable lists. */
#define CLI_ROW_ALLOW_HOST(T, F, SET)                                          \
  {"allow-host", 0, CLI_LIST, "GLOB", 0, 0, NULL,                              \
   "any, on a loopback --listen only", NULL,                                   \
   "forward mode connects only to these hosts (repeatable)", NULL,             \
   CLI_AT(T, F), SET, NULL, 0}
#define CLI_ROW_CONNECT_TO(T, F, SET)                                          \
  {"connect-to", 0, CLI_LIST, "HOST:PORT:HOST2:PORT2", 0, 0, NULL, NULL,       \
   NULL, "connect to HOST2:PORT2 when HOST:PORT is asked for (curl's "         \
   "syntax, repeatable; TLS still checks HOST's certificate)", NULL,           \
   CLI_AT(T, F), SET, NULL, 0}
#define CLI_ROW_WATCH(T, F, SET)                                               \
  {"watch", 0, CLI_LIST, "GLOB", 0, 0, NULL, "all", NULL,                      \
   "URLs to act on (repeatable; '*' wildcard, '!' excludes, first match "      \
   "wins)", NULL, CLI_AT(T, F), SET, NULL, 0}

/* --ready-file. */
#define CLI_ROW_READY_FILE(T, F, SET)                                          \
  {"ready-file", 0, CLI_CUSTOM, "FILE", 0, 0, NULL, NULL, NULL,                \
   "write the bound ADDR:PORT here once listening", NULL, CLI_AT(T, F), SET,   \
   NULL, 0}

/* clang-format on */
// NOLINTEND(bugprone-macro-parentheses)

#endif
