"""Sessions bound to a stream, as ZooKeeper's are to their connection.

A StreamSession holds GET /v1/sessions/{id}/stream open from a thread of
its own, through the same reconnecting Stream as the event streams: when
the stream breaks, or goes silent for half the grace (the server sends a
heartbeat at least four times a grace), it is opened again on the next
endpoint, so a session ends only when no node could be reached for a
whole grace.
"""

from __future__ import annotations

import threading
import urllib.parse

from ._sse import Stream
from .errors import BatonError, SessionNotFoundError, UnavailableError
from .types import Session

# The server's default and least grace of a stream-bound session.
DEFAULT_GRACE = 2.0
MIN_GRACE = 0.5


class _SessionSource:
    """Asks for nothing but the session's stream, and ends it when the
    server says the session is over."""

    def __init__(self, sid: str):
        self.id = sid
        self.path = "/v1/sessions/" + urllib.parse.quote(sid, safe="") + "/stream"
        self.attached = threading.Event()
        self.woken = threading.Event()

    def prepare(self) -> bool:
        return True

    def target(self):
        # No Last-Event-ID: a stream of a session has nothing to resume.
        return self.path, {}, None

    def dispatch(self, mid: str, typ: str, data: str):
        if typ == "attached":
            self.attached.set()
            self.woken.set()
        elif typ == "ended":
            # A refusal: no reconnection mends it.
            raise SessionNotFoundError("the session ended", op=f"session {self.id} stream", status=404,
                                       code="session_not_found")
        return None


class StreamSession:
    """A session that lives while this client holds its stream open, on
    any node (Client.open_stream_session), and ends, with every hold in
    it, once no stream of it has been open for its grace: the holds of a
    process that dies or loses the network go to the next waiter about a
    grace later, not a TTL later. Acquire in it with session=ss.id.

    done is a threading.Event set once the stream is no longer held:
    close() was called, or the session ended, and err says why (a
    SessionNotFoundError when a node said it is over). In a with block,
    close() runs on exit."""

    def __init__(self, client, info: Session):
        self._c = client
        self.info = info
        self.done = threading.Event()
        self._err: BaseException | None = None
        self._closing = threading.Event()
        self._close_mu = threading.Lock()
        self._src = _SessionSource(info.id)
        grace = info.grace or DEFAULT_GRACE
        self._stream = Stream(client._t, f"session {info.id} stream", self._src, idle=max(grace / 2, MIN_GRACE / 2))
        self._thread = threading.Thread(target=self._run, name=f"baton-session-stream-{info.id}", daemon=True)

    @property
    def id(self) -> str:
        """The session's ID: pass it as a hold's session."""
        return self.info.id

    @property
    def err(self) -> BaseException | None:
        """Why the session ended without close(), or None."""
        return self._err

    def _open(self, timeout: float) -> StreamSession:
        """Starts holding the stream and returns once it is open. A stream
        that opens nowhere within timeout ends the session (deleted when a
        node can be reached, else by its grace) and raises."""
        self._thread.start()
        # woken is set at the first attached message, and when the stream ends.
        if self._src.woken.wait(timeout) and self._src.attached.is_set():
            return self
        timed_out = not self.done.is_set()
        self._stop()
        if timed_out:
            self._delete_quietly()
            raise UnavailableError(f"session {self.id}: its stream did not open within {timeout:g}s",
                                   op="open stream session")
        raise self._err or UnavailableError(f"session {self.id}: its stream ended before it opened",
                                            op="open stream session")

    def _run(self) -> None:
        try:
            for _ in self._stream:
                pass
        except BatonError as e:
            if not self._closing.is_set():
                self._err = e
        finally:
            self.done.set()
            self._src.woken.set()

    def _stop(self) -> None:
        self._closing.set()
        self._stream.close()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _delete_quietly(self) -> None:
        try:
            self._c.delete_session(self.id)
        except BatonError:
            pass

    def close(self) -> None:
        """Stops holding the stream and deletes the session, releasing
        every hold in it at once rather than after the grace. Calling it
        again, or after the session ended, does nothing. Without an answer
        to the delete (UnavailableError, raised) the session still ends,
        by its grace."""
        with self._close_mu:
            if self._closing.is_set() or (self.done.is_set() and self._err is not None):
                return
            # Before the delete: the stream's ended message is its doing.
            self._closing.set()
            try:
                self._c.delete_session(self.id)
            except SessionNotFoundError:
                pass
            finally:
                self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        return f"<baton.StreamSession {self.id}{' done' if self.done.is_set() else ''}>"
