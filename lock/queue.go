package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// wait queues for the lock. The queue is a set of keys under the lock's
// queue prefix, ordered by CreateRevision; each waiter watches only the
// key just ahead of it (or the lock, once it is first), so a handoff wakes
// one waiter, not all of them. The release of the hold before us usually
// grants us the lock itself (see handoff): we then learn it from the
// lock's key, with no txn of our own.
func (a *acquirer) wait(ctx context.Context) (l *Lock, fresh bool, err error) {
	e := a.e
	if e.drain.Err() != nil {
		// Shutting down: a free lock is still granted, nobody queues.
		r, err := a.attempt(ctx, "", 0)
		if err != nil {
			return nil, false, err
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		return nil, false, ErrClosed
	}
	wlease, lost, err := e.waiters.get(ctx, e)
	if err != nil {
		return nil, false, err
	}
	slot := e.waiters.slot()
	qkey := e.queuePrefix(a.req.Name) + leaseHex(wlease) + "-" + strconv.FormatUint(slot, 10)
	granted := false
	defer func() {
		if granted {
			e.waiters.putSlot(slot) // the txn that granted the lock deleted our entry
			return
		}
		got, lerr := a.leave(qkey)
		if lerr == nil {
			e.waiters.putSlot(slot)
		}
		if got == nil {
			if lerr == nil {
				a.queuedLease = 0 // the entry is gone: nobody can grant under the lease now
			}
			return
		}
		// A release granted us the lock as we gave up: hand it back
		// unless the caller is gone (handBack then releases it). Failing
		// the acquire instead would leave a hold that nobody knows the
		// token of until its lease ends.
		a.queuedLease = 0
		l, fresh, err = a.handBack(ctx, got)
	}()

	// One txn takes a free lock with nobody queued, or else joins the
	// queue: a waiting acquire costs no extra round trip to enqueue.
	a.enqueue = &queueEntry{key: qkey, lease: wlease}
	first, err := a.attempt(ctx, "", 0)
	a.enqueue = nil
	if err != nil {
		return nil, false, err
	}
	if l, fresh, err, ok := a.settle(ctx, first); ok {
		granted = first.outcome == won // the Then branch put no entry
		return l, fresh, err
	}
	queueRev, queued := first.enqueuedRev, first.queuedBefore+1
	if queueRev == 0 {
		// The txn failed on a lease before it ran: join the queue on
		// our own, and let the queued attempts tell which lease is gone.
		if queueRev, queued, err = a.joinQueue(ctx, qkey, wlease); err != nil {
			return nil, false, err
		}
		first = attemptResult{outcome: retryNow}
	}
	if limit := e.cfg.MaxWaitersPerLock; limit > 0 && queued > int64(limit) {
		// Over the cap: leave (the deferred dequeue removes our entry).
		// Counted by the txn that queued us, so it costs no round trip;
		// and since every waiter that counted more than the cap leaves,
		// the queue holds at most the cap once joiners settle. Waiters
		// queued before us are not disturbed.
		return nil, false, &LimitError{
			Err: ErrTooManyWaiters, Limit: limit, RetryAfter: time.Second,
			Reason: fmt.Sprintf("the queue of %q is full: %d acquires already wait for it", a.req.Name, limit),
		}
	}
	deadline, cancel := context.WithTimeout(ctx, a.req.Wait)
	defer cancel()
	// A session that ends while we wait ends the wait: the next attempt
	// then reports it. The txn that queued us found the session.
	var sessionGone *keyWatch
	if a.session != 0 {
		var missed bool
		sessionGone, missed = e.waits.watchKey(e.sessionKey(a.req.Session), queueRev)
		defer sessionGone.close()
		if missed {
			sessionGone.overflow() // wake once to look: it may have ended since
		}
	}

	// The first attempt already told what to wait for: the entry queued
	// just ahead of ours, or the lock itself if there was none.
	if first.ahead != "" && (first.outcome == heldBy || first.outcome == behind) {
		first = attemptResult{outcome: behind, watchKey: first.ahead, watchRev: queueRev, watchCreated: first.aheadRev}
	}
	if (first.outcome == heldBy || first.outcome == behind) && first.watchKey != "" {
		got, err := a.sleep(ctx, deadline, first, lost, sessionGone)
		if err != nil {
			return nil, false, err
		}
		if got != nil {
			granted = true // the release deleted our entry
			return a.handBack(ctx, got)
		}
	}
	for {
		r, looked, err := a.look(ctx, qkey, queueRev)
		if err != nil {
			return nil, false, err
		}
		if !looked {
			if r, err = a.attempt(ctx, qkey, queueRev); err != nil {
				return nil, false, err
			}
		}
		if r.outcome == won {
			granted = true // the txn deleted our entry
		}
		if l, fresh, err, ok := a.settle(ctx, r); ok {
			return l, fresh, err
		}
		switch r.outcome {
		case dequeued:
			return nil, false, fmt.Errorf("queue entry lost with the node's waiter lease: %w", ErrUnavailable)
		case retryNow:
			continue
		}
		got, err := a.sleep(ctx, deadline, r, lost, sessionGone)
		if err != nil {
			return nil, false, err
		}
		if got != nil {
			granted = true
			return a.handBack(ctx, got)
		}
	}
}

// look reads what a queued attempt would find, without a txn, so that a
// waiter woken while the lock changes hands goes back to waiting at no raft
// entry: the waiter behind the head wakes when a release hands the lock
// to the head, and finds it held. ok is false when an attempt must tell:
// the lock looks free, our entry looks gone, or the lock is held in our
// own session. On our own member the read is local (the watch event that
// woke us came from it, so it has applied that far); otherwise it is
// linearizable. Either way it only picks what to wait for, and sleep
// checks that against etcd as its watch starts.
func (a *acquirer) look(ctx context.Context, qkey string, queueRev int64) (r attemptResult, ok bool, err error) {
	e, name := a.e, a.req.Name
	var opts []clientv3.OpOption
	if e.ownMember() {
		opts = append(opts, clientv3.WithSerializable())
	}
	lkey := e.lockKey(name)
	countOnly := append([]clientv3.OpOption{clientv3.WithCountOnly()}, opts...)
	ops := []clientv3.Op{
		clientv3.OpGet(lkey, opts...),
		clientv3.OpGet(e.queuePrefix(name), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMaxCreateRev(queueRev - 1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()}, opts...)...),
		clientv3.OpGet(qkey, countOnly...),
	}
	if a.session != 0 {
		// A session that ended is what may have woken us (sessionGone).
		ops = append(ops, clientv3.OpGet(e.sessionKey(a.req.Session), countOnly...))
	}
	octx, done := e.op(ctx)
	resp, err := e.cli.Txn(octx).Then(ops...).Commit()
	done()
	if err != nil {
		return attemptResult{}, false, e.etcdErr(ctx, "look at the lock", err)
	}
	lockKVs := resp.Responses[0].GetResponseRange().Kvs
	if len(lockKVs) == 0 {
		return attemptResult{}, false, nil
	}
	kv := lockKVs[0]
	if l, ok := a.granted(ctx, kv); ok {
		// Before the look at our entry: the release that granted us
		// the lock deleted it.
		return attemptResult{outcome: won, lock: l}, true, nil
	}
	for _, r := range resp.Responses[2:] {
		if r.GetResponseRange().Count == 0 {
			return attemptResult{}, false, nil // our entry, or our session, is gone
		}
	}
	hr, err := decodeHolder(kv)
	if err != nil || (a.session != 0 && hr.Session == a.req.Session) {
		return attemptResult{}, false, nil
	}
	holder := hr.toLock(name, kv.ModRevision)
	a.lastHolder, a.lastHolderLease = holder, hr.Lease
	rev := resp.Header.Revision
	if ahead := resp.Responses[1].GetResponseRange().Kvs; len(ahead) > 0 {
		return attemptResult{outcome: behind, watchKey: string(ahead[0].Key), watchRev: rev, watchCreated: ahead[0].CreateRevision, holder: holder}, true, nil
	}
	return attemptResult{outcome: heldBy, watchKey: lkey, watchRev: rev, holder: holder}, true, nil
}

