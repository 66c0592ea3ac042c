#!/usr/bin/env python3
"""polite proxy --mode forward with real clients: curl -x, Python requests (proxies=, verify=) and
Node's fetch through undici's ProxyAgent (NODE_EXTRA_CA_CERTS), to a local nginx over HTTPS with a
certificate made here. A watched host is intercepted (its certificate is the local CA's), each
client sees an injected 429 with Retry-After, and an early retry over HTTPS is caught; an unwatched
host is tunnelled and keeps its own certificate; plain http goes to its real destination; mocks
answer in forward mode too; --allow-host restricts where the proxy connects; off loopback the
proxy refuses to start without --allow-host."""
import json
import os
import socket
import subprocess
import time

import requests

from pxtest import Proxy, check, done, free_port, path, run, sh, track, write

HERE = os.path.dirname(os.path.abspath(__file__))
NODE_DIR = os.path.join(HERE, "..", "..", "node")
# Node's undici from the committed lock file (npm registry only), under
# the lock that tests/node/install.sh takes for every test that uses it.
subprocess.run([os.path.join(NODE_DIR, "install.sh")], check=True)


# --- certificates and an nginx serving https (and http) ---
ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
sh("openssl", "req", "-x509", *ec, "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "30",
   "-subj", "/CN=polite test upstream CA", "-addext", "basicConstraints=critical,CA:TRUE",
   "-addext", "keyUsage=critical,keyCertSign")
