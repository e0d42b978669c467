package lock

import (
	"context"

	"github.com/baton-dev/baton/lock/internal/hold"
)

// What a hold is, its events and its errors are package hold's
// (lock/internal/hold), the layer every part of the engine shares; its
// files say what each means. The facade re-exports them, as os does
// io/fs's.
type (
	Lock               = hold.Lock
	Event              = hold.Event
	EventType          = hold.EventType
	EventKind          = hold.EventKind
	RWMode             = hold.RWMode
	InvalidError       = hold.InvalidError
	LimitError         = hold.LimitError
	HeldError          = hold.HeldError
	LimitMismatchError = hold.LimitMismatchError
	Caller             = hold.Caller
	DelayedError       = hold.DelayedError
	Delay              = hold.Delay
)

// The event types, kinds, modes and the limits of the request contract
// (docs/API.md).
const (
	EventAcquired       = hold.EventAcquired
	EventReleased       = hold.EventReleased
	EventExpired        = hold.EventExpired
	EventRevoked        = hold.EventRevoked
	EventSessionExpired = hold.EventSessionExpired
	EventElected        = hold.EventElected
	EventResigned       = hold.EventResigned
	EventProclaimed     = hold.EventProclaimed
	EventFenceReset     = hold.EventFenceReset
	EventDelayCleared   = hold.EventDelayCleared
	EventGap            = hold.EventGap
	KindLock            = hold.KindLock
	KindElection        = hold.KindElection
	KindSemaphore       = hold.KindSemaphore
	KindRWLock          = hold.KindRWLock
	KindFence           = hold.KindFence
	ModeRead            = hold.ModeRead
	ModeWrite           = hold.ModeWrite
	MaxNameLen          = hold.MaxNameLen
	MaxOwnerLen         = hold.MaxOwnerLen
	MaxMetadataPairs    = hold.MaxMetadataPairs
	MaxMetadataBytes    = hold.MaxMetadataBytes
	MaxReasonLen        = hold.MaxReasonLen
	MaxListLimit        = hold.MaxListLimit
	MinSetNames         = hold.MinSetNames
	MaxSetNames         = hold.MaxSetNames
)

// Callers match the errors with errors.Is; the error types above wrap
// them and carry details.
var (
	EventKinds             = hold.EventKinds
	ErrNotHeld             = hold.ErrNotHeld
	ErrInvalid             = hold.ErrInvalid
	ErrUnavailable         = hold.ErrUnavailable
	ErrClosed              = hold.ErrClosed
	ErrTooManyStreams      = hold.ErrTooManyStreams
	ErrNoSpace             = hold.ErrNoSpace
	ErrHeld                = hold.ErrHeld
	ErrTokenMismatch       = hold.ErrTokenMismatch
	ErrSessionNotFound     = hold.ErrSessionNotFound
	ErrTooManyWaiters      = hold.ErrTooManyWaiters
	ErrTooManyLocks        = hold.ErrTooManyLocks
	ErrTooManySessions     = hold.ErrTooManySessions
	ErrTooManyHeldLocks    = hold.ErrTooManyHeldLocks
	ErrTooManyFencedValues = hold.ErrTooManyFencedValues
	ErrElectionHeld        = hold.ErrElectionHeld
	ErrNoLeader            = hold.ErrNoLeader
	ErrSemaphoreFull       = hold.ErrSemaphoreFull
	ErrLimitMismatch       = hold.ErrLimitMismatch
	ErrNotOwner            = hold.ErrNotOwner
	ErrNotDelayed          = hold.ErrNotDelayed
)

// ValidName reports whether s is a valid lock or resource name.
func ValidName(s string) bool { return hold.ValidName(s) }

// WithCaller returns ctx carrying c, the caller of the request (see
// Caller).
func WithCaller(ctx context.Context, c Caller) context.Context { return hold.WithCaller(ctx, c) }

// CallerFrom returns the caller ctx carries, if any.
func CallerFrom(ctx context.Context) (Caller, bool) { return hold.CallerFrom(ctx) }
