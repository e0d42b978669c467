package hold

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
	// MinHold is the hold's at-least window: the lock stays unavailable
	// until AcquiredAt+MinHold, however early the hold ends.
	MinHold  time.Duration
	Metadata map[string]string
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
	Mode store.RWMode
	// Set is a lock set's member's: the names of every lock of the set,
	// in the order the acquire gave them. Every member has the set's
	// token.
	Set []string
}

// Limits of the request contract (docs/API.md, Locks).
const (
	MaxNameLen       = 128
	MaxOwnerLen      = 128
	MaxMetadataPairs = 16
	MaxMetadataBytes = 4096
	MaxReasonLen     = store.MaxReasonLen
)

func CheckOwner(s string) error {
	if s == "" {
		return Invalid("owner", "must not be empty")
	}
	if !utf8.ValidString(s) {
		return Invalid("owner", "must be valid UTF-8")
	}
	if utf8.RuneCountInString(s) > MaxOwnerLen {
		return Invalid("owner", "must be at most %d characters", MaxOwnerLen)
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return Invalid("owner", "must contain only printable characters")
		}
	}
	return nil
}

func CheckMetadata(md map[string]string) error {
	if len(md) > MaxMetadataPairs {
		return Invalid("metadata", "at most %d pairs allowed, got %d", MaxMetadataPairs, len(md))
	}
	n := 0
	for k, v := range md {
		if k == "" {
			return Invalid("metadata", "keys must not be empty")
		}
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return Invalid("metadata", "keys and values must be valid UTF-8")
		}
		n += len(k) + len(v)
	}
	if n > MaxMetadataBytes {
		return Invalid("metadata", "at most %d bytes of keys and values allowed, got %d", MaxMetadataBytes, n)
	}
	return nil
}

// MaxListLimit bounds a page of a listing (locks, sessions, history).
const MaxListLimit = 1000

// Limits of a lock set (docs/API.md, Lock sets).
const (
	MinSetNames = 2
	MaxSetNames = 64
)
