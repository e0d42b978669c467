package core

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// run runs the acquire a, which NewAcquirer made: at once, or waiting
// in the queue for up to its Wait. It leaves no lease of its own behind
// unless a hold keeps it.
func (a *Acquirer) Run(ctx context.Context) (l *hold.Lock, fresh bool, err error) {
	defer a.DropLease()
	if a.Req.Wait == 0 {
		l, fresh, err = a.tryNow(ctx)
	} else {
		a.E.Metrics.Waiting.Inc()
		l, fresh, err = a.wait(ctx)
		a.E.Metrics.Waiting.Dec()
	}
	if err != nil {
		var he *hold.HeldError
		if errors.As(err, &he) {
			a.Kind.FillHolders(ctx, he)
		}
		return nil, false, err
	}
	return l, fresh, nil
}

// Acquirer is one acquire in progress.
type Acquirer struct {
	E   *Engine
	Req AcquireRequest // Name is the key name (store.KeyName)
	// kind is what the kind of thing req.Name is makes of the acquire
	// (kind.go).
	Kind    HoldKind
	Session clientv3.LeaseID // the session's lease, or 0
	// seat is the key name of the holder key the next attempt takes:
	// req.Name, or for a thing with seats the seat the hold takes
	// (lock/seats.go).
	Seat string
	// credential is recorded on the hold (see Caller); "" without one.
	credential string
	// SessionRev, when set, is the CreateRevision of the session key whose
	// record the ownership check read: the txn requires that very key, so
	// the check holds at the revision the lock is granted.
	SessionRev int64

	// The lock's own lease when it has no session; granted lazily, and
	// replaced when it may have aged too much to hand out.
	Lease     clientv3.LeaseID
	LeaseTTL  int64
	grantedAt time.Time
	used      bool
	// unsure is set when an acquire txn under lease failed with an
	// outcome unknown: it may have granted the lock under the lease.
	unsure bool
	// entry is the value of our queue entry as last sent; entryUnsure is
	// set when a txn that puts it failed with an outcome unknown: it may
	// still be applied after we leave the queue (see leave).
	entry       string
	entryUnsure bool
	// queuedAt is when the acquire first joined the queue; zero until
	// then. Its acquired event records it (Event.QueuedAt).
	queuedAt time.Time

	// guardRev is the ModRevision of a finished lock-delay guard that the
	// next attempt replaces; 0 means the attempt expects no guard. It is
	// the guard of Seat: a kind that picks another seat calls SeatMoved.
	guardRev int64
	// LastHolder is the holder seen by the latest failed attempt.
	LastHolder      *hold.Lock
	LastHolderLease string
	Hold            string
	// enqueue, when set, makes the next direct attempt put this queue
	// entry in its else branch: a waiting acquire joins the queue in the
	// same txn that found the lock taken, not in one more.
	Enqueue *QueueEntry
	// waitEnds, when set, is when the wait ends, over the several times an
	// acquire at its session's place may join the queue (waitAtPlace).
	waitEnds time.Time
	// QueuedLease is the own lease our queue entry names in its grant
	// (see hold.WaiterRecord.Grant), or 0. A release may put the lock under it
	// as long as the entry exists, so it is kept alive, never replaced or
	// given back to the pool until the entry is gone.
	QueuedLease clientv3.LeaseID
}

// QueueEntry is a waiter's queue key, to be put under lease: the node's
// waiter lease, or for a session's place (placeKey) the session's.
type QueueEntry struct {
	Key   string
	Lease clientv3.LeaseID
	place bool
}

// NewKindFunc makes the kind of an acquire (kind.go), given the plain
// lock's it builds on; a nil one makes a plain lock's.
type NewKindFunc func(base LockKind) (HoldKind, error)

