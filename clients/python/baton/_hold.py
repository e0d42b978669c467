"""Holds kept alive in the background: locks, leaderships, permits,
read/write lock holds and lock sets.

A hold is renewed by a thread at about a third of its TTL, judged lost by
this client's own clock (time.monotonic) when its lease runs out with no
renew confirmed, and watched through the Client's one event stream
(HoldWatcher), so that a revoke, an expiry or a release elsewhere sets
lost within milliseconds instead of at the next renew.

The client errs on the side of "lost": a lease of TTL d whose latest
successful renew (or the grant) was sent at t is taken to end at t+d,
although the server granted it a little later.

Lock order: a hold's _mu may be held while the watcher's _mu is taken,
never the other way round.
"""

from __future__ import annotations

import collections
import copy
import threading
import time
from typing import NamedTuple

from ._sse import EventSource, Stream
from .errors import (BatonError, LockLostError, NoLeaderError, NotHeldError, SessionNotFoundError,
                     TokenMismatchError)
from .types import Event, HoldInfo, LeaderInfo, LockInfo, RWLockInfo, SemaphoreInfo

# etcd's lease floor and the server's minimum TTL: it stands in for a TTL
# the server did not report, shorter being the safe side.
MIN_TTL = 2.0
KIND_LOCK = "lock"
KIND_ELECTION = "election"
KIND_SEMAPHORE = "semaphore"
KIND_RWLOCK = "rwlock"
# A lock set's holds are its locks (kind lock); this kind names the set
# as a whole, in errors, and is no event's.
KIND_LOCKSET = "lockset"
MAX_ENDED_MEMORY = 1024
# YIELD_BUFFER bounds the requests to yield a hold keeps until on_yield is
# set; more are dropped: a holder with requests unread knows it is asked.
YIELD_BUFFER = 16


def is_lost_answer(e: BaseException) -> bool:
    """Whether a renew's error means the hold is over."""
    return isinstance(e, (NotHeldError, NoLeaderError, TokenMismatchError, SessionNotFoundError))


def _timer(delay: float, fn) -> threading.Timer:
    t = threading.Timer(max(delay, 0.0), fn)
    t.daemon = True
    t.start()
    return t


