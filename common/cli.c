/* Small helpers shared by the polite subcommands, and the one parser that
 * walks a command's option table (cli.h). The help generated from the same
 * table is in cli_help.c. */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <polite/core.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "polite%s%s: ", cmd[0] ? " " : "", cmd);
  va_start(ap, fmt);
  /* va_start is right above; clang 14's checker misses it here (it flags
     the same code on main). */
  // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nTry 'polite%s%s --help'.\n", cmd[0] ? " " : "", cmd);
  return CLI_EXIT_USAGE;
}

int cli_parse_uint(const char *s, unsigned long long max,
                   unsigned long long *out) {
  if (s == NULL || !isdigit((unsigned char)s[0]))
    return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > max)
    return -1;
  *out = v;
  return 0;
}

int cli_parse_int(const char *s, long long *out) {
  if (s == NULL || s[0] == '\0')
    return -1;
  const char *d = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
  if (!isdigit((unsigned char)d[0]))
    return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return -1;
  *out = v;
  return 0;
}

void cli_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
      if (*p < 0x20)
        fprintf(f, "\\u%04x", *p);
      else
        fputc(*p, f);
    }
  }
  fputc('"', f);
}

int cli_parse_size(const char *s, unsigned long long max,
                   unsigned long long *out) {
  static const struct {
    const char *suffix;
    unsigned shift;
  } units[] = {{"", 0},    {"b", 0},    {"k", 10}, {"kib", 10},
               {"m", 20},  {"mib", 20}, {"g", 30}, {"gib", 30},
               {"kb", 10}, {"mb", 20},  {"gb", 30}};
  if (s == NULL || !isdigit((unsigned char)s[0]))
    return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0)
    return -1;
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    if (strcasecmp(end, units[i].suffix) != 0)
      continue;
    if (v > (max >> units[i].shift))
      return -1;
    *out = v << units[i].shift;
    return 0;
  }
  return -1;
}

/* ---- Matching names ------------------------------------------------------ */

/* 1 when a (alen bytes) and b (NUL-terminated) are one name to a
 * configuration file: ASCII case ignored, '-' and '_' skipped, so that
 * "failure-rate", "failure_rate" and Dev Proxy's "failureRate" are one. */
static int loose_equal(const char *a, size_t alen, const char *b) {
  size_t i = 0;
  for (;;) {
    while (i < alen && (a[i] == '-' || a[i] == '_'))
      i++;
    while (*b == '-' || *b == '_')
      b++;
    if (i == alen || *b == '\0')
      return i == alen && *b == '\0';
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)*b))
      return 0;
    i++;
    b++;
  }
}

const cli_opt *cli_opt_find(const cli_opt *table, const char *name, size_t len,
                            int loose) {
  for (const cli_opt *o = table; o->name; o++) {
    if (loose ? loose_equal(name, len, o->name)
              : strlen(o->name) == len && memcmp(o->name, name, len) == 0)
      return o;
  }
  return NULL;
}

static const cli_opt *find_short(const cli_opt *table, char c) {
  for (const cli_opt *o = table; o->name; o++)
    if (o->shrt == c)
      return o;
  return NULL;
}

const cli_opt *cli__rows(const cli_command *cmd) {
  static const cli_opt none[] = {CLI_ROW_END};
  return cmd->opts ? cmd->opts : none;
}

/* ---- Values -------------------------------------------------------------- */

static void *field(void *opts, const cli_opt *o) {
  return (char *)opts + o->off;
}

/* Stores v in an unsigned field of o->size bytes. */
static void store_uint(void *opts, const cli_opt *o, unsigned long long v) {
  if (o->size == sizeof(unsigned))
    *(unsigned *)field(opts, o) = (unsigned)v;
  else
    *(unsigned long long *)field(opts, o) = v;
}

static int is_none(const cli_opt *o, const char *val) {
  return (o->flags & CLI_F_NONE) && strcmp(val, "none") == 0;
}

/* "'VALUE'" for a message, or "a value (not shown)" for a secret. */
static const char *shown(const cli_opt *o, const char *val, char *buf,
                         size_t n) {
  if (o->flags & CLI_F_SECRET)
    return "a value (not shown: it may be a secret)";
  snprintf(buf, n, "'%.200s'", val);
  return buf;
}

