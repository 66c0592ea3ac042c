#!/usr/bin/env python3
"""Where the time of a `polite run` went, from its attempt logs (--log; one
file per process of one run, sharing one budget).

  where.py [--reload WALL_MS --limit R] LOG...

Prints one JSON object:
  wall_s      first start to last answer, over all processes
  ramp_s      first start to the first 429's start (slow start; 0 when
              no 429 came)
  paused_s    time no request started because of a 429: from each 429's
              answer to the next start after it (overlaps counted once)
  sending_s   the rest: wall - ramp - paused
  rate_after  requests started per second after the first pause, over
              sending time only (what the learned rate delivered)
  n429        429 answers, in all and per process
With --reload (the wall-clock ms at which the limit changed to R/s, e.g.
an `nginx -s reload`), also:
  follow_s    from the reload to the moment after which the start rate
              of all processes (over 10 starts that no pause interrupts)
              stays <= 1.1 x R for 10 s, or to the end of the run
  n429_after  429s answered to requests started after the reload, per
              process
  n429_following  those started from the reload until follow_s: the
              change's extra 429s (later ones are the probing a run at
              the new limit pays anyway)
"""
import json
import sys


def load(path):
    att, rates = [], []
    with open(path) as f:
        for line in f:
            o = json.loads(line)
            if o.get("event") == "rate":
                rates.append((o["wall_ms"], o["rate_per_s"]))
            elif "attempt" in o and o.get("start_ms") is not None:
                att.append((o["start_ms"], o["end_ms"], o["status"]))
    return att, rates


def pauses(att):
    """Intervals from each 429's answer to the next start after it."""
    starts = sorted(a[0] for a in att)
    out = []
    for s, e, st in att:
        if st != 429:
            continue
        nxt = next((t for t in starts if t > e), None)
        if nxt is not None:
            out.append((e, nxt))
    out.sort()
    merged = []
    for a, b in out:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


SPAN = 10  # starts per rate measurement


def follow_time(starts, pause_list, reload_ms, limit, end_ms, stay_ms=10000):
    """Seconds from the reload to the first moment after which the start
    rate stays <= 1.1 x limit for stay_ms (or to the end of the run); None
    when it never does. The start rate is measured over every SPAN
    consecutive starts of all processes that no pause interrupts (a pause
    holds the average down without the rate being followed; 10% for the
    jitter of SPAN - 1 gaps). A probe above the limit later than that is a
    probe, not a failure to follow."""
    starts = sorted(starts)
    since = None
    for i in range(SPAN - 1, len(starts)):
        a, b = starts[i - SPAN + 1], starts[i]
        if b < reload_ms or b <= a:
            continue
        if any(a < pe <= b for _, pe in pause_list):
            continue
        if (SPAN - 1) * 1000.0 / (b - a) > 1.1 * limit:
            since = None
        elif since is None:
            since = max(a, reload_ms)
        if since is not None and b - since >= stay_ms:
            break
    if since is None:
        return None
    return (since - reload_ms) / 1000.0


def main(argv):
    reload_ms = limit = None
    while argv and argv[0].startswith("--"):
        if argv[0] == "--reload":
            reload_ms = float(argv[1])
        elif argv[0] == "--limit":
            limit = float(argv[1])
        else:
            sys.exit("where.py: unknown option " + argv[0])
        argv = argv[2:]
    if not argv:
        sys.exit(__doc__)
    logs = [load(p) for p in argv]
    att = [a for a, _ in logs for a in a]
    if not att:
        sys.exit("where.py: no attempts in " + " ".join(argv))
    t0 = min(a[0] for a in att)
    t1 = max(a[1] for a in att)
    first429 = min((a[0] for a in att if a[2] == 429), default=t0)
    ps = pauses(att)
    paused = sum(b - a for a, b in ps)
    after = ps[0][1] if ps else t0
    sending_after = (t1 - after) - sum(b - a for a, b in ps[1:])
    started_after = sum(1 for a in att if a[0] >= after)
    out = {
        "wall_s": round((t1 - t0) / 1000, 3),
        "ramp_s": round((first429 - t0) / 1000, 3),  # 0: no 429
        "paused_s": round(paused / 1000, 3),
        "sending_s": round((t1 - t0 - (first429 - t0) - paused) / 1000, 3),
        "rate_after": round(started_after * 1000 / sending_after, 2)
        if sending_after > 0 else None,
        "n429": sum(1 for a in att if a[2] == 429),
        "n429_per_process": [sum(1 for x in a if x[2] == 429) for a, _ in logs],
    }
    if reload_ms is not None and limit is not None:
        ft = follow_time([a[0] for a in att], ps, reload_ms, limit, t1)
        out["follow_s"] = None if ft is None else round(ft, 3)
        out["n429_after"] = [sum(1 for x in a if x[2] == 429 and x[0] >= reload_ms)
                             for a, _ in logs]
        until = reload_ms + (ft if ft is not None else float("inf")) * 1000
        out["n429_following"] = [
            sum(1 for x in a if x[2] == 429 and reload_ms <= x[0] <= until)
            for a, _ in logs]
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
