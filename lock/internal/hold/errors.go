package hold

import (
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
)

// The errors the hold engine and the audit trail share are the store's
// (internal/store), which says what each means.
var (
	ErrNotHeld        = store.ErrNotHeld
	ErrInvalid        = store.ErrInvalid
	ErrUnavailable    = store.ErrUnavailable
	ErrClosed         = store.ErrClosed
	ErrTooManyStreams = store.ErrTooManyStreams
	ErrNoSpace        = store.ErrNoSpace
)

// Sentinel errors. Callers match them with errors.Is; the richer types below
// wrap them and carry details.
var (
	// ErrHeld means someone else holds the lock (or lock-delay forbids it).
	// The error is a *HeldError when a holder or a retry hint is known.
	ErrHeld = errors.New("lock held")
	// ErrTokenMismatch means the lock is held, but not with the given token.
	ErrTokenMismatch = errors.New("token does not hold the lock")
	// ErrSessionNotFound means the session expired, was deleted or never existed.
	ErrSessionNotFound = errors.New("session not found")
	// ErrTooManyWaiters means the lock's queue holds Config.MaxWaitersPerLock
	// acquires already; the error is a *LimitError. It clears as waiters
	// are served or give up: try later.
	ErrTooManyWaiters = errors.New("too many waiters for the lock")
	// ErrQuotaExceeded means the caller's credential has reached one of
	// its quotas (auth.Quotas); the error is a *LimitError naming it
	// (Quota). It clears as the credential's holds, waits, sessions or
	// streams end, or, for its request rate, after RetryAfter.
	ErrQuotaExceeded = errors.New("quota exceeded")
	// ErrTooManyLocks means the session holds Config.MaxLocksPerSession
	// locks already; the error is a *LimitError. Only the session's owner
	// can clear it, by releasing some.
	ErrTooManyLocks = errors.New("too many locks in the session")
	// ErrTooManySessions means the cluster holds Config.MaxSessions
	// sessions already; the error is a *LimitError. It clears as sessions
	// are deleted or expire: try later.
	ErrTooManySessions = errors.New("too many sessions")
	// ErrTooManyHeldLocks means the cluster holds Config.MaxLocks locks
	// already; the error is a *LimitError. It clears as locks are
	// released or expire: try later.
	ErrTooManyHeldLocks = errors.New("too many locks held")
	// ErrTooManyFencedValues means the cluster holds
	// Config.MaxFencedValues fenced values already, and the write would
	// make a new one; the error is a *LimitError. Writes to existing
	// resources still work.
	ErrTooManyFencedValues = errors.New("too many fenced values")
	// ErrElectionHeld means someone else leads the election (or
	// lock-delay forbids a new leader yet); the error is a *HeldError
	// with Kind KindElection.
	ErrElectionHeld = errors.New("election held")
	// ErrNoLeader means nobody leads the election.
	ErrNoLeader = errors.New("no leader")
	// ErrCandidateNotWaiting means a transfer names a waiter that does
	// not wait in line, or none that asks to be handed the hold.
	ErrCandidateNotWaiting = errors.New("candidate not waiting")
	// ErrSemaphoreFull means the semaphore's permits are all held (or
	// an earlier waiter is next); the error is a *HeldError with Kind
	// KindSemaphore and the permits in Holders.
	ErrSemaphoreFull = errors.New("semaphore full")
	// ErrLimitMismatch means permits of the semaphore are held under
	// another limit; the error is a *LimitMismatchError.
	ErrLimitMismatch = errors.New("limit mismatch")
	// ErrNotOwner means the hold or session was created by another
	// credential (see Caller): only that credential or an admin may end,
	// renew or use it. Nothing was changed.
	ErrNotOwner = errors.New("held by another credential")
)

// InvalidError and LimitError are the store's (internal/store).
type (
	InvalidError = store.InvalidError
	LimitError   = store.LimitError
)

// HeldError is returned when a lock cannot be acquired, or an election
// won.
type HeldError struct {
	// Kind is what was asked for: KindLock (or empty), KindElection,
	// whose Holder is the leader, or KindSemaphore, whose Holders are the
	// permits held.
	Kind store.EventKind
	// Holder is the current holder, nil when the lock is free but blocked
	// by lock-delay or being handed to an earlier waiter.
	Holder  *Lock
	Holders []*Lock
	// RetryAfter, when positive, is how long lock-delay still forbids acquiring.
	RetryAfter time.Duration
	// Reason explains the refusal for people.
	Reason string
	// PlaceKept says that the wait ran out with AcquireRequest.KeepPlace:
	// the session keeps its place in the queue, and its next acquire of
	// the thing waits from there, or finds it granted.
	PlaceKept bool
}

func (e *HeldError) Error() string { return e.Unwrap().Error() + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrHeld) hold, or for an election
// errors.Is(err, ErrElectionHeld).
func (e *HeldError) Unwrap() error {
	switch e.Kind {
	case store.KindElection:
		return ErrElectionHeld
	case store.KindSemaphore:
		return ErrSemaphoreFull
	}
	return ErrHeld
}

// LimitMismatchError is returned when a permit is asked for under
// another limit than the one its semaphore's permits are held under.
type LimitMismatchError struct {
	// Limit is the semaphore's, and Asked the request's.
	Limit, Asked int
}

func (e *LimitMismatchError) Error() string {
	return fmt.Sprintf("%v: the semaphore's permits are held under limit %d, not %d", ErrLimitMismatch, e.Limit, e.Asked)
}

// Unwrap makes errors.Is(err, ErrLimitMismatch) hold.
func (e *LimitMismatchError) Unwrap() error { return ErrLimitMismatch }

// Invalid is an *InvalidError for the request field field.
func Invalid(field, format string, args ...any) error { return store.Invalid(field, format, args...) }
