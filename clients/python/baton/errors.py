"""Exceptions: one class per problem code of baton's API, and LockLostError.

Every answer that is not a success raises a BatonError subclass chosen by
the problem's code (HeldError for lock_held, and so on), carrying code,
status, title, detail, retry_after (seconds, or None) and the problem's
members (holder, holders, leader, max_token, limit, field, place_kept,
role, prefixes, quota).
As in the Go client, every 5xx is also an UnavailableError, and so is a
code retried elsewhere (shutting_down); any 401 is an UnauthorizedError
and any 403 a ForbiddenError, body or not, since a proxy may answer
those. A code this client does not know (a newer server's) raises
BatonError itself, with .code saying it.
"""

from __future__ import annotations

from . import _problems
from .types import HoldInfo, LeaderInfo, LockInfo, Problem


class BatonError(Exception):
    """An error of the baton client: a server's answer, or no answer."""

    code: str | None = None

    def __init__(self, detail: str = "", *, op: str = "", status: int = 0, code: str | None = None,
                 title: str = "", retry_after: float | None = None, problem: Problem | None = None):
        self.op = op
        self.status = status
        if code is not None:
            self.code = code
        self.title = title
        self.detail = detail
        self.retry_after = retry_after
        self.problem = problem
        # True when a call that is not repeated got no definite answer: it
        # may have taken effect (an acquire may hold the lock until its TTL).
        self.outcome_unknown = False
        super().__init__(self._message())

    def _message(self) -> str:
        msg = " ".join((self.detail or self.title or "").split())
        if self.op:
            msg = f"{self.op}: " + msg.removeprefix(self.op + ": ")
        tag = " ".join(str(x) for x in (self.status or None, self.code) if x)
        if tag:
            msg += f" ({tag})"
        return msg

    def __str__(self) -> str:
        s = self._message()
        if self.outcome_unknown:
            s += "; the outcome is unknown: the request may have taken effect"
        return s

    @property
    def holder(self) -> LockInfo | None:
        """The lock's current holder (lock_held of a lock; a read/write
        lock's lock_held has holders instead)."""
        return self.problem.holder if self.problem else None

    @property
    def holders(self) -> list[HoldInfo]:
        """The holds in the way, oldest first: a semaphore's permits
        (semaphore_full), a read/write lock's holds (its lock_held), or
        the locks of a lock set held by others (its lock_held)."""
        return list(self.problem.holders) if self.problem else []

    @property
    def leader(self) -> LeaderInfo | None:
        """The election's current leader (election_held)."""
        return self.problem.leader if self.problem else None

    @property
    def max_token(self) -> int | None:
        """The largest token the register has seen (stale_token)."""
        return self.problem.max_token if self.problem else None

    @property
    def revision(self) -> int | None:
        """The key's revision (revision_mismatch; 0: it does not exist), or
        the revision at which the key was found missing (key_not_found)."""
        return self.problem.revision if self.problem else None

    @property
    def limit(self) -> int | None:
        """The cap that was reached (too_many_waiters and the other caps),
        the value of the credential's quota that was reached
        (quota_exceeded), or the semaphore's own limit (limit_mismatch)."""
        return self.problem.limit if self.problem else None

    @property
    def role(self) -> str | None:
        """The role the refused call needs, read, write or admin
        (forbidden by the credential's role or by its rules by prefix)."""
        return self.problem.role if self.problem else None

    @property
    def prefixes(self) -> list[str]:
        """The prefixes of the credential's rules, for a credential scoped
        to name prefixes (forbidden): the names it may act on."""
        return list(self.problem.prefixes) if self.problem else []

    @property
    def quota(self) -> str | None:
        """The credential's quota that was reached (quota_exceeded):
        holds, waiters, sessions, streams or rate; .limit is its value
        (for rate, requests a second, rounded up)."""
        return self.problem.quota if self.problem else None

    @property
    def place_kept(self) -> bool:
        """True when a wait with keep_place ran out and the session keeps
        its place in line (lock_held, election_held, semaphore_full): its
        next acquire of the name waits from there. A wait longer than
        Client.max_request_wait is a run of such requests."""
        return bool(self.problem and self.problem.place_kept is True)

    @property
    def field(self) -> str | None:
        """The request field at fault (invalid_request)."""
        return self.problem.field if self.problem else None


