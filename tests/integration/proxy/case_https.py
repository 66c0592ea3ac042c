"""HTTPS upstreams: polite proxy --upstream https:// in front of a real nginx with certificates made here by openssl.

Verification is on by default (system store, or --upstream-cacert); a bad certificate (self-signed, wrong name,
expired), a refused connection and a silent upstream get a 502 naming the reason; --upstream-insecure accepts the
bad ones; kept-alive upstream connections are reused (nginx logs $connection and $connection_requests) and an
upstream that closes an idle one is handled."""
import collections
import hashlib
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request

from pxtest import Proxy, check, done, free_port, path, run, sh

NGINX = "/usr/sbin/nginx"


def have_ipv6():
    """Some CI containers have no ::1; the IPv6 cases are then skipped (and say so)."""
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


HAVE_V6 = have_ipv6()


def make_certs():
    """A test CA, a good leaf (127.0.0.1 + localhost), a wrong-name leaf, an expired leaf, a self-signed one."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    sh("openssl", "req", "-x509", *ec, "-keyout", path("ca.key"), "-out", path("ca.pem"), "-days", "30",
       "-subj", "/CN=polite test CA", "-addext", "basicConstraints=critical,CA:TRUE",
       "-addext", "keyUsage=critical,keyCertSign")

    def leaf(name, san, days="30"):
        sh("openssl", "req", *ec, "-keyout", path(name + ".key"), "-out", path(name + ".csr"), "-subj", "/CN=" + name)
        ext = path(name + ".ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\nextendedKeyUsage=serverAuth\n" % san)
        sh("openssl", "x509", "-req", "-in", path(name + ".csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
           "-days", days, "-extfile", ext, "-out", path(name + ".pem"))

    leaf("good", "IP:127.0.0.1,IP:::1,DNS:localhost")
    leaf("wrongname", "DNS:wrong.polite.test")
    leaf("expired", "IP:127.0.0.1,DNS:localhost", days="-1")
    sh("openssl", "req", "-x509", *ec, "-keyout", path("self.key"), "-out", path("self.pem"), "-days", "30",
       "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost")


def start_nginx(ports):
    d = path("nginx")
    os.makedirs(d + "/logs", exist_ok=True)
    os.makedirs(d + "/www", exist_ok=True)
    with open(d + "/www/hello.txt", "w") as f:
        f.write("hello over https\n")
    with open(d + "/www/huge.bin", "wb") as f:
        f.truncate(96 << 20)  # sparse: zeros, made at once
    big = os.urandom(1 << 20)
    with open(d + "/www/big.bin", "wb") as f:
        f.write(big)
    servers = ""
    for name, port in ports.items():
        # "closer" closes idle keep-alive connections after 1 s: the proxy must notice and reconnect.
        ka = "keepalive_timeout 1s;" if name == "closer" else ""
        cert = "good" if name == "closer" else name
        if name == "plain":
            servers += "\n  server { listen 127.0.0.1:%d; location / { root %s/www; } }" % (port, d)
            continue
        servers += """
  server {
    listen 127.0.0.1:%d ssl;
    %s
    ssl_certificate %s; ssl_certificate_key %s;
    %s
    location / { root %s/www; }
    location /echo { client_max_body_size 16m; return 200 "got $content_length\n"; }
  }""" % (port, "listen [::1]:%d ssl;" % port if HAVE_V6 else "", path(cert + ".pem"),
         path(cert + ".key"), ka, d)
    conf = """worker_processes 1;
