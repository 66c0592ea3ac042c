"""Shared helpers for the polite proxy integration tests (start/stop processes, checks)."""
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

POLITE = os.environ.get("POLITE") or sys.exit("POLITE is not set (path of the polite binary)")
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = tempfile.mkdtemp(prefix="polite-proxy-test-")
_procs = []
_passed = 0
_failed = 0


def _cleanup():
    for p in _procs:
        if p.poll() is None:
            p.kill()
            p.wait()


atexit.register(_cleanup)
# ctest's timeout sends SIGTERM: exit through atexit so the servers stop too.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))


def check(cond, what):
    """Records one check; prints failures with the reason."""
    global _passed, _failed
    if cond:
        _passed += 1
        print("ok   - " + what)
    else:
        _failed += 1
        print("FAIL - " + what)
    return cond


def done():
    print("%d passed, %d failed" % (_passed, _failed))
    _cleanup()
    if _failed:
        print("logs kept in " + TMP)
    else:
        shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(1 if _failed else 0)


def path(name):
    return os.path.join(TMP, name)


def write(name, text):
    p = path(name)
    with open(p, "w") as f:
        f.write(text)
    return p


def _wait_file(p, proc, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(p):
            with open(p) as f:
                t = f.read().strip()
            if t:
                return t
        if proc.poll() is not None:
            return None
        time.sleep(0.02)
    return None


class Proxy:
    """A running `polite proxy` on 127.0.0.1:0; .base is its http://ADDR:PORT.
    clock=True starts it on a controlled clock (--test-clock): its time moves only by advance()."""

    def __init__(self, *args, name="proxy", clock=False):
        self.ready = path(name + ".ready")
        self.log = path(name + ".log")
        if os.path.exists(self.ready):
            os.unlink(self.ready)
        cmd = [POLITE, "proxy", "--listen", "127.0.0.1:0", "--ready-file", self.ready] + list(args)
        if clock:
            cmd.append("--test-clock")
        self.errf = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.errf)
        _procs.append(self.proc)
        addr = _wait_file(self.ready, self.proc)
        if addr is None:
            self.errf.close()
            sys.stdout.write(open(self.log).read())
            raise SystemExit("proxy did not start: %s" % " ".join(cmd))
        self.addr = addr
        self.host, port = addr.rsplit(":", 1)
        self.port = int(port)
        self.base = "http://" + addr

    def report(self):
        with urllib.request.urlopen(self.base + "/__polite/report", timeout=10) as r:
            return json.loads(r.read())

    def advance(self, ms):
        """Moves the proxy's controlled clock (clock=True) by ms milliseconds, as if that time had passed
        for its judge, limiters, quotas and log; returns the clock's reading."""
        req = urllib.request.Request(self.base + "/__polite/clock?advance=%d" % int(round(ms)), data=b"",
                                     method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def stop(self, sig=signal.SIGTERM):
        """Stops with sig and returns the exit status."""
        self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        self.errf.close()
        return rc

    def logtext(self):
        if not self.errf.closed:
            self.errf.flush()
        with open(self.log) as f:
            return f.read()


def upstream(cert=None, key=None, name="upstream"):
    """Starts tests/integration/proxy/upstream.py (HTTPS with cert and key); returns its base URL."""
    pf = path(name + ".port")
    tls = [cert, key] if cert else []
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "upstream.py"), pf] + tls,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _procs.append(proc)
    port = _wait_file(pf, proc)
    if port is None:
        raise SystemExit("upstream did not start")
    return ("https" if cert else "http") + "://127.0.0.1:" + port


def sh(*args):
    """Runs a helper command (openssl, ...); raises when it fails."""
    subprocess.run(args, check=True, capture_output=True)


def free_port():
    """A port free on 127.0.0.1 right now (for servers that need one named)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def track(proc):
    """Stops proc at exit with the proxies."""
    _procs.append(proc)
    return proc


def run(*args, input=None):
    """Runs polite with args; returns (exit status, stdout, stderr)."""
    p = subprocess.run([POLITE] + list(args), input=input, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr
