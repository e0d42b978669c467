package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// run runs the acquire a, which newAcquirer made: at once, or waiting
// in the queue for up to its Wait. It leaves no lease of its own behind
// unless a hold keeps it.
func (a *acquirer) run(ctx context.Context) (l *hold.Lock, fresh bool, err error) {
	defer a.dropLease()
	if a.req.Wait == 0 {
		l, fresh, err = a.tryNow(ctx)
	} else {
		a.e.metrics.Waiting.Inc()
		l, fresh, err = a.wait(ctx)
		a.e.metrics.Waiting.Dec()
	}
	if err != nil {
		var he *hold.HeldError
		if errors.As(err, &he) {
			a.kind.fillHolders(ctx, he)
		}
		return nil, false, err
	}
	return l, fresh, nil
}

// acquirer is one acquire in progress.
type acquirer struct {
	e   *Core
	req AcquireRequest // Name is the key name (store.KeyName)
	// kind is what the kind of thing req.Name is makes of the acquire
	// (kind.go).
	kind    holdKind
	session clientv3.LeaseID // the session's lease, or 0
	// seat is the key name of the holder key the next attempt takes:
	// req.Name, or for a thing with seats the seat the hold takes
	// (seats.go).
	seat string
	// credential is recorded on the hold (see Caller); "" without one.
	credential string
	// sessionRev, when set, is the CreateRevision of the session key whose
	// record the ownership check read: the txn requires that very key, so
	// the check holds at the revision the lock is granted.
	sessionRev int64

	// The lock's own lease when it has no session; granted lazily, and
	// replaced when it may have aged too much to hand out.
	lease     clientv3.LeaseID
	leaseTTL  int64
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
	// next attempt replaces; 0 means the attempt expects no guard.
	guardRev int64
	// lastHolder is the holder seen by the latest failed attempt.
	lastHolder      *hold.Lock
	lastHolderLease string
	hold            string
	// enqueue, when set, makes the next direct attempt put this queue
	// entry in its else branch: a waiting acquire joins the queue in the
	// same txn that found the lock taken, not in one more.
	enqueue *queueEntry
	// waitEnds, when set, is when the wait ends, over the several times an
	// acquire at its session's place may join the queue (waitAtPlace).
	waitEnds time.Time
	// queuedLease is the own lease our queue entry names in its grant
	// (see hold.WaiterRecord.Grant), or 0. A release may put the lock under it
	// as long as the entry exists, so it is kept alive, never replaced or
	// given back to the pool until the entry is gone.
	queuedLease clientv3.LeaseID
}

// queueEntry is a waiter's queue key, to be put under lease: the node's
// waiter lease, or for a session's place (placeKey) the session's.
type queueEntry struct {
	key   string
	lease clientv3.LeaseID
	place bool
}

// newKindFunc makes the kind of an acquire (kind.go), given the plain
// lock's it builds on; a nil one makes a plain lock's.
type newKindFunc func(base lockKind) (holdKind, error)

