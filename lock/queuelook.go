package lock

import (
	"context"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// A waiter woken by a change looks before it acts: most wakes (the
// waiter behind the head, when the lock changes hands) change nothing
// for it, and a read costs no raft entry where an attempt's txn does.

// lookTxn is look's read: a txn of reads only, which always succeeds,
// with the responses its reader names.
type lookTxn struct {
	store.Txn
	lock    store.Ref
	pred    store.Ref // the entry just ahead of ours
	entry   store.Ref // our entry (a count)
	session store.Ref // our session's key (a count), without a session none
}

// lookOps are the reads of look: holder reads what holds the thing
// (a lock's key; a thing with seats reads its seats), and opts are added
// to each read.
func (a *acquirer) lookOps(qkey string, queueRev int64, holder func(...clientv3.OpOption) clientv3.Op, opts ...clientv3.OpOption) lookTxn {
	e := a.e
	countOnly := append([]clientv3.OpOption{clientv3.WithCountOnly()}, opts...)
	var t lookTxn
	t.lock = t.OnSuccess(holder(opts...))
	t.pred = t.OnSuccess(clientv3.OpGet(a.kind.aheadPrefix(), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMaxCreateRev(queueRev - 1),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()}, opts...)...))
	t.entry = t.OnSuccess(clientv3.OpGet(qkey, countOnly...))
	if a.session != 0 {
		// A session that ended is what may have woken us (sessionGone).
		t.session = t.OnSuccess(clientv3.OpGet(e.keys.Session(a.req.Session), countOnly...))
	}
	return t
}

// gone reports whether look's read found our entry, or our session,
// gone.
func (t *lookTxn) gone(resp *clientv3.TxnResponse) bool {
	return t.entry.Count(resp) == 0 || (t.session.Ok() && t.session.Count(resp) == 0)
}

// look reads what a queued attempt would find, without a txn, so that a
// waiter woken while the lock changes hands goes back to waiting at no raft
// entry: the waiter behind the head wakes when a release hands the lock
// to the head, and finds it held. ok is false when an attempt must tell:
// the lock looks free, our entry looks gone, or the lock is held in our
// own session. On our own member the read is local (the watch event that
// woke us came from it, so it has applied that far); otherwise it is
// linearizable. Either way it only picks what to wait for, and
// awaitChange checks that against etcd as its watch starts.
func (a *acquirer) look(ctx context.Context, qkey string, queueRev int64) (r attemptResult, ok bool, err error) {
	return a.kind.look(ctx, qkey, queueRev)
}

// readLook runs look's read (lookOps), with holder what holds the thing.
func (a *acquirer) readLook(ctx context.Context, qkey string, queueRev int64, holder func(...clientv3.OpOption) clientv3.Op) (*lookTxn, *clientv3.TxnResponse, error) {
	e := a.e
	e.looks.Add(1)
	var opts []clientv3.OpOption
	if e.etcd.OwnMember() {
		opts = append(opts, clientv3.WithSerializable())
	}
	t := a.lookOps(qkey, queueRev, holder, opts...)
	octx, done := e.etcd.Op(ctx)
	resp, err := e.cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return nil, nil, e.etcd.Err(ctx, "look at the lock", err)
	}
	return &t, resp, nil
}

// lockRead reads the lock key of one hold.
func (a *acquirer) lockRead(opts ...clientv3.OpOption) clientv3.Op {
	return clientv3.OpGet(a.e.keys.Lock(a.req.Name), opts...)
}

// lookHold is look for a thing of one hold (lockKind.look).
func (a *acquirer) lookHold(ctx context.Context, qkey string, queueRev int64) (r attemptResult, ok bool, err error) {
	e, name := a.e, a.req.Name
	t, resp, err := a.readLook(ctx, qkey, queueRev, a.lockRead)
	if err != nil {
		return attemptResult{}, false, err
	}
	lockKVs := t.lock.KVs(resp)
	if len(lockKVs) == 0 {
		return attemptResult{}, false, nil
	}
	kv := lockKVs[0]
	if l, ok := a.granted(ctx, kv); ok {
		// Before the look at our entry: the release that granted us
		// the lock deleted it.
		return attemptResult{outcome: won, lock: l}, true, nil
	}
	if t.gone(resp) {
		return attemptResult{}, false, nil // our entry, or our session, is gone
	}
	hr, err := store.DecodeHolder(kv)
	if err != nil || (a.session != 0 && hr.Session == a.req.Session) {
		return attemptResult{}, false, nil
	}
	holder := hold.ToLock(hr, name, kv.ModRevision)
	a.lastHolder, a.lastHolderLease = holder, hr.Lease
	rev := resp.Header.Revision
	if ahead := t.pred.KVs(resp); len(ahead) > 0 {
		return attemptResult{outcome: behind, watchKey: string(ahead[0].Key), watchRev: rev, watchCreated: ahead[0].CreateRevision, holder: holder}, true, nil
	}
	return attemptResult{outcome: heldBy, watchKey: e.keys.Lock(name), watchRev: rev, holder: holder}, true, nil
}

// aheadTookLock tells, with no read, what a waiter whose entry ahead left
// at revision left waits for next, when that revision also put the lock:
// the entry ahead was then granted the lock, by a handover or its own
// attempt, and both grant only the oldest entry (handOverCmps,
// noneAheadCmp). So ours is the oldest now, and we wait on the lock, held
// by the hold that revision began: what look would have read, for the
// waiter next in line at every handover. ok is false when look must tell:
// the hub cannot say what that revision did, the lock was not put by it,
// the holder is our own session, or the thing has seats or is a set.
//
// A revision may hold several txns of one batch, so the grant may be
// another's beside our predecessor's leave. We then wait on the lock as if
// we headed the queue, and its next change (a handover to the true head, or
// a release) wakes us to look. What to wait on is all this picks: every
// grant is decided by a txn's compares.
func (k *lockKind) aheadTookLock(left int64) (r attemptResult, ok bool) {
	a := k.a
	e, name := a.e, a.req.Name
	if left == 0 {
		return attemptResult{}, false
	}
	kv, known := e.waits.putAt(e.keys.Lock(name), left)
	if !known || kv == nil {
		return attemptResult{}, false
	}
	hr, err := store.DecodeHolder(kv)
	if err != nil || hr.Hold == a.hold || (a.session != 0 && hr.Session == a.req.Session) {
		return attemptResult{}, false
	}
	holder := hold.ToLock(hr, name, kv.ModRevision)
	a.lastHolder, a.lastHolderLease = holder, hr.Lease
	return attemptResult{outcome: heldBy, watchKey: e.keys.Lock(name), watchRev: left, holder: holder}, true
}

// granted returns the lock if kv, the lock's key, shows the hold that our
// queue entry asked for: a release granted it to us (Engine.handOverOps).
func (a *acquirer) granted(ctx context.Context, kv *mvccpb.KeyValue) (*hold.Lock, bool) {
	hr, err := store.DecodeHolder(kv)
	if err != nil || !a.kind.ours(hr.Hold) {
		return nil, false
	}
	a.used = true
	a.kind.took(string(kv.Key))
	l := hold.ToLock(hr, a.seat, kv.ModRevision)
	if a.session != 0 {
		a.e.fillLease(ctx, l, a.session)
	} else {
		a.topUpLease(ctx)
		// The lease was refreshed at grantedAt at the latest, so it lives
		// at least this long.
		l.ExpiresAt = a.expiresAt()
	}
	return l, true
}
