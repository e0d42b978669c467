"""baton: a client for baton, the distributed lock service with fencing tokens.

    import baton
    c = baton.Client()                      # BATON_ADDR, or http://127.0.0.1:8080
    with c.lock("ledger-writer", ttl="30s", wait="1m") as lk:
        c.put_fenced("ledger", lk.token, {"balance": 42})

Locks, leaderships, semaphore permits, read/write lock holds and lock
sets renew themselves in the background and set their lost event when
they are lost, and call their on_yield callback when someone asks them
to give way (Client.yield_); a StreamSession (Client.open_stream_session)
lives while the client holds its stream open, so its holds fail over a
grace after the process dies, not a TTL after; server answers raise typed exceptions (HeldError with .holder, or
.holders for a read/write lock, SemaphoreFullError with .holders,
StaleTokenError, …). Standard library only.
"""

from .client import DEFAULT_ADDR, MAX_REQUEST_WAIT, WAIT_FOREVER, Client, Fence
from ._bearer import TOKEN_FILE_MAX_AGE
from ._hold import Leadership, Lock, Permit, RWHold
from ._lockset import LockSet
from ._sse import Stream
from ._streamsession import StreamSession
from .errors import *  # noqa: F401,F403: one class per problem code
from .errors import CLASSES, BatonError, LockLostError, error_class
from .types import (Candidate, Cluster, Event, FencedValue, HoldInfo, Key, KeyEvent, KeyList, LeaderChange, LeaderInfo,
                    LockInfo, LockSetInfo, Member, PermitInfo, Problem, QuotaUsage, Quotas, Rule, RWLockInfo,
                    SemaphoreInfo, Session, Waiter, Whoami, YieldRequested)

__all__ = [
    "Client", "DEFAULT_ADDR", "MAX_REQUEST_WAIT", "TOKEN_FILE_MAX_AGE", "WAIT_FOREVER", "Fence", "Lock", "Leadership",
    "Permit", "RWHold", "LockSet", "Stream", "StreamSession", "BatonError", "LockLostError", "CLASSES", "error_class",
    "Candidate", "Cluster", "Event", "FencedValue", "HoldInfo", "Key", "KeyEvent", "KeyList", "LeaderChange",
    "LeaderInfo", "LockInfo", "LockSetInfo", "Member", "PermitInfo", "Problem", "QuotaUsage", "Quotas", "Rule",
    "RWLockInfo", "SemaphoreInfo", "Session", "Waiter", "Whoami", "YieldRequested",
] + [c.__name__ for c in CLASSES.values()]