// newAcquirer checks req, an acquire of the thing kept under the key name
// req.Name (see store.KeyName) of the kind newKind makes, and the
// caller's right to its session: everything an acquire refuses before it
// writes.
func (e *Core) newAcquirer(ctx context.Context, req AcquireRequest, newKind newKindFunc) (*acquirer, error) {
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
	a := &acquirer{e: e, req: req, hold: hold.NewHoldID(), seat: req.Name, credential: hold.CredentialOf(ctx)}
	a.kind = &lockKind{a: a}
	if newKind != nil {
		k, err := newKind(lockKind{a: a})
		if err != nil {
			return nil, err
		}
		a.kind = k
	}
	if req.Session != "" {
		id, ok := store.ParseLeaseHex(req.Session)
		if !ok {
			return nil, hold.Invalid("session", "must be a session ID as returned by POST /v1/sessions (hex)")
		}
		if req.TTL != 0 {
			return nil, hold.Invalid("ttl", "must be absent when session is given: the lock lives as long as the session")
		}
		a.session = id
		a.req.Session = store.LeaseHex(id) // canonical spelling
	} else {
		if req.TTL == 0 {
			a.req.TTL = e.cfg.DefaultTTL
		}
		if err := e.checkTTL("ttl", a.req.TTL); err != nil {
			return nil, err
		}
	}
	if req.Wait < 0 || req.Wait > e.cfg.MaxWait {
		return nil, hold.Invalid("wait", "must be between 0s and %s", e.cfg.MaxWait)
	}
	if req.KeepPlace {
		switch {
		case req.Session == "":
			return nil, hold.Invalid("keep_place", "needs a session: the place in the queue is the session's, and ends with it")
		case req.Wait == 0:
			return nil, hold.Invalid("keep_place", "needs a wait: without one the acquire takes no place in the queue")
		case !a.kind.waitsAtPlace():
			return nil, hold.Invalid("keep_place", "is not supported for lock sets")
		}
	}
	if req.LockDelay < 0 || req.LockDelay > e.cfg.MaxLockDelay {
		return nil, hold.Invalid("lock_delay", "must be between 0s and %s", e.cfg.MaxLockDelay)
	}
	if err := a.checkSessionOwner(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

func (e *Core) checkTTL(field string, d time.Duration) error {
	if d < e.cfg.MinTTL || d > e.cfg.MaxTTL {
		return hold.Invalid(field, "must be between %s and %s", e.cfg.MinTTL, e.cfg.MaxTTL)
	}
	return nil
}

// holder is the record of a hold of ours that begins at now.
func (a *acquirer) holder(now time.Time) store.Holder {
	leaseID, ttl := a.lease, a.leaseTTL
	if a.session != 0 {
		leaseID = a.session
	}
	rec := store.Holder{
		Owner: a.req.Owner, Hold: a.hold, Lease: store.LeaseHex(leaseID), Session: a.req.Session,
		TTL: ttl, AcquiredAt: now, QueuedAt: hold.QueuedAt(a.queuedAt), LockDelay: a.req.LockDelay, Metadata: a.req.Metadata, Credential: a.credential,
		NoTally: a.session != 0 && a.e.cfg.MaxLocksPerSession == 0,
		Derived: a.e.format >= store.DerivedFormat,
	}
	a.kind.record(&rec)
	return rec
}

const maxImmediateRetries = 16

// settles reports whether r ends an acquire with no waiting (settle).
func (r attemptResult) settles() bool {
	return r.outcome == won || r.outcome == sameHolder || r.outcome == noSession || r.outcome == mismatched
}

// settle ends an acquire on the outcomes that need no waiting: won, held
// by our own session already, or session gone. ok is false otherwise.
func (a *acquirer) settle(ctx context.Context, r attemptResult) (l *hold.Lock, fresh bool, err error, ok bool) {
	switch r.outcome {
	case won:
		l, fresh, err = a.handBack(ctx, r.lock)
		return l, fresh, err, true
	case sameHolder:
		return r.lock, false, nil, true
	case noSession:
		return nil, false, hold.ErrSessionNotFound, true
	case mismatched:
		return nil, false, &hold.LimitMismatchError{Limit: r.limit, Asked: r.asked}, true
	}
	return nil, false, nil, false
}

// tryNow is an acquire without wait.
func (a *acquirer) tryNow(ctx context.Context) (*hold.Lock, bool, error) {
	for range maxImmediateRetries {
		r, err := a.attempt(ctx, "", 0)
		if err != nil {
			return nil, false, err
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		switch r.outcome {
		case heldBy:
			return nil, false, a.kind.heldError(r)
		case delayed:
			return nil, false, &hold.HeldError{RetryAfter: time.Until(r.retryAt), Reason: fmt.Sprintf("under lock-delay until %s: the last hold %s, and did not end by a release",
				r.retryAt.UTC().Format(time.RFC3339Nano), hold.CauseText(r.delayCause))}
		case behind:
			return nil, false, &hold.HeldError{Reason: a.kind.behindReason()}
		}
	}
	return nil, false, &hold.HeldError{Holder: a.lastHolder, Reason: "contended; try again"}
}

// handBack returns a won lock, unless the caller left while the txn was in
// flight: then nobody will ever learn the token, so release it at once.
func (a *acquirer) handBack(ctx context.Context, l *hold.Lock) (*hold.Lock, bool, error) {
	if err := ctx.Err(); err != nil {
		cctx, done := a.e.etcd.CleanupCtx()
		defer done()
		if rerr := a.endOwn(cctx, l.Token, nil, ""); rerr != nil && !errors.Is(rerr, hold.ErrNotHeld) {
			a.e.log.Warn("release lock of departed caller", "lock", l.Name, "token", l.Token, "err", rerr)
		}
		return nil, false, err
	}
	return l, true, nil
}

// checkSessionOwner refuses an acquire into a session that another
// credential created (see Caller). It costs a read only when there is
// something to check: a session, and a caller that is not an admin. The
// read is local when the member has the session; the txn then requires
// the very key that was read (sessionRev), so a session deleted and made
// anew meanwhile cannot slip through.
func (a *acquirer) checkSessionOwner(ctx context.Context) error {
	c, ok := hold.CallerFrom(ctx)
	if a.session == 0 || !ok || c.Admin {
		return nil
	}
	rec, rev, err := a.e.readSession(ctx, a.req.Session)
	if err != nil {
		return err
	}
	if !hold.MayActOn(ctx, rec.Credential) {
		return fmt.Errorf("session %s was created by another credential: %w", a.req.Session, hold.ErrNotOwner)
	}
	a.sessionRev = rev
	return nil
}

// endOwn releases a hold of ours that the caller will never learn of,
// with detail in its end event; rec is its holder record, if known.
func (a *acquirer) endOwn(ctx context.Context, token int64, rec *store.Holder, detail string) error {
	return a.kind.endOwn(ctx, token, rec, detail)
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
	Metadata  map[string]string
}
