#!/usr/bin/env python3
"""Mock mode: the default answer, a Dev Proxy mocks file (method, nth, bodyFragment,
JSON and @file bodies), CORS headers, malformed HTTP (400, the proxy keeps serving),
--config files (errors name file, line and field) and usage errors (exit 2)."""
import json
import socket
import subprocess

import requests

from pxtest import Proxy, check, done, path, run, write

# --- 1. default mock ---
px = Proxy(name="default")
r = requests.get(px.base + "/v1/things?api_key=abc", timeout=10)
check(r.status_code == 200 and r.json() == {"ok": True, "path": "/v1/things"},
      "default mock: 200 {\"ok\":true,\"path\":...} (%s)" % r.text)
out = subprocess.run(["curl", "-s", "-D", "-", px.base + "/curl"], capture_output=True, text=True).stdout
check("200 OK" in out and '"path":"/curl"' in out, "curl gets the default mock")

# --- 2. malformed HTTP: 400, and the proxy keeps serving ---
for payload, want in ((b"GARBAGE\r\n\r\n", b"400"), (b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", b"400"),
                      (b"GET /x HTTP/7.1\r\n\r\n", b"505"), (b"\x00\x01\x02\xff\r\n\r\n", b"400")):
    sk = socket.create_connection((px.host, px.port), timeout=5)
    sk.sendall(payload)
    try:
        data = sk.recv(100)
    except socket.timeout:
        data = b""
    sk.close()
    check(data.startswith(b"HTTP/1.1 " + want), "malformed request %r gets %s (%r)"
          % (payload[:12], want.decode(), data[:20]))
sk = socket.create_connection((px.host, px.port), timeout=5)
sk.sendall(b"GET /half HTTP/1.1\r\nHost: x")  # half a request, then gone
sk.close()
r = requests.get(px.base + "/still-alive", timeout=10)
check(r.status_code == 200, "the proxy keeps serving after malformed input")

# --- 3. CORS on the proxy's own responses, and a preflight ---
r = requests.get(px.base + "/cors", headers={"Origin": "http://app.example"}, timeout=10)
check(r.headers.get("Access-Control-Allow-Origin") == "http://app.example", "CORS: origin echoed")
check("Retry-After" in r.headers.get("Access-Control-Expose-Headers", "")
      and "RateLimit-Policy" in r.headers.get("Access-Control-Expose-Headers", ""),
      "CORS: Retry-After and RateLimit headers exposed")
r = requests.get(px.base + "/nocors", timeout=10)
check("Access-Control-Allow-Origin" not in r.headers, "no Origin, no CORS headers")
r = requests.options(px.base + "/cors", headers={"Origin": "http://app.example",
                                                 "Access-Control-Request-Method": "POST",
                                                 "Access-Control-Request-Headers": "authorization"},
                     timeout=10)
check(r.status_code == 204 and r.headers.get("Access-Control-Allow-Methods") == "POST",
      "preflight answered 204 with Allow-Methods")
r = requests.get(px.base + "/__polite/report", headers={"Origin": "http://app.example"}, timeout=10)
check(r.headers.get("Access-Control-Allow-Origin") == "http://app.example", "report endpoint has CORS too")
px.stop()

px = Proxy("--failure-rate", "100", name="cors429")
r = requests.get(px.base + "/x", headers={"Origin": "http://a.example"}, timeout=10)
check(r.status_code == 429 and r.headers.get("Access-Control-Allow-Origin") == "http://a.example",
      "an injected 429 carries CORS headers (a browser can read Retry-After)")
px.stop()

# --- 3b. as a forward proxy (absolute-form targets): globs see the full URL ---
logf = path("forward.log")
px = Proxy("--failure-rate", "100", "--watch", "http://api.example.test/*", "--log", logf, name="fwdproxy")
out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", px.base,
                      "http://api.example.test/v1/x?api_key=sk-live-123&page=2"],
                     capture_output=True, text=True).stdout
check(out == "429", "curl -x: absolute URL matched by the watch glob (%s)" % out)
out = subprocess.run(["curl", "-s", "-x", px.base, "http://other.example.test/y"],
                     capture_output=True, text=True).stdout
check('"path":"/y"' in out, "curl -x: another host is not watched")
rep = px.report()
check(rep["urls"] and any(u["url"] == "http://api.example.test/v1/x?api_key=REDACTED&page=2" for u in rep["urls"]),
      "report keeps the absolute URL, key redacted")
check(px.stop() == 0, "stopped")
logtext = open(logf).read()
check("api.example.test/v1/x?api_key=REDACTED&page=2 429 injected" in logtext and "sk-live" not in logtext,
      "--log FILE: one line per request, flushed at exit, secret redacted")