static int set_uint(const cli_opt *o, void *opts, const char *val, char *err,
                    size_t errlen) {
  unsigned long long v, max = (unsigned long long)o->max;
  char b[240];
  if (o->kind == CLI_SIZE) {
    if (is_none(o, val)) {
      store_uint(opts, o, 0);
      return 0;
    }
    if (cli_parse_size(val, max, &v) != 0 || v < (unsigned long long)o->min) {
      snprintf(err, errlen,
               "expected a size from %lld to %lld bytes (k, M, G allowed: "
               "64k, 16M), got %s",
               o->min, o->max, shown(o, val, b, sizeof b));
      return -1;
    }
  } else if (cli_parse_uint(val, max, &v) != 0 ||
             v < (unsigned long long)o->min) {
    snprintf(err, errlen, "expected a whole number from %lld to %llu, got %s",
             o->min, max, shown(o, val, b, sizeof b));
    return -1;
  }
  store_uint(opts, o, v);
  return 0;
}

static int set_int(const cli_opt *o, void *opts, const char *val, char *err,
                   size_t errlen) {
  long long v;
  char b[240];
  if (is_none(o, val))
    v = -1;
  else if (cli_parse_int(val, &v) != 0 || v < o->min || v > o->max) {
    snprintf(err, errlen, "expected a whole number from %lld to %lld, got %s",
             o->min, o->max, shown(o, val, b, sizeof b));
    return -1;
  }
  *(int64_t *)field(opts, o) = (int64_t)v;
  return 0;
}

static int set_duration(const cli_opt *o, void *opts, const char *val,
                        char *err, size_t errlen) {
  int64_t ms;
  char b[240];
  if (is_none(o, val)) {
    *(int64_t *)field(opts, o) = -1;
    return 0;
  }
  int rc = polite_duration_parse(val, &ms);
  if (rc != 0 || ms < o->min || ms > o->max) {
    const char *why = rc == POLITE_ERANGE ? " (too large)"
                      : rc != 0           ? " (e.g. 250ms, 2s, 1m, 1h30m)"
                      : ms < o->min && o->min == 1 ? " (it must be above zero)"
                                                   : "";
    snprintf(err, errlen, "invalid duration %s%s%s", shown(o, val, b, sizeof b),
             why, (o->flags & CLI_F_NONE) ? "; 'none' turns it off" : "");
    return -1;
  }
  *(int64_t *)field(opts, o) = ms;
  return 0;
}

static int set_rate(const cli_opt *o, void *opts, const char *val, char *err,
                    size_t errlen) {
  double r;
  char b[240];
  if (is_none(o, val)) {
    *(double *)field(opts, o) = 0;
    return 0;
  }
  if (polite_rate_parse(val, &r) != 0 || !(r > 0)) {
    snprintf(err, errlen,
             "invalid rate %s (N/UNIT with N > 0 and a unit of s, min, h or "
             "day: 10/s, 90/min)",
             shown(o, val, b, sizeof b));
    return -1;
  }
  *(double *)field(opts, o) = r;
  return 0;
}

static int set_enum(const cli_opt *o, void *opts, const char *val, char *err,
                    size_t errlen) {
  int idx = 0;
  size_t vl = strlen(val);
  for (const char *c = o->choices; *c; idx++) {
    size_t n = strcspn(c, "|");
    if (n == vl && strncmp(c, val, n) == 0) {
      *(int *)field(opts, o) = idx;
      return 0;
    }
    c += n + (c[n] == '|');
  }
  char b[240];
  snprintf(err, errlen, "expected one of %s, got %s", o->choices,
           shown(o, val, b, sizeof b));
  return -1;
}

static int set_list(const cli_opt *o, void *opts, const char *val, char *err,
                    size_t errlen) {
  cli_list *l = field(opts, o);
  const char **nv = realloc(l->v, (l->n + 1) * sizeof *nv);
  if (nv == NULL) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  nv[l->n++] = val;
  l->v = nv;
  return 0;
}

int cli_opt_set(const cli_opt *o, void *opts, const char *val, char *err,
                size_t errlen) {
  if (o->set)
    return o->set(opts, o, val, err, errlen);
  switch (o->kind) {
  case CLI_FLAG: *(int *)field(opts, o) = (int)o->min; return 0;
  case CLI_UINT:
  case CLI_SIZE: return set_uint(o, opts, val, err, errlen);
  case CLI_INT: return set_int(o, opts, val, err, errlen);
  case CLI_DURATION: return set_duration(o, opts, val, err, errlen);
  case CLI_RATE: return set_rate(o, opts, val, err, errlen);
  case CLI_ENUM: return set_enum(o, opts, val, err, errlen);
  case CLI_LIST: return set_list(o, opts, val, err, errlen);
  case CLI_STRING:
    *(const char **)field(opts, o) = is_none(o, val) ? NULL : val;
    return 0;
  case CLI_CUSTOM: break;
  }
  snprintf(err, errlen, "this option has no setter");
  return -1;
}

