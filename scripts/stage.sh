#!/usr/bin/env bash
# make test's stage timer: runs CMD, then says how long it took in wall
# seconds and in CPU seconds of CMD's process tree (user + system, what it
# waited for), and adds the row to FILE, so that the end of `make test`
# shows where its time went. Exits with CMD's status.
# Usage: scripts/stage.sh FILE NAME CMD...
set -u
file=$1 name=$2
shift 2
t0=$EPOCHREALTIME
"$@"
rc=$?
t1=$EPOCHREALTIME
# The builtin, in this shell (a command substitution would time a subshell
# with no children): its second line is the children's user and system.
tf=$(mktemp)
times >"$tf"
read -r -a cpu < <(tail -n 1 "$tf")
rm -f "$tf"
python3 - "$file" "$name" "${t0/,/.}" "${t1/,/.}" "${cpu[0]}" "${cpu[1]}" "$rc" <<'PY'
import re, sys
path, name, t0, t1, user, sys_, rc = sys.argv[1:]
def secs(s):  # bash's times: 1m2.345s
    m = re.match(r"(\d+)m([\d.]+)s", s)
    return int(m.group(1)) * 60 + float(m.group(2)) if m else 0.0
row = "| %s | %.0f | %.0f |%s\n" % (name, float(t1) - float(t0), secs(user) + secs(sys_),
                                   "" if rc == "0" else " failed (exit %s)" % rc)
with open(path, "a") as f:
    f.write(row)
print("stage " + row.strip(), file=sys.stderr)
PY
exit $rc
