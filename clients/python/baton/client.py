"""The Client: baton's HTTP API, with the Go client's retry rules.

Which calls are repeated after a 503 or a broken connection is decided per
call, as in the Go client (client/calls.go), and said in each docstring:

- reads are retried;
- renewals are retried: renewing twice is renewing;
- release, resign and session delete are retried: they name the token (or
  the session), so a repeat can never end someone else's hold;
- fenced writes are retried: a repeat carries the same token, so the
  register rejects it wherever it would have rejected the original;
- a permit's or a read/write lock hold's revoke is retried too: it names
  the hold's token;
- a key's put or delete with if_revision or a fence is retried: a
  repeat refuses what the first attempt did;
- acquire, acquire_set and campaign outside a session, every acquire_permit (each
  request takes a permit of its own, in a session too), every read
  acquire_rw and a write one outside a session, session create, a
  lock's or leadership's revoke and an unconditional put_key or
  delete_key are not: a repeat could take a second hold, make a second
  lease, revoke the next holder or land over a newer write. They raise
  UnavailableError with outcome_unknown set.

Every call moves on to the next endpoint when a connection cannot be made
at all: the request never left, so that is safe for any call.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import os
import ssl
import threading
import time
import urllib.parse
from typing import NamedTuple

from ._bearer import Bearer
from ._hold import RWLOCK, SEMAPHORE, HoldKind, HoldWatcher, Leadership, Lock, Permit, RWHold, _Held
from ._http import Transport, parse_endpoint
from ._lockset import LockSet
from ._sse import DEFAULT_IDLE, EventSource, KeySource, ObserveSource, Stream
from ._streamsession import StreamSession
from .errors import BatonError, InvalidError, SessionNotFoundError
from .types import (Cluster, Event, FencedValue, HoldInfo, Key, KeyList, LeaderInfo, LockInfo, LockSetInfo, RWLockInfo,
                    SemaphoreInfo, Session, Whoami, YieldRequested, decode, duration_seconds, format_duration)

DEFAULT_ADDR = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 10.0
DEFAULT_RETRY_BACKOFF = 0.2
# The longest wait one acquire request carries: the server's cap, 5m. A
# longer wait, up to WAIT_FOREVER, is a run of requests in a session (see
# Client._in_line).
MAX_REQUEST_WAIT = 300.0
# As an acquire's, a campaign's, a permit's or a read/write hold's wait:
# wait in line until granted, or until the session ends. It needs a session.
WAIT_FOREVER = math.inf
# The wait of the request that gives a kept place up.
_GIVE_UP_WAIT = 0.001
# A blocking read's wait when it gives none: the node's default.
_DEFAULT_KEY_WAIT = 60.0


class Fence(NamedTuple):
    """The hold a key's write requires: kind "lock", "election",
    "semaphore" (one of its permits) or "rwlock" (its write hold), the
    thing's name, and the hold's token. The write happens only while that
    hold is current; otherwise StaleTokenError."""

    kind: str
    name: str
    token: int


_FENCE_KINDS = ("lock", "election", "semaphore", "rwlock")


def _fence_body(fence: Fence | None) -> dict:
    """A fence as a request body's members."""
    if fence is None:
        return {}
    kind, name, token = fence
    if kind not in _FENCE_KINDS:
        raise ValueError(f"baton client: a fence's kind is lock, election, semaphore or rwlock, not {kind!r}")
    return {kind: name, "token": token}


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _key_path(key: str) -> str:
    # The key's "/"s are escaped too: the key is one path parameter, as the
    # OpenAPI document has it (a node takes them unescaped as well).
    return "/v1/kv/" + _q(key)


def _lock_path(name: str) -> str:
    return "/v1/locks/" + _q(name)


def _election_path(name: str) -> str:
    return "/v1/elections/" + _q(name)


def _held_path(k: HoldKind, name: str) -> str:
    return f"/v1/{k.path}/" + _q(name)


