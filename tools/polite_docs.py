#!/usr/bin/env python3
"""Docs and man pages from the option tables in src/ (one source per flag).

  polite_docs.py docs POLITE DOCS_DIR [--check]
      Rewrites the option table of docs/CMD.md between the markers
          <!-- options:begin CMD -->  ...  <!-- options:end -->
      with `POLITE help --markdown CMD`. With --check nothing is written and
      the exit status is 1 when a page differs from the table (the drift
      test runs this).

  polite_docs.py man POLITE DOCS_DIR OUT_DIR
      Writes polite.1 and polite-CMD.1 for every command with a table: NAME,
      SYNOPSIS and OPTIONS from `POLITE help --json CMD`, the rest from
      docs/CMD.md (its prose, code blocks, lists and tables) turned into
      roff by the small converter below (no pandoc).
"""
import json
import os
import re
import subprocess
import sys

COMMANDS = ["run", "plan", "delay", "diagnose", "proxy", "queue"]
BEGIN = "<!-- options:begin {} -->"
END = "<!-- options:end -->"
# A table of some rows of another command's table: "<!-- options:begin run
# --queue --follow -->" (docs/queue.md shows polite run's queue rows).
MARKER = re.compile(r"<!-- options:begin ([^>]*?) -->\n(.*?)<!-- options:end -->",
                    re.S)


def polite(exe, *args):
    return subprocess.run([exe, *args], check=True, capture_output=True,
                          text=True).stdout


def table_for(exe, spec):
    """The table a marker asks for: CMD's whole table, or only the rows of
    CMD whose option names are listed after it."""
    cmd, *names = spec.split()
    table = polite(exe, "help", "--markdown", cmd)
    if not names:
        return table
    lines = table.splitlines(keepends=True)
    keep = lines[:2]
    for line in lines[2:]:
        cell = line.split("|")[1].strip().strip("`")
        opts = {w.rstrip(",") for w in cell.split() if w.startswith("-")}
        if opts & set(names):
            keep.append(line)
    return "".join(keep)


def docs(exe, docs_dir, check):
    drift = 0
    for cmd in COMMANDS:
        path = os.path.join(docs_dir, cmd + ".md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        begin = BEGIN.format(cmd)
        if begin not in text or END not in text:
            print(f"{path}: no '{begin}' ... '{END}' markers", file=sys.stderr)
            drift = 1
            continue
        new = MARKER.sub(lambda m: BEGIN.format(m.group(1)) + "\n" +
                         table_for(exe, m.group(1)) + END, text)
        if new == text:
            continue
        if check:
            print(f"{path}: an option table differs from "
                  f"'polite help --markdown {cmd}' (run tools/polite_docs.py "
                  f"docs to regenerate)", file=sys.stderr)
            drift = 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
            print(f"updated {path}")
    return drift


# ---- Markdown to roff --------------------------------------------------------

def esc(s):
    """Escapes text for roff: backslashes, dashes as typed (options must
    stay copyable), and non-ASCII as \\[uXXXX] so troff needs no preconv."""
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in s)


def inline(s):
    """Inline Markdown: `code` and **bold** in bold, links as their text."""
    s = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", s)
    out, pos = [], 0
    for m in re.finditer(r"`([^`]+)`|\*\*([^*]+)\*\*", s):
        out.append(esc(s[pos:m.start()]))
        out.append("\\fB" + esc(m.group(1) or m.group(2)) + "\\fR")
        pos = m.end()
    out.append(esc(s[pos:]))
    return "".join(out)


def line_safe(s):
    """A roff text line must not start with '.' or "'" (a request)."""
    return "\\&" + s if s[:1] in (".", "'") else s