class Hold:
    """What every kept hold shares, whatever its kind. renew(timeout,
    deadline) renews by token and returns the TTL reported (or None);
    release() gives the hold back by token. keys are the (kind, name,
    token) of the holds whose end, as events record it, ends this one:
    its own key, or a lock set's locks."""

    def __init__(self, client, kind: str, name: str, token: int, renew, release, keys=None):
        self.c = client
        self.kind, self.name, self.token = kind, name, token
        self.keys = list(keys) if keys else [(kind, name, token)]
        self._renew = renew
        self._release = release
        self.lost = threading.Event()
        self.done = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mu = threading.Lock()
        self._ttl = MIN_TTL
        self._deadline = 0.0
        self._expiry: threading.Timer | None = None
        self._last_err: BaseException | None = None
        self.error: LockLostError | None = None
        self._finished = False
        self._release_mu = threading.Lock()
        # Requests to yield: the callback on_yield set, and those heard
        # before it was (at most YIELD_BUFFER), under _mu.
        self._on_yield = None
        self._heard_yields: list[Event] = []
        self._released = False
        self._release_err: BaseException | None = None

    def start(self, op: str, status: int, sent: float, ttl: float | None, left: float | None,
              in_session: bool) -> None:
        """Keeps the hold alive from its grant on. sent is when the
        granting request left (monotonic); left what the server measured
        of the lease at the grant. Raises (and leaves nothing running)
        when the hold is lost or its deadline unknowable at once."""
        ttl = ttl if ttl and ttl > 0 else MIN_TTL
        deadline = None
        if not in_session:
            # The hold's own lease was granted with ttl after we sent.
            deadline = sent + ttl
        elif status == 201:
            # The session's lease is older than the request; the server
            # measured what was left of it when the hold began.
            deadline = sent + min(ttl, left if left is not None else ttl)
        # else 200: the session held it already, since an unknown time.
        if deadline is None or deadline - time.monotonic() < 2 * ttl / 3:
            # The first renew is due already: renew before handing the
            # hold over, so that it starts with a deadline we know.
            rsent = time.monotonic()
            try:
                ttl = self._renew(None, None) or ttl
                deadline = rsent + ttl
            except BatonError as e:
                if is_lost_answer(e):
                    raise LockLostError(self.kind, self.name, self.token,
                                        f"{op}: granted, then lost before its first renew: {e}") from e
                if deadline is None or deadline <= time.monotonic():
                    if not in_session:
                        try:
                            self._release()
                        except BatonError:
                            pass
                    raise
        with self._mu:
            self._ttl, self._deadline = ttl, deadline
            self._expiry = _timer(deadline - time.monotonic(), self._check_expiry)
        self._thread = threading.Thread(target=self._keep_alive, name=f"baton-renew-{self.name}", daemon=True)
        self._thread.start()
        self.c._watch.register(self)

    def _keep_alive(self) -> None:
        failures = 0
        while True:
            with self._mu:
                deadline, ttl = self._deadline, self._ttl
            wait = deadline - 2 * ttl / 3 - time.monotonic()
            if failures:
                wait = min(self.c._t.backoff(failures - 1), ttl / 6)
            if self._stop.wait(max(wait, 0.0)):
                return
            sent = time.monotonic()
            try:
                # Each attempt gets a third of the TTL, so that a hung node
                # leaves time to try another; none is any use past the deadline.
                rttl = self._renew(min(self.c._t.timeout, max(ttl / 3, 0.1)), deadline)
            except Exception as e:  # noqa: BLE001: any failure is retried until the deadline
                if self._stop.is_set():
                    return
                if is_lost_answer(e):
                    self.lose(e)
                    return
                failures += 1
                with self._mu:
                    self._last_err = e
                continue
            if self._stop.is_set():
                return
            failures = 0
            with self._mu:
                if self._finished:
                    return
                if rttl:
                    self._ttl = rttl
                self._deadline = max(self._deadline, sent + self._ttl)
                self._last_err = None

    def renew_now(self) -> None:
        """Renews at once, besides the background renewal, and moves the
        deadline on. Raises LockLostError when the hold was lost before or
        the renew finds it lost; another error leaves the hold as it was."""
        if self.error is not None:
            raise self.error
        sent = time.monotonic()
        try:
            ttl = self._renew(None, None)
        except BatonError as e:
            if is_lost_answer(e):
                self.lose(e)
                if self.error is not None:
                    raise self.error from e
            raise
        with self._mu:
            if self._finished:
                return
            if ttl:
                self._ttl = ttl
            self._deadline = max(self._deadline, sent + self._ttl)
            self._last_err = None

    def _check_expiry(self) -> None:
        with self._mu:
            if self._finished:
                return
            left = self._deadline - time.monotonic()
            if left > 0:
                # A renew moved the deadline: wait for the new one.
                self._expiry = _timer(left, self._check_expiry)
                return
            cause = f"its {self._ttl:g}s lease ran out by this client's clock with no renew confirmed"
            if self._last_err is not None:
                cause += f"; last renew: {self._last_err}"
            self._lose_locked(cause)

    def lose(self, cause) -> None:
        with self._mu:
            self._lose_locked(cause)

    def on_yield(self, callback) -> None:
        """Sets callback(event) for the requests to yield made of this hold,
        and calls it at once for those heard before."""
        with self._mu:
            self._on_yield = callback
            heard, self._heard_yields = self._heard_yields, []
        for ev in heard:
            callback(ev)

    def asked_to_yield(self, ev: Event) -> None:
        """Passes ev, a yield_requested event of this hold's, to the
        callback, or keeps it for the callback still to come."""
        with self._mu:
            if self._finished:
                return
            callback = self._on_yield
            if callback is None:
                if len(self._heard_yields) < YIELD_BUFFER:
                    self._heard_yields.append(ev)
                return
        callback(ev)

    def _lose_locked(self, cause) -> None:
        if self.error is not None or self._finished:
            return
        self.error = LockLostError(self.kind, self.name, self.token, cause)
        # Finished first: whoever wakes on lost finds the hold done, its
        # renewal stopping and the watcher no longer watching it.
        self._finish_locked()
        self.lost.set()

    def _finish_locked(self) -> None:
        if self._finished:
            return
        self._finished = True
        self.done.set()
        if self._expiry is not None:
            self._expiry.cancel()
        self._stop.set()
        self.c._watch.unregister(self)

    def release(self) -> None:
        """Stops the renewal and gives the hold back by its token. Raises
        LockLostError when the hold was lost before; calling it again
        gives the same result. Without an answer (UnavailableError) the
        outcome is unknown, and another call tries again."""
        with self._release_mu:
            if self._released:
                if self._release_err is not None:
                    raise self._release_err
                return
            # Renewal stops first: a renew racing the release could only
            # make a lost hold look held for a moment.
            self._stop.set()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join()
            # Before the release: its own end's event is no loss.
            self.c._watch.unregister(self)
            err = None
            try:
                # Even a hold judged lost is given back: the client's clock
                # errs early, and others should not wait for the lease.
                self._release()
            except BatonError as e:
                err = e
            with self._mu:
                if err is not None and not is_lost_answer(err):
                    if self.error is not None:
                        raise LockLostError(self.kind, self.name, self.token,
                                            f"{self.error.cause}; release: {err}") from err
                    raise err
                if err is not None:
                    self._lose_locked(err)
                self._released = True
                self._finish_locked()
                self._release_err = self.error
            if self._release_err is not None:
                raise self._release_err

    def hand_on(self, call):
        """Ends the hold by call(), a request that hands it to another (a
        leadership's transfer), as release() ends it by its release, and
        returns what call returns: the renewal and the watch stop first,
        so its own end is no loss. A refusal that says the hold goes on
        (CandidateNotWaitingError, ElectionHeldError), or no answer,
        resumes them and is raised: if the hold did change hands unseen,
        the next renew finds it lost. Raises LockLostError when the hold
        was lost before."""
        with self._release_mu:
            if self._released:
                if self._release_err is not None:
                    raise self._release_err
                raise LockLostError(self.kind, self.name, self.token, "given up already")
            self._stop.set()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join()
            self.c._watch.unregister(self)
            try:
                result = call()
            except BaseException as e:
                with self._mu:
                    lost = isinstance(e, BatonError) and is_lost_answer(e)
                    if lost:
                        self._lose_locked(e)
                    if lost or self._finished:
                        self._released = True
                        self._finish_locked()
                        self._release_err = self.error
                        if self.error is not None:
                            raise self.error from e
                        raise
                    self._stop = threading.Event()
                self._thread = threading.Thread(target=self._keep_alive, name=f"baton-renew-{self.name}",
                                                daemon=True)
                self._thread.start()
                self.c._watch.register(self)
                raise
            with self._mu:
                self._released = True
                self._finish_locked()
                self._release_err = self.error
            if self._release_err is not None:
                raise self._release_err
            return result

    def release_quietly(self) -> None:
        try:
            self.release()
        except BatonError:
            pass


