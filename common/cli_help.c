/* The help generated from a command's option table (cli.h): the --help
 * text, the docs/ Markdown table and the JSON that tools/polite_docs.py
 * turns into man pages, so that no option is described by hand twice. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

/* "-H, --header 'K: V'" */
static void opt_title(const cli_opt *o, char *buf, size_t n) {
  int k = 0;
  if (o->shrt)
    k = snprintf(buf, n, "-%c, ", o->shrt);
  snprintf(buf + k, n - (size_t)k, "--%s%s%s", o->name, o->arg ? " " : "",
           o->arg ? o->arg : "");
}

/* The default as help shows it, with the range of a bounded number
 * ("5 (1..100)"); NULL when there is nothing to show. */
static const char *def_text(const cli_opt *o, char *buf, size_t n) {
  const char *d = o->def_doc ? o->def_doc : o->def;
  /* Unset flags are off, unset values none; a negating flag (min 0),
   * a repeatable or a custom row has nothing to show. */
  if (d == NULL && o->kind == CLI_FLAG && o->min != 0)
    d = "off";
  else if (d == NULL && o->kind != CLI_FLAG && o->kind != CLI_LIST &&
           o->kind != CLI_CUSTOM)
    d = "none";
  int ranged = (o->kind == CLI_UINT || o->kind == CLI_INT) &&
               o->max <= 1000000000000LL && o->max > o->min;
  if (!ranged)
    return d;
  snprintf(buf, n, "%s%s%lld..%lld%s", d ? d : "", d ? " (" : "", o->min,
           o->max, d ? ")" : "");
  return buf;
}

/* Writes text word-wrapped to `width`, every line but the first indented
 * by `indent` spaces; `col` is the column the first line starts at. */
static void wrap(FILE *f, const char *text, int col, int indent, int width) {
  const char *p = text;
  while (*p) {
    size_t w = strcspn(p, " ");
    if (col > indent && col + 1 + (int)w > width) {
      fprintf(f, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', f);
      col++;
    }
    fwrite(p, 1, w, f);
    col += (int)w;
    p += w;
    while (*p == ' ')
      p++;
  }
  fputc('\n', f);
}

/* The subcommands' words and summaries, one per line. */
static void help_subs(const cli_command *cmd, FILE *f) {
  fprintf(f, "%s:\n", cmd->name[0] ? "Subcommands" : "Commands");
  for (const cli_sub *s = cmd->subs; s->word; s++)
    fprintf(f, "  %-9s %s\n", s->word, s->cmd ? s->cmd->summary : "");
  fputc('\n', f);
}

void cli_help(const cli_command *cmd, FILE *f) {
  fprintf(f, "Usage: polite%s%s %s\n\n", cmd->name[0] ? " " : "", cmd->name,
          cmd->synopsis);
  if (cmd->description)
    fprintf(f, "%s\n", cmd->description);
  if (cmd->subs)
    help_subs(cmd, f);
  const char *group = NULL;
  for (const cli_opt *o = cli__rows(cmd); o->name; o++) {
    if (o->flags & CLI_F_HIDDEN)
      continue;
    if (o->group && (group == NULL || strcmp(group, o->group) != 0)) {
      group = o->group;
      fprintf(f, "%s:\n", group);
    } else if (group == NULL) {
      group = "Options";
      fprintf(f, "Options:\n");
    }
    char t[96], text[600], db[96];
    opt_title(o, t, sizeof t);
    const char *d = def_text(o, db, sizeof db);
    snprintf(text, sizeof text, "%s%s%s%s%s%s%s", o->help,
             d ? " [default: " : "", d ? d : "", d ? "]" : "",
             o->env ? " [env: " : "", o->env ? o->env : "", o->env ? "]" : "");
    int col = fprintf(f, "  %s", t);
    if (col >= 25) {
      fputc('\n', f);
      col = 0;
    }
    fprintf(f, "%*s", 26 - col, "");
    wrap(f, text, 26, 26, 79);
  }
  fprintf(f, "%s  -h, --help              this help\n",
          group ? "" : "Options:\n");
  if (cmd->footer)
    fprintf(f, "\n%s", cmd->footer);
}

/* Markdown table cell text: '|' escaped. */
static void md_cell(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '|')
      fputc('\\', f);
    fputc(*s, f);
  }
}

