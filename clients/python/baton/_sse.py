"""Server-Sent Events streams that reconnect by themselves.

A stream is an iterator. It connects to an endpoint, yields what its
source makes of each message, and when the connection breaks (a node
stops, a proxy cuts it, the stream stays silent for idle seconds) it
connects again, to the next endpoint, with Last-Event-ID, after a short
backoff. It ends when closed, or when a node refuses the request itself
(a 4xx whose code is final: a bad name, no valid bearer token), which it
raises: no reconnection can mend that, unless it is a 401 and the token
file has a new token: then it connects again at once, to the same node.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.parse

from . import _problems
from ._http import MAX_RETRY_AFTER, Transport, decode_error
from .errors import BatonError, UnavailableError
from .types import Event, KeyEvent, LeaderChange, LeaderInfo, decode

# The server sends a comment every 15 s: three missed mean a dead connection.
DEFAULT_IDLE = 45.0


def refused(err: BaseException) -> bool:
    """Whether err is a node's answer about the request itself."""
    if not isinstance(err, BatonError) or not 400 <= err.status < 500 or err.status == 408:
        return False
    info = _problems.BY_CODE.get(err.code or "")
    if info:
        return info[2] == _problems.FINAL
    return err.status != 429


class Stream:
    """Keeps a source connected; iterate it for what the source yields."""

    def __init__(self, transport: Transport, what: str, source, idle: float = DEFAULT_IDLE):
        self._t = transport
        self.what = what
        self._src = source
        self._idle = idle
        self._closed = threading.Event()
        self._conn_lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self._sock: socket.socket | None = None
        self._gen = self._run()

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Ends the stream, from any thread: iteration stops."""
        with self._conn_lock:
            self._closed.set()
        self._drop()

    def _drop(self) -> None:
        """Breaks the current connection, as a network failure would."""
        with self._conn_lock:
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _run(self):
        failures = 0
        endpoint = self._t.preferred
        while not self._closed.is_set():
            retry_after, connected, err = 0.0, False, None
            try:
                if self._src.prepare():
                    with contextlib.closing(self._connect(endpoint)) as conn:
                        for item in conn:
                            connected = True
                            if item is not None:
                                yield item
            except (BatonError, OSError, http.client.HTTPException, ValueError) as e:
                err = e
                if isinstance(e, BatonError):
                    retry_after = e.retry_after or 0.0
            if self._closed.is_set():
                return
            if err is not None and refused(err):
                # Unless the token file has a new token (a JWT renewed
                # before the old one expired, which ended the stream).
                if isinstance(err, BatonError) and err.status == 401 and self._t.bearer.reload():
                    continue
                if isinstance(err, BatonError):
                    err.op = self.what
                raise err
            failures = 0 if connected else failures + 1
            endpoint = (endpoint + 1) % len(self._t.endpoints)
            # A pause even after a stream that worked: a node that accepts
            # and drops at once must not make us spin.
            if self._closed.wait(max(self._t.backoff(failures), min(retry_after, MAX_RETRY_AFTER))):
                return

    def _connect(self, i: int):
        """Runs one connection; yields None once accepted, then the items.
        The source's target says where to resume: Last-Event-ID, unless
        None."""
        ep = self._t.endpoints[i]
        path, query, last_id = self._src.target()
        target = path + ("?" + urllib.parse.urlencode(query) if query else "")
        conn = self._t.connection(ep, self._t.timeout)
        resp = None
        try:
            conn.connect()
            # The socket, kept: an answer with "Connection: close" (a proxy's)
            # hands it to the response, and conn.sock is None from then on.
            sock = conn.sock
            # Under the lock, so that a close() either comes before (and is
            # seen here) or finds the connection to break.
            with self._conn_lock:
                if self._closed.is_set():
                    return
                self._conn, self._sock = conn, sock
            headers = self._t.headers(None, accept="text/event-stream")
            headers["Cache-Control"] = "no-cache"
            if last_id is not None:
                headers["Last-Event-ID"] = str(last_id)
            conn.request("GET", ep.path + target, headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raise decode_error(resp.status, resp.reason, resp.headers, resp.read(64 << 10))
            self._t.preferred = i
            sock.settimeout(self._idle)
            yield None
            data, mid, typ = [], "", ""
            while True:
                raw = resp.readline(1 << 20)
                if not raw:
                    raise UnavailableError(f"{ep}: {self.what} stream ended")
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if line == "":  # a blank line ends a message
                    if data:
                        yield self._src.dispatch(mid, typ, "\n".join(data))
                    data, mid, typ = [], "", ""
                    continue
                if line.startswith(":"):
                    continue  # a heartbeat, or why the server ends the stream
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "data":
                    data.append(value)
                elif name == "id":
                    mid = value
                elif name == "event":
                    typ = value
        finally:
            with self._conn_lock:
                self._conn = self._sock = None
            if resp is not None:
                resp.close()
            conn.close()


class EventSource:
    """GET /v1/events across connections: every event once, in order.

    A connection may break in the middle of one revision's events, so a
    reconnection asks for that whole revision again (Last-Event-ID is the
    revision before it) and skips the events of it already yielded."""

    path = "/v1/events"

    def __init__(self, base, lock=None, kind=None, name=None, since=None):
        self._base = base  # callable: the current revision
        self.query = {k: v for k, v in (("lock", lock), ("kind", kind), ("name", name)) if v}
        self.since = since
        self.last = 0
        self.seen: set = set()

    def fetch_base(self) -> None:
        self.since = self._base()

    def prepare(self) -> bool:
        # Without a revision to resume from, a reconnection could not tell
        # what it missed: no stream until a node says where we are.
        if self.since is None:
            self.fetch_base()
        return True

    def target(self):
        resume = self.last - 1 if self.last > 0 else self.since
        return self.path, self.query, resume

    def _decode(self, mid: str, typ: str, data: str):
        """The item of a message, and what tells it from the other items
        of its revision."""
        try:
            ev = decode(Event, json.loads(data))
        except (ValueError, TypeError) as e:
            raise UnavailableError(f"event stream: bad event {data[:100]!r}: {e}") from e
        if not ev.revision:
            ev.revision = int(mid or 0)
        ev.type = ev.type or typ
        return ev, (ev.type, ev.kind, ev.name, ev.lock, ev.session, ev.token)

    def dispatch(self, mid: str, typ: str, data: str):
        ev, key = self._decode(mid, typ, data)
        if ev.revision < self.last or (ev.revision == self.last and key in self.seen) or \
                (self.last == 0 and ev.revision <= (self.since or 0)):
            return None  # yielded already, or from before where we resumed
        if ev.revision > self.last:
            self.last, self.seen = ev.revision, set()
        self.seen.add(key)
        return ev


class KeySource(EventSource):
    """GET /v1/kv/events across connections: every change of the keys
    under prefix once, in order, resuming as EventSource does (a
    session's end deletes its keys in one revision, which a connection
    may break in the middle of). since 0 or None: from now on."""

    path = "/v1/kv/events"

    def __init__(self, base, prefix=None, since=None):
        super().__init__(base, since=since or None)
        self.query = {"prefix": prefix} if prefix else {}

    def _decode(self, mid: str, typ: str, data: str):
        try:
            ev = decode(KeyEvent, json.loads(data))
        except (ValueError, TypeError) as e:
            raise UnavailableError(f"key stream: bad event {data[:100]!r}: {e}") from e
        if not ev.revision:
            ev.revision = int(mid or 0)
        # A put's and a delete's data say no type: the message's name does.
        ev.type = typ or ev.type
        return ev, (ev.type, ev.key)


class ObserveSource:
    """GET /v1/elections/{name}/observe across connections: the state,
    then one change per revision, resuming after the last one yielded."""

    def __init__(self, name: str):
        self.path = "/v1/elections/" + urllib.parse.quote(name, safe="")
        self.last = 0

    def prepare(self) -> bool:
        return True

    def target(self):
        # Nothing delivered yet: no Last-Event-ID, so the stream starts
        # with the election's current state.
        return self.path + "/observe", {}, self.last or None

    def dispatch(self, mid: str, typ: str, data: str):
        try:
            rev = int(mid)
        except ValueError as e:
            raise UnavailableError(f"observe: bad id {mid[:40]!r}") from e
        if typ == "leader":
            try:
                leader = decode(LeaderInfo, json.loads(data))
            except (ValueError, TypeError) as e:
                raise UnavailableError(f"observe: bad leader {data[:100]!r}: {e}") from e
        elif typ == "vacant":
            leader = None
        else:
            return None  # a kind of message this client does not know
        if self.last and rev <= self.last:
            return None
        self.last = rev
        return LeaderChange(rev, leader)
