"""What baton's API answers, as dataclasses.

Field names are the API's JSON members, one for one (tests/test_types.py
compares them with openapi/openapi.json's schemas). Durations are float
seconds, times timezone-aware datetimes, values decoded JSON; a member
the answer leaves out is None (or empty, for lists and maps).
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DUR = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(s: str | None) -> float | None:
    """Reads a Go duration ("30s", "1m30s", "1.5s", "500ms") as seconds."""
    if s is None or s == "":
        return None
    neg = s.startswith("-")
    rest = s.lstrip("+-")
    if rest == "0":
        return 0.0
    total, pos = 0.0, 0
    for m in _DUR.finditer(rest):
        if m.start() != pos:
            raise ValueError(f"duration {s!r}")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(rest) or pos == 0:
        raise ValueError(f"duration {s!r}")
    return -total if neg else total


def format_duration(d: Any) -> str | None:
    """Writes a duration for the API: a string as it is (Go syntax), a
    number as seconds, a timedelta by its seconds."""
    if d is None:
        return None
    if isinstance(d, str):
        return d
    if isinstance(d, datetime.timedelta):
        d = d.total_seconds()
    if isinstance(d, bool) or not isinstance(d, (int, float)):
        raise TypeError(f"duration: want str, seconds or timedelta, not {type(d).__name__}")
    if not math.isfinite(d):
        raise ValueError(f"duration {d!r}: not finite (WAIT_FOREVER is for the wait of an acquire, a campaign, "
                         "a permit or a read/write hold, in a session)")
    if float(d).is_integer():
        return f"{int(d)}s"
    return f"{float(d):.9f}".rstrip("0") + "s"


def duration_seconds(d: Any) -> float:
    """A duration as seconds (0 for None)."""
    s = format_duration(d)
    return (parse_duration(s) or 0.0) if s is not None else 0.0


def parse_time(s: str | None) -> datetime.datetime | None:
    """Reads an RFC 3339 time, nanoseconds included (cut to microseconds)."""
    if not s:
        return None
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)(\.\d+)?(.*)$", s)
    if m and m.group(2) and len(m.group(2)) > 7:
        s = m.group(1) + m.group(2)[:7] + m.group(3)
    return datetime.datetime.fromisoformat(s)


def _list(cls):
    return lambda v: [decode(cls, x) for x in (v or [])]


def _opt(cls):
    return lambda v: None if v is None else decode(cls, v)


def decode(cls, d: dict | None):
    """Builds dataclass cls from a JSON object, converting the members
    that cls._convert names; unknown members are ignored (a newer
    server's), and missing ones keep their defaults."""
    d = d or {}
    conv = getattr(cls, "_convert", {})
    kw = {}
    for f in dataclasses.fields(cls):
        if f.name in d:
            v = d[f.name]
            c = conv.get(f.name)
            kw[f.name] = c(v) if c else v
    return cls(**kw)


def _METADATA(v):
    return dict(v or {})


def _STRLIST(v):
    return list(v or [])


@dataclass
class Waiter:
    """An acquire queued for a lock, a semaphore or a read/write lock
    (mode, read or write, for a read/write lock's only; set, every lock
    of the set, for a lock set's, which waits in each of their queues)."""

    owner: str = ""
    position: int = 0
    session: str | None = None
    since: datetime.datetime | None = None
    mode: str | None = None
    set: list[str] = field(default_factory=list)
    _convert = {"since": parse_time, "set": _STRLIST}


@dataclass
class LockInfo:
    """A held lock as the server describes it (schema Lock). set, on a
    lock of a lock set, names every lock of the set, in the order its
    acquire gave them: they all have this lock's token."""

    name: str = ""
    owner: str = ""
    token: int = 0
    session: str | None = None
    ttl: float | None = None
    acquired_at: datetime.datetime | None = None
    expires_at: datetime.datetime | None = None
    lock_delay: float | None = None
    min_hold: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    waiters: list[Waiter] = field(default_factory=list)
    set: list[str] = field(default_factory=list)
    _convert = {
        "ttl": parse_duration, "lock_delay": parse_duration, "min_hold": parse_duration, "acquired_at": parse_time,
        "expires_at": parse_time, "metadata": _METADATA, "waiters": _list(Waiter), "set": _STRLIST,
    }


@dataclass
class LockSetInfo:
    """A lock set as the server grants and renews it (schema LockSet):
    its names, the one fencing token every lock of it has, and its
    locks, in the order of names."""

    names: list[str] = field(default_factory=list)
    token: int = 0
    locks: list[LockInfo] = field(default_factory=list)
    _convert = {"names": _STRLIST, "locks": _list(LockInfo)}


@dataclass
class Candidate:
    """A campaign waiting to lead."""

    candidate: str = ""
    position: int = 0
    session: str | None = None
    since: datetime.datetime | None = None
    _convert = {"since": parse_time}


@dataclass
class LeaderInfo:
    """An election's leadership (schema Leader). value is the leader's
    value, decoded; ttl and expires_at are None in an observed change."""

    name: str = ""
    candidate: str = ""
    value: Any = None
    token: int = 0
    term: int = 0
    session: str | None = None
    ttl: float | None = None
    elected_at: datetime.datetime | None = None
    expires_at: datetime.datetime | None = None
    lock_delay: float | None = None
    min_hold: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    candidates: list[Candidate] = field(default_factory=list)
    _convert = {
        "ttl": parse_duration, "lock_delay": parse_duration, "min_hold": parse_duration, "elected_at": parse_time,
        "expires_at": parse_time, "metadata": _METADATA, "candidates": _list(Candidate),
    }


@dataclass
class HoldInfo:
    """A semaphore's permit or a read/write lock's hold as the server
    describes it (schema Hold): its own fencing token, and the
    semaphore's limit (permits only) or the hold's mode, read or write
    (read/write locks only)."""

    name: str = ""
    owner: str = ""
    token: int = 0
    limit: int | None = None
    mode: str | None = None
    session: str | None = None
    ttl: float | None = None
    acquired_at: datetime.datetime | None = None
    expires_at: datetime.datetime | None = None
    min_hold: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    _convert = {"ttl": parse_duration, "acquired_at": parse_time, "expires_at": parse_time, "min_hold": parse_duration,
                "metadata": _METADATA}


# A permit is a Hold: the name the semaphores' API first gave it.
PermitInfo = HoldInfo


@dataclass
class SemaphoreInfo:
    """A semaphore's state (schema Semaphore): its limit, the permits
    held (oldest first) and, from get_semaphore only, the acquires waiting."""

    name: str = ""
    limit: int = 0
    holders: list[HoldInfo] = field(default_factory=list)
    waiters: list[Waiter] = field(default_factory=list)
    _convert = {"holders": _list(HoldInfo), "waiters": _list(Waiter)}


@dataclass
class RWLockInfo:
    """A read/write lock's state (schema RWLock): the mode of its holds
    (read: one or more readers; write: one writer), the holds (oldest
    first) and, from get_rwlock only, the acquires waiting, each with its
    mode, in the order they will be served."""

    name: str = ""
    mode: str = ""
    holders: list[HoldInfo] = field(default_factory=list)
    waiters: list[Waiter] = field(default_factory=list)
    _convert = {"holders": _list(HoldInfo), "waiters": _list(Waiter)}


@dataclass
class Session:
    """A lease that many locks, leaderships, permits and read/write lock
    holds share. A listed session's locks, elections, semaphores and
    rwlocks are empty: only get_session reads them."""

    id: str = ""
    owner: str = ""
    ttl: float | None = None
    created_at: datetime.datetime | None = None
    expires_at: datetime.datetime | None = None
    locks: list[str] = field(default_factory=list)
    elections: list[str] = field(default_factory=list)
    semaphores: list[str] = field(default_factory=list)
    rwlocks: list[str] = field(default_factory=list)
    #: "stream" for a session that lives while its stream is open, with
    #: its grace in seconds; "" and None for one that lives by its ttl.
    bind: str = ""
    grace: float | None = None
    _convert = {
        "ttl": parse_duration, "created_at": parse_time, "expires_at": parse_time,
        "locks": _STRLIST, "elections": _STRLIST, "semaphores": _STRLIST, "rwlocks": _STRLIST,
        "grace": parse_duration,
    }


@dataclass
class Event:
    """An entry of the audit trail. Events of one transaction share a
    revision; a lock's events name it in lock too. A semaphore's acquired
    event carries the limit the permit was granted under; a read/write
    lock's events (kind rwlock) the hold's mode; the events of a lock of a
    lock set (kind lock) set, every lock of the set; a key's put (kind
    key) its created_revision and version. A gap (type "gap", no
    kind) says the trail could not record the events of the revisions
    from_revision to to_revision, and why (reason)."""

    revision: int = 0
    time: datetime.datetime | None = None
    type: str = ""
    kind: str = ""
    name: str = ""
    lock: str = ""
    owner: str = ""
    token: int = 0
    session: str | None = None
    detail: str | None = None
    credential: str | None = None
    queued_at: datetime.datetime | None = None
    term: int | None = None
    value: Any = None
    limit: int | None = None
    mode: str | None = None
    created_revision: int | None = None
    version: int | None = None
    set: list[str] = field(default_factory=list)
    from_revision: int | None = None
    to_revision: int | None = None
    reason: str | None = None
    _convert = {"time": parse_time, "queued_at": parse_time, "set": _STRLIST}


@dataclass
class YieldRequested:
    """What a request to yield asked (schema YieldRequested): the tokens
    of the holds asked, each of which got a yield_requested event at
    revision. The holders decide whether to release."""

    kind: str = ""
    name: str = ""
    tokens: list[int] = field(default_factory=list)
    owner: str = ""
    reason: str | None = None
    requested_at: datetime.datetime | None = None
    revision: int = 0
    _convert = {"requested_at": parse_time}


@dataclass
class FencedValue:
    """A fenced register's content: the value and the token that wrote it."""

    resource: str = ""
    token: int = 0
    value: Any = None
    revision: int = 0


@dataclass
class Key:
    """A key of coordination data (schema Key): its value, decoded; the
    revision of its last put; created_revision, that of the put that
    created it; version, how many puts it has had since (1 for a new
    key); and session, the session it is bound to (it is deleted when the
    session ends), or None."""

    key: str = ""
    value: Any = None
    revision: int = 0
    created_revision: int = 0
    version: int = 0
    session: str | None = None


@dataclass
class KeyList:
    """A page of keys, in key order (schema KeyList): next_cursor is the
    cursor of the next page ("" on the last), and revision the revision
    the page was read at: watch_keys(prefix, since=revision) misses no
    change after the page."""

    keys: list[Key] = field(default_factory=list)
    next_cursor: str = ""
    revision: int = 0
    _convert = {"keys": _list(Key)}


@dataclass
class KeyEvent:
    """A change of a key, as watch_keys yields it. type "put": value,
    created_revision, version and session are the key's as the put left
    it (a put replayed from a revision etcd has compacted, of a key that
    changed since, comes with value None: get_key reads it). type
    "delete": session names the session whose end deleted the key, if
    that is how it went. type "gap": the audit trail could not record
    the changes of revisions from_revision to to_revision (reason says
    why); list the keys again."""

    type: str = ""
    key: str = ""
    revision: int = 0
    value: Any = None
    created_revision: int | None = None
    version: int | None = None
    session: str | None = None
    from_revision: int | None = None
    to_revision: int | None = None
    reason: str | None = None


@dataclass
class Problem:
    """An error answer's RFC 9457 problem document."""

    type: str = ""
    title: str = ""
    status: int = 0
    code: str = ""
    detail: str | None = None
    field: str | None = None
    holder: LockInfo | None = None
    # dataclasses.field: the member field shadows it in this class.
    holders: list[HoldInfo] = dataclasses.field(default_factory=list)
    leader: LeaderInfo | None = None
    max_token: int | None = None
    limit: int | None = None
    revision: int | None = None
    place_kept: bool = False
    retry_after: int | None = None
    delayed_until: datetime.datetime | None = None
    request_id: str | None = None
    role: str | None = None
    prefixes: list[str] = dataclasses.field(default_factory=list)
    quota: str | None = None
    _convert = {"holder": _opt(LockInfo), "holders": _list(HoldInfo), "leader": _opt(LeaderInfo),
                "delayed_until": parse_time, "prefixes": _STRLIST}


@dataclass
class Member:
    """An etcd member."""

    id: str = ""
    name: str = ""
    peer_urls: list[str] = field(default_factory=list)
    client_urls: list[str] = field(default_factory=list)
    is_leader: bool = False


@dataclass
class Cluster:
    """The etcd cluster behind the service. revision is on the scale of
    tokens and event revisions."""

    members: list[Member] = field(default_factory=list)
    leader: str = ""
    raft_term: int = 0
    revision: int = 0
    _convert = {"members": _list(Member)}


@dataclass
class Rule:
    """A role ("read", "write" or "admin") on the names that start with
    prefix ("": every name)."""

    prefix: str = ""
    role: str = ""


@dataclass
class Quotas:
    """What a credential may use (docs/SECURITY.md, Quotas): its holds
    and sessions across the cluster, its waiting acquires and event
    streams on each node, and its requests a second (rate, on average;
    burst, at once). A quota that is not set is None."""

    holds: int | None = None
    sessions: int | None = None
    waiters: int | None = None
    streams: int | None = None
    rate: float | None = None
    burst: int | None = None


@dataclass
class QuotaUsage:
    """What a credential's quotas count now: its holds and sessions
    across the cluster (a waiting acquire's hold included), its acquires
    waiting on the node asked. A count is None when its quota is not
    set."""

    holds: int | None = None
    sessions: int | None = None
    waiters: int | None = None


@dataclass
class Whoami:
    """Who the client's token speaks for and what it may do.
    authentication is False when the node checks no token: every request
    may then do everything (rules is one rule "": admin). credential is
    the credential's ID, its name in the node's policy file or "cred-…"
    for a line of the line format (never the token); None without
    authentication. rules give a role on the names under each prefix,
    sorted by prefix: of those a name starts with, the longest decides,
    and a name none covers may be neither touched nor seen. quotas are
    the credential's quotas that are set, None when none is; usage is
    what the quotas of holds, sessions and waiters count now, None when
    none of them is set."""

    authentication: bool = False
    credential: str | None = None
    rules: list[Rule] = field(default_factory=list)
    quotas: Quotas | None = None
    usage: QuotaUsage | None = None
    _convert = {"rules": _list(Rule), "quotas": _opt(Quotas), "usage": _opt(QuotaUsage)}


class LeaderChange(NamedTuple):
    """An election's state from revision on: who leads, or None. A tuple,
    so that `for revision, leader in c.observe(name)` reads it."""

    revision: int
    leader: LeaderInfo | None
