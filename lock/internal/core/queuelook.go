package core

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

// LookTxn is look's read: a txn of reads only, which always succeeds,
// with the responses its reader names.
type LookTxn struct {
	store.Txn
	Lock    store.Ref
	Pred    store.Ref // the entry just ahead of ours
	Entry   store.Ref // our entry (a count)
	Session store.Ref // our session's key (a count), without a session none
}

// LookOps are the reads of look: holder reads what holds the thing
// (a lock's key; a thing with seats reads its seats), and opts are added
// to each read.
func (a *Acquirer) LookOps(qkey string, queueRev int64, holder func(...clientv3.OpOption) clientv3.Op, opts ...clientv3.OpOption) LookTxn {
	e := a.E
	countOnly := append([]clientv3.OpOption{clientv3.WithCountOnly()}, opts...)
	var t LookTxn
	t.Lock = t.OnSuccess(holder(opts...))
	t.Pred = t.OnSuccess(clientv3.OpGet(a.Kind.AheadPrefix(), append([]clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithMaxCreateRev(queueRev - 1),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()}, opts...)...))
	t.Entry = t.OnSuccess(clientv3.OpGet(qkey, countOnly...))
	if a.Session != 0 {
		// A session that ended is what may have woken us (sessionGone).
		t.Session = t.OnSuccess(clientv3.OpGet(e.Keys.Session(a.Req.Session), countOnly...))
	}
	return t
}

// gone reports whether look's read found our entry, or our session,
// gone.
func (t *LookTxn) Gone(resp *clientv3.TxnResponse) bool {
	return t.Entry.Count(resp) == 0 || (t.Session.Ok() && t.Session.Count(resp) == 0)
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
func (a *Acquirer) look(ctx context.Context, qkey string, queueRev int64) (r AttemptResult, ok bool, err error) {
	return a.Kind.Look(ctx, qkey, queueRev)
}

// ReadLook runs look's read (LookOps), with holder what holds the thing.
func (a *Acquirer) ReadLook(ctx context.Context, qkey string, queueRev int64, holder func(...clientv3.OpOption) clientv3.Op) (*LookTxn, *clientv3.TxnResponse, error) {
	e := a.E
	e.Looks.Add(1)
	var opts []clientv3.OpOption
	if e.Etcd.OwnMember() {
		opts = append(opts, clientv3.WithSerializable())
	}
	t := a.LookOps(qkey, queueRev, holder, opts...)
	octx, done := e.Etcd.Op(ctx)
	resp, err := e.Cli.Txn(octx).Then(t.Then...).Commit()
	done()
	if err != nil {
		return nil, nil, e.Etcd.Err(ctx, "look at the lock", err)
	}
	return &t, resp, nil
}

// LockRead reads the lock key of one hold.
func (a *Acquirer) LockRead(opts ...clientv3.OpOption) clientv3.Op {
	return clientv3.OpGet(a.E.Keys.Lock(a.Req.Name), opts...)
}

// lookHold is look for a thing of one hold (LockKind.look).
func (a *Acquirer) lookHold(ctx context.Context, qkey string, queueRev int64) (r AttemptResult, ok bool, err error) {
	e, name := a.E, a.Req.Name
	t, resp, err := a.ReadLook(ctx, qkey, queueRev, a.LockRead)
	if err != nil {
		return AttemptResult{}, false, err
	}
	lockKVs := t.Lock.KVs(resp)
	if len(lockKVs) == 0 {
		return AttemptResult{}, false, nil
	}
	kv := lockKVs[0]
	if l, ok := a.Granted(ctx, kv); ok {
		// Before the look at our entry: the release that granted us
		// the lock deleted it.
		return AttemptResult{Outcome: Won, Lock: l}, true, nil
	}
	if t.Gone(resp) {
		return AttemptResult{}, false, nil // our entry, or our session, is gone
	}
	hr, err := store.DecodeHolder(kv)
	if err != nil || (a.Session != 0 && hr.Session == a.Req.Session) {
		return AttemptResult{}, false, nil
	}
	holder := hold.ToLock(hr, name, kv.ModRevision)
	a.LastHolder, a.LastHolderLease = holder, hr.Lease
	rev := resp.Header.Revision
	if ahead := t.Pred.KVs(resp); len(ahead) > 0 {
		return AttemptResult{Outcome: Behind, WatchKey: string(ahead[0].Key), WatchRev: rev, WatchCreated: ahead[0].CreateRevision, Holder: holder}, true, nil
	}
	return AttemptResult{Outcome: HeldBy, WatchKey: e.Keys.Lock(name), WatchRev: rev, Holder: holder}, true, nil
}

// aheadTookLock tells, with no read, what a waiter whose entry ahead left
// at revision left waits for next, when that revision also put the lock:
// the entry ahead was then granted the lock, by a handover or its own
// attempt, and both grant only the oldest entry (handOverCmps,
// NoneAheadCmp). So ours is the oldest now, and we wait on the lock, held
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
func (k *LockKind) AheadTookLock(left int64) (r AttemptResult, ok bool) {
	a := k.A
	e, name := a.E, a.Req.Name
	if left == 0 {
		return AttemptResult{}, false
	}
	kv, known := e.Waits.putAt(e.Keys.Lock(name), left)
	if !known || kv == nil {
		return AttemptResult{}, false
	}
	hr, err := store.DecodeHolder(kv)
	if err != nil || hr.Hold == a.Hold || (a.Session != 0 && hr.Session == a.Req.Session) {
		return AttemptResult{}, false
	}
	holder := hold.ToLock(hr, name, kv.ModRevision)
	a.LastHolder, a.LastHolderLease = holder, hr.Lease
	return AttemptResult{Outcome: HeldBy, WatchKey: e.Keys.Lock(name), WatchRev: left, Holder: holder}, true
}

// granted returns the lock if kv, the lock's key, shows the hold that our
// queue entry asked for: a release granted it to us (Engine.handOverOps).
func (a *Acquirer) Granted(ctx context.Context, kv *mvccpb.KeyValue) (*hold.Lock, bool) {
	hr, err := store.DecodeHolder(kv)
	if err != nil || !a.Kind.Ours(hr.Hold) {
		return nil, false
	}
	a.used = true
	a.Kind.Took(string(kv.Key))
	l := hold.ToLock(hr, a.Seat, kv.ModRevision)
	if a.Session != 0 {
		a.E.FillLease(ctx, l, a.Session)
	} else {
		a.topUpLease(ctx)
		// The lease was refreshed at grantedAt at the latest, so it lives
		// at least this long.
		l.ExpiresAt = a.expiresAt()
	}
	return l, true
}