void cli_help_markdown(const cli_command *cmd, FILE *f) {
  if (cmd->opts == NULL && cmd->subs) {
    fprintf(f, "| Command | What it does |\n|---|---|\n");
    for (const cli_sub *s = cmd->subs; s->word; s++)
      if (s->cmd) {
        fprintf(f, "| `polite %s` | ", s->cmd->name);
        md_cell(f, s->cmd->summary);
        fputs(" |\n", f);
      }
    return;
  }
  fprintf(f, "| Option | Default | Meaning |\n|---|---|---|\n");
  for (const cli_opt *o = cli__rows(cmd); o->name; o++) {
    if (o->flags & CLI_F_HIDDEN)
      continue;
    char t[96];
    opt_title(o, t, sizeof t);
    fputs("| `", f);
    md_cell(f, t);
    fputs("` | ", f);
    char db[96];
    const char *d = def_text(o, db, sizeof db);
    md_cell(f, d ? d : "");
    if (o->env) {
      fprintf(f, "%s`$%s`", d ? "; " : "", o->env);
    }
    fputs(" | ", f);
    md_cell(f, o->help);
    fputs(" |\n", f);
  }
}

static const char *kind_name(cli_kind k) {
  static const char *const names[] = {"flag", "uint",  "int",    "duration",
                                      "rate", "size",  "string", "enum",
                                      "list", "custom"};
  return names[k];
}

/* Writes `,"key":` and value as a JSON string; a NULL value is null when
 * null_ok, else "" (a field every reader expects as a string). */
static void json_field(FILE *f, const char *key, const char *value,
                       int null_ok) {
  fprintf(f, ",\"%s\":", key);
  if (value || !null_ok)
    cli_json_string(f, value);
  else
    fputs("null", f);
}

/* One row as a JSON object. */
static void json_row(const cli_opt *o, FILE *f) {
  char t[96], db[96], shrt[2] = {o->shrt, 0};
  opt_title(o, t, sizeof t);
  fputs("{\"title\":", f);
  cli_json_string(f, t);
  json_field(f, "name", o->name, 0);
  json_field(f, "short", o->shrt ? shrt : NULL, 1);
  fprintf(f, ",\"kind\":\"%s\",\"takes_value\":%s", kind_name(o->kind),
          cli__takes_value(o) ? "true" : "false");
  json_field(f, "default", def_text(o, db, sizeof db), 1);
  json_field(f, "env", o->env, 1);
  json_field(f, "group", o->group, 1);
  json_field(f, "help", o->help, 0);
  fputc('}', f);
}

/* cmd and its subcommands (those built), recursively. */
static void json_command(const cli_command *cmd, FILE *f) {
  fputs("{\"name\":", f);
  cli_json_string(f, cmd->name);
  json_field(f, "synopsis", cmd->synopsis, 0);
  json_field(f, "summary", cmd->summary, 0);
  fputs(",\"options\":[", f);
  const char *sep = "";
  for (const cli_opt *o = cli__rows(cmd); o->name; o++)
    if (!(o->flags & CLI_F_HIDDEN)) {
      fputs(sep, f);
      sep = ",";
      json_row(o, f);
    }
  fputs("],\"subcommands\":[", f);
  sep = "";
  for (const cli_sub *s = cmd->subs; s && s->word; s++)
    if (s->cmd) {
      fputs(sep, f);
      sep = ",";
      json_command(s->cmd, f);
    }
  fputs("]}", f);
}

void cli_help_json(const cli_command *cmd, FILE *f) {
  json_command(cmd, f);
  fputc('\n', f);
}
