#!/usr/bin/env python3
"""Writes a synthetic attempt log of N requests to stdout (the format of
`polite run --log`, docs/run.md) and its expected totals as JSON to
EXPECT_FILE, for the size test of polite report.

Usage: gen_log.py N EXPECT_FILE [SEED]

Requests start at 100/s with latencies of 5 ms to 5 s; in one stretch of
400 requests out of 20,000 every other request gets a 429 from one of ten
senders (more than the page marks one by one), waits the server's 2 s (an
account pause) and is retried; one in 200 gets a 503 with backoff; the learned rate changes every 10,000 requests; one line in 100,000
is malformed."""
import json
import random
import sys

SENDERS = ["origin:openai", "cdn:cloudflare", "gateway:kong", "proxy:nginx",
           "origin:github", "gateway:apigee", "cdn:akamai", "origin:stripe",
           "gateway:aws", "unknown"]


def main():
    n = int(sys.argv[1])
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    out = sys.stdout
    t0 = 1_790_000_000_000
    exp = {"requests": n, "first_attempts": n, "retries": 0,
           "network_attempts": 0, "status_429": 0, "status_503": 0,
           "retry_wait_ms": 0, "bad_lines": 0, "ok": n}
    w = out.write
    w(json.dumps({"event": "run", "rate_per_s": 100, "burst": 1,
                  "concurrency": 32, "max_attempts": 5, "deadline_ms": None,
                  "spread_ms": 250, "started_wall_ms": t0}) + "\n")
    line = ('{"id":"r%d","attempt":%d,"method":"GET","url":"https://api.example/'
            'v1/items/%d","start_ms":%d,"end_ms":%d,"status":%d,'
            '"retry_after":%s,"action":"%s","reason":"%s","wait_ms":%s,'
            '"server_wait_ms":%s,"account_pause":%s%s}\n')
    for i in range(n):
        s = t0 + i * 10
        lat = int(rnd.lognormvariate(4.5, 0.9)) % 5000 + 5
        att = 1
        roll = rnd.random()
        if i % 20000 < 400 and roll < 0.5:
            snd = SENDERS[i % len(SENDERS)]
            diag = (',"diagnosis":{"component":"%s","limit":"rate",'
                    '"retry_helps":true,"wait_ms":2000,"evidence":[]}' % snd)
            w(line % (i, att, i, s, s + lat, 429, '"2"', "retry", "server",
                      2100, 2000, "true", diag))
            exp["status_429"] += 1
            exp["retries"] += 1
            exp["retry_wait_ms"] += 2100
            exp["network_attempts"] += 1
            s = s + lat + 2100
            att = 2
        elif roll < 0.005:
            w(line % (i, att, i, s, s + lat, 503, "null", "retry", "backoff",
                      700, "null", "false",
                      ',"diagnosis":{"component":"unknown","limit":"unknown"}'))
            exp["status_503"] += 1
            exp["retries"] += 1
            exp["retry_wait_ms"] += 700
            exp["network_attempts"] += 1
            s = s + lat + 700
            att = 2
        w(line % (i, att, i, s, s + lat, 200, "null", "done", "ok", "null",
                  "null", "false", ""))
        exp["network_attempts"] += 1
        w('{"event":"result","outcome":"ok","attempts":%d,"cost":1,'
          '"status":200,"elapsed_ms":%d,"wall_ms":%d}\n' % (att, lat, s + lat))
        if i % 10000 == 0:
            w('{"event":"rate","wall_ms":%d,"rate_per_s":%.2f,'
              '"previous_per_s":null,"reason":"headers","detail":"x"}\n'
              % (s, 90 + (i // 10000) % 20))
        if i % 100000 == 99999:
            w('{"id":"broken", "attempt":\n')
            exp["bad_lines"] += 1
    w('{"event":"end","wall_ms":%d}\n' % (t0 + n * 10 + 10000))
    json.dump(exp, open(sys.argv[2], "w"))


if __name__ == "__main__":
    main()
