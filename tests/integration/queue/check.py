#!/usr/bin/env python3
"""Checks of the work queue's tests and bench, on the files a run leaves.

  check.py results N FILE         FILE (`polite queue results`) has exactly
                                  one line for each of the ids q0..q{N-1}
  check.py union N OUT...         no id has lines in two OUT files (or two
                                  lines in one); prints how many of the N
                                  ids have none
  check.py keys REC               every POST path the upstream saw came
                                  with one Idempotency-Key, the same on
                                  every request of that path
  check.py twice REC              prints how many paths were sent more than
                                  once
  check.py killed REC UA PREFIX DUMP  for a worker killed with User-Agent
                                  UA and consumer name PREFIX...:
                                  prints how many paths it sent without
                                  recording their result (DUMP: the results
                                  stream as `redis-cli --raw xrange` prints
                                  it), i.e. what it had in flight when it
                                  died; fails when a path sent twice was not
                                  first sent by it
  check.py field FILE ID NAME     prints the field NAME of ID's line in FILE
Exit status 1 (with a message) when a check fails.
"""
import collections, json, sys


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def records(path):
    """The upstream's record lines, each path without its query (a path ends
    with its id)."""
    recs = lines(path)
    for r in recs:
        r["path"] = r["path"].split("?", 1)[0]
    return recs


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "results":
        n, got = int(args[0]), collections.Counter(r["id"] for r in lines(args[1]))
        want = {"q%d" % i for i in range(n)}
        dup = [i for i, c in got.items() if c > 1]
        missing, extra = want - set(got), set(got) - want
        print("%d results, %d duplicated, %d missing, %d unknown" %
              (sum(got.values()), len(dup), len(missing), len(extra)))
        sys.exit(1 if dup or missing or extra else 0)
    if cmd == "union":
        n, seen, dup = int(args[0]), {}, []
        for path in args[1:]:
            for r in lines(path):
                if r["id"] in seen:
                    dup.append((r["id"], seen[r["id"]], path))
                seen[r["id"]] = path
        print("%d lines, %d duplicated, %d ids without a line" %
              (len(seen) + len(dup), len(dup), n - len(seen)))
        sys.exit(1 if dup else 0)
    recs = [r for r in records(args[0]) if r["ev"] == "in"]
    if cmd == "keys":
        keys = collections.defaultdict(set)
        for r in recs:
            if r["method"] == "POST":
                keys[r["path"]].add(r["idem"])
        bad = [p for p, k in keys.items() if len(k) != 1 or None in k]
        print("%d writes, %d with more than one key (or none)" %
              (len(keys), len(bad)))
        sys.exit(1 if bad else 0)
    if cmd == "twice":
        c = collections.Counter(r["path"] for r in recs)
        print(sum(1 for v in c.values() if v > 1))
        return
    if cmd == "killed":
        ua, prefix, dump = args[1], args[2], open(args[3]).read().split("\n")
        by = {}
        for i in range(0, len(dump) - 8, 9):
            f = dict(zip(dump[i + 1:i + 9:2], dump[i + 2:i + 9:2]))
            by[f.get("id")] = f.get("worker", "")
        first = {}
        for r in recs:
            first.setdefault(r["path"], r["ua"])
        sent = {r["path"] for r in recs if r["ua"] == ua}
        # A path ends with its id; the killed worker's consumer name starts
        # with HOST:PID: (docs/queue.md).
        unrec = [p for p in sent
                 if not by.get(p.rsplit("/", 1)[-1], "").startswith(prefix)]
        c = collections.Counter(r["path"] for r in recs)
        bad = [p for p, n in c.items() if n > 1 and first[p] != ua]
        print(len(unrec))
        if bad:
            sys.exit("sent twice but not first by %s: %s" % (ua, bad[:5]))
        return
    if cmd == "field":
        for r in lines(args[0]):
            if r["id"] == args[1]:
                print(r.get(args[2]))
        return
    sys.exit("unknown check " + cmd)


if __name__ == "__main__":
    main()