sh("openssl", "req", *ec, "-keyout", path("leaf.key"), "-out", path("leaf.csr"), "-subj", "/CN=localhost")
write("leaf.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
sh("openssl", "x509", "-req", "-in", path("leaf.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
   "-days", "30", "-extfile", path("leaf.ext"), "-out", path("leaf.pem"))
HTTPS, HTTP = free_port(), free_port()
www = path("www")
os.makedirs(www)
os.makedirs(path("ngx"))
write("www/hello.txt", "hello over https\n")
for name in ("limited-curl", "limited-py", "limited-node", "early"):
    write("www/" + name, "not limited upstream\n")
conf = write("nginx.conf", """daemon off; master_process off; worker_processes 1;
pid %(d)s/nginx.pid; error_log %(d)s/error.log;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path %(d)s/b; proxy_temp_path %(d)s/p; fastcgi_temp_path %(d)s/f;
  uwsgi_temp_path %(d)s/u; scgi_temp_path %(d)s/s;
  server { listen 127.0.0.1:%(https)d ssl; ssl_certificate %(cert)s; ssl_certificate_key %(key)s;
           location / { root %(www)s; } }
  server { listen 127.0.0.1:%(http)d; location / { root %(www)s; } }
}
""" % {"d": path("ngx"), "https": HTTPS, "http": HTTP, "cert": path("leaf.pem"), "key": path("leaf.key"),
       "www": www})
track(subprocess.Popen(["/usr/sbin/nginx", "-c", conf, "-p", path("ngx")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", HTTPS), timeout=1).close()
        break
    except OSError:
        time.sleep(0.05)

# --- the proxy: localhost:HTTPS watched (intercepted), 127.0.0.1 not ---
os.environ["POLITE_CA_DIR"] = path("polite-ca")
mocks = write("mocks.json", json.dumps({"mocks": [
    {"request": {"url": "https://localhost:%d/mocked" % HTTPS},
     "response": {"statusCode": 200, "body": {"mocked": True}}}]}))
W = "https://localhost:%d" % HTTPS
px = Proxy("--mode", "forward", "--upstream-cacert", path("ca.pem"), "--failure-rate", "100",
           "--retry-after", "2", "--watch", W + "/limited*", "--watch", W + "/early", "--mocks-file", mocks,
           name="forward")
PROXY = px.base
OUR_CA = path("polite-ca/ca.pem")
check(os.path.exists(OUR_CA), "forward mode with --watch creates the local CA in POLITE_CA_DIR")


def curl(*args):
    p = subprocess.run(["curl", "-s", "-S", "-x", PROXY, "-m", "10", "-D", "-", "-v"] + list(args),
                       capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


# 1. curl: a watched host is decrypted with our certificate and forwarded to https upstream
rc, out, err = curl("--cacert", OUR_CA, W + "/hello.txt")
check(rc == 0 and "hello over https" in out and "Via: 1.1 polite" in out,
      "curl -x --cacert: intercepted request reaches the https upstream (%d)" % rc)
check("issuer: O=polite" in err, "curl: the intercepted host's certificate is the local CA's")
rc, out, err = curl("--cacert", OUR_CA, W + "/limited-curl")
check(rc == 0 and out.startswith("HTTP/1.1 200 Connection Established") and "HTTP/1.1 429" in out
      and "Retry-After: 2" in out, "curl: injected 429 with Retry-After over intercepted HTTPS")
rc, out, err = curl("--cacert", OUR_CA, W + "/mocked")
check('{"mocked":true}' in out, "curl: a mock answers an intercepted request")

# 2. an early retry over HTTPS is caught
rc, out, _ = curl("--cacert", OUR_CA, W + "/early")
rc, out2, _ = curl("--cacert", OUR_CA, W + "/early")
check("HTTP/1.1 429" in out and "early_retry" in out2, "an immediate retry over HTTPS is answered as early")
rep = px.report()
check(rep["early_retries"] == 1 and any(e["url"] == W + "/early" for e in rep["early"]),
      "the report lists the early retry with its https URL (%d)" % rep["early_retries"])

# 3. an unwatched host is tunnelled byte for byte: its own certificate, never ours
rc, out, err = curl("--cacert", path("ca.pem"), "https://127.0.0.1:%d/hello.txt" % HTTPS)
check(rc == 0 and "hello over https" in out and "issuer: CN=polite test upstream CA" in err,
      "unwatched host: tunnelled, the upstream's own certificate (%d)" % rc)
check("Via: 1.1 polite" not in out, "unwatched host: the proxy did not touch the HTTPS answer")
rc, out, err = curl("--cacert", OUR_CA, "https://127.0.0.1:%d/hello.txt" % HTTPS)
check(rc != 0, "unwatched host: trusting only the local CA fails (nothing was decrypted)")

# 4. plain http goes to its real destination
rc, out, err = curl("http://127.0.0.1:%d/hello.txt" % HTTP)
check(rc == 0 and "hello over https" in out and "Via: 1.1 polite" in out, "http:// absolute-form: forwarded")

# 5. Python requests with proxies= and verify=
prx = {"http": PROXY, "https": PROXY}
r = requests.get(W + "/limited-py", proxies=prx, verify=OUR_CA, timeout=10)
check(r.status_code == 429 and r.headers.get("Retry-After") == "2", "requests: injected 429 with Retry-After")
r = requests.get(W + "/hello.txt", proxies=prx, verify=OUR_CA, timeout=10)
check(r.status_code == 200 and r.text == "hello over https\n", "requests: passes through to the https upstream")
try:
    requests.get(W + "/hello.txt", proxies=prx, verify=path("ca.pem"), timeout=10)
    check(False, "requests trusting only the upstream's CA rejects the intercepted host")
except requests.exceptions.SSLError:
    check(True, "requests trusting only the upstream's CA rejects the intercepted host")

# 6. Node fetch through undici's ProxyAgent, trusting the CA with NODE_EXTRA_CA_CERTS
env = dict(os.environ, NODE_EXTRA_CA_CERTS=OUR_CA)
p = subprocess.run(["node", os.path.join(NODE_DIR, "fetch_via_proxy.mjs"), PROXY, W + "/limited-node",
                    W + "/hello.txt"], capture_output=True, text=True, env=env, timeout=60)
lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
check(len(lines) == 2 and lines[0].get("status") == 429 and lines[0].get("retry_after") == "2",
      "node fetch (ProxyAgent): injected 429 with Retry-After (%s)" % (lines[:1] or p.stderr[-300:]))
check(len(lines) == 2 and lines[1].get("status") == 200 and lines[1].get("via") == "1.1 polite",
      "node fetch (ProxyAgent): passes through to the https upstream")
check(px.stop() == 0, "forward proxy stops cleanly")

# 6b. the intercepted host's own certificate is verified upstream: refused unless trusted or --upstream-insecure
for args, want, what in (([], "502", "an upstream certificate the proxy does not trust: 502"),
                         (["--upstream-insecure"], "200", "... accepted with --upstream-insecure")):
    px = Proxy("--mode", "forward", "--watch", W + "/*", *args, name="verify")
    p = subprocess.run(["curl", "-s", "-x", px.base, "--cacert", OUR_CA, "-w", "\n%{http_code}",
                        W + "/hello.txt"], capture_output=True, text=True)
    body, _, code = p.stdout.rpartition("\n")
    check(code == want and (want == "200" or "certificate verify failed" in body),
          "%s (%s %s)" % (what, code, body[:90]))
    px.stop()

# 7. --allow-host: only the named hosts are reached
px = Proxy("--mode", "forward", "--allow-host", "localhost", "--upstream-cacert", path("ca.pem"), name="allow")
out = subprocess.run(["curl", "-s", "-x", px.base, "-o", "/dev/null", "-w", "%{http_code}",
                      "http://127.0.0.1:%d/hello.txt" % HTTP], capture_output=True, text=True).stdout
check(out == "403", "--allow-host localhost: http://127.0.0.1 is refused (%s)" % out)
out = subprocess.run(["curl", "-s", "-x", px.base, "-o", "/dev/null", "-w", "%{http_code}",
                      "http://localhost:%d/hello.txt" % HTTP], capture_output=True, text=True).stdout
check(out == "200", "--allow-host localhost: http://localhost is forwarded (%s)" % out)
p = subprocess.run(["curl", "-s", "-x", px.base, "--cacert", path("ca.pem"), "-o", "/dev/null", "-w",
                    "%{http_code}", "https://127.0.0.1:%d/hello.txt" % HTTPS], capture_output=True, text=True)
check(p.returncode != 0, "--allow-host localhost: CONNECT 127.0.0.1 is refused")

# 7b. the proxy's own endpoints asked through the proxy (HTTP_PROXY) are answered by it, never
# forwarded to itself (nor refused by --allow-host): by its address and by localhost:PORT
before = px.report()["requests"]
for host in (px.addr, "localhost:%d" % px.port):
    r = requests.get("http://%s/__polite/report" % host, proxies={"http": px.base}, timeout=10)
    check(r.status_code == 200 and "own_endpoint_calls" in r.json() and "Via" not in r.headers,
          "http://%s/__polite/report through the proxy: its own report (%d %s)"
          % (host, r.status_code, r.headers.get("Via")))
r = requests.get("http://%s/__polite/metrics" % px.addr, proxies={"http": px.base}, timeout=10)
check(r.status_code == 200 and "polite_proxy_in_flight" in r.text, "... and its metrics")
rep = px.report()
check(rep["own_endpoint_calls"] == 0 and rep["requests"] == before,
      "answered, not counted as requests (%d own, %d requests, %d before)"
      % (rep["own_endpoint_calls"], rep["requests"], before))
px.stop()

# 8. not an open relay: off loopback, forward mode needs --allow-host
rc, out, err = run("proxy", "--mode", "forward", "--listen", "0.0.0.0:0")
check(rc == 1 and "--allow-host" in err, "forward mode off loopback without --allow-host: refused (%r)"
      % err.strip()[-90:])
rc, out, err = run("proxy", "--mode", "forward", "--upstream", "http://127.0.0.1:1")
check(rc == 1 and "--upstream" in err, "forward mode with --upstream: refused")
rc, out, err = run("proxy", "--mode", "sideways")
check(rc == 2 and "--mode" in err, "--mode sideways: usage error")
done()
