package lock

import (
	"context"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
)

// What a hold is and its errors are package hold's (lock/internal/hold),
// the layer every part of the engine shares; the events, kinds and modes
// are the store's (internal/store). Their files say what each means. The
// facade re-exports them, as os does io/fs's.
type (
	Lock               = hold.Lock
	Event              = store.Event
	EventType          = store.EventType
	EventKind          = store.EventKind
	RWMode             = store.RWMode
	InvalidError       = hold.InvalidError
	LimitError         = hold.LimitError
	HeldError          = hold.HeldError
	LimitMismatchError = hold.LimitMismatchError
	Caller             = hold.Caller
	CallerQuotas       = hold.Quotas
	DelayedError       = hold.DelayedError
	Delay              = hold.Delay
)

// The event types, kinds, modes and the limits of the request contract
// (docs/API.md).
const (
	EventAcquired       = store.EventAcquired
	EventReleased       = store.EventReleased
	EventExpired        = store.EventExpired
	EventRevoked        = store.EventRevoked
	EventSessionExpired = store.EventSessionExpired
	EventElected        = store.EventElected
	EventResigned       = store.EventResigned
	EventProclaimed     = store.EventProclaimed
	EventFenceReset     = store.EventFenceReset
	EventDelayCleared   = store.EventDelayCleared
	EventYieldRequested = store.EventYieldRequested
	EventGap            = store.EventGap
	EventPut            = store.EventPut
	EventDelete         = store.EventDelete
	KindLock            = store.KindLock
	KindElection        = store.KindElection
	KindSemaphore       = store.KindSemaphore
	KindRWLock          = store.KindRWLock
	KindFence           = store.KindFence
	KindKey             = store.KindKey
	MaxKeyLen           = store.MaxKeyLen
	ModeRead            = store.ModeRead
	ModeWrite           = store.ModeWrite
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
	EventKinds             = store.EventKinds
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
	ErrQuotaExceeded       = hold.ErrQuotaExceeded
	ErrTooManyLocks        = hold.ErrTooManyLocks
	ErrTooManySessions     = hold.ErrTooManySessions
	ErrTooManyHeldLocks    = hold.ErrTooManyHeldLocks
	ErrTooManyFencedValues = hold.ErrTooManyFencedValues
	ErrElectionHeld        = hold.ErrElectionHeld
	ErrCandidateNotWaiting = hold.ErrCandidateNotWaiting
	ErrNoLeader            = hold.ErrNoLeader
	ErrSemaphoreFull       = hold.ErrSemaphoreFull
	ErrLimitMismatch       = hold.ErrLimitMismatch
	ErrNotOwner            = hold.ErrNotOwner
	ErrNotDelayed          = hold.ErrNotDelayed
)

// ValidName reports whether s is a valid lock or resource name.
func ValidName(s string) bool { return store.ValidName(s) }

// WithCaller returns ctx carrying c, the caller of the request (see
// Caller).
func WithCaller(ctx context.Context, c Caller) context.Context { return hold.WithCaller(ctx, c) }

// CallerFrom returns the caller ctx carries, if any.
func CallerFrom(ctx context.Context) (Caller, bool) { return hold.CallerFrom(ctx) }
