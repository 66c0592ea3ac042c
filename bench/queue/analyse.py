#!/usr/bin/env python3
"""bench/queue's numbers from the files a run leaves (see run.sh).

  analyse.py fleet NAME DIR N RATE T0 T1 WORKERS KILLED_UA KILLED_PREFIX
  analyse.py file NAME DIR N RATE T0 T1
  analyse.py push DIR T0 T1 T2 REDIS_BYTES
      each prints one row (a JSON object) for the table
  analyse.py table ROWS
      prints the rows as one markdown table
"""
import collections, glob, json, os, re, sys


def upstream(d):
    return [json.loads(l) for l in open(os.path.join(d, "up.jsonl"))]


def cpu_ms(d, name):
    total = 0.0
    for f in glob.glob(os.path.join(d, name + ".w*.cpu")):
        try:
            total += float(open(f).read().strip() or 0)
        except ValueError:
            pass
    return total


def commands(d, name):
    n, evalsha = 0, 0
    for l in open(os.path.join(d, name + ".cmdstats")):
        m = re.match(r"cmdstat_(\w+):calls=(\d+)", l)
        if m:
            n += int(m.group(2))
            if m.group(1) == "evalsha":
                evalsha = int(m.group(2))
    return n, evalsha


def round_trips(d, name):
    """The workers' own counts (their summary's queue line): round trips,
    script calls, results, and entries claimed from other workers."""
    rt, calls, results, claimed = 0, 0, 0, 0
    for f in glob.glob(os.path.join(d, name + ".w*.err")):
        for l in open(f):
            m = re.search(r"\((\d+) claimed.* recorded (\d+) .*?(\d+) recorded "
                          r"first.*; (\d+) round trips to Redis \((\d+) script", l)
            if m:
                claimed += int(m.group(1))
                results += int(m.group(2)) + int(m.group(3))
                rt += int(m.group(4))
                calls += int(m.group(5))
    return rt, calls, results, claimed


def max_window(ins, secs=1.0):
    ts = sorted(r["t"] for r in ins)
    best, j = 0, 0
    for i, t in enumerate(ts):
        while ts[j] < t - secs:
            j += 1
        best = max(best, i - j + 1)
    return best


def common(name, d, n, rate, t0, t1):
    recs = upstream(d)
    ins = [r for r in recs if r["ev"] == "in"]
    floor = n / rate
    first = min(r["t"] for r in ins) if ins else t0
    last = max(r["t"] for r in recs) if recs else t1
    _, evalsha = commands(d, name)
    c = collections.Counter(r["path"] for r in ins)
    keys = collections.defaultdict(set)
    for r in ins:
        if r["method"] == "POST":
            keys[r["path"]].add(r["idem"])
    return {
        "run": name, "requests": n, "wall_s": round(t1 - t0, 2),
        "wall_floor": round((t1 - t0) / floor, 3),
        "span_floor": round((last - first) / floor, 3),
        "lag": "%.2f / %.2f" % (first - t0, t1 - last),
        "max_1s": max_window(ins),
        "cpu_ms_req": round(cpu_ms(d, name) / n, 3),
        "evalsha_req": round(evalsha / n, 2),
        "sent": len(ins), "sent_twice": sum(1 for v in c.values() if v > 1),
        "keys_gt1": sum(1 for k in keys.values() if len(k) != 1 or None in k),
    }


def fleet(args):
    name, d, n, rate, t0, t1, k, killed, prefix = args
    n, rate, t0, t1 = int(n), float(rate), float(t0), float(t1)
    row = common(name, d, n, rate, t0, t1)
    got = collections.Counter(json.loads(l)["id"]
                              for l in open(os.path.join(d, name + ".results")))
    want = {"q%d" % i for i in range(n)}
    outs = collections.Counter()
    for f in glob.glob(os.path.join(d, name + ".w*.jsonl")):
        for l in open(f):
            outs[json.loads(l)["id"]] += 1
    rt, calls, results, claimed = round_trips(d, name)
    row.update({
        "workers": int(k), "lost": len(want - set(got)),
        "dup_results": sum(1 for v in got.values() if v > 1) +
        sum(1 for v in outs.values() if v > 1),
        "queue_rt_req": round(rt / n, 2),
        "queue_calls_req": round(calls / n, 2),
    })
    if killed != "-":
        kept = sum(1 for _ in open(os.path.join(d, name + ".w2.jsonl")))
        row["note"] = ("worker 2 killed after %d results; %d entries claimed "
                       "by the others" % (kept, claimed))
    if killed != "-":
        dump = open(os.path.join(d, name + ".dump")).read().split("\n")
        by = {}
        for i in range(0, len(dump) - 8, 9):
            f = dict(zip(dump[i + 1:i + 9:2], dump[i + 2:i + 9:2]))
            by[f.get("id")] = f.get("worker", "")
        sent = {r["path"] for r in upstream(d)
                if r["ev"] == "in" and r["ua"] == killed}
        row["in_flight_at_kill"] = sum(
            1 for p in sent
            if not by.get(p.rsplit("/", 1)[-1], "").startswith(prefix))
    print(json.dumps(row))


def single(args):
    name, d, n, rate, t0, t1 = args
    row = common(name, d, int(n), float(rate), float(t0), float(t1))
    row.update({"workers": 1, "lost": None, "dup_results": None,
                "queue_rt_req": None})
    print(json.dumps(row))


def push(args):
    d, t0, t1, t2, mem = args
    for i, (a, b) in enumerate([(t0, t1), (t1, t2)], 1):
        cpu = float(open(os.path.join(d, "push%d.cpu" % i)).read().strip() or 0)
        said = open(os.path.join(d, "push%d.out" % i)).read().strip()
        print(json.dumps({
            "run": "push 100,000 lines" + (" again" if i == 2 else ""),
            "workers": 1, "wall_s": round(float(b) - float(a), 2),
            "cpu_ms_req": round(cpu / 100000, 4),
            "note": said.split(": ", 1)[-1].split(" (")[0] +
            ("; Redis holds %.1f MiB" % (int(mem or 0) / 2**20)
             if i == 2 else "")}))


def table(args):
    rows = [json.loads(l) for l in open(args[0]) if l.strip()]
    cols = [("run", "run"), ("workers", "processes"), ("wall_s", "wall s"),
            ("wall_floor", "wall / floor"),
            ("span_floor", "first start to last answer / floor"),
            ("lag", "start to first request / last answer to exit, s"),
            ("max_1s", "max starts in 1 s"),
            ("cpu_ms_req", "CPU ms / request (line)"),
            ("queue_rt_req", "queue round trips / request"),
            ("queue_calls_req", "queue script calls / request"),
            ("evalsha_req", "all script calls / request (budget too)"),
            ("lost", "ids lost"), ("dup_results", "duplicate results"),
            ("keys_gt1", "writes with > 1 key"), ("sent_twice", "sent twice"),
            ("in_flight_at_kill", "in flight at the kill"), ("note", "note")]
    print("| " + " | ".join(h for _, h in cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join("" if r.get(k) is None else str(r.get(k))
                                for k, _ in cols) + " |")


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    {"fleet": fleet, "file": single, "push": push, "table": table}[cmd](rest)