def _ended(ev: Event) -> BatonError:
    """A hold's end as the audit trail recorded it: the token no longer
    holds it."""
    msg = f"{ev.type} at revision {ev.revision}" + (f": {ev.detail}" if ev.detail else "")
    if ev.set:
        # One lock of a set: say which, since it ends the whole set.
        msg = f"lock {ev.lock or ev.name!r} {msg}"
    if ev.kind == KIND_ELECTION:
        return NoLeaderError(msg, code="no_leader")
    return NotHeldError(msg, code="not_held")


def _ends_hold(kind: str, typ: str) -> bool:
    if typ in ("revoked", "expired", "session_expired"):
        return True
    if typ == "released":
        return kind in (KIND_LOCK, KIND_SEMAPHORE, KIND_RWLOCK)
    return typ == "resigned" and kind == KIND_ELECTION


def _event_key(ev: Event):
    kind, name = ev.kind or KIND_LOCK, ev.name
    if kind == KIND_LOCK and ev.lock:
        name = ev.lock
    return kind, name, ev.token


_EVERYTHING = ("", "")


class HoldWatcher:
    """A Client's one event stream for all the holds it keeps.

    One stream per Client, not one per hold: nodes cap event streams per
    client address and per credential. While every hold is of one thing
    (one lock, one election, one semaphore) the stream asks for that
    thing's events only (lock=NAME, or kind=KIND&name=NAME: one
    semaphore's permits, one read/write lock's holds); holds of several things widen
    it to every event, and it narrows again when they end. A change of
    filter reconnects from where the old stream was, so no event falls in
    between. The stream only ever makes a hold lost sooner: one that
    cannot connect changes nothing, and renewals decide as before."""

    def __init__(self, client):
        self.c = client
        self._mu = threading.Lock()
        self._holds: dict[tuple, list[Hold]] = {}
        # Ends of holds not (yet) registered: a revoke can be streamed
        # between the grant's answer and the hold's registration.
        self._ended: collections.OrderedDict[tuple, Event] = collections.OrderedDict()
        self._stream: Stream | None = None
        self._filter = _EVERYTHING
        self._from = 0
        self._pos = 0
        self._gen = 0

    def register(self, h: Hold) -> None:
        with self._mu:
            ev = next((self._ended[k] for k in h.keys if k in self._ended), None)
            if ev is None:
                covered = self._stream is not None
                for k in h.keys:
                    self._holds.setdefault(k, []).append(h)
                    covered = covered and self._filter in (_EVERYTHING, k[:2]) and self._from < k[2]
                if not covered:
                    # The events after token-1 include every end of this
                    # hold; those after pos, every one the others await.
                    self._restart_locked(min([self._resume_locked()] + [k[2] - 1 for k in h.keys]))
        if ev is not None:
            h.lose(_ended(ev))

    def unregister(self, h: Hold) -> None:
        with self._mu:
            removed = False
            for k in h.keys:
                ls = self._holds.get(k)
                if not ls or h not in ls:
                    continue
                ls.remove(h)
                removed = True
                if not ls:
                    del self._holds[k]
            if not removed:
                return
            if not self._holds:
                self._stop_locked()
                self._ended.clear()
            elif self._filter == _EVERYTHING and self._want_filter_locked() != _EVERYTHING:
                self._restart_locked(self._resume_locked())

    def close(self) -> None:
        with self._mu:
            self._stop_locked()

    def _want_filter_locked(self):
        things = {k[:2] for k in self._holds}
        return things.pop() if len(things) == 1 else _EVERYTHING

    def _resume_locked(self) -> int:
        if self._stream is not None:
            # The latest revision delivered, again: the stream may have
            # been cut in the middle of its events. Repeats are harmless.
            return max(self._from, self._pos - 1)
        return min((k[2] - 1 for k in self._holds), default=0)

    def _stop_locked(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        self._gen += 1

    def _restart_locked(self, since: int) -> None:
        self._stop_locked()
        self._filter = self._want_filter_locked()
        self._from, self._pos = max(since, 0), 0
        kind, name = self._filter
        opts = {}
        if kind == KIND_LOCK:
            opts["lock"] = name
        elif kind:
            opts["kind"], opts["name"] = kind, name
        # since 0 would mean "from now"; revision 0 holds no event anyway.
        src = EventSource(None, since=max(since, 1), **opts)
        stream = Stream(self.c._t, "events", src)
        self._stream = stream
        gen = self._gen
        threading.Thread(target=self._run, args=(gen, stream), name="baton-hold-watch", daemon=True).start()

    def _run(self, gen: int, stream: Stream) -> None:
        try:
            for ev in stream:
                self._handle(gen, ev)
        except BatonError:
            # A refused stream (no credential for events, say) is not
            # retried here: renewals go on, the next registration retries.
            pass
        finally:
            with self._mu:
                if self._gen == gen:
                    self._stream = None

    def _handle(self, gen: int, ev: Event) -> None:
        lost: list[Hold] = []
        asked: list[Hold] = []
        with self._mu:
            if self._gen != gen:
                return  # a replaced stream's: its successor delivers it again
            self._pos = max(self._pos, ev.revision)
            k = _event_key(ev)
            if ev.type == "yield_requested":
                asked = list(self._holds.get(k, []))
            if _ends_hold(k[0], ev.type):
                # A released or resigned event for a registered hold is
                # someone else's doing: its own release unregisters first.
                if k in self._holds:
                    lost = list(self._holds[k])
                elif k not in self._ended:
                    self._ended[k] = ev
                    if len(self._ended) > MAX_ENDED_MEMORY:
                        self._ended.popitem(last=False)
        # Outside _mu: lose takes the hold's lock, then ours.
        for h in lost:
            h.lose(_ended(ev))
        for h in asked:
            h.asked_to_yield(ev)


class _Kept:
    """What a Lock, a Leadership, a Permit, an RWHold and a LockSet share: the Hold that keeps them, the
    info the latest answer gave (under _info_mu), and a with block that
    ends them on exit (quietly when the block raised)."""

    def __init__(self, client, kind: str, info, name: str | None = None, keys=None):
        self._info = info
        self._info_mu = threading.Lock()
        self._hold = Hold(client, kind, info.name if name is None else name, info.token, self._renew,
                          self._give_back, keys)
        self.lost = self._hold.lost
        self.done = self._hold.done

    @property
    def name(self) -> str:
        return self._hold.name

    @property
    def token(self) -> int:
        """The fencing token: pass it with every write it protects."""
        return self._hold.token

    @property
    def info(self):
        """The hold as the latest answer described it."""
        with self._info_mu:
            return copy.deepcopy(self._info)

    @property
    def error(self) -> LockLostError | None:
        """Why it was lost, or None."""
        return self._hold.error

    def on_yield(self, callback) -> None:
        """Calls callback(event) for each request that this hold give way
        (Client.yield_ and its kin), within milliseconds of it, from the
        client's event stream: event is the yield_requested Event, whose
        owner, credential and reason are the asker's. Requests heard before
        this call are passed at once. The hold stays held: release it if
        you choose to. callback runs on the stream's thread: keep it short
        (set an Event, put on a queue)."""
        self._hold.on_yield(callback)

    def _start(self, op: str, status: int, sent: float, session, began):
        """Keeps it alive from its grant on (Hold.start); began is when
        the granting answer says the hold began. Returns self."""
        info = self._info
        left = (info.expires_at - began).total_seconds() if info.expires_at and began else None
        self._hold.start(op, status, sent, info.ttl, left, session is not None)
        return self

    def _record(self, info):
        """Takes a renew's answer as the latest info, keeping the metadata
        it leaves out; returns the TTL it reports."""
        with self._info_mu:
            if not info.metadata:
                info.metadata = self._info.metadata
            self._info = info
        return info.ttl

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self._hold.release()
        else:
            self._hold.release_quietly()
        return False


class Lock(_Kept):
    """A held lock that renews itself until released or lost; safe to
    share between threads.

    lost is a threading.Event set as soon as the lock is known lost: the
    audit trail recorded the hold's end (revoked, expired, its session
    expired or deleted, or released by its token elsewhere), which the
    Client's event stream delivers within milliseconds; a renew was
    answered not_held or token_mismatch; or the TTL ran out by this
    client's clock with no renew confirmed. Stop the protected work then;
    error says why. A release does not set it, unless the release finds
    the lock lost. lost can only tell after the fact: the fencing token,
    checked by whatever the lock protects, is what makes writes safe.

    In a with block, the lock is released on exit; the release raises
    LockLostError when the lock was lost during the block (unless the
    block raised, whose exception then propagates)."""

    def __init__(self, client, info: LockInfo):
        super().__init__(client, KIND_LOCK, info)

    def _renew(self, timeout, deadline):
        return self._record(self._hold.c._renew(self._hold.name, self._hold.token, timeout=timeout, deadline=deadline))

    def _give_back(self):
        self._hold.c.release(self._hold.name, self._hold.token)

    def release(self) -> None:
        """Stops renewing and releases the lock by its token. Raises
        LockLostError when it was lost before; again, the same result.
        On UnavailableError the outcome is unknown: call it again, or the
        lease runs out after its TTL."""
        self._hold.release()

    def __repr__(self) -> str:
        return f"<baton.Lock {self.name!r} token={self.token}{' lost' if self.lost.is_set() else ''}>"


class Leadership(_Kept):
    """An election won, kept as a Lock is (the same renewal, clock and
    event stream): lost is set within a second of a revoke, an expiry or
    a resignation elsewhere. token fences the leader's writes; term counts
    the election's leaders; value is what it published. resign() ends it
    and hands over to the first candidate in line; in a with block it
    resigns on exit."""

    def __init__(self, client, info: LeaderInfo):
        self._proclaims = 0
        super().__init__(client, KIND_ELECTION, info)

    def _renew(self, timeout, deadline):
        with self._info_mu:
            seq = self._proclaims
        info = self._hold.c._renew_leadership(self._hold.name, self._hold.token, timeout=timeout, deadline=deadline)
        with self._info_mu:
            if self._proclaims != seq:
                # A proclaim began meanwhile: this answer's value may be older.
                info.value = self._info.value
            self._set_locked(info)
        return info.ttl

    def _set_locked(self, info: LeaderInfo) -> None:
        old = self._info
        info.candidates = []
        if not info.metadata:
            info.metadata = old.metadata
        if info.elected_at is None:
            info.elected_at = old.elected_at
        self._info = info

    def _give_back(self):
        self._hold.c.resign(self._hold.name, self._hold.token)

    @property
    def term(self) -> int:
        with self._info_mu:
            return self._info.term

    @property
    def value(self):
        """The leader's value (decoded JSON) as last campaigned, renewed or proclaimed."""
        with self._info_mu:
            return copy.deepcopy(self._info.value)

    def proclaim(self, value) -> None:
        """Sets the leader's value, keeping token and term; observers are
        told. Raises NoLeaderError or TokenMismatchError when the
        leadership is over."""
        with self._info_mu:
            self._proclaims += 1
        info = self._hold.c.proclaim(self._hold.name, self._hold.token, value)
        with self._info_mu:
            self._set_locked(info)

    def transfer(self, to: str) -> LeaderInfo:
        """Hands the leadership to the candidate to, which must be waiting
        in line, ahead of the others (Client.transfer_leadership), and
        returns the new leader's. The leadership is then over, as after
        resign(): done is set, lost is not. When the transfer is refused
        and the leadership goes on (CandidateNotWaitingError,
        ElectionHeldError inside its at-least window) or gets no answer,
        it keeps renewing itself and the error is raised; LockLostError
        when it was lost before."""
        return self._hold.hand_on(lambda: self._hold.c.transfer_leadership(self._hold.name, self._hold.token, to))

    def resign(self) -> None:
        """Stops renewing and resigns by token; raises LockLostError when
        the leadership was lost before."""
        self._hold.release()

    def __repr__(self) -> str:
        return f"<baton.Leadership {self.name!r} token={self.token} term={self.term}>"


class HoldKind(NamedTuple):
    """What tells apart the things whose holds are the API's Hold: a
    semaphore's permits and a read/write lock's holds are granted, got,
    listed, renewed, released and revoked by token alike, under their
    own path."""

    kind: str  # the events' kind; a get's op names it
    path: str  # under /v1/; a listing's op and member name it
    noun: str  # one hold, as the ops name it
    extra: str  # the acquire's member that only this kind asks with: limit or mode
    state: type  # the thing's state, as a get and a listing answer it


SEMAPHORE = HoldKind(KIND_SEMAPHORE, "semaphores", "permit", "limit", SemaphoreInfo)
RWLOCK = HoldKind(KIND_RWLOCK, "rwlocks", "rwlock hold", "mode", RWLockInfo)


class _Held(_Kept):
    """What a Permit and an RWHold share: a hold of the API's Hold
    schema, renewed and given back by token under its kind's path."""

    _KIND: HoldKind

    def __init__(self, client, info: HoldInfo):
        super().__init__(client, self._KIND.kind, info)

    def _renew(self, timeout, deadline):
        return self._record(self._hold.c._renew_held(self._KIND, self._hold.name, self._hold.token,
                                                     timeout=timeout, deadline=deadline))

    def _give_back(self):
        self._hold.c._release_held(self._KIND, self._hold.name, self._hold.token)

    def release(self) -> None:
        """Stops renewing and gives the hold back by its token. Raises
        LockLostError when it was lost before; again, the same result.
        On UnavailableError the outcome is unknown: call it again, or the
        lease runs out after its TTL."""
        self._hold.release()


class Permit(_Held):
    """One of a semaphore's permits, kept as a Lock is (the same renewal,
    clock and event stream); safe to share between threads. token is the
    permit's own fencing token, limit the semaphore's. lost is set when
    the permit is known lost: revoked, expired, its session ended, or
    released by its token elsewhere; error says why. release() gives it
    back, and the oldest waiter gets it; in a with block it is released
    on exit, raising LockLostError when it was lost in the block."""

    _KIND = SEMAPHORE

    @property
    def limit(self) -> int:
        """How many permits the semaphore has."""
        with self._info_mu:
            return self._info.limit

    def __repr__(self) -> str:
        return (f"<baton.Permit {self.name!r} token={self.token} limit={self.limit}"
                f"{' lost' if self.lost.is_set() else ''}>")


class RWHold(_Held):
    """A read/write lock's hold, a reader's or the writer's, kept as a
    Lock is (the same renewal, clock and event stream); safe to share
    between threads. mode is read or write; token is the hold's own
    fencing token: a write hold's is greater than that of every hold that
    ended before it, and a fenced write naming the rwlock accepts the
    current write hold's only. lost is set when the hold is known lost:
    revoked, expired, its session ended, or released by its token
    elsewhere; error says why. release() gives it back, and the oldest
    waiters that can then hold are granted; in a with block it is
    released on exit, raising LockLostError when it was lost in the
    block."""

    _KIND = RWLOCK

    @property
    def mode(self) -> str:
        """read or write."""
        with self._info_mu:
            return self._info.mode or ""

    def __repr__(self) -> str:
        return (f"<baton.RWHold {self.name!r} {self.mode} token={self.token}"
                f"{' lost' if self.lost.is_set() else ''}>")