int cli_opt_store(const cli_opt *o, void *opts, const char *val, char *err,
                  size_t errlen) {
  cli_opt plain = *o;
  plain.set = NULL;
  return cli_opt_set(&plain, opts, val, err, errlen);
}

int cli_opt_set_json(const cli_opt *o, void *opts, const void *json, char *err,
                     size_t errlen) {
  const json_t *v = json;
  char text[64];
  const char *val = NULL;
  if (o->kind == CLI_FLAG) {
    if (!json_is_boolean(v)) {
      snprintf(err, errlen, "expected true or false");
      return -1;
    }
    return json_is_true(v) ? cli_opt_set(o, opts, NULL, err, errlen) : 0;
  }
  if (json_is_string(v))
    val = json_string_value(v);
  else if (json_is_integer(v))
    snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else if (json_is_real(v) && o->kind == CLI_DURATION)
    snprintf(text, sizeof text, "%.3fs", json_real_value(v));
  else if (json_is_real(v) && o->kind == CLI_CUSTOM)
    snprintf(text, sizeof text, "%.17g", json_real_value(v)); /* its setter
                                                                 decides */
  else {
    snprintf(err, errlen, "expected a string%s",
             o->kind == CLI_UINT || o->kind == CLI_INT || o->kind == CLI_SIZE
                 ? " or a whole number"
                 : "");
    return -1;
  }
  return cli_opt_set(o, opts, val ? val : text, err, errlen);
}

/* Line of the first occurrence of "key" in text (0 when text is NULL):
 * jansson gives positions only for syntax errors, and the field's line is
 * what a reader looks for. */
static int key_line(const char *text, size_t len, const char *key) {
  size_t k = strlen(key);
  int line = 1;
  for (size_t i = 0; text && i < len; i++) {
    if (text[i] == '\n')
      line++;
    else if (text[i] == '"' && i + k + 1 < len &&
             memcmp(text + i + 1, key, k) == 0 && text[i + k + 1] == '"')
      return line;
  }
  return 0;
}

/* A member's error: "NAME:LINE: field 'K': --OPTION: why" for a file (the
 * key as written and the option it names), "key 'K': why" for an object
 * without one. */
static void member_error(char *err, size_t errlen, const char *name,
                         const char *text, size_t len, const char *key,
                         const cli_opt *o, const char *item, const char *why) {
  if (name && o)
    snprintf(err, errlen, "%s:%d: field '%.64s'%s: --%s: %s", name,
             key_line(text, len, key), key, item, o->name, why);
  else if (name)
    snprintf(err, errlen, "%s:%d: field '%.64s'%s: %s", name,
             key_line(text, len, key), key, item, why);
  else
    snprintf(err, errlen, "key '%.64s'%s: %s", key, item, why);
}

/* The one walk over a JSON object's members (cli_config_apply and
 * cli_config_apply_text): keys looked up loosely, an array feeds a
 * repeatable row item by item (strings only), "$schema"-like keys and nulls
 * are skipped in files. text/len/name: the file, for messages. */
static int apply_members(const cli_opt *table, void *opts, const json_t *obj,
                         const char *text, size_t len, const char *name,
                         char *err, size_t errlen) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    if (name && (key[0] == '$' || json_is_null(v)))
      continue;
    const cli_opt *o = cli_opt_find(table, key, strlen(key), 1);
    char why[300], item[32] = "";
    if (o == NULL) {
      if (name)
        member_error(err, errlen, name, text, len, key, NULL, "",
                     "unknown option");
      else
        snprintf(err, errlen, "unknown key '%.64s'", key);
      return -1;
    }
    if (o->kind == CLI_LIST && json_is_array(v)) {
      size_t i;
      json_t *it;
      json_array_foreach(v, i, it) {
        int rc = json_is_string(it) || !name
                     ? cli_opt_set_json(o, opts, it, why, sizeof why)
                     : (snprintf(why, sizeof why, "expected a string"), -1);
        if (rc != 0) {
          snprintf(item, sizeof item, name ? "[%zu]" : " item %zu", i);
          member_error(err, errlen, name, text, len, name ? key : o->name, o,
                       item, why);
          return -1;
        }
      }
      continue;
    }
    if (cli_opt_set_json(o, opts, v, why, sizeof why) != 0) {
      member_error(err, errlen, name, text, len, name ? key : o->name, o, "",
                   why);
      return -1;
    }
  }
  return 0;
}

