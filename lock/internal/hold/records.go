package hold

import (
	"context"
	"time"

	"github.com/baton-dev/baton/internal/store"
)

// DelayRecord guards a lock with lock-delay. Acquire creates it with the
// hold; a clean release deletes it; revoke, or the first to notice an
// expiry, stamps Until. While it exists and Until is unset or in the
// future, nobody may acquire the lock.
type DelayRecord struct {
	Hold      string        `json:"hold"`
	LockDelay time.Duration `json:"lock_delay"`
	Until     *time.Time    `json:"until,omitempty"`
	// Cause is how the hold ended, once Until is stamped: expired,
	// session_expired or revoked.
	Cause store.EventType `json:"cause,omitempty"`
}

// ended is the guard once its hold ended at at by cause: it keeps the
// lock free until at plus the hold's lock-delay.
func (d DelayRecord) Ended(at time.Time, cause store.EventType) DelayRecord {
	until := at.Add(d.LockDelay).UTC()
	d.Until, d.Cause = &until, cause
	return d
}

type SessionRecord struct {
	Owner     string    `json:"owner"`
	TTL       int64     `json:"ttl"`
	CreatedAt time.Time `json:"created_at"`
	// Credential is the ID of the credential that created the session,
	// as in store.Holder.
	Credential string `json:"credential,omitempty"`
}

// WaiterRecord is the value of a queue entry.
type WaiterRecord struct {
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
	Grant *store.Holder `json:"grant,omitempty"`
	// Mode is a read/write lock's waiter's.
	Mode store.RWMode `json:"mode,omitempty"`
	// Set is a lock set's waiter's: every name of the set. Its entries,
	// one in each member's queue, share their CreateRevision.
	Set []string `json:"set,omitempty"`
}

func NewHoldID() string { return store.NewID() }

// ToLock renders a holder record; expires is filled by the caller.
func ToLock(r store.Holder, key string, token int64) *Lock {
	md := r.Metadata
	if md == nil {
		md = map[string]string{}
	}
	_, name := store.ThingOf(key)
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

// Begun is a waiter's grant r as the hold it begins at at, handed over
// by a release, for an acquire that joined the queue at since.
func Begun(r store.Holder, at, since time.Time) store.Holder {
	r.AcquiredAt, r.QueuedAt = at, QueuedAt(since)
	return r
}

// HolderOf is the record, as far as ev says it, of the hold hold whose
// acquired (or elected) event ev is: begunEvent of it is ev again.
func HolderOf(ev store.Event, hold string) store.Holder {
	return store.Holder{
		Owner: ev.Owner, Hold: hold, Session: ev.Session, Credential: ev.Credential, AcquiredAt: ev.Time, QueuedAt: ev.QueuedAt,
		Term: ev.Term, Value: ev.Value, Limit: ev.Limit, Mode: ev.Mode, Set: ev.Set,
	}
}

// EndEvent is the event of this hold's end by typ, with detail, at a
// request of ctx's caller.
func EndEvent(r store.Holder, ctx context.Context, key string, token int64, typ store.EventType, detail string) store.Event {
	ev := r.Event(key, typ, store.NowUTC())
	ev.Token, ev.Detail, ev.Credential = token, detail, CredentialOf(ctx)
	return ev
}

// QueuedAt is the QueuedAt of an acquired event whose acquirer joined the
// queue at since (zero: it never waited).
func QueuedAt(since time.Time) *time.Time {
	if since.IsZero() {
		return nil
	}
	t := since.UTC()
	return &t
}
