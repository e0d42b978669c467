package lock

import (
	"encoding/json"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/baton-dev/baton/internal/store"
)

// Lock describes a held lock.
type Lock struct {
	Name  string
	Owner string
	// Token is the fencing token: the etcd revision at which this hold
	// began. It is greater than every earlier token of this lock (so
	// unique to the hold among the lock's), and never lower than any token
	// granted before it, of any lock: grants of other locks committed in
	// the same etcd transaction share its value.
	Token int64
	// Session is the session's ID when the lock lives in a session, and
	// empty when the lock has a lease of its own.
	Session string
	// TTL is the lease's TTL as etcd granted it (etcd may raise it).
	TTL        time.Duration
	AcquiredAt time.Time
	// ExpiresAt is when the lease runs out unless renewed. etcd reports
	// remaining TTLs in whole seconds, rounded down, so it may be up to a
	// second early: never late.
	ExpiresAt time.Time
	LockDelay time.Duration
	Metadata  map[string]string
	// Credential is the ID of the credential that acquired the hold, when
	// the caller had one (see Caller). The HTTP API does not show it.
	Credential string
	// Term and Value are an election's (see Leader): how many leaders
	// it has had, this one included, and this leader's value.
	Term  int64
	Value json.RawMessage
	// Limit is a semaphore permit's: the semaphore's limit, under which
	// it was granted.
	Limit int
	// Mode is a read/write lock hold's.
	Mode RWMode
	// Set is a lock set's member's: the names of every lock of the set,
	// in the order the acquire gave them. Every member has the set's
	// token.
	Set []string
}

// Session is a lease that many locks can share: when it ends, they all do.
type Session struct {
	ID        string
	Owner     string
	TTL       time.Duration
	CreatedAt time.Time
	ExpiresAt time.Time
	// Locks are the names of the locks held in the session, sorted,
	// Elections those of the elections it leads, Semaphores those of the
	// semaphores it holds permits of and RWLocks those of the read/write
	// locks it holds (each once).
	Locks      []string
	Elections  []string
	Semaphores []string
	RWLocks    []string
	// seats are the key names of the holds in seats (internal/store/kinds.go).
	seats []string
	// Credential is the ID of the credential that created the session,
	// when the caller had one (see Caller).
	Credential string
}

// The audit trail's events and the read/write lock's modes are the
// store's (internal/store), which documents them.
type (
	Event     = store.Event
	EventType = store.EventType
	EventKind = store.EventKind
	RWMode    = store.RWMode
)

// The event types, kinds and modes.
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
	EventGap            = store.EventGap

	KindLock      = store.KindLock
	KindElection  = store.KindElection
	KindSemaphore = store.KindSemaphore
	KindRWLock    = store.KindRWLock
	KindFence     = store.KindFence

	ModeRead  = store.ModeRead
	ModeWrite = store.ModeWrite
)

// EventKinds lists every kind, for validation and documentation.
var EventKinds = store.EventKinds

// ValidName reports whether s is a valid lock or resource name.
func ValidName(s string) bool { return store.ValidName(s) }

// AcquireRequest asks for a lock.
type AcquireRequest struct {
	Name  string
	Owner string
	// TTL of the lock's own lease; zero means Config.DefaultTTL. Must be
	// zero when Session is set: the lock then lives as long as the session.
	TTL     time.Duration
	Session string
	// Wait is how long to queue for the lock; zero fails at once.
	Wait time.Duration
	// KeepPlace, with a Session and a Wait, keeps the session's place in
	// the queue when the wait runs out (see PlaceKept).
	KeepPlace bool
	// LockDelay forbids acquiring the lock for this long after this hold
	// ends by expiry or revoke (not by a clean release).
	LockDelay time.Duration
	Metadata  map[string]string
	// value is the value an election's candidate campaigns with
	// (CampaignRequest).
	value json.RawMessage
	// limit is a semaphore's limit (PermitRequest), mode a read/write
	// lock's hold's (RWRequest).
	limit int
	mode  RWMode
	// members are a lock set's names (LockSetRequest); Name is the first.
	members []string
}

// Limits of the request contract (docs/API.md, Locks).
const (
	MaxNameLen       = 128
	MaxOwnerLen      = 128
	MaxMetadataPairs = 16
	MaxMetadataBytes = 4096
	MaxReasonLen     = store.MaxReasonLen
)

func checkOwner(s string) error {
	if s == "" {
		return invalid("owner", "must not be empty")
	}
	if !utf8.ValidString(s) {
		return invalid("owner", "must be valid UTF-8")
	}
	if utf8.RuneCountInString(s) > MaxOwnerLen {
		return invalid("owner", "must be at most %d characters", MaxOwnerLen)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return invalid("owner", "must contain only printable characters")
		}
	}
	return nil
}

func checkMetadata(md map[string]string) error {
	if len(md) > MaxMetadataPairs {
		return invalid("metadata", "at most %d pairs allowed, got %d", MaxMetadataPairs, len(md))
	}
	n := 0
	for k, v := range md {
		if k == "" {
			return invalid("metadata", "keys must not be empty")
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return invalid("metadata", "keys and values must be valid UTF-8")
		}
		n += len(k) + len(v)
	}
	if n > MaxMetadataBytes {
		return invalid("metadata", "at most %d bytes of keys and values allowed, got %d", MaxMetadataBytes, n)
	}
	return nil
}
