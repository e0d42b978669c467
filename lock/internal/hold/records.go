package hold

import (
	"context"
	"time"

	"github.com/baton-dev/baton/internal/store"
)

// DelayRecord guards a lock with lock-delay, an at-least window, or
// both. Acquire creates it with a hold that has either (GuardOf); its
// end stamps Until (Ended), or deletes it when that would keep the lock
// free no longer (a clean release outside any window). Revoke, or the
// first to notice an expiry, stamps it. While it exists and Until is
// unset or in the future, nobody may acquire the lock.
type DelayRecord struct {
	Hold      string        `json:"hold"`
	LockDelay time.Duration `json:"lock_delay"`
	// WindowEnd is the end of the hold's at-least window
	// (store.Holder.WindowEnd), if it has one: however the hold ends,
	// the lock stays free until then.
	WindowEnd *time.Time `json:"window_end,omitempty"`
	Until     *time.Time `json:"until,omitempty"`
	// Cause is how the hold ended, once Until is stamped: expired,
	// session_expired or revoked, or released inside its window.
	Cause store.EventType `json:"cause,omitempty"`
}

// GuardOf is the guard that the hold hr puts with itself.
func GuardOf(hr store.Holder) DelayRecord {
	d := DelayRecord{Hold: hr.Hold, LockDelay: hr.LockDelay}
	if end := hr.WindowEnd(); !end.IsZero() {
		d.WindowEnd = &end
	}
	return d
}

// Ended is the guard once its hold ended at at by cause: it keeps the
// lock free until the later of the window's end and, unless the hold
// was released, at plus the hold's lock-delay.
func (d DelayRecord) Ended(at time.Time, cause store.EventType) DelayRecord {
	until := at.UTC()
	if cause != store.EventReleased {
		until = until.Add(d.LockDelay)
	}
	if d.WindowEnd != nil && d.WindowEnd.After(until) {
		until = *d.WindowEnd
	}
	d.Until, d.Cause = &until, cause
	return d
}

// Binds reports whether a guard ended at at keeps the lock free after
// at: else there is nothing to stamp, and the end deletes it.
func (d DelayRecord) Binds(at time.Time) bool { return d.Until != nil && d.Until.After(at) }

type SessionRecord struct {
	Owner     string    `json:"owner"`
	TTL       int64     `json:"ttl"`
	CreatedAt time.Time `json:"created_at"`
	// Credential is the ID of the credential that created the session,
	// as in store.Holder.
	Credential string `json:"credential,omitempty"`
	// Bind is "stream" for a session that lives while its stream is open
	// (lock/internal/session/stream.go), empty for one that lives by its
	// TTL; Grace is a stream-bound session's.
	Bind  string        `json:"bind,omitempty"`
	Grace time.Duration `json:"grace,omitempty"`
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
		MinHold:    r.MinHold,
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
