"""A live baton for the tests: built once from this repository, started
once per test run on free ports, killed when the run ends.

BATON_BIN, when set, names a baton binary to use instead of building one.
"""

from __future__ import annotations

import atexit
import ctypes
import http.client
import http.server
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))

import baton  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(cond, timeout=5.0, interval=0.02, what="condition"):
    """Polls cond until it is true, failing after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout}s")
        time.sleep(interval)


def _die_with_parent():
    # The server must not outlive a test run that was killed.
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_binary = None


def _build() -> str:
    """The baton binary: BATON_BIN, or built once from this repository."""
    global _binary
    if _binary is None:
        _binary = os.environ.get("BATON_BIN")
        if not _binary:
            tmp = tempfile.mkdtemp(prefix="baton-py-bin-")
            atexit.register(shutil.rmtree, tmp, True)
            _binary = os.path.join(tmp, "baton")
            r = subprocess.run(["go", "build", "-o", _binary, "."], cwd=REPO, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"go build failed:\n{r.stderr}")
    return _binary


class _Server:
    """One baton node on free ports. auth, when given, is the content of
    its --auth-file, named auth_file (a name ending in .yaml makes it a
    policy file; its etcd client URL is then the socket only, as
    --auth-file requires without client certificates)."""

    def __init__(self, auth: str | None = None, auth_file: str = "auth"):
        binary = _build()
        self.tmp = tempfile.mkdtemp(prefix="baton-py-")
        atexit.register(self.stop)
        http_port, peer, client = free_port(), free_port(), free_port()
        self.addr = f"http://127.0.0.1:{http_port}"
        args = [binary, "--http-addr", f"127.0.0.1:{http_port}", "--data-dir", os.path.join(self.tmp, "data"),
                "--peer-url", f"http://127.0.0.1:{peer}", "--initial-cluster", f"default=http://127.0.0.1:{peer}"]
        if auth is None:
            args += ["--client-url", f"http://127.0.0.1:{client}"]
        else:
            path = os.path.join(self.tmp, auth_file)
            with open(path, "w") as f:
                f.write(auth)
            args += ["--client-url", "", "--auth-file", path]
        self.log = open(os.path.join(self.tmp, "baton.log"), "wb")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        wait_until(self._ready, timeout=30, what="baton /readyz")

    def _ready(self):
        if self.proc.poll() is not None:
            raise RuntimeError(f"baton exited with {self.proc.returncode}; see {self.log.name}")
        try:
            with urllib.request.urlopen(self.addr + "/readyz", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


_servers: dict[tuple[str | None, str], _Server] = {}
_server_mu = threading.Lock()


def server(auth: str | None = None, auth_file: str = "auth") -> _Server:
    """The node of this test run (one per auth file), started on first use."""
    with _server_mu:
        if (auth, auth_file) not in _servers:
            _servers[auth, auth_file] = _Server(auth, auth_file)
        return _servers[auth, auth_file]


class LiveTest(unittest.TestCase):
    """A test against the live baton: self.c is a client of it, closed at
    the end; self.name(x) is a lock name of this test's own."""

    def setUp(self):
        self.addr = server().addr
        self.c = self.client()

    def client(self, addr=None, **kw) -> baton.Client:
        c = baton.Client(addr or self.addr, **kw)
        self.addCleanup(c.close)
        return c

    def name(self, what="l") -> str:
        return f"{self._testMethodName[:40]}-{what}-{uuid.uuid4().hex[:6]}"


class _FrontHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _handle(self):
        front = self.server.front
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with front.mu:
            front.n += 1
            n = front.n
            front.seen.append((self.command, self.path))
        what = front.rule(n, self.command, self.path)
        if what in ("forward", "forward-drop"):
            self._forward(front.upstream, body, drop=what == "forward-drop")
        elif what == "drop":
            self._drop()
        else:
            self._problem(*what[1:])

    do_GET = do_POST = do_PUT = do_DELETE = _handle

    def _drop(self):
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def _forward(self, upstream, body, drop):
        conn = http.client.HTTPConnection(upstream, timeout=30)
        hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request(self.command, self.path, body=body or None, headers=hdrs)
        resp = conn.getresponse()
        if resp.status == 200 and (resp.getheader("Content-Type") or "").startswith("text/event-stream"):
            return self._stream(conn, resp)
        data = resp.read()
        conn.close()
        if drop:
            return self._drop()
        self.send_response(resp.status)
        for k, v in resp.getheaders():
            if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, conn, resp):
        """Relays an event stream line by line until either side ends it;
        the front's close() ends it too."""
        front = self.server.front
        pair = (self.connection, conn)
        with front.mu:
            front.streams.add(pair)
        self.close_connection = True
        try:
            self.send_response(200)
            for k, v in resp.getheaders():
                if k.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(k, v)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.flush()
            while line := resp.readline():
                self.wfile.write(line)
                self.wfile.flush()
        except (OSError, http.client.HTTPException):
            pass  # one side hung up
        finally:
            with front.mu:
                front.streams.discard(pair)
            conn.close()

    def _problem(self, status, retry_after):
        data = (b'{"type":"urn:baton:problem:unavailable","title":"Service unavailable",'
                b'"status":%d,"code":"unavailable","detail":"injected"}' % status)
        self.send_response(status)
        self.send_header("Content-Type", "application/problem+json")
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _FrontServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that hung up first (a hold watcher's stream at the end
        # of a test) is no error of the front's.
        if isinstance(sys.exc_info()[1], (ConnectionError, http.client.IncompleteRead)):
            return
        super().handle_error(request, client_address)


class Front:
    """An HTTP front for the live baton that injects faults: rule(n,
    method, path) says, for the n-th request (1-based), what to do:
    "forward"; ("status", code, retry_after) to answer a problem
    without forwarding; "drop" to close the connection without
    answering; "forward-drop" to forward the request, then close the
    connection without answering. A forwarded answer that is an event
    stream is relayed as it comes; close() cuts such streams."""

    def __init__(self, upstream: str, rule):
        self.rule = rule
        self.upstream = upstream.removeprefix("http://")
        self.n = 0
        self.seen: list[tuple[str, str]] = []
        self.streams: set = set()  # (client socket, upstream connection) of each relayed stream
        self.mu = threading.Lock()
        self.httpd = _FrontServer(("127.0.0.1", 0), _FrontHandler)
        self.httpd.front = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def count(self, method=None, prefix="") -> int:
        with self.mu:
            return sum(1 for m, p in self.seen if (method is None or m == method) and p.startswith(prefix))

    def cut_streams(self):
        """Breaks every event stream it relays, as a network failure would."""
        with self.mu:
            streams = list(self.streams)
        for sock, conn in streams:
            for s in (sock, conn.sock):
                if s is not None:
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

    def close(self):
        self.cut_streams()
        self.httpd.shutdown()
        self.httpd.server_close()


def dead_endpoint() -> str:
    """The URL of a port that refuses connections."""
    return f"http://127.0.0.1:{free_port()}"
