package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// wait queues for the lock. The queue is a set of keys under the lock's
// queue prefix, ordered by CreateRevision; each waiter watches only the
// key just ahead of it (or the lock, once it is first), so a release wakes
// one waiter, not all of them. The release of the hold before us usually
// grants us the lock itself (Engine.handOverOps): we then learn it from
// the lock's key, with no txn of our own.
func (a *Acquirer) wait(ctx context.Context) (l *hold.Lock, fresh bool, err error) {
	e := a.E
	if e.drain.Err() != nil {
		// Shutting down: a free lock is still granted, nobody queues.
		r, err := a.attempt(ctx, "", 0)
		if err != nil {
			return nil, false, err
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		return nil, false, hold.ErrClosed
	}
	if a.placed() {
		return a.waitAtPlace(ctx)
	}
	for first := true; ; first = false {
		wlease, lost, err := e.Waiters.Get(ctx, e)
		if err != nil {
			return nil, false, err
		}
		l, fresh, err = a.waitUnder(ctx, wlease, lost)
		if !first || !errors.Is(err, errWaiterLeaseGone) {
			return l, fresh, err
		}
		// etcd ended the node's waiter lease before the node heard (a
		// partition or a pause longer than WaiterTTL): queue again under
		// a new one.
		e.Waiters.forget(wlease)
	}
}

// errWaiterLeaseGone is a queue entry's put refused for the node's waiter
// lease: etcd no longer has it.
var errWaiterLeaseGone = fmt.Errorf("the node's waiter lease is gone: %w", hold.ErrUnavailable)

// waitUnder is wait with queue entries under the node's waiter lease
// wlease, which lost says the loss of.
func (a *Acquirer) waitUnder(ctx context.Context, wlease clientv3.LeaseID, lost <-chan struct{}) (l *hold.Lock, fresh bool, err error) {
	e := a.E
	slot := e.Waiters.slot()
	qkey := a.Kind.EntryPrefix() + store.LeaseHex(wlease) + "-" + strconv.FormatUint(slot, 10)
	granted := false
	defer func() {
		if granted {
			e.Waiters.putSlot(slot) // the txn that granted the lock deleted our entry
			return
		}
		got, lerr := a.dequeue(qkey, slot)
		l, fresh, err = a.left(ctx, got, lerr, l, fresh, err)
	}()
	l, fresh, granted, err = a.queueUp(ctx, &QueueEntry{Key: qkey, Lease: wlease}, lost)
	return l, fresh, err
}

// left is the outcome of a wait that ended as l, fresh, err, once our
// queue entry is deleted: got, the lock if a release granted it to us
// meanwhile, and lerr, the delete's error.
func (a *Acquirer) left(ctx context.Context, got *hold.Lock, lerr error, l *hold.Lock, fresh bool, err error) (*hold.Lock, bool, error) {
	switch {
	case got != nil:
		// A release granted us the lock as we gave up: hand it back
		// unless the caller is gone (handBack then releases it).
		// Failing the acquire instead would leave a hold that nobody
		// knows the token of until its lease ends.
		return a.handBack(ctx, got)
	case lerr != nil && err != nil && ctx.Err() == nil && !errors.Is(err, hold.ErrUnavailable) && !errors.Is(err, hold.ErrClosed):
		// The wait ended without a grant we know of, but the entry
		// may still be in the queue (etcd did not confirm its
		// removal) for a release to grant, or was gone already (a
		// release may have granted it a hold that ended unseen):
		// "held" would be a lie. The outcome is unknown (as an
		// ErrUnavailable already says); the own
		// lease is revoked (DropLease), which ends such a grant, and
		// in a session it shows among the session's locks.
		return nil, false, fmt.Errorf("%w: the wait ended, but not as a refusal: %v", hold.ErrUnavailable, lerr)
	}
	return l, fresh, err
}

// dequeue leaves the queue once the wait ends without a grant, and gives
// the entry's slot back if the entry is gone for good. It returns the lock
// if a release granted it to us meanwhile, and an error when the entry may
// still be there (or come back), so that a release may yet grant it.
func (a *Acquirer) dequeue(qkey string, slot uint64) (*hold.Lock, error) {
	got, err := a.Leave(qkey)
	if err == nil {
		a.E.Waiters.putSlot(slot)
	}
	if got != nil || err == nil {
		a.QueuedLease = 0 // the entry is gone: nobody can grant under the lease now
	}
	return got, err
}

// queueUp joins the queue and waits in it until the lock is ours or the
// wait must end. granted is set when a txn that granted us the lock also
// deleted our entry.
func (a *Acquirer) queueUp(ctx context.Context, entry *QueueEntry, lost <-chan struct{}) (l *hold.Lock, fresh, granted bool, err error) {
	qkey := entry.Key
	e := a.E
	first, queueRev, err := a.join(ctx, entry)
	if err != nil {
		return nil, false, false, err
	}
	if l, fresh, err, ok := a.settle(ctx, first); ok {
		return l, fresh, first.Outcome == Won, err // the Then branch put no entry
	}
	end := a.waitEnds
	if end.IsZero() {
		end = time.Now().Add(a.Req.Wait)
	}
	deadline, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	// A session that ends while we wait ends the wait: the next attempt
	// then reports it. The txn that queued us found the session.
	var sessionGone *keyWatch
	if a.Session != 0 {
		var missed bool
		sessionGone, missed = e.Waits.watchKey(e.Keys.Session(a.Req.Session), queueRev)
		defer sessionGone.close()
		if missed {
			sessionGone.overflow() // wake once to look: it may have ended since
		}
	}
	q := queued{key: qkey, rev: queueRev, deadline: deadline, lost: lost, sessionGone: sessionGone, place: entry.place}
	return a.waitInQueue(ctx, q, first)
}

// queued is our place in the queue while we wait in it.
type queued struct {
	key         string // our entry
	rev         int64  // its CreateRevision
	deadline    context.Context
	lost        <-chan struct{} // the node's waiter lease is lost
	sessionGone *keyWatch       // our session's key, or nil
	place       bool            // key is the session's place (placeKey)
}

// join puts our queue entry, in the txn of a first direct attempt that
// may take the lock at once, and returns that attempt's result with the
// entry's CreateRevision (0 if the attempt settles the acquire).
func (a *Acquirer) join(ctx context.Context, entry *QueueEntry) (AttemptResult, int64, error) {
	// One txn takes a free lock with nobody queued, or else joins the
	// queue: a waiting acquire costs no extra round trip to enqueue.
	a.Enqueue = entry
	first, err := a.attempt(ctx, "", 0)
	a.Enqueue = nil
	if err != nil || first.settles() {
		return first, 0, err
	}
	queueRev, queued := first.EnqueuedRev, first.QueuedBefore+1
	// The holder's release must hand over, not try the one-txn release
	// first.
	for _, m := range a.Kind.LockNames() {
		a.E.Holds.sawWaiter(m)
	}
	if first.placeRev != 0 {
		// The session's place was in the queue already: wait from it.
		return a.reattach(ctx, entry.Key, first)
	}
	if queueRev == 0 {
		// The txn failed on a lease before it ran: join the queue on
		// our own, and let the queued attempts tell which lease is gone.
		if queueRev, queued, err = a.joinQueue(ctx, entry); err != nil {
			return AttemptResult{}, 0, err
		}
		first = AttemptResult{Outcome: RetryNow}
	}
	if limit := a.E.Cfg.MaxWaitersPerLock; limit > 0 && queued > int64(limit) {
		// Over the cap: leave (wait's deferred dequeue removes our entry).
		// Counted by the txn that queued us, so it costs no round trip;
		// and since every waiter that counted more than the cap leaves,
		// the queue holds at most the cap once joiners settle. Waiters
		// queued before us are not disturbed.
		return AttemptResult{}, 0, &hold.LimitError{
			Err: hold.ErrTooManyWaiters, Limit: limit, RetryAfter: time.Second,
			Reason: fmt.Sprintf("the queue of %q is full: %d acquires already wait for it", a.Req.Name, limit),
		}
	}
	// The first attempt already told what to wait for: the entry queued
	// just ahead of ours, or the lock itself if there was none.
	if first.ahead != "" && (first.Outcome == HeldBy || first.Outcome == Behind) {
		first = AttemptResult{Outcome: Behind, WatchKey: first.ahead, WatchRev: queueRev - 1, WatchCreated: first.aheadRev} // see SeenBefore
	}
	return first, queueRev, nil
}

// waitInQueue waits, from our place q in the queue, for what first says,
// then looks again, until the lock is ours or the wait ends.
func (a *Acquirer) waitInQueue(ctx context.Context, q queued, first AttemptResult) (l *hold.Lock, fresh, granted bool, err error) {
	r := first
	watch := (r.Outcome == HeldBy || r.Outcome == Behind) && r.WatchKey != ""
	for {
		if watch {
			got, left, err := a.awaitChange(ctx, q, r)
			if err != nil {
				return nil, false, false, err
			}
			if got != nil {
				l, fresh, err = a.handBack(ctx, got)
				return l, fresh, true, err // the release deleted our entry
			}
			if next, ok := a.Kind.AheadTookLock(left); ok {
				r = next
				continue
			}
		}
		watch = true
		for {
			var looked bool
			if r, looked, err = a.look(ctx, q.key, q.rev); err != nil {
				return nil, false, false, err
			}
			if !looked {
				if r, err = a.attempt(ctx, q.key, q.rev); err != nil {
					return nil, false, false, err
				}
			}
			granted = r.Outcome == Won // the txn deleted our entry
			if l, fresh, err, ok := a.settle(ctx, r); ok {
				return l, fresh, granted, err
			}
			if r.Outcome == Dequeued && q.place {
				return nil, false, false, errPlaceTaken
			}
			if r.Outcome == Dequeued {
				return nil, false, false, fmt.Errorf("queue entry lost with the node's waiter lease: %w", hold.ErrUnavailable)
			}
			if r.Outcome != RetryNow {
				break
			}
		}
	}
}

// joinQueue puts a queue entry on its own and returns its CreateRevision
// and the length of the queue with it.
func (a *Acquirer) joinQueue(ctx context.Context, entry *QueueEntry) (rev, queued int64, err error) {
	e := a.E
	var (
		resp *clientv3.TxnResponse
		t    store.Txn
	)
	// Our entries, then the count of the queue, ours included, then our
	// (first) entry: a session's place may have been there before.
	value := a.EntryValue(store.NowUTC())
	for _, k := range a.Kind.EntryKeys(entry.Key) {
		t.OnSuccess(clientv3.OpPut(k, value, clientv3.WithLease(entry.Lease)))
	}
	count := t.OnSuccess(clientv3.OpGet(e.Keys.Queue(a.Req.Name), clientv3.WithPrefix(), clientv3.WithCountOnly()))
	ours := t.OnSuccess(clientv3.OpGet(entry.Key))
	err = e.Etcd.RetryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = e.Cli.Txn(octx).Then(t.Then...).Commit()
		return err
	})
	if err != nil {
		if store.IsLeaseNotFound(err) && entry.place {
			return 0, 0, hold.ErrSessionNotFound
		}
		if store.IsLeaseNotFound(err) {
			return 0, 0, fmt.Errorf("enqueue: %w", errWaiterLeaseGone)
		}
		if !store.NotApplied(err) {
			a.entryUnsure = true
		}
		return 0, 0, e.Etcd.Err(ctx, "enqueue", err)
	}
	rev = resp.Header.Revision
	if kvs := ours.KVs(resp); len(kvs) > 0 {
		rev = kvs[0].CreateRevision
	}
	return rev, count.Count(resp), nil
}