// joinQueue puts a queue entry on its own and returns its CreateRevision
// and the length of the queue with it.
func (a *acquirer) joinQueue(ctx context.Context, qkey string, wlease clientv3.LeaseID) (rev, queued int64, err error) {
	e := a.e
	var resp *clientv3.TxnResponse
	err = e.retryNotApplied(ctx, func(octx context.Context) (err error) {
		resp, err = e.cli.Txn(octx).Then(
			clientv3.OpPut(qkey, a.entryValue(nowUTC()), clientv3.WithLease(wlease)),
			clientv3.OpGet(e.queuePrefix(a.req.Name), clientv3.WithPrefix(), clientv3.WithCountOnly()),
		).Commit()
		return err
	})
	if err != nil {
		if isLeaseNotFound(err) {
			return 0, 0, fmt.Errorf("enqueue: the node's waiter lease is gone: %w", ErrUnavailable)
		}
		if !notApplied(err) {
			a.entryUnsure = true
		}
		return 0, 0, e.etcdErr(ctx, "enqueue", err)
	}
	return resp.Header.Revision, resp.Responses[1].GetResponseRange().Count, nil
}

// sleep blocks until what r says we wait for changes: the key ahead of us
// is deleted, the lock is released or handed to us, or lock-delay runs
// out. It returns the lock if a release granted it to us, and an error
// when the wait must end instead. It learns of changes from the engine's
// waiter hub, never from a watch of its own.
func (a *acquirer) sleep(ctx, deadline context.Context, r attemptResult, lost <-chan struct{}, sessionGone *keyWatch) (*Lock, error) {
	e := a.e
	// The head of the queue waits on the lock itself, puts included: a
	// release grants it to us by putting our record over its own.
	head := r.outcome != delayed && r.watchKey == e.lockKey(a.req.Name)
	kw, missed := e.waits.watchKey(r.watchKey, r.watchRev)
	defer kw.close()
	var timer <-chan time.Time
	if r.outcome == delayed {
		t := time.NewTimer(time.Until(r.retryAt))
		defer t.Stop()
		timer = t.C
	}
	if missed {
		// The hub no longer holds what it dispatched between our read and
		// the registration: read what changed meanwhile.
		if l, changed, err := a.changedSince(ctx, r, head); err != nil || changed {
			return l, err
		}
	}
	var sessionC <-chan struct{}
	if sessionGone != nil {
		sessionC = sessionGone.c
	}
	// A long wait keeps the lease our grant names alive.
	refresh := time.NewTimer(time.Hour)
	defer refresh.Stop()
	keepAlive := func() {
		refresh.Stop()
		if a.lease != 0 && a.lease == a.queuedLease {
			refresh.Reset(time.Until(a.grantedAt.Add(time.Duration(a.leaseTTL) * time.Second / 3)))
		}
	}
	keepAlive()
	for {
		select {
		case <-kw.c:
			evs, dropped := kw.take()
			if dropped {
				return nil, nil // look again
			}
			for _, ev := range evs {
				switch {
				case head && ev.Type == mvccpb.PUT:
					if l, ok := a.granted(ctx, ev.Kv); ok {
						return l, nil
					}
					return nil, nil // taken by another: look again
				case head, r.outcome == delayed:
					return nil, nil // released, or the delay's guard changed
				case ev.Type == mvccpb.DELETE:
					return nil, nil // the entry ahead left
				}
				// A put of the entry ahead: a reused key's new entry
				// after its delete, which woke us already.
			}
		case <-refresh.C:
			if err := a.keepQueuedLease(ctx); err != nil {
				return nil, err
			}
			keepAlive()
		case <-timer:
			return nil, nil
		case <-sessionC:
			evs, dropped := sessionGone.take()
			if dropped {
				return nil, nil
			}
			for _, ev := range evs {
				if ev.Type == mvccpb.DELETE {
					return nil, nil
				}
			}
		case <-lost:
			return nil, fmt.Errorf("node's waiter lease lost: %w", ErrUnavailable)
		case <-e.drain.Done():
			return nil, ErrClosed
		case <-deadline.Done():
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, a.waitedOut()
		}
	}
}