error_log %s/logs/error.log warn;
pid %s/nginx.pid;
events { worker_connections 256; }
http {
  log_format conn '$server_port $connection $connection_requests $ssl_server_name $status $request_uri $ssl_session_reused';
  access_log %s/logs/access.log conn;
  client_body_temp_path %s/cbt; proxy_temp_path %s/pt; fastcgi_temp_path %s/ft;
  uwsgi_temp_path %s/ut; scgi_temp_path %s/st;
  %s
}
""" % ((d,) * 8 + (servers,))
    with open(d + "/nginx.conf", "w") as f:
        f.write(conf)
    proc = subprocess.Popen([NGINX, "-p", d, "-c", d + "/nginx.conf", "-g", "daemon off; master_process off;"],
                            stdout=subprocess.DEVNULL, stderr=open(d + "/logs/stderr", "w"))
    import pxtest
    pxtest._procs.append(proc)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", ports["good"]), timeout=1).close()
            return big
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start: " + open(d + "/logs/stderr").read())


def get(url, timeout=30):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def access_log():
    with open(path("nginx/logs/access.log")) as f:
        return [line.split() for line in f if line.strip()]


def port_lines(port, n, since=0, uri=None):
    """The access log lines of server `port` after line `since`, once there are n of them (nginx writes its
    line after the response has left, so the proxy's client may see the answer first), or after 3 s."""
    end = time.time() + 3
    while True:
        lines = [l for l in access_log()[since:] if l[0] == str(port) and uri in (None, l[5])]
        if len(lines) >= n or time.time() > end:
            return lines
        time.sleep(0.02)


make_certs()
ports = {n: free_port() for n in ("good", "wrongname", "expired", "self", "closer", "plain")}
big = start_nginx(ports)
G = ports["good"]
CA = path("ca.pem")

# --- 1. A verified upstream by IP and by name: bodies arrive whole; SNI is sent for the name only ---
p = Proxy("--upstream", "https://127.0.0.1:%d" % G, "--upstream-cacert", CA, name="good")
st, body = get(p.base + "/hello.txt")
check(st == 200 and body == b"hello over https\n", "https upstream by IP: 200 with the body (%d %r)" % (st, body[:40]))
st, body = get(p.base + "/big.bin")
check(st == 200 and hashlib.sha256(body).digest() == hashlib.sha256(big).digest(),
      "https upstream: 1 MiB body arrives intact (%d, %d bytes)" % (st, len(body)))
check("forwarding to https://127.0.0.1:%d" % G in p.logtext(), "startup line names the https upstream")
# A large request body goes out through TLS writes that fill the socket (partial SSL_write, WANT_WRITE).
req = urllib.request.Request(p.base + "/echo", data=os.urandom(4 << 20), method="POST")
st, body = get(req)
check(st == 200 and body == b"got %d\n" % (4 << 20), "https upstream: a 4 MiB POST body goes through (%d %r)" % (st, body))

# Keep-alive reuse: sequential requests ride one upstream TLS connection.
before = len(access_log())
for _ in range(20):
    get(p.base + "/hello.txt")
lines = port_lines(G, 20, before, "/hello.txt")
conns = collections.Counter(l[1] for l in lines)
check(len(lines) == 20 and len(conns) == 1 and max(int(l[2]) for l in lines) >= 20,
      "keep-alive: 20 sequential requests on one upstream connection (%s)" % dict(conns))
check(all(l[3] == "-" for l in lines), "no SNI for an IP literal (RFC 6066)")
p.stop()

pn = Proxy("--upstream", "https://localhost:%d/" % G, "--upstream-cacert", CA, name="byname")
before = len(access_log())
st, body = get(pn.base + "/hello.txt")
check(st == 200 and body == b"hello over https\n", "https upstream by DNS name: 200 (%d)" % st)
sni = (port_lines(G, 1, before) or [["", "", "", "?"]])[0][3]
check(sni == "localhost", "SNI carries the name (%s)" % sni)

# An IPv6 literal: brackets in the URL, the address checked against the certificate's IP entries.
if not HAVE_V6:
    print("skip - no IPv6 loopback here: the [::1] cases are not run")
p6 = None if not HAVE_V6 else Proxy("--upstream", "https://[::1]:%d" % G, "--upstream-cacert", CA, name="ipv6")
if p6:
    check(get(p6.base + "/hello.txt") == (200, b"hello over https\n"), "https upstream by IPv6 literal [::1]: 200")
    p6.stop()
    p6 = Proxy("--upstream", "https://[::1]:%d" % ports["wrongname"], "--upstream-cacert", CA, name="ipv6-bad")
    st, body = get(p6.base + "/hello.txt")
    check(st == 502 and b"IP address mismatch" in body and b"[::1]:" in body,
          "IPv6 literal, wrong certificate: 502 (%r)" % body[:160])
    p6.stop()

# Back-pressure over TLS: a client that stops reading does not make the proxy decrypt and buffer everything.
def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


pb = Proxy("--upstream", "https://127.0.0.1:%d" % G, "--upstream-cacert", CA, "--log", "/dev/null", name="bp")
get(pb.base + "/hello.txt")
rss0 = rss_mb(pb.proc.pid)
sk = socket.create_connection((pb.host, pb.port), timeout=30)
sk.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
sk.sendall(b"GET /huge.bin HTTP/1.1\r\nHost: x\r\n\r\n")
head = sk.recv(4096)
time.sleep(2.0)  # the client stalls; nginx keeps sending
grown = rss_mb(pb.proc.pid) - rss0
check(grown < 40, "https upstream, stalled client: proxy memory grew %.0f MB for a 96 MB body (bounded)" % grown)
total = len(head) - head.index(b"\r\n\r\n") - 4
while total < 96 << 20:
    chunk = sk.recv(1 << 20)
    if not chunk:
        break
    total += len(chunk)
sk.close()
check(total == 96 << 20, "https upstream: after the stall the whole body arrives (%d bytes)" % total)
pb.stop()

# --- 2. Concurrent requests: each gets its body, connections are pooled, not one per request forever ---
import concurrent.futures
before = len(access_log())
with concurrent.futures.ThreadPoolExecutor(8) as ex:
    res = list(ex.map(lambda i: get(pn.base + "/hello.txt"), range(64)))
check(all(r == (200, b"hello over https\n") for r in res), "64 concurrent requests over 8 clients: all 200")
lines = port_lines(G, 64, before)
check(len(set(l[1] for l in lines)) <= 16, "concurrent: at most 16 upstream connections for 64 requests (%d)"
      % len(set(l[1] for l in lines)))
pn.stop()


# --- 3. Bad certificates are refused with a 502 naming the reason; --upstream-insecure accepts them ---
def bad(label, url, args, words):
    px = Proxy("--upstream", url, *args, name="bad-" + label)
    t0 = time.time()
    st, body = get(px.base + "/hello.txt")
    took = time.time() - t0
    try:
        msg = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        msg = body.decode("utf-8", "replace")
    check(st == 502 and all(w in msg for w in words),
          "%s: 502 naming %s (%d %r)" % (label, words, st, msg))
    px.stop()
    return took


bad("system store, private CA", "https://127.0.0.1:%d" % G, [], ["certificate verify failed", "local issuer"])
bad("self-signed", "https://127.0.0.1:%d" % ports["self"], ["--upstream-cacert", CA],
    ["certificate verify failed", "self-signed"])
bad("wrong name (IP)", "https://127.0.0.1:%d" % ports["wrongname"], ["--upstream-cacert", CA], ["name mismatch"])
bad("wrong name (DNS)", "https://localhost:%d" % ports["wrongname"], ["--upstream-cacert", CA], ["name mismatch"])
bad("expired", "https://127.0.0.1:%d" % ports["expired"], ["--upstream-cacert", CA], ["expired"])
refused = free_port()
bad("refused", "https://127.0.0.1:%d" % refused, [], ["cannot connect", "refused", "127.0.0.1:%d" % refused])
# A plain-HTTP server given as https://: the handshake fails, saying so.
bad("not TLS", "https://127.0.0.1:%d" % ports["plain"], [], ["TLS handshake failed", "wrong version number"])
# An upstream that accepts and never answers the handshake: the connect timeout (10 s), not a hang.
silent = socket.socket()
silent.bind(("127.0.0.1", 0))
silent.listen(8)
took = bad("silent", "https://127.0.0.1:%d" % silent.getsockname()[1], [], ["timed out in the TLS handshake"])
check(took < 20, "silent upstream: answered within the connect timeout (%.1f s)" % took)
silent.close()

for label, port in (("self-signed", ports["self"]), ("wrong name", ports["wrongname"]),
                    ("expired", ports["expired"])):
    px = Proxy("--upstream", "https://127.0.0.1:%d" % port, "--upstream-insecure", name="insecure")
    st, body = get(px.base + "/hello.txt")
    check(st == 200 and body == b"hello over https\n", "--upstream-insecure accepts %s (%d)" % (label, st))
    check("NOT verified" in px.logtext(), "--upstream-insecure warns at startup")
    px.stop()

# --- 4. An upstream that closes idle connections: the next request reconnects and succeeds ---
pc = Proxy("--upstream", "https://127.0.0.1:%d" % ports["closer"], "--upstream-cacert", CA, name="closer")
r1 = get(pc.base + "/hello.txt")
time.sleep(1.6)
r2 = get(pc.base + "/hello.txt")
check(r1[0] == 200 and r2 == (200, b"hello over https\n"), "idle connection closed by the upstream: next request 200")
lines = port_lines(ports["closer"], 2)
check(len(set(l[1] for l in lines)) == 2, "closer: a new connection after the idle one was closed (%d)"
      % len(set(l[1] for l in lines)))
check(lines[0][6] == "." and lines[-1][6] == "r", "closer: the new connection resumed the TLS session (%s)"
      % [l[6] for l in lines])
pc.stop()

# --- 5. The feature set over an https upstream: injected 429 with Retry-After, an early retry caught, the
# upstream's answer for unwatched URLs, a Python requests client with verify= on its own side ---
import requests
rep_path = path("https-report.json")
pf = Proxy("--upstream", "https://localhost:%d" % G, "--upstream-cacert", CA, "--watch", "https://localhost:%d/limited*" % G,
           "--failure-rate", "100", "--retry-after", "1", "--report", rep_path, name="features", clock=True)
r = requests.get(pf.base + "/limited", timeout=10)
check(r.status_code == 429 and r.headers.get("Retry-After") == "1",
      "https upstream: --watch https://... matches; injected 429 with Retry-After: 1 (%d)" % r.status_code)
pf.advance(300)  # 700 ms early on the proxy's clock
r = requests.get(pf.base + "/limited", timeout=10)
check(r.status_code == 429, "https upstream: early retry answered 429")
r = requests.get(pf.base + "/hello.txt", timeout=10)
check(r.status_code == 200 and r.text == "hello over https\n", "https upstream: unwatched URL gets the upstream's body")
rep = pf.report()
check(rep["early_retries"] == 1 and 500 <= rep["early"][0]["early_ms"] <= 720,
      "https upstream: the early retry is caught, ~700 ms early (%s)" % rep.get("early"))
check(rep["early"][0]["url"] == "https://localhost:%d/limited" % G,
      "https upstream: the report names the https URL (%s)" % rep["early"][0]["url"])
check(pf.stop() == 0, "https upstream: SIGTERM exits 0")

# --- 6. The options in a --config file; a relative upstreamCacert is relative to the file ---
os.makedirs(path("conf"), exist_ok=True)
subprocess.run(["cp", CA, path("conf/upstream-ca.pem")], check=True)
with open(path("conf/proxy.json"), "w") as f:
    json.dump({"upstream": "https://127.0.0.1:%d" % G, "upstreamCacert": "upstream-ca.pem"}, f)
pj = Proxy("--config", path("conf/proxy.json"), name="config")
check(get(pj.base + "/hello.txt") == (200, b"hello over https\n"), "--config: upstreamCacert relative to the file")
pj.stop()
with open(path("conf/insecure.json"), "w") as f:
    json.dump({"upstream": "https://127.0.0.1:%d" % ports["self"], "upstreamInsecure": True}, f)
pj = Proxy("--config", path("conf/insecure.json"), name="config-insecure")
check(get(pj.base + "/hello.txt")[0] == 200, "--config: upstreamInsecure true")
pj.stop()

# --- 7. Option errors name the file or the value ---
rc, out, err = run("proxy", "--listen", "127.0.0.1:0", "--upstream", "https://127.0.0.1:%d" % G,
                   "--upstream-cacert", path("missing.pem"))
check(rc != 0 and "missing.pem" in err, "--upstream-cacert of a missing file: error naming it (%r)" % err.strip()[:120])
rc, out, err = run("proxy", "--upstream", "ftp://127.0.0.1")
check(rc == 2 and "https://" in err, "--upstream ftp:// refused, saying http:// or https:// (%r)" % err.strip()[:120])
rc, out, err = run("proxy", "--upstream-insecure=maybe")
check(rc == 2 and "upstream-insecure" in err, "--upstream-insecure=maybe refused (%r)" % err.strip()[:80])
done()
