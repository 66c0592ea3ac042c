#!/usr/bin/env bash
# Layering check: which folder's headers each folder may include (the
# arrows of docs/building.md, "Layout"). Like checksrc.sh it names FILE:LINE
# and fails on any finding. A quoted include resolves against the folder of
# the including file first, then the folders below; a header found nowhere
# (a system header in quotes) is not this check's business.
#   src/     its own, common/, of the proxy only proxy/proxy.h, of the
#            gateway only gateway/gateway.h
#   proxy/   its own, common/, net/ (never src/)
#   net/     its own, common/ (never proxy/ or src/: it knows no throttling rule)
#   gateway/ its own, common/, net/ (never proxy/ or src/)
#   common/  its own
#   lib/     its own, and of common/ only http_syntax.h (compiled into it)
# Usage: scripts/checklayers.sh [ROOT]   (default: the repository)
set -u
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
exec python3 - "$ROOT" <<'PY'
import os
import re
import sys

root = sys.argv[1]
DIRS = ["src", "proxy", "gateway", "net", "common", "lib"]
ALLOWED = {
    "src": {"src": None, "common": None, "proxy": {"proxy.h"}, "gateway": {"gateway.h"}},
    "gateway": {"gateway": None, "common": None, "net": None},
    "proxy": {"proxy": None, "common": None, "net": None},
    "net": {"net": None, "common": None},
    "common": {"common": None},
    "lib": {"lib": None, "common": {"http_syntax.h"}},
}
headers = {d: set(os.listdir(os.path.join(root, d))) if os.path.isdir(os.path.join(root, d)) else set()
           for d in DIRS}
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
bad = 0
for d in DIRS:
    base = os.path.join(root, d)
    if not os.path.isdir(base):
        continue
    for name in sorted(os.listdir(base)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(base, name), errors="replace") as f:
            for no, line in enumerate(f, 1):
                m = inc.match(line)
                if not m:
                    continue
                h = m.group(1)
                where = d if h in headers[d] else next((o for o in DIRS if h in headers[o]), None)
                if where is None:
                    continue
                rule = ALLOWED[d].get(where, set())
                if rule is None or h in rule:
                    continue
                print(f"{d}/{name}:{no}: includes {where}/{h}: {d}/ may not include "
                      f"{'that header of ' if rule else ''}{where}/ (docs/building.md, Layout)")
                bad += 1
if bad:
    print(f"checklayers: {bad} finding(s)")
    sys.exit(1)
print("checklayers: clean")
PY