def _omit_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _rfc3339(t) -> str | None:
    if t is None or isinstance(t, str):
        return t
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class Client:
    """A client of a baton cluster; safe to share between threads.

    Client() reads the environment as the Go client and the CLI do:
    BATON_ADDR (comma-separated endpoints, default http://127.0.0.1:8080),
    BATON_AUTH_TOKEN (the bearer token), BATON_TOKEN_FILE (a file holding
    it, read when BATON_AUTH_TOKEN is unset), BATON_CACERT, BATON_CERT and
    BATON_KEY (TLS). Arguments given win over the environment. (The
    bearer token's variable is not BATON_TOKEN: `baton exec` gives its
    command the fencing token under that name.)

    A token file (token_file or BATON_TOKEN_FILE) is read again after
    TOKEN_FILE_MAX_AGE seconds and when a node answers 401, so a token
    its issuer replaces in the file (a JWT that expires) is sent fresh; a
    call a node refused with 401 is sent again, once, when the file has
    a new token. A token given as a value is sent as is.

    timeout bounds each attempt (an acquire's gets its wait on top);
    retry_backoff is the first pause between rounds of retries, doubling
    up to 5 s; max_retries bounds retries of a call that is safe to repeat
    (0: the number of endpoints plus 2; negative: never).

    max_request_wait is the longest wait one acquire request carries (a
    duration, at most and by default MAX_REQUEST_WAIT, 5 minutes: the
    server's cap). A longer wait of acquire, acquire_once, campaign,
    acquire_permit or acquire_rw, up to WAIT_FOREVER, needs a session: it
    is a run of requests, each of which keeps the session's place in line
    for the next (the server's keep_place), while the client renews the
    session.
    """

    def __init__(self, addr: str | list[str] | None = None, *, token: str | None = None,
                 token_file: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 retry_backoff: float = DEFAULT_RETRY_BACKOFF, max_retries: int = 0,
                 cafile: str | None = None, certfile: str | None = None, keyfile: str | None = None,
                 max_request_wait=MAX_REQUEST_WAIT):
        if addr is None:
            addr = os.environ.get("BATON_ADDR", "").strip() or DEFAULT_ADDR
        if isinstance(addr, str):
            addr = [a for a in (x.strip() for x in addr.split(",")) if a]
        if not addr:
            raise ValueError("baton client: no endpoints")
        endpoints = [parse_endpoint(a) for a in addr]
        if token is None:
            token = os.environ.get("BATON_AUTH_TOKEN", "").strip()
        if not token:
            token_file = token_file or os.environ.get("BATON_TOKEN_FILE") or None
        bearer = Bearer(token or "", token_file)
        if timeout < 0 or retry_backoff < 0:
            raise ValueError("baton client: timeout and retry_backoff must not be negative")
        max_wait = duration_seconds(max_request_wait) if max_request_wait is not None else 0.0
        if not 0 <= max_wait <= MAX_REQUEST_WAIT:
            raise ValueError(f"baton client: max_request_wait must be between 0 and {MAX_REQUEST_WAIT:g} s")
        self._max_wait = max_wait or MAX_REQUEST_WAIT
        retries = len(endpoints) + 2 if max_retries == 0 else max(max_retries, 0)
        ctx = None
        cafile = cafile or os.environ.get("BATON_CACERT") or None
        certfile = certfile or os.environ.get("BATON_CERT") or None
        keyfile = keyfile or os.environ.get("BATON_KEY") or None
        if any(e.scheme == "https" for e in endpoints) or cafile or certfile:
            ctx = ssl.create_default_context()
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            if cafile:
                ctx.load_verify_locations(cafile)
            if certfile:
                ctx.load_cert_chain(certfile, keyfile)
        self._t = Transport(endpoints, bearer, timeout or DEFAULT_TIMEOUT,
                            retry_backoff or DEFAULT_RETRY_BACKOFF, retries, ctx)
        self._watch = HoldWatcher(self)

    @property
    def endpoints(self) -> list[str]:
        return [str(e) for e in self._t.endpoints]

    @property
    def max_request_wait(self) -> float:
        """The longest wait one acquire request carries, in seconds."""
        return self._max_wait

    def close(self) -> None:
        """Stops the event stream that watches held locks. Holds still
        renew until released."""
        self._watch.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _do(self, op, method, path, **kw):
        return self._t.do(op, method, path, **kw)

    # Locks.

    def acquire(self, name: str, ttl=None, wait=None, owner: str | None = None, session: str | None = None,
                metadata: dict[str, str] | None = None, lock_delay=None, min_hold=None) -> Lock:
        """Takes the lock name, waiting up to wait (a duration: "10s",
        seconds, a timedelta; None fails at once) in line for it, and
        returns it held, renewed in the background at about a third of its
        TTL until released. ttl is the lease's (2s to 24h; None: the
        server's default, 30s; it must be None with session, whose TTL
        applies). Raises HeldError, with .holder, when the wait runs out.
        min_hold (up to 24h) is the hold's at-least window: however early
        it ends (a release, an expiry, a revoke), nobody takes the lock
        again before acquired_at + min_hold; their HeldError says when
        (.retry_after). A wait over max_request_wait (5m), up to WAIT_FOREVER, needs
        session (InvalidError, raised before any request, without one): it
        is a run of requests that keep the session's place in line.

        Not retried after a 503 or a broken connection outside a session:
        a repeat could take a second hold. The UnavailableError then has
        outcome_unknown set; a lock taken that way expires after its TTL.
        In a session the server hands back a lock the session holds, so
        the acquire is retried."""
        op = f"acquire {name!r}"
        status, info, sent = self._acquire(op, name, ttl, wait, owner, session, metadata, lock_delay, min_hold)
        return Lock(self, info)._start(op, status, sent, session, info.acquired_at)

    @contextlib.contextmanager
    def lock(self, name: str, **kw):
        """acquire(name, **kw) for a with block: the lock is released on
        exit. The release raises LockLostError when the lock was lost in
        the block, unless the block raised."""
        lk = self.acquire(name, **kw)
        with lk:
            yield lk

    def acquire_once(self, name: str, ttl=None, wait=None, owner=None, session=None, metadata=None,
                     lock_delay=None, min_hold=None) -> LockInfo:
        """Takes the lock as acquire does and returns it as the server
        describes it: nothing renews it. Retried as acquire is."""
        return self._acquire(f"acquire {name!r}", name, ttl, wait, owner, session, metadata, lock_delay, min_hold)[1]

    def _acquire(self, op, name, ttl, wait, owner, session, metadata, lock_delay, min_hold):
        """(status, LockInfo, sent) of the acquire, over as many requests
        as wait takes (_in_line)."""

        def send(wait, keep):
            body = _omit_none({"owner": owner, "ttl": format_duration(ttl), "session": session,
                               "wait": format_duration(wait), "keep_place": keep or None,
                               "lock_delay": format_duration(lock_delay), "min_hold": format_duration(min_hold),
                               "metadata": metadata})
            sent = time.monotonic()
            status, w = self._do(op, "POST", _lock_path(name), body=body, idempotent=session is not None,
                                 timeout=self._t.timeout + duration_seconds(wait))
            return status, decode(LockInfo, w), sent

        return self._in_line(op, session, wait, send, lambda r: self.release(name, r[1].token))

    def get(self, name: str) -> LockInfo:
        """The lock's holder and queue; NotHeldError when free. Retried."""
        return decode(LockInfo, self._do(f"get lock {name!r}", "GET", _lock_path(name), idempotent=True)[1])

    def locks(self, prefix: str | None = None, limit: int | None = None, cursor: str | None = None):
        """A page of held locks, by name, and the next cursor ("" on the
        last page). Retried."""
        _, w = self._do("list locks", "GET", "/v1/locks", query={"prefix": prefix, "limit": limit, "cursor": cursor},
                        idempotent=True)
        return [decode(LockInfo, x) for x in w.get("locks") or []], w.get("next_cursor") or ""

    def renew(self, name: str, token: int) -> LockInfo:
        """Extends the lease of the lock token holds (in a session: the
        session's); NotHeldError or TokenMismatchError when it no longer
        does. Retried. A Lock renews itself: this is for holders that keep
        the token only."""
        return self._renew(name, token)

    def _renew(self, name, token, timeout=None, deadline=None) -> LockInfo:
        _, w = self._do(f"renew {name!r}", "POST", _lock_path(name) + "/renew", body={"token": token},
                        idempotent=True, timeout=timeout, deadline=deadline)
        return decode(LockInfo, w)

    def release(self, name: str, token: int) -> None:
        """Ends token's hold on name. A stale token never touches a newer
        holder: TokenMismatchError; NotHeldError when free. Retried."""
        self._do(f"release {name!r}", "DELETE", _lock_path(name), query={"token": token}, idempotent=True)

    def revoke(self, name: str, reason: str | None = None) -> None:
        """Forcibly ends whatever hold the lock has (an operator's act).
        NotHeldError when free. Not retried: it names no token."""
        self._do(f"revoke {name!r}", "POST", _lock_path(name) + "/revoke",
                 body={"reason": reason} if reason else None)

    # Requests to yield: they ask holds to give way and end nothing; each
    # hold asked hears it on its on_yield callback.

    def yield_(self, name: str, reason: str | None = None, owner: str | None = None) -> YieldRequested:
        """Asks whoever holds the lock name to release it; the holder
        decides. owner names the asker (default: the client's address).
        NotHeldError when free. Not retried: a repeat would ask twice."""
        return self._yield(f"ask lock {name!r} to yield", _lock_path(name), reason, owner, None)

    def yield_leadership(self, name: str, reason: str | None = None, owner: str | None = None) -> YieldRequested:
        """Asks the leader of name to resign, as yield_ asks a holder.
        NoLeaderError when nobody leads."""
        return self._yield(f"ask the leader of {name!r} to yield", _election_path(name), reason, owner, None)

    def yield_permits(self, name: str, reason: str | None = None, owner: str | None = None,
                      token: int | None = None) -> YieldRequested:
        """Asks the holders of the semaphore's permits (with token, that
        permit's alone) to give them back. NotHeldError when none is."""
        return self._yield(f"ask the permits of {name!r} to yield", _held_path(SEMAPHORE, name), reason, owner, token)

    def yield_rwlock(self, name: str, reason: str | None = None, owner: str | None = None,
                     token: int | None = None) -> YieldRequested:
        """Asks the holds of the read/write lock (with token, that hold
        alone) to release. NotHeldError when nothing holds it."""
        return self._yield(f"ask the holds of rwlock {name!r} to yield", _held_path(RWLOCK, name), reason, owner, token)

    def _yield(self, op, path, reason, owner, token) -> YieldRequested:
        _, w = self._do(op, "POST", path + "/yield", body=_omit_none({"reason": reason, "owner": owner, "token": token}))
        return decode(YieldRequested, w)

    # Lock sets.

    def acquire_set(self, names: list[str], ttl=None, wait=None, owner: str | None = None,
                    session: str | None = None, metadata: dict[str, str] | None = None, min_hold=None) -> LockSet:
        """Takes every lock of names (2 to 64 distinct lock names, in any
        order) at once, all with one fencing token, or none of them, and
        returns the LockSet, renewed in the background as a Lock is. With
        wait the set queues for all of them at once and is granted when it
        heads every queue: sets and single locks are served in one order,
        so two sets never deadlock whatever order they name their locks
        in. Raises HeldError when a lock is held by another and the wait
        runs out (.holders: the locks in the way), having taken nothing;
        InvalidError (.field "names") for fewer than 2 or more than 64
        names, a repeated or an invalid one. min_hold is each lock's
        at-least window, as acquire's. A lock set keeps no place in
        line between requests: its wait is at most 5m, one request.

        Retried as acquire is: not after a 503 or a broken connection
        outside a session (UnavailableError with outcome_unknown set; a
        set taken that way expires after its TTL); in a session the
        server hands back the set the session holds, so it is."""
        if isinstance(names, str):
            raise TypeError("acquire_set: names is a list of lock names, not a string")
        names = list(names)
        op = f"acquire lock set {','.join(names)!r}"
        body = _omit_none({"names": names, "owner": owner, "ttl": format_duration(ttl), "session": session,
                           "wait": format_duration(wait), "min_hold": format_duration(min_hold), "metadata": metadata})
        sent = time.monotonic()
        status, w = self._do(op, "POST", "/v1/locksets", body=body, idempotent=session is not None,
                             timeout=self._t.timeout + duration_seconds(wait))
        return LockSet(self, decode(LockSetInfo, w))._start(op, status, sent, session)

    @contextlib.contextmanager
    def lock_set(self, names: list[str], **kw):
        """acquire_set(names, **kw) for a with block: the set is released
        on exit, raising LockLostError when it was lost in the block,
        unless the block raised."""
        s = self.acquire_set(names, **kw)
        with s:
            yield s

    def renew_set(self, names: list[str], token: int) -> LockSetInfo:
        """Extends the lease the set's locks share (in a session: the
        session's) if token still holds every lock of names; NotHeldError
        or TokenMismatchError, naming the lock, when one was lost: the set
        is no longer whole. Retried. A LockSet renews itself: this is for
        holders that keep the token only."""
        return self._renew_set(names, token)

    def _renew_set(self, names, token, timeout=None, deadline=None) -> LockSetInfo:
        _, w = self._do(f"renew lock set {','.join(names)!r}", "POST", "/v1/locksets/renew",
                        body={"names": list(names), "token": token}, idempotent=True, timeout=timeout,
                        deadline=deadline)
        return decode(LockSetInfo, w)

    def release_set(self, names: list[str], token: int) -> None:
        """Ends every lock of names still held with token, in one
        transaction, each handed to its oldest waiter; a lock of the set
        released or revoked on its own before is left alone. NotHeldError
        when none is held, TokenMismatchError when they are held, none
        with token. Retried: it names the token."""
        self._do(f"release lock set {','.join(names)!r}", "POST", "/v1/locksets/release",
                 body={"names": list(names), "token": token}, idempotent=True)

    # Sessions.

    def create_session(self, owner: str | None = None, ttl=None, bind: str | None = None, grace=None) -> Session:
        """Makes a session: one lease (ttl; None: 30s) that many locks
        share. With bind="stream" (and grace, None: 2s; ttl must then be
        None) the session lives while its stream, GET
        /v1/sessions/{id}/stream, is held open, and ends grace after it
        closes; one whose stream is never opened ends after its grace.
        Not retried: a repeat would make a second session."""
        _, w = self._do("create session", "POST", "/v1/sessions",
                        body=_omit_none({"owner": owner, "ttl": format_duration(ttl), "bind": bind,
                                         "grace": format_duration(grace)}))
        return decode(Session, w)

    def open_stream_session(self, owner: str | None = None, grace=None, timeout: float | None = None) -> StreamSession:
        """Makes a session bound to a stream (create_session with
        bind="stream"; grace None: 2s, from 500ms to 1m), opens its stream
        and holds it open from a thread until close(), or until the
        session ends (its done event). It returns once the stream is open:
        within timeout (None: the client's), else it deletes the session
        and raises UnavailableError. Acquire in it with session=ss.id; in
        a with block it is closed on exit.

        The stream is opened again at once on the next endpoint when it
        breaks or goes silent for half the grace; the session ends only
        when that fails for the whole grace. Not retried, as
        create_session is not: a session made by a request whose answer
        was lost ends by itself after its grace."""
        info = self.create_session(owner=owner, bind="stream", grace=grace)
        return StreamSession(self, info)._open(self._t.timeout if timeout is None else timeout)

    def get_session(self, id: str) -> Session:
        """The session with its locks; SessionNotFoundError. Retried."""
        return decode(Session, self._do(f"get session {id}", "GET", "/v1/sessions/" + _q(id), idempotent=True)[1])

    def renew_session(self, id: str) -> Session:
        """Extends the session, and every lock in it, by its TTL. Retried."""
        _, w = self._do(f"renew session {id}", "POST", "/v1/sessions/" + _q(id) + "/renew", idempotent=True)
        return decode(Session, w)

    def delete_session(self, id: str) -> None:
        """Ends the session and releases its locks. Retried."""
        self._do(f"delete session {id}", "DELETE", "/v1/sessions/" + _q(id), idempotent=True)

    def sessions(self, prefix: str | None = None, limit: int | None = None, cursor: str | None = None):
        """A page of live sessions (by owner, then ID) and the next cursor.
        Listed sessions' locks are empty: get_session reads them. Retried."""
        _, w = self._do("list sessions", "GET", "/v1/sessions",
                        query={"prefix": prefix, "limit": limit, "cursor": cursor}, idempotent=True)
        return [decode(Session, x) for x in w.get("sessions") or []], w.get("next_cursor") or ""

    # Fenced registers.

    def put_fenced(self, resource: str, token: int, value, lock: str | None = None,
                   election: str | None = None, rwlock: str | None = None) -> FencedValue:
        """Writes value (any JSON) to the fenced register resource unless
        token is below one an earlier write carried: then StaleTokenError,
        with .max_token. With lock (or election, or rwlock), the token must
        also hold that lock (lead that election, be that read/write lock's
        write hold) right then, or NotHolderError. Retried: a repeat
        carries the same token."""
        body = _omit_none({"token": token, "lock": lock, "election": election, "rwlock": rwlock})
        body["value"] = value
        _, w = self._do(f"put fenced {resource!r}", "PUT", "/v1/fenced/" + _q(resource), body=body, idempotent=True)
        return decode(FencedValue, w)

    def get_fenced(self, resource: str) -> FencedValue:
        """A fenced register's value and the token that wrote it;
        NotFoundError. Retried."""
        _, w = self._do(f"get fenced {resource!r}", "GET", "/v1/fenced/" + _q(resource), idempotent=True)
        return decode(FencedValue, w)

    # Keys.

    def put_key(self, key: str, value, if_revision: int | None = None, session: str | None = None,
                fence: Fence | None = None) -> Key:
        """Writes value (any JSON) under key, in one transaction with what
        it compares, and returns the key as written. if_revision makes it
        a compare-and-set: it happens only if the key's revision is
        if_revision (0: the key must not exist), else
        RevisionMismatchError, whose .revision is the key's (0: absent).
        session binds the key to that session (SessionNotFoundError): it
        is deleted when the session ends; a put without it unbinds the
        key. fence makes it happen only while that hold is current, else
        StaleTokenError. Also ValueTooLargeError, TooManyKeysError.

        Retried only with if_revision or fence, which make a repeat refuse
        what the first attempt did: an unconditional put that may have
        reached a node raises UnavailableError with outcome_unknown set."""
        body = {"value": value, **_omit_none({"if_revision": if_revision, "session": session}), **_fence_body(fence)}
        _, w = self._do(f"put key {key!r}", "PUT", _key_path(key), body=body,
                        idempotent=if_revision is not None or fence is not None)
        return decode(Key, w)

    def get_key(self, key: str) -> Key:
        """Reads a key, linearizably; KeyNotFoundError, whose .revision is
        the revision the key was found missing at. Retried."""
        return decode(Key, self._do(f"get key {key!r}", "GET", _key_path(key), idempotent=True)[1])

    def wait_key(self, key: str, after: int, wait=None) -> Key:
        """A blocking read: returns the key once its revision passes
        after, at once if it has already, else at its next put, or raises
        KeyNotFoundError at its delete; when wait runs out (a duration;
        None: the node's default, a minute; at most 5m) it returns the
        key as it is then. To follow a key, pass the last revision seen,
        a missing key's KeyNotFoundError.revision included. It may return
        early with the key unchanged: ask again. Retried."""
        timeout = self._t.timeout + max(duration_seconds(wait), _DEFAULT_KEY_WAIT)
        _, w = self._do(f"wait key {key!r}", "GET", _key_path(key), idempotent=True, timeout=timeout,
                        query={"wait_revision": after, "wait": format_duration(wait)})
        return decode(Key, w)

    def delete_key(self, key: str, if_revision: int | None = None, fence: Fence | None = None) -> None:
        """Deletes a key: only at revision if_revision, when given, and
        only while fence's hold is current, when given. KeyNotFoundError,
        RevisionMismatchError, StaleTokenError. Retried only with
        if_revision or fence, as put_key is."""
        body = _fence_body(fence) or None
        self._do(f"delete key {key!r}", "DELETE", _key_path(key), query={"if_revision": if_revision}, body=body,
                 idempotent=if_revision is not None or fence is not None)

    def keys(self, prefix: str | None = None, limit: int | None = None, cursor: str | None = None) -> KeyList:
        """A page of the keys that start with prefix ("config/": those
        under config), in key order, with their values, the next cursor
        and the revision the page was read at. Retried."""
        _, w = self._do("list keys", "GET", "/v1/kv", query={"prefix": prefix, "limit": limit, "cursor": cursor},
                        idempotent=True)
        return decode(KeyList, w)

    def watch_keys(self, prefix: str | None = None, since: int | None = None,
                   idle_timeout: float = DEFAULT_IDLE) -> Stream:
        """Streams the changes of the keys under prefix (GET
        /v1/kv/events) as an iterator of KeyEvent, after revision since,
        in revision order, each once: when the stream breaks it
        reconnects, to the next endpoint, with Last-Event-ID, without a
        gap or a repeat. Pass a KeyList's revision to watch from a
        listing; since None or 0 means from now (the current revision is
        read before this returns). It raises when a node refuses the
        request itself (a bad prefix, no valid token); close() ends it,
        from any thread. Use it in a with block, or close it."""
        src = KeySource(lambda: self.cluster().revision, prefix=prefix, since=since)
        if not since:
            with contextlib.suppress(Exception):
                src.fetch_base()  # the stream asks again, and raises a refusal
        return Stream(self._t, "key events", src, idle_timeout)

    # The audit trail.

    def history(self, lock: str | None = None, kind: str | None = None, name: str | None = None,
                owner: str | None = None, types: list[str] | None = None, from_=None, to=None,
                before: int | None = None, limit: int | None = None):
        """A page of the audit trail, newest first, and the before of the
        next page (0 on the last). kind is lock, election, semaphore,
        rwlock or fence; with name, the events of that one thing. Retried."""
        q = {"lock": lock, "kind": kind, "name": name, "owner": owner, "type": ",".join(types) if types else None,
             "from": _rfc3339(from_), "to": _rfc3339(to), "before": before, "limit": limit}
        _, w = self._do("history", "GET", "/v1/history", query=q, idempotent=True)
        return [decode(Event, x) for x in w.get("events") or []], w.get("next_before") or 0

    def events(self, since: int | None = None, lock: str | None = None, kind: str | None = None,
               name: str | None = None, idle_timeout: float = DEFAULT_IDLE) -> Stream:
        """Streams the audit trail (GET /v1/events) as an iterator of
        Event, in revision order, every one exactly once: when the stream
        breaks it reconnects, to the next endpoint, with Last-Event-ID,
        without a gap or a duplicate. since replays the events after that
        revision first; None means from now (the current revision is read
        before this returns). It raises when a node refuses the request
        itself (a bad name, no valid token); close() ends it, from any
        thread. Use it in a with block, or close it."""
        src = EventSource(lambda: self.cluster().revision, lock=lock, kind=kind, name=name, since=since)
        if since is None:
            with contextlib.suppress(Exception):
                src.fetch_base()  # the stream asks again, and raises a refusal
        return Stream(self._t, "events", src, idle_timeout)

    def cluster(self) -> Cluster:
        """The etcd members, leader, raft term and current revision. Retried."""
        return decode(Cluster, self._do("cluster", "GET", "/v1/cluster", idempotent=True)[1])

    def whoami(self) -> Whoami:
        """Who the client's token speaks for, its rules and its quotas,
        with what they count now (any credential may ask). Retried."""
        return decode(Whoami, self._do("whoami", "GET", "/v1/whoami", idempotent=True)[1])

    # Elections.

    def campaign(self, name: str, value=None, ttl=None, wait=None, candidate: str | None = None,
                 session: str | None = None, metadata: dict[str, str] | None = None,
                 lock_delay=None, min_hold=None) -> Leadership:
        """Makes the caller the leader of the election name, waiting in
        line up to wait, and returns the Leadership, renewed in the
        background as a Lock is. value (any JSON) is what the leader
        publishes. Raises ElectionHeldError, with .leader, when the wait
        runs out. min_hold is the leadership's at-least window, as
        acquire's: nobody else leads before elected_at + min_hold. A wait
        over max_request_wait (5m), up to WAIT_FOREVER, needs session, as
        acquire's does. Retried as acquire is: not after
        a 503 or a broken connection outside a session."""
        op = f"campaign for {name!r}"

        def send(wait, keep):
            body = _omit_none({"candidate": candidate, "value": value, "ttl": format_duration(ttl),
                               "session": session, "wait": format_duration(wait), "keep_place": keep or None,
                               "lock_delay": format_duration(lock_delay), "min_hold": format_duration(min_hold),
                               "metadata": metadata})
            sent = time.monotonic()
            status, w = self._do(op, "POST", _election_path(name) + "/campaign", body=body,
                                 idempotent=session is not None, timeout=self._t.timeout + duration_seconds(wait))
            return status, decode(LeaderInfo, w), sent

        status, info, sent = self._in_line(op, session, wait, send, lambda r: self.resign(name, r[1].token))
        return Leadership(self, info)._start(op, status, sent, session, info.elected_at)

    def leader(self, name: str) -> LeaderInfo:
        """Who leads, with the candidates in line; NoLeaderError. Retried."""
        _, w = self._do(f"get election {name!r}", "GET", _election_path(name), idempotent=True)
        return decode(LeaderInfo, w)

    def elections(self, prefix: str | None = None, limit: int | None = None, cursor: str | None = None):
        """A page of the elections that have a leader, and the next cursor. Retried."""
        _, w = self._do("list elections", "GET", "/v1/elections",
                        query={"prefix": prefix, "limit": limit, "cursor": cursor}, idempotent=True)
        return [decode(LeaderInfo, x) for x in w.get("elections") or []], w.get("next_cursor") or ""

    def proclaim(self, name: str, token: int, value) -> LeaderInfo:
        """Sets the value of the leadership token holds. Retried."""
        _, w = self._do(f"proclaim in {name!r}", "POST", _election_path(name) + "/proclaim",
                        body={"token": token, "value": value}, idempotent=True)
        return decode(LeaderInfo, w)

    def transfer_leadership(self, name: str, token: int, to: str) -> LeaderInfo:
        """Ends the leadership token holds in favour of the candidate to,
        waiting in line: in one transaction to leads, ahead of the line,
        with the next term, and its campaign returns that leadership.
        Returns the new leadership. CandidateNotWaitingError when no
        campaign of to waits (the leader still leads); ElectionHeldError,
        with retry_after, inside the leadership's at-least window;
        NoLeaderError or TokenMismatchError when token no longer leads.
        Retried: a repeat after it applied answers TokenMismatchError. A
        Leadership transfers itself (Leadership.transfer)."""
        _, w = self._do(f"transfer leadership of {name!r} to {to!r}", "POST", _election_path(name) + "/leader/transfer",
                        body={"token": token, "to": to}, idempotent=True)
        return decode(LeaderInfo, w)

    def renew_leadership(self, name: str, token: int) -> LeaderInfo:
        """Extends the leadership token holds. Retried."""
        return self._renew_leadership(name, token)

    def _renew_leadership(self, name, token, timeout=None, deadline=None) -> LeaderInfo:
        _, w = self._do(f"renew leadership of {name!r}", "POST", _election_path(name) + "/renew",
                        body={"token": token}, idempotent=True, timeout=timeout, deadline=deadline)
        return decode(LeaderInfo, w)

    def resign(self, name: str, token: int) -> None:
        """Ends the leadership token holds; the next in line leads.
        TokenMismatchError for a stale token, NoLeaderError. Retried."""
        self._do(f"resign from {name!r}", "DELETE", _election_path(name) + "/leader", query={"token": token},
                 idempotent=True)

    def revoke_leadership(self, name: str, reason: str | None = None) -> None:
        """Deposes whoever leads (an operator's act). Not retried."""
        self._do(f"revoke leadership of {name!r}", "POST", _election_path(name) + "/revoke",
                 body={"reason": reason} if reason else None)

    def observe(self, name: str) -> Stream:
        """Streams the election's changes as LeaderChange(revision,
        leader or None): first the state now, then each change, one per
        revision. It reconnects with Last-Event-ID after a broken stream,
        without a gap or a repeat; close() ends it."""
        return Stream(self._t, f"observe {name!r}", ObserveSource(name))

    # Semaphores.

    def acquire_permit(self, name: str, limit: int, ttl=None, wait=None, owner: str | None = None,
                       session: str | None = None, metadata: dict[str, str] | None = None, min_hold=None) -> Permit:
        """Takes one of the limit permits of the semaphore name, waiting up
        to wait in line (first come, first served), and returns it, renewed
        in the background as a Lock is. Every client of one semaphore must
        ask with the same limit: LimitMismatchError, with .limit the
        semaphore's, while its permits are held or waited for under another.
        Raises SemaphoreFullError, with .holders, when the wait runs out.
        min_hold is the permit's at-least window: its seat counts as taken
        until acquired_at + min_hold, however early the permit ends.

        Each request takes a permit of its own, in a session too, so it is
        never retried after a 503 or a broken connection: UnavailableError
        with outcome_unknown set; a permit taken that way expires after
        its TTL (or with its session)."""
        return self._acquire_held(Permit, f"acquire a permit of {name!r}", name, limit, ttl, wait, owner, session,
                                  metadata, min_hold, idempotent=False)

    @contextlib.contextmanager
    def semaphore(self, name: str, limit: int, **kw):
        """acquire_permit(name, limit, **kw) for a with block: the permit is
        released on exit, raising LockLostError when it was lost in the
        block, unless the block raised."""
        p = self.acquire_permit(name, limit, **kw)
        with p:
            yield p

    def get_semaphore(self, name: str) -> SemaphoreInfo:
        """The semaphore's limit, permits held (oldest first) and waiters
        (first served first); NotHeldError when no permit is held. Retried."""
        return self._get_held(SEMAPHORE, name)

    def semaphores(self, prefix: str | None = None, limit: int | None = None, cursor: str | None = None):
        """A page of the semaphores with permits held, by name, each with
        its permits (not its waiters), and the next cursor ("" on the last
        page). A page may hold fewer than limit. Retried."""
        return self._list_held(SEMAPHORE, prefix, limit, cursor)

    def renew_permit(self, name: str, token: int) -> HoldInfo:
        """Extends the lease of the permit token holds (in a session: the
        session's); NotHeldError when it no longer holds one. Retried. A
        Permit renews itself: this is for holders that keep the token only."""
        return self._renew_held(SEMAPHORE, name, token)

    def release_permit(self, name: str, token: int) -> None:
        """Gives the permit token holds back; the oldest waiter gets it.
        NotHeldError when token holds none. Retried: it names the token."""
        self._release_held(SEMAPHORE, name, token)

    def revoke_permit(self, name: str, token: int, reason: str | None = None) -> None:
        """Ends the permit token holds (an operator's act, role admin),
        audited as revoked; NotHeldError when token holds none. Retried:
        unlike a lock's revoke it names the token, so a repeat can never
        end another permit."""
        self._revoke_held(SEMAPHORE, name, token, reason)

    # Read/write locks.

    def acquire_rw(self, name: str, mode: str, ttl=None, wait=None, owner: str | None = None,
                   session: str | None = None, metadata: dict[str, str] | None = None, min_hold=None) -> RWHold:
        """Takes a hold of the read/write lock name in mode "read" (shared
        with other readers) or "write" (alone), waiting up to wait in line,
        and returns it, renewed in the background as a Lock is. The line
        is first come, first served: a reader behind a waiting writer waits
        for it. Raises HeldError, with .holders (the holds in the way),
        when the wait runs out. min_hold is the hold's at-least window:
        until acquired_at + min_hold, however early it ends, a write
        hold's keeps everyone out, a read hold's keeps writers out.

        Every read request takes a hold of its own, so a read is never
        retried after a 503 or a broken connection, nor is a write outside
        a session: UnavailableError with outcome_unknown set; a hold taken
        that way expires after its TTL. A write in a session is retried:
        the server hands back the write hold the session has."""
        return self._acquire_held(RWHold, f"acquire a {mode} hold of {name!r}", name, mode, ttl, wait, owner, session,
                                  metadata, min_hold, idempotent=session is not None and mode == "write")

    @contextlib.contextmanager
    def rwlock(self, name: str, mode: str, **kw):
        """acquire_rw(name, mode, **kw) for a with block: the hold is
        released on exit, raising LockLostError when it was lost in the
        block, unless the block raised."""
        h = self.acquire_rw(name, mode, **kw)
        with h:
            yield h

    def read_lock(self, name: str, **kw):
        """rwlock(name, "read", **kw)."""
        return self.rwlock(name, "read", **kw)

    def write_lock(self, name: str, **kw):
        """rwlock(name, "write", **kw)."""
        return self.rwlock(name, "write", **kw)

    def get_rwlock(self, name: str) -> RWLockInfo:
        """The read/write lock's mode, holds (oldest first) and waiters
        (first served first, each with its mode); NotHeldError when
        nothing holds it. Retried."""
        return self._get_held(RWLOCK, name)

    def rwlocks(self, prefix: str | None = None, limit: int | None = None, cursor: str | None = None):
        """A page of the held read/write locks, by name, each with its
        holds (not its waiters), and the next cursor ("" on the last
        page). Retried."""
        return self._list_held(RWLOCK, prefix, limit, cursor)

    def renew_rwlock(self, name: str, token: int) -> HoldInfo:
        """Extends the lease of the hold token has (in a session: the
        session's); NotHeldError when no hold of the lock has that token.
        Retried. An RWHold renews itself: this is for holders that keep
        the token only."""
        return self._renew_held(RWLOCK, name, token)

    def release_rwlock(self, name: str, token: int) -> None:
        """Gives back the hold token has; the oldest waiters that can then
        hold are granted. NotHeldError when no hold has that token.
        Retried: it names the token."""
        self._release_held(RWLOCK, name, token)

    def revoke_rwlock(self, name: str, token: int, reason: str | None = None) -> None:
        """Ends the hold token has (an operator's act, role admin),
        audited as revoked; NotHeldError when no hold has that token.
        Retried: it names the token."""
        self._revoke_held(RWLOCK, name, token, reason)

    # Permits and read/write lock holds alike: the API's Hold, by token, under
    # the kind's path.

    def _acquire_held(self, cls: type[_Held], op, name, extra, ttl, wait, owner, session, metadata, min_hold,
                      idempotent):
        k = cls._KIND

        def send(wait, keep):
            body = _omit_none({k.extra: extra, "owner": owner, "ttl": format_duration(ttl), "session": session,
                               "wait": format_duration(wait), "keep_place": keep or None,
                               "min_hold": format_duration(min_hold), "metadata": metadata})
            sent = time.monotonic()
            status, w = self._do(op, "POST", _held_path(k, name), body=body, idempotent=idempotent,
                                 timeout=self._t.timeout + duration_seconds(wait))
            return status, decode(HoldInfo, w), sent

        status, info, sent = self._in_line(op, session, wait, send,
                                           lambda r: self._release_held(k, name, r[1].token))
        return cls(self, info)._start(op, status, sent, session, info.acquired_at)

    # Waits longer than one request.

    def _in_line(self, op, session, wait, send, undo):
        """Runs an acquire that waits up to wait by send(wait, keep), which
        sends one request with that wait and, when keep is set,
        keep_place, and returns its result. A wait that fits one request
        (max_request_wait) is one request, with wait as given. A longer
        one needs session: it is a run of requests, each with the rest of
        the wait up to max_request_wait, all but the last with
        keep_place, until an answer that is not a kept place (the
        server's 409 with place_kept), while a thread renews the session.
        A release meanwhile grants the hold to the session, and the next
        request answers 200 with it.

        A wait cannot be cancelled, but an interrupt (KeyboardInterrupt,
        SystemExit) that ends the run gives the place up as the Go client
        does between two requests: one last request without keep_place,
        whose grant, if any, undo(result) ends. Otherwise a place kept by
        an answer the interrupt cut short would stay in line, ahead of
        later waiters, for as long as the session lives."""
        total = _wait_seconds(wait)
        if total <= self._max_wait:
            return send(wait, False)
        if not session:
            raise InvalidError(f"a wait over {format_duration(self._max_wait)} needs a session, which keeps "
                               "the place in line between requests", op=op)
        deadline = None if math.isinf(total) else time.monotonic() + total
        keeper = _SessionKeeper(self, session)
        try:
            while True:
                chunk, keep = self._max_wait, True
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= self._max_wait:
                        chunk, keep = max(left, _GIVE_UP_WAIT), False
                try:
                    return send(chunk, keep)
                except BatonError as e:
                    if not (keep and e.place_kept):
                        raise
        except BaseException as e:
            if not isinstance(e, Exception):
                self._give_up(send, undo)
            raise
        finally:
            keeper.stop()

    @staticmethod
    def _give_up(send, undo):
        """Ends the session's place in line: an acquire without
        keep_place that hardly waits, and undo of what it was granted."""
        try:
            r = send(_GIVE_UP_WAIT, False)
        except BatonError:
            return
        with contextlib.suppress(BatonError):
            undo(r)

    def _get_held(self, k: HoldKind, name):
        return decode(k.state, self._do(f"get {k.kind} {name!r}", "GET", _held_path(k, name), idempotent=True)[1])

    def _list_held(self, k: HoldKind, prefix, limit, cursor):
        _, w = self._do(f"list {k.path}", "GET", "/v1/" + k.path,
                        query={"prefix": prefix, "limit": limit, "cursor": cursor}, idempotent=True)
        return [decode(k.state, x) for x in w.get(k.path) or []], w.get("next_cursor") or ""

    def _renew_held(self, k: HoldKind, name, token, timeout=None, deadline=None) -> HoldInfo:
        _, w = self._do(f"renew {k.noun} of {name!r}", "POST", _held_path(k, name) + "/renew",
                        body={"token": token}, idempotent=True, timeout=timeout, deadline=deadline)
        return decode(HoldInfo, w)

    def _release_held(self, k: HoldKind, name, token) -> None:
        self._do(f"release {k.noun} of {name!r}", "DELETE", _held_path(k, name), query={"token": token},
                 idempotent=True)

    def _revoke_held(self, k: HoldKind, name, token, reason) -> None:
        self._do(f"revoke {k.noun} of {name!r}", "POST", _held_path(k, name) + "/revoke",
                 body=_omit_none({"token": token, "reason": reason}), idempotent=True)


def _wait_seconds(wait) -> float:
    """A wait as seconds: 0 for None, inf for WAIT_FOREVER."""
    if isinstance(wait, float) and math.isinf(wait) and wait > 0:
        return math.inf
    return duration_seconds(wait)


class _SessionKeeper:
    """Renews a session about every third of its TTL (at most once a
    second) from a thread of its own, from now until stop(): the session
    keeps a place in line while nothing it holds may renew it. A renewal
    that fails is tried again at the next turn; a session that is gone
    (session_not_found) stops it, and the wait, whose next request the
    server refuses, ends by itself."""

    def __init__(self, client: Client, session: str):
        self._c = client
        self._id = session
        self._stop = threading.Event()
        threading.Thread(target=self._run, name=f"baton-session-{session}", daemon=True).start()

    def _run(self) -> None:
        every = 1.0
        while not self._stop.is_set():
            try:
                s = self._c.renew_session(self._id)
                every = max((s.ttl or 0.0) / 3, 1.0)
            except SessionNotFoundError:
                return
            except Exception:  # noqa: BLE001: tried again at the next turn
                pass
            if self._stop.wait(every):
                return

    def stop(self) -> None:
        """Ends the renewals; one under way finishes by itself."""
        self._stop.set()
