#!/usr/bin/env python3
"""Checks budget_worker output (tests/tools/budget_worker.c) for the shared
budget integration tests. Subcommands:
  rate R BURST N FILE...   exactly N starts; aggregate rate at most 2% above R
                           and at most 10% below it, computed from the first
                           to the last start as (N - BURST) / span (GCRA lets
                           BURST go at once); no 1-second window holds more
                           than R + BURST. A loaded machine makes starts late,
                           never early: the lower bound is taken on the span
                           less what the workers measured of it (each start's
                           late_us, its wake-up after the planned time, and
                           its round trip, after - now), so that a budget
                           that admits too slowly still fails it while a
                           worker the machine woke late does not.
  lease LEASE_US HOLDER WAITER
                           the waiter's one start came at most the lease +
                           0.1 s (the waiter's poll) + 0.4 s + what the
                           waiter measured of its own delay after the
                           holder's last renewal (RENEW; a backend may keep
                           an earlier expiry, which is sooner); the holder
                           renewed at least 5 times before. (That it came
                           after the kill is the caller's check.)
  window R BURST FILE...   only the 1-second window bound (any count).
  overlap C FILE...        never more than C slots held at once.
  first FILE               prints the first START time (us), or 'none'.
  between T0 T1 FILE...    prints how many starts fall in [T0, T1].
Exit status 0 when the check holds, 1 (with the reason) otherwise."""
import sys


def events(files):
    starts, ends = [], []
    for f in files:
        with open(f) as fh:
            for line in fh:
                p = line.split()
                if p and p[0] == 'START':
                    late = int(p[5]) if len(p) > 5 else 0
                    starts.append((int(p[2]), int(p[4]), p[1],
                                   late + int(p[4]) - int(p[2])))
                elif p and p[0] == 'END':
                    ends.append((int(p[2]), p[1]))
    return starts, ends


def max_window(times, width=1_000_000):
    times = sorted(times)
    best, j = 0, 0
    for i in range(len(times)):
        while times[i] - times[j] >= width:
            j += 1
        best = max(best, i - j + 1)
    return best


def main(argv):
    cmd = argv[1]
    if cmd == 'rate':
        rate, burst, n = float(argv[2]), int(argv[3]), int(argv[4])
        starts, _ = events(argv[5:])
        t = sorted(s[0] for s in starts)
        if len(t) != n:
            print(f'expected {n} starts, got {len(t)}')
            return 1
        span = (t[-1] - t[0]) / 1e6
        got = (n - burst) / span
        # The first start's delay is before the span: it does not count.
        first = min(starts)
        slack = sum(s[3] for s in starts if s is not first) / 1e6
        fair = (n - burst) / max(span - slack, 1e-6)
        w = max_window(t)
        print(f'{n} starts in {span:.3f} s: {got:.2f}/s (budget {rate:g}/s, '
              f'{100 * (got - rate) / rate:+.2f}%); busiest 1 s window {w} '
              f'(limit {rate * 1 + burst:g}); the workers measured '
              f'{slack:.3f} s of their own delays: {fair:.2f}/s without them')
        if got > 1.02 * rate:
            print('aggregate rate more than 2% above the budget')
            return 1
        if fair < 0.90 * rate:
            print('aggregate rate more than 10% below the budget, even less '
                  'the delays the workers measured')
            return 1
        if w > rate + burst:
            print('a 1-second window holds more than rate x 1 s + burst')
            return 1
        return 0
    if cmd == 'window':
        rate, burst = float(argv[2]), int(argv[3])
        starts, _ = events(argv[4:])
        w = max_window([s[0] for s in starts])
        print(f'{len(starts)} starts; busiest 1 s window {w} '
              f'(limit {rate + burst:g})')
        return 0 if w <= rate + burst else 1
    if cmd == 'overlap':
        cap = int(argv[2])
        starts, ends = events(argv[3:])
        ev = [(s[1], 1) for s in starts] + [(e[0], -1) for e in ends]
        # At equal times count the release first: [after, END] is inside
        # the true holding time already.
        ev.sort(key=lambda e: (e[0], e[1]))
        cur = best = 0
        for _, d in ev:
            cur += d
            best = max(best, cur)
        print(f'{len(starts)} starts; at most {best} slots held at once '
              f'(limit {cap})')
        return 0 if best <= cap else 1
    if cmd == 'lease':
        lease = int(argv[2])
        renews = []
        with open(argv[3]) as fh:
            for line in fh:
                p = line.split()
                if p and p[0] in ('RENEW', 'START'):
                    renews.append(int(p[2]))
        starts, _ = events(argv[4:])
        if len(starts) != 1:
            print(f'the waiter started {len(starts)} times, not once')
            return 1
        s_now, s_after, _, delay = starts[0]
        before = [r for r in renews if r < s_now]
        if len(before) < 5:
            print(f'the holder renewed {len(before)} times before the '
                  'waiter started (want 5 or more)')
            return 1
        since = s_after - max(before)
        most = lease + 500_000 + delay
        gaps = [b - a for a, b in zip(before, before[1:])]
        print(f'waiter started {since // 1000} ms after the holder\'s last '
              f'renewal (lease {lease // 1000} ms, at most {most // 1000}); '
              f'{len(before)} renewals, longest gap {max(gaps) // 1000} ms')
        return 0 if since <= most else 1
    if cmd == 'first':
        starts, _ = events(argv[2:])
        print(min(s[0] for s in starts) if starts else 'none')
        return 0
    if cmd == 'between':
        t0, t1 = int(argv[2]), int(argv[3])
        starts, _ = events(argv[4:])
        print(sum(1 for s in starts if t0 <= s[0] <= t1))
        return 0
    print('unknown subcommand', cmd)
    return 2


sys.exit(main(sys.argv))