// awaitChange blocks until what r says we wait for changes in etcd: the
// key ahead of us is deleted, the lock is released or handed to us, or
// the lock-delay's guard changes or runs out. It returns the lock if a
// release granted it to us, and an error when the wait must end instead.
// It learns of changes from the engine's waiter hub, never from a watch
// of its own. left is the revision that deleted the entry ahead of us,
// when that is what ended the wait.
func (a *Acquirer) awaitChange(ctx context.Context, q queued, r AttemptResult) (l *hold.Lock, left int64, err error) {
	e := a.E
	// The head of the queue waits on the lock itself, puts included: a
	// release grants it to us by putting our record over its own.
	// A set waits on each key in its way (r.keys), never as a head.
	head := r.Outcome != Delayed && r.Keys == nil && r.WatchKey == a.Kind.HeadKey()
	keys := r.Keys
	if keys == nil {
		keys = []string{r.WatchKey}
	}
	kind, _ := store.ThingOf(a.Req.Name)
	ownEntry := kind == store.KindElection && !head && q.key != ""
	if ownEntry {
		// A transfer (Transfer) grants a candidate anywhere in line: its
		// entry's delete wakes it, and its look finds the grant.
		keys = append(slices.Clone(keys), q.key)
	}
	kw, missed := e.Waits.watchKeys(keys, r.WatchRev)
	defer kw.close()
	var timer <-chan time.Time
	if !r.RetryAt.IsZero() {
		t := time.NewTimer(time.Until(r.RetryAt))
		defer t.Stop()
		timer = t.C
	}
	if missed && ownEntry {
		return nil, 0, nil // our entry may have gone unseen: look again
	}
	if missed {
		// The hub no longer holds what it dispatched between our read and
		// the registration: read what changed meanwhile.
		if l, changed, err := a.Kind.ChangedSince(ctx, r, head); err != nil || changed {
			return l, 0, err
		}
	}
	var sessionC <-chan struct{}
	if q.sessionGone != nil {
		sessionC = q.sessionGone.c
	}
	// A long wait keeps the lease our grant names alive.
	refresh := time.NewTimer(time.Hour)
	defer refresh.Stop()
	keepAlive := func() {
		refresh.Stop()
		if a.Lease != 0 && a.Lease == a.QueuedLease {
			refresh.Reset(time.Until(a.grantedAt.Add(time.Duration(a.LeaseTTL) * time.Second / 3)))
		}
	}
	keepAlive()
	for {
		select {
		case <-kw.c:
			if l, left, wake := a.watched(ctx, kw, r, head); wake {
				return l, left, nil
			}
		case <-refresh.C:
			if err := a.keepQueuedLease(ctx); err != nil {
				return nil, 0, err
			}
			keepAlive()
		case <-timer:
			return nil, 0, nil
		case <-sessionC:
			if sessionEnded(q.sessionGone) {
				return nil, 0, nil
			}
		case <-q.lost:
			return nil, 0, fmt.Errorf("node's waiter lease lost: %w", hold.ErrUnavailable)
		case <-e.drain.Done():
			return nil, 0, hold.ErrClosed
		case <-q.deadline.Done():
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			return nil, 0, a.waitedOut()
		}
	}
}

