package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// holderRecord is the value of a lock key. It is written once, when the
// hold begins, and never rewritten while the hold lasts: that keeps
// ModRevision, the token, fixed for the whole hold. A release that hands
// the lock to the queue's head puts the head's record over it, which
// begins a new hold with a new token.
type holderRecord struct {
	Owner      string    `json:"owner"`
	Hold       string    `json:"hold"`
	Lease      string    `json:"lease"`
	Session    string    `json:"session,omitempty"`
	TTL        int64     `json:"ttl"`
	AcquiredAt time.Time `json:"acquired_at"`
	// QueuedAt is when the acquire joined the queue, nil if it never
	// waited: with AcquiredAt it makes the hold's acquired event
	// (begunEvent), which the end of the hold carries (endRecord).
	// Absent in records written before it existed.
	QueuedAt  *time.Time        `json:"queued_at,omitempty"`
	LockDelay time.Duration     `json:"lock_delay,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
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
	// beside the record, never into it: see Engine.Proclaim).
	Term  int64           `json:"term,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
	// Limit is a semaphore permit's: the limit it was granted under,
	// which a handover of its seat requires to be the semaphore's.
	Limit int `json:"limit,omitempty"`
	// Mode is a read/write lock hold's; a handover grants a writer the
	// writer's seat and readers readers' seats (handOverPlan).
	Mode RWMode `json:"mode,omitempty"`
	// Set is a lock set's member's: every name of the set (lockset.go).
	// The members share the hold ID, the lease and the token.
	Set []string `json:"set,omitempty"`
	// Derived says that the trail reads this hold's acquire and end from
	// its lock key's revisions (derive.go), so neither writes a pending
	// record; an end that revisions cannot tell writes its event still
	// (holdEnd). A node writes it from storage format 5 on; a hold
	// without it keeps its pending records to its end, whichever node
	// ends it.
	Derived bool `json:"derived,omitempty"`
}

// derivedField is how a derived hold's record says so, for a look at a
// record that decodes it only if it is not one.
var derivedField = []byte(`"derived":true`)

// delayRecord guards a lock with lock-delay. Acquire creates it with the
// hold; a clean release deletes it; revoke, or the first to notice an
// expiry, stamps Until. While it exists and Until is unset or in the
// future, nobody may acquire the lock.
type delayRecord struct {
	Hold      string        `json:"hold"`
	LockDelay time.Duration `json:"lock_delay"`
	Until     *time.Time    `json:"until,omitempty"`
	// Cause is how the hold ended, once Until is stamped: expired,
	// session_expired or revoked.
	Cause EventType `json:"cause,omitempty"`
}

// ended is the guard once its hold ended at at by cause: it keeps the
// lock free until at plus the hold's lock-delay.
func (d delayRecord) ended(at time.Time, cause EventType) delayRecord {
	until := at.Add(d.LockDelay).UTC()
	d.Until, d.Cause = &until, cause
	return d
}

type sessionRecord struct {
	Owner     string    `json:"owner"`
	TTL       int64     `json:"ttl"`
	CreatedAt time.Time `json:"created_at"`
	// Credential is the ID of the credential that created the session,
	// as in holderRecord.
	Credential string `json:"credential,omitempty"`
}

// waiterRecord is the value of a queue entry.
type waiterRecord struct {
	Owner   string    `json:"owner"`
	Session string    `json:"session,omitempty"`
	Since   time.Time `json:"since"`
	// Grant, when set, is the holder record the waiter asks to be granted
	// on release: the release txn of the hold before it puts it as the
	// lock (Engine.handOverOps), with the waiter's lease, so the lock
	// changes hands in one raft entry. Without it (a node from before
	// grants on release, or a waiter whose grant needs more than a put,
	// see acquirer.queueEntryRecord) the waiter takes the lock itself
	// when it sees the lock go.
	Grant *holderRecord `json:"grant,omitempty"`
	// Mode is a read/write lock's waiter's.
	Mode RWMode `json:"mode,omitempty"`
	// Set is a lock set's waiter's: every name of the set. Its entries,
	// one in each member's queue, share their CreateRevision.
	Set []string `json:"set,omitempty"`
}

type fencedRecord struct {
	Token int64           `json:"token"`
	Value json.RawMessage `json:"value"`
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("lock: encode %T: %v", v, err)) // only our own plain structs get here
	}
	return string(b)
}

func decodeHolder(kv *mvccpb.KeyValue) (holderRecord, error) {
	var r holderRecord
	if err := json.Unmarshal(kv.Value, &r); err != nil {
		return r, fmt.Errorf("decode holder record %q: %w", kv.Key, err)
	}
	return r, nil
}

func newHoldID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// toLock renders a holder record; expires is filled by the caller.
func (r holderRecord) toLock(key string, token int64) *Lock {
	md := r.Metadata
	if md == nil {
		md = map[string]string{}
	}
	_, name := thingOf(key)
	return &Lock{
		Name:       name,
		Owner:      r.Owner,
		Token:      token,
		Session:    r.Session,
		TTL:        time.Duration(r.TTL) * time.Second,
		AcquiredAt: r.AcquiredAt,
		LockDelay:  r.LockDelay,
		Metadata:   md,
		Credential: r.Credential,
		Term:       r.Term,
		Value:      r.Value,
		Limit:      r.Limit,
		Mode:       r.Mode,
		Set:        r.Set,
	}
}

// begun is a waiter's grant r as the hold it begins at at, handed over
// by a release, for an acquire that joined the queue at since.
func (r holderRecord) begun(at, since time.Time) holderRecord {
	r.AcquiredAt, r.QueuedAt = at, queuedAt(since)
	return r
}

// holder is the record, as far as ev says it, of the hold hold whose
// acquired (or elected) event ev is: begunEvent of it is ev again.
func (ev Event) holder(hold string) holderRecord {
	return holderRecord{
		Owner: ev.Owner, Hold: hold, Session: ev.Session, Credential: ev.Credential, AcquiredAt: ev.Time, QueuedAt: ev.QueuedAt,
		Term: ev.Term, Value: ev.Value, Limit: ev.Limit, Mode: ev.Mode, Set: ev.Set,
	}
}

// begunEvent is the event of this hold's beginning, the acquired (or
// elected) event its acquire writes: made of the record alone, so that
// whatever ends the hold can write it again (endRecord).
func (r holderRecord) begunEvent(key string) Event {
	ev := r.event(key, EventAcquired, r.AcquiredAt)
	ev.QueuedAt = r.QueuedAt
	return ev
}

// endEvent is the event of this hold's end by typ, with detail, at a
// request of ctx's caller.
func (r holderRecord) endEvent(ctx context.Context, key string, token int64, typ EventType, detail string) Event {
	ev := r.event(key, typ, nowUTC())
	ev.Token, ev.Detail, ev.Credential = token, detail, credentialOf(ctx)
	return ev
}

// event is the event typ of this hold of the thing kept under key, at
// at, as its kind names it (holdEvent).
func (r holderRecord) event(key string, typ EventType, at time.Time) Event {
	ev := holdEvent(key, typ)
	ev.Time, ev.Owner, ev.Session, ev.Credential, ev.Term, ev.Mode, ev.Set = at, r.Owner, r.Session, r.Credential, r.Term, r.Mode, r.Set
	if beginsHold(ev.Type) {
		ev.Value, ev.Limit = r.Value, r.Limit
	}
	return ev
}

func nowUTC() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
