package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Holder is the value of a lock key. It is written once, when the
// hold begins, and never rewritten while the hold lasts: that keeps
// ModRevision, the token, fixed for the whole hold. A release that hands
// the lock to the queue's head puts the head's record over it, which
// begins a new hold with a new token.
type Holder struct {
	Owner      string    `json:"owner"`
	Hold       string    `json:"hold"`
	Lease      string    `json:"lease"`
	Session    string    `json:"session,omitempty"`
	TTL        int64     `json:"ttl"`
	AcquiredAt time.Time `json:"acquired_at"`
	// QueuedAt is when the acquire joined the queue, nil if it never
	// waited: with AcquiredAt it makes the hold's acquired event
	// (BegunEvent), which the end of the hold carries (lock's endRecord).
	// Absent in records written before it existed.
	QueuedAt  *time.Time    `json:"queued_at,omitempty"`
	LockDelay time.Duration `json:"lock_delay,omitempty"`
	// MinHold is the hold's at-least window: no new grant of its seat
	// before AcquiredAt+MinHold, however the hold ends (WindowEnd).
	MinHold  time.Duration     `json:"min_hold,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Credential is the ID of the credential that acquired the hold (see
	// Caller); absent without authentication, and in records written
	// before it existed.
	Credential string `json:"credential,omitempty"`
	// NoTally says the acquire did not count this hold in its session's
	// tally (MaxLocksPerSession was off on the node that granted it), so
	// its end is not counted either. Without it (records of capped nodes,
	// and records written before it existed) the end counts into a tally
	// if the session has one. It matters for batching: every counted end
	// in a session writes the same tally key, and two writes of one key
	// cannot share a txn, so counted ends of one session go one per txn.
	NoTally bool `json:"no_tally,omitempty"`
	// Term and Value are an election's: the term this hold is, and the
	// value the candidate campaigned with (a proclaim writes its value
	// beside the record, never into it: see lock's Engine.Proclaim).
	Term  int64           `json:"term,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// Limit is a semaphore permit's: the limit it was granted under,
	// which a handover of its seat requires to be the semaphore's.
	Limit int `json:"limit,omitempty"`
	// Mode is a read/write lock hold's; a handover grants a writer the
	// writer's seat and readers readers' seats (lock's handOverPlan).
	Mode RWMode `json:"mode,omitempty"`
	// Set is a lock set's member's: every name of the set (lock/lockset.go).
	// The members share the hold ID, the lease and the token.
	Set []string `json:"set,omitempty"`
	// Derived says that the trail reads this hold's acquire and end from
	// its lock key's revisions (the trail's derive.go), so neither writes a pending
	// record; an end that revisions cannot tell writes its event still
	// (lock's holdEnd). A node writes it from storage format 5 on; a hold
	// without it keeps its pending records to its end, whichever node
	// ends it.
	Derived bool `json:"derived,omitempty"`
}

// Guarded reports whether the hold keeps a lock-delay guard (the
// engine's Keys.Delay): it has a lock-delay, an at-least window, or both.
func (h Holder) Guarded() bool { return h.LockDelay > 0 || h.MinHold > 0 }

// WindowEnd is when the hold's at-least window ends; zero without one.
func (h Holder) WindowEnd() time.Time {
	if h.MinHold <= 0 {
		return time.Time{}
	}
	return h.AcquiredAt.Add(h.MinHold).UTC()
}

// DerivedField is how a derived hold's record says so, for a look at a
// record that decodes it only if it is not one.
var DerivedField = []byte(`"derived":true`)

// DecodeHolder reads a holder record from its lock key.
func DecodeHolder(kv *mvccpb.KeyValue) (Holder, error) {
	var r Holder
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return r, fmt.Errorf("decode holder record %q: %w", kv.Key, err)
	}
	return r, nil
}

// BegunEvent is the event of this hold's beginning, the acquired (or
// elected) event its acquire writes: made of the record alone, so that
// whatever ends the hold can write it again (lock's endRecord).
func (r Holder) BegunEvent(key string) Event {
	ev := r.Event(key, EventAcquired, r.AcquiredAt)
	ev.QueuedAt = r.QueuedAt
	return ev
}

// Event is the event typ of this hold of the thing kept under key, at
// at, as its kind names it (HoldEvent).
func (r Holder) Event(key string, typ EventType, at time.Time) Event {
	ev := HoldEvent(key, typ)
	ev.Time, ev.Owner, ev.Session, ev.Credential, ev.Term, ev.Mode, ev.Set = at, r.Owner, r.Session, r.Credential, r.Term, r.Mode, r.Set
	if BeginsHold(ev.Type) {
		ev.Value, ev.Limit = r.Value, r.Limit
	}
	return ev
}

// MustJSON encodes v, one of baton's own records, which always encode.
func MustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("store: encode %T: %v", v, err)) // only our own plain structs get here
	}
	return string(b)
}

// NowUTC is the time events and records carry: UTC, to the millisecond.
func NowUTC() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// NewID is a random ID of 16 hex digits: a hold's, or an audit record's
// key element.
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// MaxReasonLen bounds the reason of a revoke or a reset, in bytes
// (docs/API.md, Locks).
const MaxReasonLen = 1024

// EndRecord is the value of a hold's record once the hold ended, in
// storage format 2 (lock/format.go): the end event, written over the acquired
// event, which it carries along. The index's watch has seen the acquired
// event's own write unless compaction took it; a backfill then finds it
// here (the trail's pendingOfKey).
type EndRecord struct {
	Event
	Began *Event `json:"began,omitempty"`
}

// DecodeEvent reads a pending record's event (a lock's, in records
// written before kinds existed), at its own revision.
func DecodeEvent(kv *mvccpb.KeyValue) (Event, bool) {
	var ev Event
	if json.Unmarshal(kv.Value, &ev) != nil {
		return ev, false
	}
	ev.Revision = kv.ModRevision
	if ev.Kind == "" {
		ev.Kind, ev.Name = KindLock, ev.Lock
	}
	if BeginsHold(ev.Type) {
		// Written in the acquire txn, before the token existed: the
		// record's own revision is the token.
		ev.Token = kv.CreateRevision
	}
	return ev, true
}