// watched reads what the key awaitChange watches did. wake is set when the
// wait is over: l is the lock if a release granted it to us, nil when we
// must look again; left is the revision of the delete of the entry ahead,
// when that is what woke us.
func (a *Acquirer) watched(ctx context.Context, kw *keyWatch, r AttemptResult, head bool) (l *hold.Lock, left int64, wake bool) {
	evs, dropped := kw.take()
	if dropped {
		return nil, 0, true // look again
	}
	for _, ev := range evs {
		switch {
		case r.Keys != nil && ev.Type == mvccpb.PUT:
			// A set's wait on the keys in its way: a release may have
			// granted us every lock of the set (setHandOverOps); any
			// other put is no reason to look.
			if l, ok := a.Granted(ctx, ev.Kv); ok {
				return l, 0, true
			}
			if r.Outcome == Delayed {
				return nil, 0, true // a lock-delay guard stamped or replaced
			}
			continue
		case head && ev.Type == mvccpb.PUT:
			if l, ok := a.Granted(ctx, ev.Kv); ok {
				return l, 0, true
			}
			return nil, 0, true // taken by another: look again
		case head, r.Outcome == Delayed:
			return nil, 0, true // released, or the delay's guard changed
		case ev.Type == mvccpb.DELETE:
			return nil, ev.Kv.ModRevision, true // the entry ahead left
		}
		// A put of the entry ahead: a reused key's new entry
		// after its delete, which woke us already.
	}
	return nil, 0, false
}

