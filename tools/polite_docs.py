#!/usr/bin/env python3
"""Docs and man pages from the option tables in src/ (one source per flag).

The commands come from `POLITE help --json`: the whole command tree, each
command with its options and its subcommands. A command's docs page is
docs/NAME.md with spaces as dashes (docs/proxy-ca.md for `polite proxy ca`)
when that file exists, else its parent's page (`polite budget show` is
documented in docs/budget.md).

  polite_docs.py docs POLITE DOCS_DIR [--check]
      Rewrites the option table of every command with options, between the
      markers in its page
          <!-- options:begin NAME -->  ...  <!-- options:end -->
      with `POLITE help --markdown NAME`. With --check nothing is written
      and the exit status is 1 when a page differs from the table or lacks
      the markers (the drift test runs this).

  polite_docs.py man POLITE DOCS_DIR OUT_DIR
      Writes polite.1 and polite-NAME.1 for every command with a page of its
      own: NAME, SYNOPSIS and OPTIONS from the JSON (a subcommand without a
      page of its own is a part of its parent's page), the rest from the
      docs page (its prose, code blocks, lists and tables) turned into roff
      by the small converter below (no pandoc). Prints the pages' names.
"""
import json
import os
import re
import subprocess
import sys

BEGIN = "<!-- options:begin {} -->"
END = "<!-- options:end -->"
# Some rows of a command's table on another page: "<!-- options:begin run
# --queue --follow -->" holds the rows of `polite run` for those options
# (docs/queue.md shows the queue rows of polite run).
ROWS = re.compile(r"<!-- options:begin ([^>]*? --[^>]*?) -->\n.*?"
                  r"<!-- options:end -->", re.S)


def polite(exe, *args):
    return subprocess.run([exe, *args], check=True, capture_output=True,
                          text=True).stdout


def tree(exe):
    return json.loads(polite(exe, "help", "--json"))


def walk(node):
    """(command, parent) for every command below node, depth first."""
    for sub in node["subcommands"]:
        yield sub, node
        yield from walk(sub)


def own_page(docs_dir, cmd):
    """docs/NAME.md of cmd when it has a page of its own, else None."""
    path = os.path.join(docs_dir, cmd["name"].replace(" ", "-") + ".md")
    return path if os.path.exists(path) else None


def page_subs(docs_dir, cmd):
    """cmd's subcommands documented on cmd's page (no page of their own),
    depth first."""
    for sub in cmd["subcommands"]:
        if not own_page(docs_dir, sub):
            yield sub
            yield from page_subs(docs_dir, sub)


def pages(docs_dir, root):
    """{command name: its docs page path}, a subcommand without a page of
    its own sharing its parent's."""
    out = {}
    for cmd, parent in walk(root):
        out[cmd["name"]] = own_page(docs_dir, cmd) or out.get(parent["name"])
    return out


def rows_table(exe, spec):
    """The rows of a command's table for the options a ROWS marker names
    ("run --queue --follow"), under the table's header."""
    words = spec.split()
    cmd = [w for w in words if not w.startswith("-")]
    names = {w for w in words if w.startswith("-")}
    lines = polite(exe, "help", "--markdown", *cmd).splitlines(keepends=True)
    keep = lines[:2]
    for line in lines[2:]:
        cell = line.split("|")[1].strip().strip("`")
        if {w.rstrip(",") for w in cell.split() if w.startswith("-")} & names:
            keep.append(line)
    return "".join(keep)


