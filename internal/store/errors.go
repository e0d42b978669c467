package store

import (
	"errors"
	"fmt"
	"time"
)

// The errors the engine and the trail share; lock re-exports each.
var (
	// ErrNotHeld means nobody holds the lock.
	ErrNotHeld = errors.New("lock not held")
	// ErrInvalid means the request is malformed; the error is an *InvalidError.
	ErrInvalid = errors.New("invalid request")
	// ErrUnavailable means etcd could not serve the request in time (no
	// leader, no quorum, overloaded). The request may or may not have taken
	// effect; retrying is safe for every idempotent call.
	ErrUnavailable = errors.New("etcd unavailable")
	// ErrClosed means the engine is shutting down.
	ErrClosed = errors.New("lock engine closed")
	// ErrTooManyStreams means this engine serves Config.MaxEventStreams
	// event streams (subscriptions) already; the error is a *LimitError.
	// Another node may have room.
	ErrTooManyStreams = errors.New("too many event streams")
	// ErrNoSpace means etcd refused a write because its backend is full:
	// its NOSPACE alarm is raised, and every write fails until an operator
	// frees space and disarms it (Recover). Reads keep working. Nothing
	// was written.
	ErrNoSpace = errors.New("the data store is full")
)

// InvalidError names the request field that is wrong, and why.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *InvalidError) Unwrap() error { return ErrInvalid }

// Invalid is an *InvalidError for the request field field.
func Invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// LimitError is returned when a request would take a resource past one of
// lock.Config's caps (MaxWaitersPerLock, MaxLocksPerSession, MaxSessions,
// MaxEventStreams, MaxLocks, MaxFencedValues, MaxFencedValueBytes). It
// wrote nothing that stays behind.
type LimitError struct {
	// Err is the sentinel: ErrTooManyWaiters, ErrTooManyLocks,
	// ErrTooManySessions, ErrTooManyStreams, ErrTooManyHeldLocks,
	// ErrTooManyFencedValues or ErrValueTooLarge.
	Err error
	// Limit is the cap that was reached.
	Limit int
	// RetryAfter, when positive, is a hint of how long to wait before
	// trying again; zero when waiting alone will not help.
	RetryAfter time.Duration
	// Reason explains the refusal for people.
	Reason string
	// Field names the request field at fault, when one is (the value
	// of ErrValueTooLarge).
	Field string
	// Quota names the credential's quota that was reached (holds,
	// waiters, sessions, streams, rate), for ErrQuotaExceeded.
	Quota string
}

func (e *LimitError) Error() string { return e.Err.Error() + ": " + e.Reason }

// Unwrap makes errors.Is(err, e.Err) hold.
func (e *LimitError) Unwrap() error { return e.Err }
