package trail

import (
	"log/slog"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock"
)

// The trail's events are the store's (internal/store), which documents
// them; lock has the same names.
type (
	Event     = store.Event
	EventType = store.EventType
	EventKind = store.EventKind
)

// The event types and kinds.
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

	KindLock      = store.KindLock
	KindElection  = store.KindElection
	KindSemaphore = store.KindSemaphore
	KindRWLock    = store.KindRWLock
	KindFence     = store.KindFence
	KindKey       = store.KindKey
)

// The errors the trail shares with the engine (internal/store).
var (
	ErrClosed         = store.ErrClosed
	ErrUnavailable    = store.ErrUnavailable
	ErrTooManyStreams = store.ErrTooManyStreams
)

// LimitError is the store's (internal/store).
type LimitError = store.LimitError

// invalid is an *store.InvalidError for the request field field.
func invalid(field, format string, args ...any) error { return store.Invalid(field, format, args...) }

// MaxListLimit bounds a history page's limit, as it bounds the engine's
// lists.
const MaxListLimit = lock.MaxListLimit

// Config tunes a Trail. Start from DefaultConfig.
type Config struct {
	// HistoryRetention is how long audit events are kept, and
	// HistoryMaxEvents how many: whichever bound is reached first drops
	// the oldest events. They are removed by etcd itself through lease
	// expiry or revocation, a slice of the trail at a time (at most
	// HistoryRetention/24, and an hour, late; at most 1/64 of
	// HistoryMaxEvents early), so no request ever scans for old events.
	HistoryRetention time.Duration
	// HistoryMaxEvents 0 means as many as fit in a half of BackendQuota
	// (historyEventBytes each), and at most defaultHistoryMaxEvents.
	HistoryMaxEvents int
	// BackendQuota is etcd's backend quota in bytes; 0 means etcd's
	// default, 2 GiB.
	BackendQuota int64
	// CompactionRetention, with an embedded member, has the trail
	// compact etcd's history itself, in place of etcd's periodic
	// compactor, which the member must not run: every tenth of it, to
	// the older of the revision CompactionRetention ago and the trail's
	// cursor (compactor.go). 0 leaves compaction to etcd.
	CompactionRetention time.Duration
	// TrailHoldBack and TrailHoldBackQuota bound how long compaction
	// waits for a trail that does not read on: once it has waited
	// TrailHoldBack, or etcd's backend holds TrailHoldBackQuota of
	// BackendQuota in use, it compacts anyway, and the trail records the
	// revisions it lost as a gap event.
	TrailHoldBack      time.Duration
	TrailHoldBackQuota float64
	// MaxEventStreams caps this node's concurrent event streams
	// (subscriptions): each holds a buffer of events, and all share one
	// etcd watch. The next Subscribe fails with ErrTooManyStreams. 0
	// means no cap.
	MaxEventStreams int
	// Logger receives the trail's logs; nil means the engine's.
	Logger *slog.Logger
}