// changedSince reads the key r waits on, and reports whether it changed
// since r's read: the entry ahead gone (or gone and its key taken by a
// later entry), the lock changed hands or granted to us (then the lock is
// returned), or the delay's guard rewritten. The read is linearizable: a
// member's local read can lag what its watches already sent.
func (a *acquirer) changedSince(ctx context.Context, r attemptResult, head bool) (*Lock, bool, error) {
	e := a.e
	var opts []clientv3.OpOption
	if !head {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	octx, done := e.op(ctx)
	resp, err := e.cli.Get(octx, r.watchKey, opts...)
	done()
	if err != nil {
		return nil, false, e.etcdErr(ctx, "check the key waited for", err)
	}
	if len(resp.Kvs) == 0 {
		return nil, true, nil
	}
	kv := resp.Kvs[0]
	switch {
	case r.outcome == delayed:
		return nil, kv.ModRevision > r.watchRev, nil
	case head:
		if l, ok := a.granted(ctx, kv); ok {
			return l, true, nil
		}
		return nil, r.holder == nil || kv.ModRevision != r.holder.Token, nil
	default:
		return nil, r.watchCreated != 0 && kv.CreateRevision != r.watchCreated, nil
	}
}

func (a *acquirer) waitedOut() error {
	if a.lastHolder != nil {
		return &HeldError{Holder: a.lastHolder, Reason: fmt.Sprintf("still held by %q after waiting %s", a.lastHolder.Owner, a.req.Wait)}
	}
	return &HeldError{Reason: fmt.Sprintf("not granted within %s", a.req.Wait)}
}

// leave removes our queue entry, even though the caller has gone, and
// reads the lock in the same txn: once the entry is gone no release can
// grant us the lock, so the read tells for good whether one did before.
// It returns the lock if so.
func (a *acquirer) leave(qkey string) (*Lock, error) {
	ctx, done := a.e.cleanupCtx()
	defer done()
	var resp *clientv3.TxnResponse
	err := a.e.retryCleanup(ctx, func(ctx context.Context) (err error) {
		resp, err = a.e.cli.Txn(ctx).Then(clientv3.OpDelete(qkey), clientv3.OpGet(a.e.lockKey(a.req.Name))).Commit()
		return err
	})
	if err != nil || a.entryUnsure {
		// A txn of unknown outcome may put our entry after this delete
		// (a proposal forwarded by a member that just stopped leading
		// can reach the new leader after our later ones), or the delete
		// failed: sweep the entry later, if it is still ours, so that it
		// does not block the waiters behind it while the node runs (its
		// waiter lease would remove it only then). Its key is not reused
		// meanwhile.
		if a.entry != "" {
			go a.e.sweepEntry(qkey, a.entry)
		}
		if err == nil {
			err = errEntryMayReturn
		}
	}
	if err != nil && !errors.Is(err, errEntryMayReturn) {
		a.e.log.Warn("remove queue entry", "key", qkey, "err", err)
		return nil, err
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) > 0 {
		if l, ok := a.granted(ctx, kvs[0]); ok {
			return l, err
		}
	}
	return nil, err
}

// errEntryMayReturn is leave's answer when the queue entry is gone but a
// txn of unknown outcome may put it again: its key must not be reused.
var errEntryMayReturn = errors.New("the queue entry may be put again by a txn of unknown outcome")

// entryValue is our queue entry's value for a txn that puts it at now.
func (a *acquirer) entryValue(now time.Time) string {
	a.entry = mustJSON(a.waiterRecord(now))
	return a.entry
}

// waiterRecord is our queue entry. It asks to be granted the lock on
// release (see handoff) unless the grant would need more than the puts
// a release can make for us: counting the hold against
// MaxLocksPerSession is checked after the acquire txn, by this node.
// It names the lease the lock is to live under; while the entry exists,
// that lease is kept (see queuedLease).
func (a *acquirer) waiterRecord(now time.Time) waiterRecord {
	wr := waiterRecord{Owner: a.req.Owner, Session: a.req.Session, Since: now}
	if a.session != 0 && a.e.cfg.MaxLocksPerSession > 0 {
		return wr
	}
	if a.session == 0 && a.lease == 0 {
		return wr
	}
	g := a.holder(time.Time{})
	wr.Grant = &g
	if a.session == 0 {
		a.queuedLease = a.lease
	}
	return wr
}

// sweepEntry deletes the queue entry at key if it still holds value, once
// any txn of unknown outcome that puts it has been applied or lost: such
// a txn is in etcd's log within an op timeout, or never will be.
func (e *Engine) sweepEntry(key, value string) {
	t := time.NewTimer(e.cfg.OpTimeout)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.stop.Done():
		return
	}
	ctx, done := e.cleanupCtx()
	defer done()
	err := e.retryCleanup(ctx, func(ctx context.Context) error {
		_, err := e.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", value)).Then(clientv3.OpDelete(key)).Commit()
		return err
	})
	if err != nil {
		e.log.Warn("sweep queue entry", "key", key, "err", err)
	}
}