// NewAcquirer checks req, an acquire of the thing kept under the key name
// req.Name (see store.KeyName) of the kind newKind makes, and the
// caller's right to its session: everything an acquire refuses before it
// writes.
func (e *Engine) NewAcquirer(ctx context.Context, req AcquireRequest, newKind NewKindFunc) (*Acquirer, error) {
	_, name := store.ThingOf(req.Name)
	if err := store.CheckName("name", name); err != nil {
		return nil, err
	}
	if err := hold.CheckOwner(req.Owner); err != nil {
		return nil, err
	}
	if err := hold.CheckMetadata(req.Metadata); err != nil {
		return nil, err
	}
	a := &Acquirer{E: e, Req: req, Hold: hold.NewHoldID(), Seat: req.Name, credential: hold.CredentialOf(ctx)}
	if newKind == nil {
		a.Kind = &LockKind{A: a}
	} else {
		k, err := newKind(LockKind{A: a})
		if err != nil {
			return nil, err
		}
		a.Kind = k
	}
	if req.Session != "" {
		id, ok := store.ParseLeaseHex(req.Session)
		if !ok {
			return nil, hold.Invalid("session", "must be a session ID as returned by POST /v1/sessions (hex)")
		}
		if req.TTL != 0 {
			return nil, hold.Invalid("ttl", "must be absent when session is given: the lock lives as long as the session")
		}
		a.Session = id
		a.Req.Session = store.LeaseHex(id) // canonical spelling
	} else {
		if req.TTL == 0 {
			a.Req.TTL = e.Cfg.DefaultTTL
		}
		if err := e.CheckTTL("ttl", a.Req.TTL); err != nil {
			return nil, err
		}
	}
	if req.Wait < 0 || req.Wait > e.Cfg.MaxWait {
		return nil, hold.Invalid("wait", "must be between 0s and %s", e.Cfg.MaxWait)
	}
	if req.KeepPlace {
		switch {
		case req.Session == "":
			return nil, hold.Invalid("keep_place", "needs a session: the place in the queue is the session's, and ends with it")
		case req.Wait == 0:
			return nil, hold.Invalid("keep_place", "needs a wait: without one the acquire takes no place in the queue")
		case !a.Kind.WaitsAtPlace():
			return nil, hold.Invalid("keep_place", "is not supported for lock sets")
		}
	}
	if req.LockDelay < 0 || req.LockDelay > e.Cfg.MaxLockDelay {
		return nil, hold.Invalid("lock_delay", "must be between 0s and %s", e.Cfg.MaxLockDelay)
	}
	if req.MinHold < 0 || req.MinHold > e.Cfg.MaxMinHold {
		return nil, hold.Invalid("min_hold", "must be between 0s and %s", e.Cfg.MaxMinHold)
	}
	if err := a.checkSessionOwner(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

func (e *Engine) CheckTTL(field string, d time.Duration) error {
	if d < e.Cfg.MinTTL || d > e.Cfg.MaxTTL {
		return hold.Invalid(field, "must be between %s and %s", e.Cfg.MinTTL, e.Cfg.MaxTTL)
	}
	return nil
}

// holder is the record of a hold of ours that begins at now.
func (a *Acquirer) Holder(now time.Time) store.Holder {
	leaseID, ttl := a.Lease, a.LeaseTTL
	if a.Session != 0 {
		leaseID = a.Session
	}
	rec := store.Holder{
		Owner: a.Req.Owner, Hold: a.Hold, Lease: store.LeaseHex(leaseID), Session: a.Req.Session,
		TTL: ttl, AcquiredAt: now, QueuedAt: hold.QueuedAt(a.queuedAt), LockDelay: a.Req.LockDelay, MinHold: a.Req.MinHold, Metadata: a.Req.Metadata, Credential: a.credential,
		NoTally: a.Session != 0 && a.E.Cfg.MaxLocksPerSession == 0,
		Derived: a.E.Format >= store.DerivedFormat,
	}
	a.Kind.Record(&rec)
	return rec
}

// SeatMoved makes seat the next attempt's, with no guard expected on it
// yet: the attempt's else branch reads it.
func (a *Acquirer) SeatMoved(seat string) {
	if seat != a.Seat {
		a.Seat, a.guardRev = seat, 0
	}
}

const MaxImmediateRetries = 16

// settles reports whether r ends an acquire with no waiting (settle).
func (r AttemptResult) settles() bool {
	return r.Outcome == Won || r.Outcome == SameHolder || r.Outcome == NoSession || r.Outcome == Mismatched
}

// settle ends an acquire on the outcomes that need no waiting: won, held
// by our own session already, or session gone. ok is false otherwise.
func (a *Acquirer) settle(ctx context.Context, r AttemptResult) (l *hold.Lock, fresh bool, err error, ok bool) {
	switch r.Outcome {
	case Won:
		l, fresh, err = a.handBack(ctx, r.Lock)
		return l, fresh, err, true
	case SameHolder:
		return r.Lock, false, nil, true
	case NoSession:
		return nil, false, hold.ErrSessionNotFound, true
	case Mismatched:
		return nil, false, &hold.LimitMismatchError{Limit: r.Limit, Asked: r.Asked}, true
	}
	return nil, false, nil, false
}

// tryNow is an acquire without wait.
func (a *Acquirer) tryNow(ctx context.Context) (*hold.Lock, bool, error) {
	for range MaxImmediateRetries {
		r, err := a.attempt(ctx, "", 0)
		if err != nil {
			return nil, false, err
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		switch r.Outcome {
		case HeldBy:
			return nil, false, a.Kind.HeldError(r)
		case Delayed:
			return nil, false, &hold.HeldError{RetryAfter: time.Until(r.RetryAt), Reason: fmt.Sprintf("kept free until %s: the last hold %s",
				r.RetryAt.UTC().Format(time.RFC3339Nano), hold.CauseText(r.DelayCause))}
		case Behind:
			return nil, false, &hold.HeldError{Reason: a.Kind.BehindReason()}
		}
	}
	return nil, false, &hold.HeldError{Holder: a.LastHolder, Reason: "contended; try again"}
}

// handBack returns a won lock, unless the caller left while the txn was in
// flight: then nobody will ever learn the token, so release it at once.
func (a *Acquirer) handBack(ctx context.Context, l *hold.Lock) (*hold.Lock, bool, error) {
	if err := ctx.Err(); err != nil {
		cctx, done := a.E.Etcd.CleanupCtx()
		defer done()
		if rerr := a.endOwn(cctx, l.Token, nil, ""); rerr != nil && !errors.Is(rerr, hold.ErrNotHeld) {
			a.E.Log.Warn("release lock of departed caller", "lock", l.Name, "token", l.Token, "err", rerr)
		}
		return nil, false, err
	}
	return l, true, nil
}

// checkSessionOwner refuses an acquire into a session that another
// credential created (see Caller). There is something to check only with
// a session and a caller that is not an admin, and then it costs a read
// the first time only (SessionOwner); the txn requires the very key that
// was read (SessionRev), so a session deleted and made anew meanwhile
// cannot slip through.
func (a *Acquirer) checkSessionOwner(ctx context.Context) error {
	c, ok := hold.CallerFrom(ctx)
	if a.Session == 0 || !ok || c.Admin {
		return nil
	}
	cred, rev, err := a.E.SessionOwner(ctx, a.Req.Session)
	if err != nil {
		return err
	}
	if !hold.MayActOn(ctx, cred) {
		return fmt.Errorf("session %s was created by another credential: %w", a.Req.Session, hold.ErrNotOwner)
	}
	a.SessionRev = rev
	return nil
}

// endOwn releases a hold of ours that the caller will never learn of,
// with detail in its end event; rec is its holder record, if known.
func (a *Acquirer) endOwn(ctx context.Context, token int64, rec *store.Holder, detail string) error {
	return a.Kind.EndOwn(ctx, token, rec, detail)
}

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
	// MinHold is the hold's at-least window: however early the hold
	// ends, no new grant begins before its acquired_at plus MinHold.
	MinHold  time.Duration
	Metadata map[string]string
}