# --- 4. mocks file ---
write("hello.bin", "file body\n")
mocks = write("mocks.json", json.dumps({"mocks": [
    {"request": {"url": "*/users/*", "nth": 2}, "response": {"statusCode": 418, "body": "second"}},
    {"request": {"url": "*/users/*"},
     "response": {"statusCode": 200, "headers": [{"name": "X-Mock", "value": "yes"}],
                  "body": {"users": [1, 2]}}},
    {"request": {"url": "*/items", "method": "POST", "bodyFragment": "\"name\""},
     "response": {"statusCode": 201, "body": "created"}},
    {"request": {"url": "/file"}, "response": {"body": "@hello.bin"}},
    {"request": {"url": "*/limited"},
     "response": {"statusCode": 429, "headers": [{"name": "Retry-After", "value": "2"}]}},
]}))
px = Proxy("--mocks-file", mocks, name="mocks")
r1 = requests.get(px.base + "/users/1", timeout=10)
r2 = requests.get(px.base + "/users/2", timeout=10)
r3 = requests.get(px.base + "/users/3", timeout=10)
check(r1.status_code == 200 and r1.json() == {"users": [1, 2]} and r1.headers.get("X-Mock") == "yes",
      "mock: JSON body serialized, headers sent")
check(r2.status_code == 418 and r2.text == "second", "mock: nth=2 answers the second request")
check(r3.status_code == 200, "mock: after nth, the general mock again")
check(requests.post(px.base + "/items", json={"name": "a"}, timeout=10).status_code == 201,
      "mock: POST with bodyFragment")
check(requests.post(px.base + "/items", json={"other": 1}, timeout=10).status_code == 200,
      "mock: bodyFragment not found falls back to the default mock")
check(requests.get(px.base + "/items", timeout=10).status_code == 200, "mock: method must match")
r = requests.get(px.base + "/file", timeout=10)
check(r.status_code == 200 and r.text == "file body\n", "mock: @file body read next to the mocks file")
r = requests.get(px.base + "/limited", timeout=10)
check(r.status_code == 429 and r.headers.get("Retry-After") == "2", "mock 429 with Retry-After")
r = requests.get(px.base + "/limited", timeout=10)
check(r.status_code == 429, "a mock's Retry-After is tracked too: immediate retry is early")
check(px.report()["early_retries"] == 1, "early retry after a mock 429 recorded")
px.stop()

# --- 5. --config: values, and errors naming file, line and field ---
cfg = write("cfg.json", '{\n  "$schema": "x",\n  "failureRate": 100,\n  "retry-after": 3,\n'
            '  "watch": ["*/only/*"],\n  "seed": 5\n}\n')
px = Proxy("--config", cfg, name="cfg")
r = requests.get(px.base + "/only/x", timeout=10)
check(r.status_code == 429 and r.headers.get("Retry-After") == "3",
      "config: failureRate (camel) and retry-after (kebab) applied")
check(requests.get(px.base + "/elsewhere", timeout=10).status_code == 200, "config: watch list applied")
px.stop()
px = Proxy("--config", cfg, "--failure-rate", "0", name="cfg2")
check(requests.get(px.base + "/only/x", timeout=10).status_code == 200, "a flag overrides the config file")
px.stop()

bad = write("bad-type.json", '{\n  "listen": "127.0.0.1:0",\n  "failureRate": "lots"\n}\n')
rc, out, err = run("proxy", "--config", bad)
check(rc == 2 and "bad-type.json:3" in err and "failureRate" in err and "lots" in err,
      "wrong value: exit 2, names file:line, field and value (%r)" % err.strip())
bad = write("bad-kind.json", '{\n  "penalty": "yes"\n}\n')
rc, out, err = run("proxy", "--config", bad)
check(rc == 2 and "bad-kind.json:2" in err and "penalty" in err, "wrong type names the field (%r)" % err.strip())
bad = write("bad-syntax.json", '{\n  "listen": "127.0.0.1:0",\n  "quota": 5,,\n}\n')
rc, out, err = run("proxy", "--config", bad)
check(rc == 2 and "bad-syntax.json:3:" in err, "syntax error names file:line:column (%r)" % err.strip())
bad = write("bad-key.json", '{"listen": "127.0.0.1:0",\n "frobnicate": 1}')
rc, out, err = run("proxy", "--config", bad)
check(rc == 2 and "bad-key.json:2" in err and "frobnicate" in err, "unknown field named (%r)" % err.strip())
rc, out, err = run("proxy", "--config", path("missing.json"))
check(rc == 2 and "missing.json" in err, "missing config file named")
bad = write("bad-errors.json", '{"errors":[{"request":{"url":"*"},"responses":[{"statusCode":"x"}]}]}')
rc, out, err = run("proxy", "--errors-file", bad)
check(rc == 2 and "bad-errors.json" in err and "errors[0].responses[0].statusCode" in err,
      "bad errors file names the field path (%r)" % err.strip())

# --- 6. usage errors ---
for args, word in ((["--failure-rate", "150"], "failure-rate"), (["--rate-limit", "10/fortnight"], "rate-limit"),
                   (["--listen", "nope"], "listen"), (["--bogus"], "bogus"), (["--latency", "9-1"], "latency"),
                   (["--retry-after-scope", "planet"], "retry-after-scope"),
                   (["--upstream", "ftp://x"], "upstream")):
    rc, out, err = run("proxy", *args)
    check(rc == 2 and word in err, "usage error %s: exit 2 naming the option (%r)" % (args, err.strip()[:80]))
rc, out, err = run("proxy", "--help")
check(rc == 0 and "--rate-limit" in out, "--help prints usage")

done()