// sessionEnded reports whether our session's key may be gone: deleted, or
// events were dropped.
func sessionEnded(kw *keyWatch) bool {
	evs, dropped := kw.take()
	if dropped {
		return true
	}
	for _, ev := range evs {
		if ev.Type == mvccpb.DELETE {
			return true
		}
	}
	return false
}

// keyChanged (LockKind.ChangedSince) reads the key r waits on, and
// reports whether it changed since r's read: the entry ahead gone (or
// gone and its key taken by a later entry), the lock changed hands or
// granted to us (then the lock is returned), or the delay's guard
// rewritten. The read is linearizable: a member's local read can lag
// what its watches already sent.
func (a *Acquirer) keyChanged(ctx context.Context, r AttemptResult, head bool) (*hold.Lock, bool, error) {
	e := a.E
	var opts []clientv3.OpOption
	if !head {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	octx, done := e.Etcd.Op(ctx)
	resp, err := e.Cli.Get(octx, r.WatchKey, opts...)
	done()
	if err != nil {
		return nil, false, e.Etcd.Err(ctx, "check the key waited for", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, true, nil
	}
	kv := resp.Kvs[0]
	switch {
	case r.Outcome == Delayed:
		return nil, kv.ModRevision > r.WatchRev, nil
	case head:
		if l, ok := a.Granted(ctx, kv); ok {
			return l, true, nil
		}
		return nil, r.Holder == nil || kv.ModRevision != r.Holder.Token, nil
	default:
		return nil, r.WatchCreated != 0 && kv.CreateRevision != r.WatchCreated, nil
	}
}

func (a *Acquirer) waitedOut() error { return a.Kind.WaitedOut() }

// EntryValue is our queue entry's value for a txn that puts it at now.
func (a *Acquirer) EntryValue(now time.Time) string {
	a.entry = store.MustJSON(a.QueueEntryRecord(now))
	return a.entry
}

// QueueEntryRecord is our queue entry's value. It asks to be granted the
// lock on release (Engine.handOverOps) unless the grant would need more
// than the puts a release can make for us (counting the hold against
// MaxLocksPerSession is checked after the acquire txn, by this node), or
// the kind says no grant may go to the entry (seatKind.entry: a kept
// place of a thing with seats). It names the lease the lock is to live
// under; while the entry exists, that lease is kept (see QueuedLease).
func (a *Acquirer) QueueEntryRecord(now time.Time) hold.WaiterRecord {
	if a.queuedAt.IsZero() {
		a.queuedAt = now
	}
	wr := hold.WaiterRecord{Owner: a.Req.Owner, Session: a.Req.Session, Since: a.queuedAt}
	if grantable := a.Kind.Entry(&wr); !grantable || a.Session != 0 && a.E.Cfg.MaxLocksPerSession > 0 {
		return wr
	}
	if a.Session == 0 && a.Lease == 0 {
		return wr
	}
	g := a.Holder(time.Time{})
	wr.Grant = &g
	if a.Session == 0 {
		a.QueuedLease = a.Lease
	}
	return wr
}
