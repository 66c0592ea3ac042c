"""Shared helpers for the polite proxy integration tests (start/stop processes, checks)."""
import atexit
import json
import os
import shutil
import signal
import socket
import ssl
import struct
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
    """Starts tests/integration/upstream.py (HTTPS with cert and key); returns its base URL."""
    pf = path(name + ".port")
    tls = [cert, key] if cert else []
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "upstream.py"), pf, "-"] + tls,
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


# ---- Clients that leave mid-answer (the proxy's and the gateway's case_abort) ----

# Where a download is cut: after sending the request (before any answer), after the first
# body bytes, after a megabyte (a 50 MiB body in flight), in a chunked body, in a slow stream
# (paths of tests/integration/upstream.py).
ABORT_POINTS = [("/big?mb=50", 0), ("/big?mb=50", 1), ("/big?mb=50", 1 << 20),
                ("/chunked-big?mb=20", 300000), ("/sse?ms=5&n=400", 200)]


def leave(sock, reset):
    """Closes sock; with reset, as an RST (SO_LINGER 0), as a killed client does."""
    if reset:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def read_some(sock, want):
    """Reads until `want` bytes came or the peer closed; returns how many came."""
    got = 0
    sock.settimeout(10)
    while got < want:
        b = sock.recv(65536)
        if not b:
            break
        got += len(b)
    return got


def connect(server):
    """A plain TCP connection to a server object with host and port (Proxy, a gateway)."""
    return socket.create_connection((server.host, server.port), timeout=10)


def tunnel_to(server, host, port):
    """A CONNECT through server to host:port; returns the socket once it said 200."""
    s = connect(server)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise OSError("the server closed the CONNECT")
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        raise OSError("CONNECT answered %r" % head[:40])
    return s


def read_all(sock):
    """Everything sock receives until the peer closes."""
    data = b""
    while True:
        b = sock.recv(65536)
        if not b:
            return data
        data += b


def tls(sock, cafile):
    """sock wrapped in TLS to 127.0.0.1, trusting cafile."""
    return ssl.create_default_context(cafile=cafile).wrap_socket(sock, server_hostname="127.0.0.1")


def abort_all(opener, target_of, rounds=3, host=b"127.0.0.1"):
    """Every ABORT_POINTS point, closed and reset, `rounds` times, each on a connection from
    opener() asking for target_of(path); returns how many downloads were cut."""
    cut = 0
    for _ in range(rounds):
        for url, after in ABORT_POINTS:
            for reset in (False, True):
                s = opener()
                s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target_of(url).encode(), host))
                if after:
                    read_some(s, after)
                leave(s, reset)
                cut += 1
    return cut