int cli_config_apply(const cli_opt *table, void *opts, const void *object,
                     char *err, size_t errlen) {
  if (!json_is_object((const json_t *)object)) {
    snprintf(err, errlen, "expected a JSON object");
    return -1;
  }
  return apply_members(table, opts, object, NULL, 0, NULL, err, errlen);
}

int cli_config_apply_text(const cli_opt *table, void *opts, const char *text,
                          size_t len, const char *name, char *err,
                          size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (root == NULL) {
    snprintf(err, errlen, "%s:%d:%d: %s", name, je.line, je.column, je.text);
    return -1;
  }
  int rc = -1;
  if (!json_is_object(root))
    snprintf(err, errlen, "%s:1: expected a JSON object of options", name);
  else
    rc = apply_members(table, opts, root, text, len, name, err, errlen);
  json_decref(root);
  return rc;
}

/* "--name" or "-x, --name" for messages. */
static const char *label(const cli_opt *o, char *buf, size_t n) {
  snprintf(buf, n, "--%s", o->name);
  return buf;
}

int cli_defaults(const cli_command *cmd, void *opts) {
  for (const cli_opt *o = cli__rows(cmd); o->name; o++) {
    const char *v = o->def;
    const char *from = "default";
    const char *e = o->env ? getenv(o->env) : NULL;
    if (e && *e) {
      v = e;
      from = o->env;
    }
    if (v == NULL || o->kind == CLI_FLAG || o->kind == CLI_LIST)
      continue;
    char err[300], lb[64];
    if (cli_opt_set(o, opts, v, err, sizeof err) != 0)
      return cli_usage(cmd->name, "%s (from %s): %s", label(o, lb, sizeof lb),
                       from, err);
  }
  return 0;
}

void cli_free(const cli_command *cmd, void *opts) {
  for (const cli_opt *o = cli__rows(cmd); o->name; o++)
    if (o->kind == CLI_LIST) { /* a setter may validate, the list is here */
      cli_list *l = field(opts, o);
      free(l->v);
      l->v = NULL;
      l->n = 0;
    }
}

/* ---- The parser ---------------------------------------------------------- */

int cli__takes_value(const cli_opt *o) {
  return o->kind != CLI_FLAG;
}

/* Applies one option; val NULL for a flag. */
static int apply(const cli_command *cmd, const cli_opt *o, const char *as,
                 void *opts, const char *val) {
  char err[400];
  if (cli_opt_set(o, opts, val, err, sizeof err) != 0)
    return cli_usage(cmd->name, "%s: %s", as, err);
  return -1;
}

/* The "unknown option" error for --name (n bytes) or -c (name NULL): what
 * the command's table of other tools' options says about it (the first row
 * that names it and applies to this command), else the command's hint. */
static int unknown(const cli_command *cmd, const char *name, size_t n, char c) {
  char opt[80];
  if (name)
    snprintf(opt, sizeof opt, "--%.*s", (int)(n > 64 ? 64 : n), name);
  else
    snprintf(opt, sizeof opt, "-%c", c);
  for (const cli_foreign *f = cmd->foreign; f && (f->name || f->shrt); f++) {
    int named =
        name ? f->name && strlen(f->name) == n && memcmp(f->name, name, n) == 0
             : f->shrt == c;
    if (!named || (f->instead && !cli_opt_find(cli__rows(cmd), f->instead,
                                               strlen(f->instead), 0)))
      continue;
    if (f->instead)
      return cli_usage(cmd->name, "unknown option '%s': use --%s (%s)", opt,
                       f->instead, f->why);
    return cli_usage(cmd->name, "unknown option '%s': not needed (%s)", opt,
                     f->why);
  }
  return cli_usage(cmd->name, "unknown option '%s'%s", opt,
                   cmd->unknown_hint ? cmd->unknown_hint : "");
}

/* A long option at argv[*i] ("--name" or "--name=value"). */
static int parse_long(const cli_command *cmd, int argc, char **argv, int *i,
                      void *opts) {
  const char *a = argv[*i] + 2;
  const char *eq = strchr(a, '=');
  size_t n = eq ? (size_t)(eq - a) : strlen(a);
  const cli_opt *o = cli_opt_find(cli__rows(cmd), a, n, 0);
  if (o == NULL)
    return unknown(cmd, a, n, 0);
  char lb[64];
  label(o, lb, sizeof lb);
  if (!cli__takes_value(o)) {
    if (eq)
      return cli_usage(cmd->name, "%s takes no value", lb);
    return apply(cmd, o, lb, opts, NULL);
  }
  if (eq)
    return apply(cmd, o, lb, opts, eq + 1);
  if (*i + 1 >= argc)
    return cli_usage(cmd->name, "%s needs a value (%s)", lb,
                     o->arg ? o->arg : "VALUE");
  return apply(cmd, o, lb, opts, argv[++*i]);
}

