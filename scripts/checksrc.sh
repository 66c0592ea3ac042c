#!/usr/bin/env bash
# Banned-function check, as curl's scripts/checksrc.pl does it: calls to C
# library functions that are easy to misuse are refused in lib/ src/ proxy/
# (or the files and directories given). Comments and string literals are not
# searched. A line may keep one call with a trailing comment naming it and
# saying why, e.g.  `x = atoi(s); // checksrc-allow: atoi (s is "0".."9")`.
# Exit status: 0 clean, 1 findings (printed as FILE:LINE: message).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- lib common src net proxy
exec python3 - "$@" <<'PY'
import os, re, sys

# name -> (why it is banned, what to use instead)
BANNED = {
    "gets":      ("no bound at all", "fgets or getline"),
    "strcpy":    ("no bound on the destination", "memcpy with a known length, or snprintf"),
    "strcat":    ("no bound on the destination", "snprintf, or memcpy at a tracked offset"),
    "strncpy":   ("leaves the result unterminated when the source is long", "memcpy or snprintf"),
    "strncat":   ("its bound is the space left, an off-by-one trap", "snprintf at a tracked offset"),
    "sprintf":   ("no bound on the destination", "snprintf (check the result) or asprintf"),
    "vsprintf":  ("no bound on the destination", "vsnprintf or vasprintf"),
    "atoi":      ("no error, overflow is undefined", "strtol/strtoll with errno and end checks"),
    "atol":      ("no error, overflow is undefined", "strtol with errno and end checks"),
    "atoll":     ("no error, overflow is undefined", "strtoll with errno and end checks"),
    "atof":      ("no error detection", "strtod with errno and end checks"),
    "strtok":    ("hidden static state, not thread-safe", "strtok_r, or strcspn/strspn"),
    "tmpnam":    ("the name can be taken before it is opened", "mkstemp or tmpfile"),
    "tempnam":   ("the name can be taken before it is opened", "mkstemp or tmpfile"),
    "mktemp":    ("the name can be taken before it is opened", "mkstemp or mkdtemp"),
    "asctime":   ("static buffer, not thread-safe", "strftime"),
    "ctime":     ("static buffer, not thread-safe", "strftime with localtime_r"),
    "gmtime":    ("static buffer, not thread-safe", "gmtime_r"),
    "localtime": ("static buffer, not thread-safe", "localtime_r"),
}
CALL = re.compile(r"(?<![\w.>])(" + "|".join(BANNED) + r")\s*\(")

def strip(text):
    """Blanks out comments, string and character literals, keeping every
    newline so that line numbers stay right."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c); i = j
        else:
            out.append(c); i += 1
    return "".join(out)

def files(args):
    for a in args:
        if os.path.isfile(a):
            yield a
        for root, _, names in os.walk(a):
            for f in sorted(names):
                if f.endswith((".c", ".h")):
                    yield os.path.join(root, f)

bad = 0
for path in files(sys.argv[1:]):
    raw = open(path, encoding="utf-8", errors="replace").read()
    rawlines = raw.split("\n")
    for no, line in enumerate(strip(raw).split("\n"), 1):
        for m in CALL.finditer(line):
            name = m.group(1)
            if re.search(r"checksrc-allow:\s*" + name + r"\b", rawlines[no - 1]):
                continue
            why, use = BANNED[name]
            print(f"{path}:{no}: {name}() is banned ({why}); use {use}")
            bad += 1
if bad:
    print(f"checksrc: {bad} banned call(s)")
    sys.exit(1)
print("checksrc: clean")
PY