class LockLostError(BatonError):
    """A Lock, a Leadership, a Permit, an RWHold or a LockSet is no longer held, or may no longer be: the
    client's own judgement, no server code. cause says how it became known
    (an event of the audit trail, a renew's answer, or the TTL running out
    by this client's clock)."""

    def __init__(self, kind: str, name: str, token: int, cause: BaseException | str):
        self.kind, self.name, self.token, self.cause = kind, name, token, cause
        what = {"election": f"leadership of {name!r}", "semaphore": f"permit of semaphore {name!r}",
                "rwlock": f"hold of read/write lock {name!r}", "lockset": f"lock set {name!r}"}.get(
            kind, f"lock {name!r}")
        super().__init__(f"baton: {what} (token {token}) lost: {cause}")

    def _message(self) -> str:
        return self.detail


_CLASS_NAMES = {
    "lock_held": "HeldError",
    "not_held": "NotHeldError",
    "invalid_request": "InvalidError",
    "nospace": "NoSpaceError",
    "internal": "InternalError",
}

# Filled below: code -> class.
CLASSES: dict[str, type[BatonError]] = {}


def _class_name(code: str) -> str:
    return _CLASS_NAMES.get(code) or "".join(w.capitalize() for w in code.split("_")) + "Error"


class UnavailableError(BatonError):
    """No node could serve the call (no etcd leader or quorum, a node
    shutting down or unreachable). For a call that is not repeated,
    outcome_unknown says it may have taken effect. Every 5xx is one."""

    code = "unavailable"


class UnauthorizedError(BatonError):
    """No valid bearer token (BATON_AUTH_TOKEN). Every 401 is one."""

    code = "unauthorized"


class ForbiddenError(BatonError):
    """The credential's role does not allow the call (.role says the one
    it needs), the name is outside the credential's prefixes (.prefixes),
    or the hold belongs to another credential. Every 403 is one."""

    code = "forbidden"


CLASSES.update({"unavailable": UnavailableError, "unauthorized": UnauthorizedError, "forbidden": ForbiddenError})

for _code, _status, _title, _retry in _problems.TABLE:
    if _code in CLASSES:
        continue
    # A code answered with a 5xx, or retried elsewhere, is unavailability.
    _base = UnavailableError if _status >= 500 or _retry == _problems.ELSEWHERE else BatonError
    CLASSES[_code] = type(_class_name(_code), (_base,), {"code": _code, "__doc__": f"{_title} ({_status} {_code})."})
    globals()[CLASSES[_code].__name__] = CLASSES[_code]

# The names the package exports, spelt out for readers and linters.
HeldError = CLASSES["lock_held"]
NotHeldError = CLASSES["not_held"]
TokenMismatchError = CLASSES["token_mismatch"]
StaleTokenError = CLASSES["stale_token"]
NotHolderError = CLASSES["not_holder"]
UnknownTokenError = CLASSES["unknown_token"]
SessionNotFoundError = CLASSES["session_not_found"]
NotFoundError = CLASSES["not_found"]
NotDelayedError = CLASSES["not_delayed"]
ElectionHeldError = CLASSES["election_held"]
NoLeaderError = CLASSES["no_leader"]
CandidateNotWaitingError = CLASSES["candidate_not_waiting"]
SemaphoreFullError = CLASSES["semaphore_full"]
LimitMismatchError = CLASSES["limit_mismatch"]
KeyNotFoundError = CLASSES["key_not_found"]
RevisionMismatchError = CLASSES["revision_mismatch"]
InvalidError = CLASSES["invalid_request"]
ValueTooLargeError = CLASSES["value_too_large"]
TooManyWaitersError = CLASSES["too_many_waiters"]
TooManyLocksInSessionError = CLASSES["too_many_locks_in_session"]
TooManySessionsError = CLASSES["too_many_sessions"]
TooManyLocksError = CLASSES["too_many_locks"]
TooManyFencedValuesError = CLASSES["too_many_fenced_values"]
TooManyKeysError = CLASSES["too_many_keys"]
TooManyStreamsError = CLASSES["too_many_streams"]
RateLimitedError = CLASSES["rate_limited"]
QuotaExceededError = CLASSES["quota_exceeded"]
ShuttingDownError = CLASSES["shutting_down"]
InsufficientStorageError = CLASSES["insufficient_storage"]
NoSpaceError = CLASSES["nospace"]
InternalError = CLASSES["internal"]

_five_xx: dict[type, type] = {}


def error_class(code: str | None, status: int) -> type[BatonError]:
    """The class of an answer: by its code, widened as the module says."""
    cls = CLASSES.get(code or "")
    if cls is None:
        if status == 401:
            return UnauthorizedError
        if status == 403:
            return ForbiddenError
        return UnavailableError if status >= 500 else BatonError
    if status >= 500 and not issubclass(cls, UnavailableError):
        # too_many_streams answered 503 (the node's cap): both at once.
        if cls not in _five_xx:
            _five_xx[cls] = type(cls.__name__, (cls, UnavailableError), {"code": cls.code})
        return _five_xx[cls]
    return cls
