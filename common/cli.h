/* The option-table engine every command line and configuration file of
 * polite is read with (common/: the command and the proxy share it), and
 * small helpers shared by the subcommands (not part of libpolite). */
#ifndef POLITE_CLI_H
#define POLITE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses shared by all subcommands (docs/run.md, "Exit status"). */
enum {
  CLI_EXIT_OK = 0,
  CLI_EXIT_FAILED = 1,
  CLI_EXIT_USAGE = 2,
  CLI_EXIT_QUOTA = 3,
  CLI_EXIT_INTERRUPTED = 130
};

/* Prints "polite CMD: <message>" and a hint to stderr ("polite: ..." when
 * cmd is ""); returns CLI_EXIT_USAGE so callers can `return cli_usage(...)`.
 */
int cli_usage(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Parses a whole base-10 unsigned number into *out (no sign, no garbage).
 * Returns 0, or -1 when the text is not such a number or exceeds max. */
int cli_parse_uint(const char *s, unsigned long long max,
                   unsigned long long *out);

/* Parses a whole base-10 signed number into *out. Returns 0 or -1. */
int cli_parse_int(const char *s, long long *out);

/* Writes s as a JSON string (quotes and escapes included) to f. */
void cli_json_string(FILE *f, const char *s);

/* ---- The option table ----------------------------------------------------
 *
 * Each command describes its options as rows of one table (curl's
 * aliases[] in tool_getparam.c is the model): the long name, a short
 * letter, the kind of value, its range, the default, one help line and
 * where the value lands: an offset into the command's options struct, or a
 * setter. One parser (cli_parse) walks the table; --help, the option tables
 * in docs/ (`polite help --markdown CMD`) and the man pages (`polite help
 * --json` feeds tools/polite_docs.py) are generated from it, so a flag is
 * written once. A configuration-file reader uses the same rows through
 * cli_opt_find (names compared without case, '-' and '_' skipped) and
 * cli_opt_set. */

typedef enum {
  CLI_FLAG,     /* no value: stores .min into an int field */
  CLI_UINT,     /* whole number in [min, max] into an unsigned field of
                   4 or 8 bytes (unsigned, uint64_t, size_t) */
  CLI_INT,      /* signed whole number in [min, max] into an int64_t */
  CLI_DURATION, /* 250ms, 2s, 1h30m: int64_t milliseconds in [min, max] */
  CLI_RATE,     /* N/UNIT (s, min, h, day): double per second, > 0 */
  CLI_SIZE,     /* bytes, optionally with k, M, G (KiB, MiB, GiB): size_t
                   in [min, max] */
  CLI_STRING,   /* const char * (borrowed from argv or the default) */
  CLI_ENUM,     /* one of .choices "a|b|c": int index */
  CLI_LIST,     /* repeatable string: appended to a cli_list */
  CLI_CUSTOM    /* .set parses the value */
} cli_kind;

/* Row flags. */
enum {
  CLI_F_SECRET = 1, /* the value never appears in a message */
  CLI_F_NONE = 2,   /* "none" is accepted: -1 for durations and ints, 0 for
                       rates and sizes, NULL for strings */
  CLI_F_HIDDEN = 4  /* parsed, but left out of help and docs */
};

/* A repeatable option's values (borrowed strings; the array is malloc'ed
 * and freed by cli_free). */
typedef struct {
  const char **v;
  size_t n;
} cli_list;

typedef struct cli_opt cli_opt;
/* A setter: parses val into the options struct `opts`. Returns 0, or -1
 * with a message in err (without the option's name: the parser adds it;
 * never quoting a CLI_F_SECRET value). */
typedef int (*cli_setter)(void *opts, const cli_opt *o, const char *val,
                          char *err, size_t errlen);

struct cli_opt {
  const char *name;    /* long name without "--"; NULL ends the table */
  char shrt;           /* short letter, or 0 */
  cli_kind kind;       /* what the value is */
  const char *arg;     /* the value's placeholder in help: "N/UNIT" */
  long long min, max;  /* range (CLI_UINT/INT/DURATION/SIZE); the value a
                          CLI_FLAG stores is min */
  const char *def;     /* default, parsed like a value at cli_defaults;
                          NULL: the struct's zero (or what the command set) */
  const char *def_doc; /* default as help shows it when not def itself */
  const char *env;     /* environment variable that replaces def, or NULL */
  const char *help;    /* one sentence */
  const char *group;   /* section heading in help; NULL: the previous one */
  size_t off, size;    /* where it lands (offsetof, sizeof) */
  cli_setter set;      /* instead of off/size when not NULL */
  const char *choices; /* CLI_ENUM: "run|host" */
  unsigned flags;      /* CLI_F_* */
};

/* Row builders: adding an option is adding a line. T is the options struct
 * type, F the field. */
#define CLI_AT(T, F) offsetof(T, F), sizeof(((T *)0)->F)
#define CLI_ROW_END                                                            \
  {                                                                            \
    NULL, 0, CLI_FLAG, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL,   \
        NULL, 0                                                                \
  }

/* An option another tool has and polite spells differently or does not
 * need (curl's --retry is polite run's --max-attempts): named in the
 * "unknown option" message instead of a bare refusal. */
typedef struct {
  const char *name;    /* long name without "--", or NULL (short only) */
  char shrt;           /* short letter, or 0 */
  const char *instead; /* polite's option (long name) that does the job; the
                          row applies only to a command that has it. NULL:
                          the row applies to every command */
  const char *why;     /* how they differ, or why none is needed */
} cli_foreign;

typedef struct cli_command cli_command;

/* A subcommand (git's OPT_SUBCOMMAND, Redis's container commands): the
 * word that names it, its own command (name: the whole path, "budget
 * show"), and the function that runs it with argv[0] that word. */
typedef struct {
  const char *word;       /* NULL ends the list */
  const cli_command *cmd; /* NULL: not part of this build */
  int (*fn)(int argc, char **argv);
} cli_sub;

/* A command: its usage line, description, options and what follows them in
 * help (exit status, notes). A command with subcommands and no options of
 * its own (opts NULL) needs a subcommand ("polite budget show"); one with
 * both runs itself when argv[1] names none ("polite proxy" and "polite
 * proxy ca"). */
struct cli_command {
  const char *name;           /* "run", "budget show" */
  const char *synopsis;       /* "[OPTIONS] [FILE|-]" */
  const char *summary;        /* one line, for `polite --help` and man NAME */
  const char *description;    /* paragraphs for --help (may be NULL) */
  const cli_opt *opts;        /* NULL: none */
  const char *footer;         /* after the options in --help (may be NULL) */
  const char *unknown_hint;   /* appended to "unknown option" (may be NULL) */
  int max_positional;         /* positional arguments allowed */
  const cli_foreign *foreign; /* other tools' options (NULL-ended), or NULL */
  const cli_sub *subs;        /* subcommands, or NULL */
};

/* The most positional arguments any command takes (polite report's logs). */
#define CLI_MAX_POSITIONAL 64

/* What is left after the options: positional arguments in order. */
typedef struct {
  const char *v[CLI_MAX_POSITIONAL];
  int n;
} cli_args;

/* Applies every row's default (def, or $env when set) to opts. Returns 0,
 * or CLI_EXIT_USAGE with a message naming the option when a default or an
 * environment value is invalid. */
int cli_defaults(const cli_command *cmd, void *opts);

/* Parses argv[1..argc) into opts: "--name VALUE", "--name=VALUE", "-x
 * VALUE", "-xVALUE", bundled flags "-kq", "--" ends the options. Returns -1
 * to go on, CLI_EXIT_OK after printing --help, or CLI_EXIT_USAGE after a
 * message that names the option and (unless secret) the value. */
int cli_parse(const cli_command *cmd, int argc, char **argv, void *opts,
              cli_args *pos);

/* Runs the subcommand argv[1] names (argv[0] is cmd's own word) with
 * argc - 1, argv + 1 and returns its exit status. A command without options
 * of its own needs one: `--help` prints its help (CLI_EXIT_OK); a missing or
 * unknown word, or an option before the word, is CLI_EXIT_USAGE after a
 * message that lists the subcommands. Returns -1 when cmd has options of
 * its own and argv[1] names no subcommand: the caller parses argv. */
int cli_subcommand(const cli_command *cmd, int argc, char **argv);

/* cmd's subcommand named word (built or not), or NULL. */
const cli_sub *cli_sub_find(const cli_command *cmd, const char *word);

/* Frees what cli_parse allocated in opts (the arrays of CLI_LIST rows). */
void cli_free(const cli_command *cmd, void *opts);

/* The row named `name` (len bytes; no leading dashes). loose: compare
 * without case and skipping '-' and '_' (configuration keys: "max-body",
 * "max_body", "maxBody"), else exactly. NULL when there is none. */
const cli_opt *cli_opt_find(const cli_opt *table, const char *name, size_t len,
                            int loose);

/* Parses val for row o into opts. val NULL for a CLI_FLAG. Returns 0, or
 * -1 with a message in err that names neither the option nor (for a
 * secret) the value. */
int cli_opt_set(const cli_opt *o, void *opts, const char *val, char *err,
                size_t errlen);

/* A configuration file's value for row o (a JSON string, number or
 * boolean, as jansson's json_t; void * so this header needs no jansson):
 * numbers are read as their decimal text, true sets a flag, false leaves
 * it. Returns 0 or -1 with a message in err. */
int cli_opt_set_json(const cli_opt *o, void *opts, const void *json, char *err,
                     size_t errlen);

/* Applies every member of a JSON object (a json_t *) to opts: each key is
 * looked up loosely (case, '-' and '_' ignored) in table. Returns 0, or -1
 * with "key 'K': <why>" (or "unknown key 'K'") in err. */
int cli_config_apply(const cli_opt *table, void *opts, const void *object,
                     char *err, size_t errlen);

/* The same for a configuration file's text (len bytes, need not be
 * NUL-terminated) named `name`: JSON with duplicate keys refused, keys
 * starting with '$' ("$schema") and null values skipped, an array item of
 * a repeatable row must be a string. Errors name the file, the line of the
 * key and the field: "c.json:3: field 'quota': expected ...", "c.json:2:5:
 * <syntax error>", "c.json:1: expected a JSON object of options". */
int cli_config_apply_text(const cli_opt *table, void *opts, const char *text,
                          size_t len, const char *name, char *err,
                          size_t errlen);

/* Stores val as row o's kind would, ignoring its setter: a setter that
 * only validates ends with this. */
int cli_opt_store(const cli_opt *o, void *opts, const char *val, char *err,
                  size_t errlen);

/* Writes help generated from the table to f. */
void cli_help(const cli_command *cmd, FILE *f);
/* Writes the docs/ option table (Markdown) to f; for a command without
 * options of its own, the table of its subcommands. */
void cli_help_markdown(const cli_command *cmd, FILE *f);
/* Writes the command, its table and its subcommands (each the same kind of
 * object, recursively) as one JSON object, for tools/polite_docs.py. */
void cli_help_json(const cli_command *cmd, FILE *f);

/* Parses a byte size: "16777216", "64k", "16M", "16MiB", "1G". Returns 0 or
 * -1 (not a size, or above max). */
int cli_parse_size(const char *s, unsigned long long max,
                   unsigned long long *out);

/* Shared by cli.c and cli_help.c only (not for commands): cmd's rows (a
 * command without options of its own has an empty table), and whether a
 * row takes a value. */
const cli_opt *cli__rows(const cli_command *cmd);
int cli__takes_value(const cli_opt *o);

#endif
