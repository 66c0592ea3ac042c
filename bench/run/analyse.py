#!/usr/bin/env python3
"""Reads nginx's access log (format: msec request_time status uri; the
arrival time is msec - request_time, since nginx logs when the response
ends) for one tool's tag and
prints: requests seen, 429s, early requests (arriving less than the
Retry-After (1 s) after a 429 was sent: the allowance is per client address,
so any request in that window ignores the server's wait)."""
import sys

tag = sys.argv[2]
rows = []
for line in open(sys.argv[1]):
    parts = line.split()
    if len(parts) >= 4 and ("tool=" + tag) in parts[3]:
        rows.append((float(parts[0]) - float(parts[1]), int(parts[2])))
rows.sort()
n429 = sum(1 for _, s in rows if s == 429)
early = 0
until = 0.0
for t, s in rows:
    if t < until:
        early += 1
    if s == 429:
        until = max(until, t + 1.0)
print(len(rows), n429, early)
