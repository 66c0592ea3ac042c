#!/usr/bin/env bash
# Size check (STYLE.md: split by responsibility before adding the next case):
# no function over 120 lines and no file over 800 in the folders given
# (default: every folder of C sources: lib src common net proxy gateway).
# A function is counted from the line that opens its body ("{" at the end
# of a top-level line, after a line that starts it) to the closing "}" in
# column 0. Names FILE:LINE, fails on any finding.
# Usage: scripts/checksize.sh [DIR]...
set -u
[ $# -gt 0 ] || set -- lib src common net proxy gateway
exec python3 - "$@" <<'PY'
import os
import re
import sys

FUNC_MAX, FILE_MAX = 120, 800


def code_only(text):
    """The text with comments, strings and character literals blanked (lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


bad = 0
for d in sys.argv[1:]:
    for name in sorted(os.listdir(d)):
        if not name.endswith((".c", ".h")):
            continue
        p = os.path.join(d, name)
        raw = open(p, errors="replace").read()
        nlines = raw.count("\n")
        if nlines > FILE_MAX:
            print(f"{p}: {nlines} lines (at most {FILE_MAX})")
            bad += 1
        depth, stmt, stmt_line, start = 0, "", None, None
        for no, line in enumerate(code_only(raw).split("\n"), 1):
            if depth == 0 and line.lstrip().startswith("#"):
                continue
            for ch in line:
                if depth == 0 and stmt_line is None and not ch.isspace():
                    stmt_line = no
                if ch == "{":
                    if depth == 0 and "(" in stmt and "=" not in stmt.split("(")[0]:
                        start = stmt_line
                    depth += 1
                elif ch == "}":
                    depth -= 1
                    if depth == 0:
                        if start is not None and no - start + 1 > FUNC_MAX:
                            print(f"{p}:{start}: function of {no - start + 1} lines (at most {FUNC_MAX})")
                            bad += 1
                        start, stmt, stmt_line = None, "", None
                elif ch == ";" and depth == 0:
                    stmt, stmt_line = "", None
                elif depth == 0:
                    stmt += ch
if bad:
    print(f"checksize: {bad} finding(s)")
    sys.exit(1)
print("checksize: clean")
PY