def docs(exe, docs_dir, check):
    drift = 0
    root = tree(exe)
    where = pages(docs_dir, root)
    texts = {}
    for cmd, _ in walk(root):
        name = cmd["name"]
        if not cmd["options"]:
            continue
        path = where[name]
        if path is None:
            print(f"polite {name}: no docs page (docs/"
                  f"{name.replace(' ', '-')}.md)", file=sys.stderr)
            drift = 1
            continue
        if path not in texts:
            with open(path, encoding="utf-8") as f:
                texts[path] = [f.read(), None]
        text = texts[path][0]
        begin = BEGIN.format(name)
        if begin not in text or END not in text.split(begin, 1)[-1]:
            print(f"{path}: no '{begin}' ... '{END}' markers", file=sys.stderr)
            drift = 1
            continue
        head, rest = text.split(begin, 1)
        _, tail = rest.split(END, 1)
        table = polite(exe, "help", "--markdown", *name.split(" "))
        texts[path][0] = head + begin + "\n" + table + END + tail
    for name in sorted(os.listdir(docs_dir)):
        path = os.path.join(docs_dir, name)
        if not name.endswith(".md"):
            continue
        if path not in texts:
            with open(path, encoding="utf-8") as f:
                texts[path] = [f.read(), None]
        texts[path][0] = ROWS.sub(
            lambda m: BEGIN.format(m.group(1)) + "\n" +
            rows_table(exe, m.group(1)) + END, texts[path][0])
    for path, (new, _) in texts.items():
        with open(path, encoding="utf-8") as f:
            old = f.read()
        if new == old:
            continue
        if check:
            print(f"{path}: an option table differs from 'polite help "
                  f"--markdown' (run tools/polite_docs.py docs to "
                  f"regenerate)", file=sys.stderr)
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
    (the tables replace it): (intro, rest)."""
    md = re.sub(r"^# .*\n", "", md, count=1)
    parts = re.split(r"(?m)^(?=## )", md)
    intro = parts[0]
    rest = [p for p in parts[1:] if not p.startswith("## Options")]
    return intro, "".join(rest)


def header(name, summary):
    return (f'.TH {name.upper()} 1 "" "polite" "polite manual"\n'
            f".SH NAME\n{esc(name)} \\- {esc(summary)}\n")


def man_name(cmd):
    return "polite-" + cmd["name"].replace(" ", "-")


def synopsis(cmd):
    return ".B polite " + esc(cmd["name"]) + "\n" + esc(cmd["synopsis"]) + "\n"


def options(cmd, groups=True):
    out, group = [], None
    for o in cmd["options"]:
        if groups and o["group"] and o["group"] != group:
            group = o["group"]
            out.append(".SS " + esc(group) + "\n")
        text = inline(o["help"])
        if o["default"]:
            text += ". Default: " + esc(o["default"]) + "."
        if o["env"]:
            text += " Environment: \\fB" + esc(o["env"]) + "\\fR."
        out.append(".TP\n.B " + esc(o["title"]) + "\n" + line_safe(text) +
                   "\n")
    return out


def man_page(spec, subs, md, all_pages):
    """spec's page; subs: the subcommands it documents (none of their own
    page), each a section of OPTIONS. A command with subcommands and no
    options of its own (polite budget) is its subcommands' synopses."""
    name = man_name(spec)
    out = [header(name, spec["summary"])]
    syn = [spec] if spec["options"] or not subs else []
    out.append(".SH SYNOPSIS\n" + ".br\n".join(map(synopsis, syn + subs)))
    intro, rest = split_page(md)
    out.append(".SH DESCRIPTION\n" + md_to_roff(intro))
    out.append(".SH OPTIONS\n")
    out += options(spec)
    for sub in subs:
        out.append(".SS polite " + esc(sub["name"]) + "\n")
        out += options(sub, groups=False)
    out.append(md_to_roff(rest))
    out.append(".SH SEE ALSO\n" + ", ".join(
        f"\\fB{esc(n)}\\fR(1)" for n in all_pages if n != name) + "\n")
    return "".join(out)


def man(exe, docs_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    root = tree(exe)
    own = [(c, own_page(docs_dir, c)) for c, _ in walk(root)]
    own = [(c, path) for c, path in own if path]
    all_pages = ["polite"] + [man_name(c) for c, _ in own]
    for cmd, path in own:
        # The subcommands documented on this page (none of their own).
        subs = list(page_subs(docs_dir, cmd))
        with open(path, encoding="utf-8") as f:
            md = f.read()
        with open(os.path.join(out_dir, man_name(cmd) + ".1"), "w",
                  encoding="utf-8") as f:
            f.write(man_page(cmd, subs, md, all_pages))
        print(man_name(cmd))
    page = [header("polite", root["summary"]),
            ".SH SYNOPSIS\n.B polite\n" + esc(root["synopsis"]) + "\n",
            ".SH DESCRIPTION\n.PP\n" + esc(root["summary"][:1].upper() + root["summary"][1:]) +
            ". One command per job; 'polite COMMAND \\-\\-help' or "
            "'polite help COMMAND' describes one, "
            "'polite \\-\\-version' prints the version.\n",
            ".SH COMMANDS\n"]
    for cmd, _ in walk(root):
        ref = (f" See \\fB{esc(man_name(cmd))}\\fR(1)."
               if own_page(docs_dir, cmd) else "")
        page.append(f".TP\n.B polite {esc(cmd['name'])}\n"
                    f"{esc(cmd['summary'])}.{ref}\n")
    page.append(".SH SEE ALSO\n" + ", ".join(
        f"\\fB{esc(n)}\\fR(1)" for n in all_pages[1:]) + "\n")
    with open(os.path.join(out_dir, "polite.1"), "w", encoding="utf-8") as f:
        f.write("".join(page))
    print("polite")
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