/* Short options at argv[*i]: "-k", "-kq" (bundled flags), "-H value",
 * "-Hvalue". */
static int parse_short(const cli_command *cmd, int argc, char **argv, int *i,
                       void *opts) {
  const char *a = argv[*i];
  for (size_t k = 1; a[k]; k++) {
    const cli_opt *o = find_short(cli__rows(cmd), a[k]);
    if (o == NULL)
      return unknown(cmd, NULL, 0, a[k]);
    char lb[8];
    snprintf(lb, sizeof lb, "-%c", o->shrt);
    int rc;
    if (!cli__takes_value(o)) {
      if ((rc = apply(cmd, o, lb, opts, NULL)) >= 0)
        return rc;
      continue;
    }
    if (a[k + 1])
      return apply(cmd, o, lb, opts, a + k + 1);
    if (*i + 1 >= argc)
      return cli_usage(cmd->name, "%s needs a value (%s)", lb,
                       o->arg ? o->arg : "VALUE");
    return apply(cmd, o, lb, opts, argv[++*i]);
  }
  return -1;
}

/* "show, clear": cmd's subcommand words, for messages. */
static const char *sub_words(const cli_command *cmd, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = '\0';
  for (const cli_sub *s = cmd->subs; s && s->word && k < n; s++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", s->word);
  return buf;
}

static int add_positional(const cli_command *cmd, cli_args *pos,
                          const char *a) {
  if (pos->n >= cmd->max_positional || pos->n >= CLI_MAX_POSITIONAL) {
    char subs[200];
    if (cmd->max_positional == 0)
      return cli_usage(cmd->name,
                       "unexpected argument '%.200s' (%s takes "
                       "only options%s%s)",
                       a, cmd->name, cmd->subs ? ", or a subcommand: " : "",
                       cmd->subs ? sub_words(cmd, subs, sizeof subs) : "");
    return cli_usage(cmd->name,
                     "too many arguments: '%.200s' after '%.200s' (at most "
                     "%d)",
                     a, pos->v[pos->n - 1], cmd->max_positional);
  }
  pos->v[pos->n++] = a;
  return -1;
}

int cli_parse(const cli_command *cmd, int argc, char **argv, void *opts,
              cli_args *pos) {
  int end = 0, rc;
  pos->n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (end || a[0] != '-' || a[1] == '\0')
      rc = add_positional(cmd, pos, a);
    else if (strcmp(a, "--") == 0) {
      end = 1;
      continue;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      cli_help(cmd, stdout);
      return CLI_EXIT_OK;
    } else if (a[1] == '-')
      rc = parse_long(cmd, argc, argv, &i, opts);
    else
      rc = parse_short(cmd, argc, argv, &i, opts);
    if (rc >= 0)
      return rc;
  }
  return -1;
}

/* ---- Subcommands ----------------------------------------------------------
 */

const cli_sub *cli_sub_find(const cli_command *cmd, const char *word) {
  for (const cli_sub *s = cmd->subs; s && s->word; s++)
    if (strcmp(s->word, word) == 0)
      return s;
  return NULL;
}

int cli_subcommand(const cli_command *cmd, int argc, char **argv) {
  const char *w = argc > 1 ? argv[1] : NULL;
  const cli_sub *s = w ? cli_sub_find(cmd, w) : NULL;
  char subs[200];
  if (s && (s->cmd == NULL || s->fn == NULL))
    return cli_usage(cmd->name, "'%s' is not part of this build", w);
  if (s)
    return s->fn(argc - 1, argv + 1);
  if (cmd->subs == NULL || cmd->opts != NULL)
    return -1;
  sub_words(cmd, subs, sizeof subs);
  const char *what = cmd->name[0] ? "subcommand" : "command";
  if (w && (strcmp(w, "--help") == 0 || strcmp(w, "-h") == 0)) {
    cli_help(cmd, stdout);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
  }
  if (w == NULL)
    return cli_usage(cmd->name, "expected a %s: %s", what, subs);
  if (w[0] == '-')
    return cli_usage(cmd->name,
                     "'%.64s' before the %s: the %s (%s) comes first, its "
                     "options after it",
                     w, what, what, subs);
  return cli_usage(cmd->name, "unknown %s '%.64s' (expected one of: %s)", what,
                   w, subs);
}
