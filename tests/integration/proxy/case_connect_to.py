#!/usr/bin/env python3
"""--connect-to HOST:PORT:HOST2:PORT2 (curl's syntax) and true log lines (issue 20 items 6 and 7).

A real sample's https://api.openai.com/* is served by a local HTTPS server: curl asks for
api.openai.com through the forward proxy, the proxy intercepts it with its CA, and its upstream
connection goes to 127.0.0.1:PORT while the certificate is still checked against api.openai.com (a
local server whose certificate names only 127.0.0.1 gets a 502 that says so). The same rule serves
a CONNECT tunnel and a reverse --upstream. The log names a CONNECT's target as it was given, an
--allow-host refusal as host_not_allowed, and every duration in ms."""
import os
import subprocess

from pxtest import Proxy, check, done, path, run, upstream

os.environ["POLITE_CA_DIR"] = path("proxy-ca")  # the interception CA, made on first use
UP_CA = path("up-ca")
for host, out in (("api.openai.com", "openai"), ("127.0.0.1", "ip"), ("other.test", "other")):
    rc, _, err = run("proxy", "ca", "--dir", UP_CA, "--issue", host, "--out", path(out))
    check(rc == 0, "a certificate for the local server as %s (%s)" % (host, err.strip()))
OPENAI = upstream(path("openai.pem"), path("openai.key"), name="openai")
WRONG = upstream(path("ip.pem"), path("ip.key"), name="wrongname")
OTHER = upstream(path("other.pem"), path("other.key"), name="other")
port_of = lambda u: int(u.rsplit(":", 1)[1])


def curl(px, url, *extra):
    """curl through px (forward proxy), trusting the proxy's CA; returns (code, body)."""
    p = subprocess.run(["curl", "-s", "-x", px.base, "--cacert", os.path.join(path("proxy-ca"), "ca.pem"),
                        "-w", "\n%{http_code}", "--max-time", "20"] + list(extra) + [url],
                       capture_output=True, text=True)
    body, _, code = p.stdout.rpartition("\n")
    return int(code or 0), body


# --- 1. forward mode: the intercepted host's connection goes to the local server ---
px = Proxy("--mode", "forward", "--watch", "https://api.openai.com/*",
           "--connect-to", "api.openai.com:443:127.0.0.1:%d" % port_of(OPENAI),
           "--connect-to", "other.test:443:127.0.0.1:%d" % port_of(OTHER),
           "--upstream-cacert", os.path.join(UP_CA, "ca.pem"), "--log", "-", name="fwd")
code, body = curl(px, "https://api.openai.com/v1/models")
check(code == 200 and body == "ok /v1/models",
      "https://api.openai.com/v1/models is served by the local server (%d %r)" % (code, body[:60]))
# An unwatched host is tunnelled; --connect-to sends the tunnel to the local server too (curl checks
# the certificate end to end: the local server's names other.test).
code, body = curl(px, "https://other.test/x", "--cacert", os.path.join(UP_CA, "ca.pem"))
check(code == 200 and body == "ok /x", "a tunnel to other.test:443 goes to the local server (%d %r)"
      % (code, body[:60]))
px.stop()  # the log line follows the answer: read it once the proxy is done
log = px.logtext()
check("CONNECT api.openai.com:443 200 passed intercepted" in log,
      "the CONNECT line names the target it was given (%s)"
      % [l for l in log.splitlines() if "CONNECT api" in l][:1])
check("GET https://api.openai.com/v1/models 200 passed" in log, "the request is logged under its real URL")
check("CONNECT other.test:443 200 passed tunnel" in log, "the tunnel's CONNECT line")

# --- 2. the certificate is still checked against HOST, not HOST2 ---
px = Proxy("--mode", "forward", "--watch", "https://api.openai.com/*",
           "--connect-to", "api.openai.com:443:127.0.0.1:%d" % port_of(WRONG),
           "--upstream-cacert", os.path.join(UP_CA, "ca.pem"), "--log", "-", name="wrong")
code, body = curl(px, "https://api.openai.com/v1/models")
check(code == 502 and "certificate name mismatch" in body and "api.openai.com" in body,
      "a local server whose certificate does not name api.openai.com: 502 saying so (%d %r)" % (code, body[:160]))
px.stop()

# --- 3. reverse mode: --upstream https://api.openai.com dials the local server ---
px = Proxy("--upstream", "https://api.openai.com", "--connect-to", "api.openai.com:443:127.0.0.1:%d"
           % port_of(OPENAI), "--upstream-cacert", os.path.join(UP_CA, "ca.pem"), name="rev")
p = subprocess.run(["curl", "-s", "-w", "\n%{http_code}", px.base + "/v1/chat"], capture_output=True, text=True)
check(p.stdout == "ok /v1/chat\n200", "reverse: --upstream https://api.openai.com served locally (%r)"
      % p.stdout[:60])
px.stop()

# --- 4. a bad rule is a usage error naming the option and the value ---
rc, _, err = run("proxy", "--connect-to", "api.openai.com:443", "--listen", "127.0.0.1:0")
check(rc == 2 and "--connect-to" in err and "HOST:PORT:HOST2:PORT2" in err and "api.openai.com:443" in err,
      "--connect-to api.openai.com:443: exit 2 with the expected form (%d %s)" % (rc, err.strip()))

# --- 5. log categories and units ---
px = Proxy("--mode", "forward", "--allow-host", "allowed.test", "--log", "-", name="allow")
code, _ = curl(px, "http://denied.test/x")
check(code == 403, "--allow-host: another host is refused (%d)" % code)
px.stop()
log = px.logtext()
check("GET http://denied.test/x 403 host_not_allowed" in log,
      "--allow-host refusals are logged host_not_allowed, not upstream_error (%s)"
      % [l for l in log.splitlines() if "denied" in l][:1])
px = Proxy("--failure-rate", "100", "--retry-after", "90", "--log", "-", name="units")
code, _ = curl(px, px.base + "/x")  # mock mode through curl -x: an absolute-form request
check(code == 429, "an injected 429 (%d)" % code)
px.stop()
log = px.logtext()
check("retry_after=90000ms" in log and "retry_after=90s" not in log,
      "the log writes Retry-After in ms like every duration (%s)"
      % [l for l in log.splitlines() if "retry_after" in l][:1])

done()
