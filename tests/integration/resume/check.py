#!/usr/bin/env python3
"""Checks the outcome of a journaled `polite run` after crashes and resumes.

Usage: check.py OUT RECORD PREFIX N [JOURNAL] [--extra-keys K] [--resent]

OUT     the results file: every line must be a complete JSON object ending
        in a newline, ids PREFIX-op1..N each exactly once, all outcome "ok".
RECORD  the test server's record: every path /PREFIX/opI reached the server
        with one and only one Idempotency-Key (up to K paths may have two,
        for the torn-journal case that loses the last commit).
JOURNAL when given, the keys the journal recorded for each id must be the
        keys the server saw, and the journal holds exactly one live result
        per id.
--resent  at least one write must have reached the server twice (it was in
        flight at the kill) with the same key both times.
Prints one line per problem; exit 0 when there is none.
"""
import json, sqlite3, sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
extra = 0
if "--extra-keys" in sys.argv:
    extra = int(sys.argv[sys.argv.index("--extra-keys") + 1])
    args.remove(str(extra))
out, rec, prefix, n = args[0], args[1], args[2], int(args[3])
journal = args[4] if len(args) > 4 else None
problems = []

data = open(out, "rb").read()
if data and not data.endswith(b"\n"):
    problems.append("results file does not end with a newline")
ids = {}
for i, line in enumerate(data.split(b"\n")[:-1], 1):
    try:
        o = json.loads(line)
    except ValueError as e:
        problems.append("results line %d is not JSON: %s" % (i, e))
        continue
    ids.setdefault(o.get("id"), []).append(o.get("outcome"))
want = {"%s-op%d" % (prefix, i) for i in range(1, n + 1)}
for i in sorted(want):
    got = ids.get(i, [])
    if got != ["ok"]:
        problems.append("id %s has results %s (want exactly one ok)" % (i, got))
for i in ids:
    if i not in want:
        problems.append("unexpected id %s in results" % i)

keys = {}
hits = {}
for line in open(rec):
    r = json.loads(line)
    path = r["path"].split("?")[0]
    if path.startswith("/%s/" % prefix):
        keys.setdefault(path, set()).add(r["key"])
        hits[path] = hits.get(path, 0) + 1
two = 0
for i in range(1, n + 1):
    p = "/%s/op%d" % (prefix, i)
    k = keys.get(p, set())
    if None in k:
        problems.append("%s reached the server without a key" % p)
    if len(k) == 0:
        problems.append("%s never reached the server" % p)
    elif len(k) == 2 and two < extra:
        two += 1
    elif len(k) != 1:
        problems.append("%s reached the server with %d keys: %s" % (p, len(k), sorted(map(str, k))))

resent = [p for p in hits if hits[p] > 1 and len(keys[p]) == 1]
print("%d write(s) reached the server twice with the same key" % len(resent))
if "--resent" in sys.argv and not resent:
    problems.append("no write was in flight at the kill (nothing re-sent)")

if journal:
    db = sqlite3.connect(journal)
    for i in range(1, n + 1):
        id_ = "%s-op%d" % (prefix, i)
        jk = {r[0] for r in db.execute(
            "SELECT idempotency_key FROM request WHERE id=?", (id_,))}
        sk = keys.get("/%s/op%d" % (prefix, i), set())
        if extra == 0 and jk != sk:
            problems.append("journal keys %s != server keys %s for %s" % (jk, sk, id_))
    live = db.execute(
        "SELECT r.id, count(*) FROM result r WHERE NOT EXISTS (SELECT 1 FROM "
        "requeue q WHERE q.id=r.id AND q.session > r.session) GROUP BY r.id").fetchall()
    live = dict(live)
    for i in sorted(want):
        if live.get(i) != 1:
            problems.append("journal has %s live results for %s" % (live.get(i), i))
    for t in ("request", "attempt", "result"):
        for row in db.execute("SELECT * FROM %s" % t):
            if any(isinstance(v, str) and "SECRET" in v for v in row):
                problems.append("a secret reached the journal table %s" % t)

for p in problems[:20]:
    print(p)
if len(problems) > 20:
    print("... and %d more" % (len(problems) - 20))
sys.exit(1 if problems else 0)
