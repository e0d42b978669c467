"""A lock set kept alive: several locks granted together, all or nothing,
with one fencing token, renewed and released together.

The set is one Hold whose keys are its locks: the Client's event stream
ends it when any of them ends (each lock of a set can be renewed,
released and revoked on its own), since the set is then no longer whole.
"""

from __future__ import annotations

import copy

from ._hold import KIND_LOCK, KIND_LOCKSET, _Kept
from .types import LockInfo, LockSetInfo


class LockSet(_Kept):
    """Several locks held together with one fencing token, renewed in the
    background as a Lock is (one lease, or the session, for all of them);
    safe to share between threads.

    lost is set as soon as any lock of the set is known lost: revoked,
    expired, released by its token elsewhere, its session ended, a renew
    of the set refused, or the lease run out by this client's clock. The
    set is then no longer whole; error says which lock and why.
    release() ends every lock still held, in one transaction; in a with
    block the set is released on exit, raising LockLostError when it was
    lost in the block (unless the block raised)."""

    def __init__(self, client, info: LockSetInfo):
        names = list(info.names)
        # The set's own name in errors and ops, as the server spells it.
        super().__init__(client, KIND_LOCKSET, info, name=",".join(names),
                         keys=[(KIND_LOCK, n, info.token) for n in names])
        self._names = names

    @property
    def names(self) -> list[str]:
        """The set's locks, in the order the acquire gave them."""
        return list(self._names)

    @property
    def locks(self) -> list[LockInfo]:
        """The set's locks as the latest answer described them, in the order of names."""
        with self._info_mu:
            return copy.deepcopy(self._info.locks)

    def _start(self, op: str, status: int, sent: float, session, began=None):
        first = self._info.locks[0] if self._info.locks else LockInfo()
        left = None
        if first.expires_at and first.acquired_at:
            left = (first.expires_at - first.acquired_at).total_seconds()
        self._hold.start(op, status, sent, first.ttl, left, session is not None)
        return self

    def _renew(self, timeout, deadline):
        info = self._hold.c._renew_set(self._names, self._hold.token, timeout=timeout, deadline=deadline)
        with self._info_mu:
            # A renew's answer may leave metadata out: keep what the grant said.
            old = {x.name: x.metadata for x in self._info.locks}
            for x in info.locks:
                if not x.metadata:
                    x.metadata = old.get(x.name, {})
            self._info = info
        return info.locks[0].ttl if info.locks else None

    def _give_back(self):
        self._hold.c.release_set(self._names, self._hold.token)

    def renew(self) -> LockSetInfo:
        """Renews the set now, besides the background renewal, and returns
        it as the answer describes it. Raises LockLostError when the set
        was lost before, or when a lock of it is found lost."""
        self._hold.renew_now()
        return self.info

    def release(self) -> None:
        """Stops renewing and ends every lock of the set still held with
        its token, in one transaction, each handed to its next waiter.
        Raises LockLostError when the set was lost before (the locks still
        held are released all the same); again, the same result. On
        UnavailableError the outcome is unknown: call it again, or the
        lease runs out after its TTL."""
        self._hold.release()

    def __repr__(self) -> str:
        return f"<baton.LockSet {self._names!r} token={self.token}{' lost' if self.lost.is_set() else ''}>"