def cells(row):
    row = row.strip().strip("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)]


def md_to_roff(md):
    out = []
    lines = md.split("\n")
    i = 0
    para = []

    def flush():
        if para:
            out.append(".PP")
            out.append(line_safe(inline(" ".join(para))))
            para.clear()

    while i < len(lines):
        ln = lines[i]
        if ln.startswith("```"):
            flush()
            out += [".PP", ".RS 4", ".nf"]
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                out.append(line_safe(esc(lines[i])))
                i += 1
            out += [".fi", ".RE"]
        elif ln.startswith("<!--"):
            flush()
        elif ln.startswith("### "):
            flush()
            out.append(".SS " + inline(ln[4:]))
        elif ln.startswith("## "):
            flush()
            out.append(".SH " + inline(ln[3:].upper()))
        elif ln.startswith("# "):
            flush()
        elif ln.startswith("|"):
            flush()
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                if not re.match(r"^\|[-| :]+\|?$", lines[i]):
                    rows.append(cells(lines[i]))
                i += 1
            i -= 1
            for r in rows[1:]:  # the first row is the header
                out.append(".TP")
                out.append(line_safe(inline(r[0])))
                out.append(line_safe(inline(" \u2014 ".join(
                    c for c in r[1:] if c))))
        elif re.match(r"^\s*[-*] ", ln):
            flush()
            item = [re.sub(r"^\s*[-*] ", "", ln)]
            while (i + 1 < len(lines) and lines[i + 1].startswith("  ")
                   and lines[i + 1].strip()):
                i += 1
                item.append(lines[i].strip())
            out += [".IP \\(bu 2", line_safe(inline(" ".join(item)))]
        elif not ln.strip():
            flush()
        else:
            para.append(ln.strip())
        i += 1
    flush()
    return "\n".join(out) + "\n"


def split_page(md):
    """The page without its title and without its '## Options' section
    (the table replaces it): (intro, rest)."""
    md = re.sub(r"^# .*\n", "", md, count=1)
    parts = re.split(r"(?m)^(?=## )", md)
    intro = parts[0]
    rest = [p for p in parts[1:] if not p.startswith("## Options")]
    return intro, "".join(rest)


def header(name, summary):
    return (f'.TH {name.upper()} 1 "" "polite" "polite manual"\n'
            f".SH NAME\n{esc(name)} \\- {esc(summary)}\n")


def man_page(spec, md):
    name = "polite-" + spec["name"]
    out = [header(name, spec["summary"])]
    out.append(".SH SYNOPSIS\n.B polite " + esc(spec["name"]) + "\n" +
               esc(spec["synopsis"]) + "\n")
    intro, rest = split_page(md)
    out.append(".SH DESCRIPTION\n" + md_to_roff(intro))
    out.append(".SH OPTIONS\n")
    group = None
    for o in spec["options"]:
        if o["group"] and o["group"] != group:
            group = o["group"]
            out.append(".SS " + esc(group) + "\n")
        text = inline(o["help"])
        if o["default"]:
            text += ". Default: " + esc(o["default"]) + "."
        if o["env"]:
            text += " Environment: \\fB" + esc(o["env"]) + "\\fR."
        out.append(".TP\n.B " + esc(o["title"]) + "\n" + line_safe(text) +
                   "\n")
    out.append(md_to_roff(rest))
    out.append(".SH SEE ALSO\n" + ", ".join(
        f"\\fBpolite\\-{c}\\fR(1)" for c in COMMANDS if c != spec["name"]) +
        ", \\fBpolite\\fR(1)\n")
    return "".join(out)


def man(exe, docs_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    summaries = []
    for cmd in COMMANDS:
        spec = json.loads(polite(exe, "help", "--json", cmd))
        with open(os.path.join(docs_dir, cmd + ".md"), encoding="utf-8") as f:
            md = f.read()
        with open(os.path.join(out_dir, f"polite-{cmd}.1"), "w",
                  encoding="utf-8") as f:
            f.write(man_page(spec, md))
        summaries.append((cmd, spec["summary"]))
    usage = polite(exe, "--help")
    page = [header("polite", "call rate-limited HTTP APIs without getting "
                   "throttled"),
            ".SH SYNOPSIS\n.B polite\nCOMMAND [OPTIONS]\n",
            ".SH DESCRIPTION\n.PP\n" + esc(usage.split("\n\n")[1]) + "\n",
            ".SH COMMANDS\n"]
    for line in usage.split("Commands:\n", 1)[1].split("\n\n")[0].split("\n"):
        name, _, what = line.strip().partition(" ")
        if not name:
            continue
        ref = (f" See \\fBpolite\\-{name}\\fR(1)."
               if name in COMMANDS else "")
        page.append(f".TP\n.B {esc(name)}\n{esc(what.strip())}.{ref}\n")
    page.append(".SH SEE ALSO\n" + ", ".join(
        f"\\fBpolite\\-{c}\\fR(1)" for c in COMMANDS) + "\n")
    with open(os.path.join(out_dir, "polite.1"), "w", encoding="utf-8") as f:
        f.write("".join(page))
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "docs":
        return docs(argv[2], argv[3], "--check" in argv[4:])
    if len(argv) == 5 and argv[1] == "man":
        return man(argv[2], argv[3], argv[4])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
