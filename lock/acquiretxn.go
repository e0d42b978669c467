package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/baton-dev/baton/internal/store"
	"github.com/baton-dev/baton/lock/internal/hold"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// outcome is what an acquire transaction's else branch tells.
type outcome int

const (
	won        outcome = iota
	retryNow           // something changed under us; try again at once
	heldBy             // someone holds it: wait for the key to go
	behind             // an earlier waiter is queued: wait for it to go
	delayed            // lock-delay: wait until retryAt
	sameHolder         // our session holds it already
	noSession          // the session is gone
	dequeued           // our queue entry vanished (waiter lease lost)
	unstamped          // an expired hold's lock-delay has no end yet: stamp it (stampLockDelay)
	mismatched         // a semaphore's permits are held under another limit
)

type attemptResult struct {
	outcome  outcome
	lock     *hold.Lock
	watchKey string // with heldBy/behind/delayed
	watchRev int64  // watch from here on
	// watchCreated is the CreateRevision of the queue entry at watchKey,
	// with behind: queue keys are reused (waiterLease.slot), and a key
	// created anew is another waiter's entry, not the one we wait for.
	watchCreated int64
	retryAt      time.Time
	delayCause   hold.EventType // with delayed: how the hold ended
	// guard is the lock-delay guard read, with unstamped; guardRev is
	// its ModRevision.
	guard    hold.DelayRecord
	guardRev int64
	holder   *hold.Lock
	// enqueuedRev is the revision at which a failed direct attempt made
	// with a.enqueue put our queue entry (its CreateRevision); ahead is
	// the newest entry queued before it, "" if none.
	enqueuedRev int64
	ahead       string
	aheadRev    int64 // ahead's CreateRevision
	// queuedBefore is how many entries were queued before ours, by the
	// same txn that put ours.
	queuedBefore int64
	// placeRev is the CreateRevision of the session's place that a
	// direct attempt with a.enqueue found in the queue before it put the
	// entry again (keeping that revision), 0 if there was none; place is
	// the entry's value then.
	placeRev int64
	place    []byte
	// limit is the semaphore's stored limit, with mismatched; asked the
	// limit the acquire asked for.
	limit, asked int
	// keys are what a lock set waits on, with heldBy, behind and delayed
	// (watchKey is the first); holders the members held by others.
	keys    []string
	holders []*hold.Lock
}

// acquireTxn is one acquire transaction, built by its kind (holdKind.txn),
// with the responses its readers name. An op the txn does not carry has
// the zero Ref.
type acquireTxn struct {
	store.Txn
	// won is the Then branch: the lock was granted.
	won struct {
		acquired, released store.Ref // the session's tallies (MaxLocksPerSession)
		session            store.Ref // the session record
	}
	// lost is the Else branch.
	lost struct {
		lock, guard store.Ref
		queued      store.Ref // count of the lock's queue
		blocking    store.Ref // count of the entries we wait behind: the queue's, or a reader's writers'
		ahead       store.Ref // with enqueue: the newest entry queued before ours
		place       store.Ref // with enqueue of a session's place: the entry before the put
		entry       store.Ref // queued attempt: our queue entry
		pred        store.Ref // queued attempt: the entry just ahead of ours
		session     store.Ref // the session record
		term        store.Ref // an election's term key
		limit       store.Ref // a semaphore's stored limit
		seats       store.Ref // the seats the acquire picks from, keys only
		blocker     store.Ref // a read/write lock's hold in the way: the writer's, or (a writer's acquire) a reader's
	}
	// members are a lock set's, one per member (setKind.txn).
	members []memberRefs
}

// attempt runs one acquire transaction. queueKey/queueRev identify our
// queue entry when waiting; "" means a direct attempt, which must not jump
// ahead of queued waiters.
func (a *acquirer) attempt(ctx context.Context, queueKey string, queueRev int64) (attemptResult, error) {
	e := a.e
	if err := a.ensureLease(ctx); err != nil {
		return attemptResult{}, err
	}
	if err := a.kind.prepare(ctx); err != nil {
		return attemptResult{}, err
	}
	now := store.NowUTC()
	rec := a.holder(now)
	var resp *clientv3.TxnResponse
	t := a.kind.txn(queueKey, queueRev, rec, now)
	// The txn is not bound to the caller's context: if the caller leaves
	// mid-flight we still learn the outcome, and undo a grant.
	err := e.etcd.RetryNotApplied(context.WithoutCancel(ctx), func(octx context.Context) (err error) {
		resp, err = e.batch.Txn(octx, t.Cmps, t.Then, t.Else)
		return err
	})
	if err != nil {
		return a.attemptFailed(ctx, queueKey, err)
	}
	if resp.Succeeded {
		return a.won(ctx, resp, &t, rec)
	}
	return a.kind.analyse(ctx, resp, &t, queueKey)
}

// holdTxn builds the acquire txn of one hold (lockKind.txn): the hold
// rec, begun at now, with its acquired event, and what the kind adds. queueKey/queueRev are as for attempt.
// The Then branch grants the lock; the Else branch reads what stood in
// the way and, for a direct attempt with a.enqueue, joins the queue.
//
// Two entries of one queue never share a CreateRevision: a txn that joins
// the queue has a Then branch that writes a key every grant of the thing
// writes (its lock key; a thing with seats, its seats key), and the
// batcher never puts two writes of one key into one txn (joinQueue's txn
// is one of its own). So the queue's order is total, as "the oldest"
// (handOverCmps, noneAheadCmp) needs.
func (a *acquirer) holdTxn(queueKey string, queueRev int64, rec store.Holder, now time.Time) acquireTxn {
	e, name := a.e, a.req.Name
	lkey, gkey, qpfx := e.keys.Lock(a.seat), e.keys.Delay(a.seat), e.keys.Queue(name)
	var t acquireTxn
	t.If(a.acquireCmps(queueKey, queueRev)...)
	for _, op := range a.grantOps(queueKey, rec) {
		t.OnSuccess(op)
	}
	if a.session != 0 && e.cfg.MaxLocksPerSession > 0 {
		// Count the hold in the session's tally, then read the tallies
		// (ours included): checked after the commit (see
		// undoOverSessionCap), so the cap costs no round trip. Without
		// the cap no tally is kept, and a session's acquire writes no
		// key but its lock and its event (BenchmarkEngine_CycleSession
		// measures what that saves).
		t.OnSuccess(clientv3.OpPut(e.keys.SessionTally(a.req.Session, "acquired"), "", clientv3.WithLease(a.session)))
		a.tallyReads(&t)
	}
	if a.session != 0 {
		t.won.session = t.OnSuccess(clientv3.OpGet(e.keys.Session(a.req.Session)))
	}

	lost := &t.lost
	lost.lock = t.OnFailure(clientv3.OpGet(lkey))
	lost.guard = t.OnFailure(clientv3.OpGet(gkey))
	lost.queued = t.OnFailure(clientv3.OpGet(qpfx, clientv3.WithPrefix(), clientv3.WithCountOnly()))
	lost.blocking = lost.queued
	ahead := a.kind.aheadPrefix()
	if ahead != qpfx {
		lost.blocking = t.OnFailure(clientv3.OpGet(ahead, clientv3.WithPrefix(), clientv3.WithCountOnly()))
	}
	if q := a.enqueue; queueKey == "" && q != nil {
		// Ops run in order: the read sees the entries before ours.
		lost.ahead = t.OnFailure(clientv3.OpGet(ahead, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend),
			clientv3.WithLimit(1), clientv3.WithKeysOnly()))
		if q.place {
			lost.place = t.OnFailure(clientv3.OpGet(q.key))
		}
		t.OnFailure(clientv3.OpPut(q.key, a.entryValue(now), clientv3.WithLease(q.lease)))
	}
	if queueKey != "" {
		lost.entry = t.OnFailure(clientv3.OpGet(queueKey))
		lost.pred = t.OnFailure(clientv3.OpGet(ahead, clientv3.WithPrefix(), clientv3.WithMaxCreateRev(queueRev-1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1), clientv3.WithKeysOnly()))
	}
	if a.session != 0 {
		lost.session = t.OnFailure(clientv3.OpGet(e.keys.Session(a.req.Session)))
	}
	a.kind.reads(&t)
	return t
}

// grantOps begin the hold rec, for an acquire whose queue entry is
// queueKey ("" for none): its holder record, its acquired event, its
// lease's marker (trail/derive.go), its lock-delay guard, its entry gone,
// and what its kind adds (an election's term, a thing with seats' record).
func (a *acquirer) grantOps(queueKey string, rec store.Holder) []clientv3.Op {
	e := a.e
	gkey := e.keys.Delay(a.seat)
	leaseID, _ := store.ParseLeaseHex(rec.Lease)
	ops := []clientv3.Op{clientv3.OpPut(e.keys.Lock(a.seat), store.MustJSON(rec), clientv3.WithLease(leaseID))}
	if !rec.Derived {
		ops = append(ops, clientv3.OpPut(e.keys.Acquired(a.seat, a.hold), store.MustJSON(rec.BegunEvent(a.seat))))
	}
	if a.session == 0 {
		ops = append(ops, e.leaseMarkOp(leaseID))
	}
	switch {
	case a.req.LockDelay > 0:
		ops = append(ops, clientv3.OpPut(gkey, store.MustJSON(hold.DelayRecord{Hold: a.hold, LockDelay: a.req.LockDelay})))
	case a.guardRev != 0:
		ops = append(ops, clientv3.OpDelete(gkey))
	}
	if queueKey != "" {
		ops = append(ops, clientv3.OpDelete(queueKey))
	}
	return append(ops, a.kind.grantOps(rec)...)
}

// acquireCmps hold when the acquire may take the lock: it is free, no
// waiter is ahead of us, the lock-delay guard is as we expect, and our
// session exists.
func (a *acquirer) acquireCmps(queueKey string, queueRev int64) []clientv3.Cmp {
	e := a.e
	lkey, gkey, qpfx := e.keys.Lock(a.seat), e.keys.Delay(a.seat), a.kind.aheadPrefix()
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(lkey), "=", 0)}
	if queueKey == "" {
		// Nobody queued (for a reader: no writer): a direct acquire
		// never overtakes a waiter.
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(qpfx), "=", 0).WithPrefix())
	} else {
		// Our entry exists and no entry (for a reader: no writer's) is
		// older than ours.
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(queueKey), "=", queueRev), a.kind.noneAheadCmp(qpfx, queueRev))
	}
	if a.guardRev == 0 {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(gkey), "=", 0))
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(gkey), "=", a.guardRev))
	}
	if a.session != 0 {
		skey := e.keys.Session(a.req.Session)
		if a.sessionRev != 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(skey), "=", a.sessionRev))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(skey), ">", 0))
		}
	}
	return append(cmps, a.kind.cmps()...)
}

// attemptFailed is attempt's answer when its txn failed.
func (a *acquirer) attemptFailed(ctx context.Context, queueKey string, err error) (attemptResult, error) {
	if store.IsLeaseNotFound(err) && queueKey == "" && a.enqueue != nil {
		// The session's lease, our own or the node's waiter lease: the
		// queued attempt that follows tells which (noSession, or our
		// entry missing: dequeued).
		if a.session == 0 {
			a.lease = 0
		}
		return attemptResult{outcome: retryNow}, nil
	}
	if store.IsLeaseNotFound(err) {
		if a.session != 0 {
			return attemptResult{outcome: noSession}, nil
		}
		a.lease = 0 // our own lease vanished; grant anew next time
		return attemptResult{outcome: retryNow}, nil
	}
	if store.TooLarge(err) {
		a.entry = "" // refused whole, before it applied: it put no entry
		return attemptResult{}, a.e.etcd.Err(context.WithoutCancel(ctx), "acquire txn", err)
	}
	if !store.NotApplied(err) {
		// A timeout or a term's end can come after the commit: the
		// lock may be ours under our own lease, and nobody will
		// learn the token. dropLease revokes the lease, which ends
		// such a hold at once.
		a.unsure = true
		a.entryUnsure = a.entryUnsure || (queueKey == "" && a.enqueue != nil)
	}
	return attemptResult{}, a.e.etcd.Err(context.WithoutCancel(ctx), "acquire txn", err)
}

// won is attempt's answer when its txn granted the lock.
func (a *acquirer) won(ctx context.Context, resp *clientv3.TxnResponse, t *acquireTxn, rec store.Holder) (attemptResult, error) {
	e := a.e
	a.used = true
	l := hold.ToLock(rec, a.seat, resp.Header.Revision)
	e.metrics.RecordedOf(a.seat, hold.EventAcquired, len(a.kind.lockNames())) // a set's: one per lock
	if t.won.acquired.Ok() && heldInSession(resp, t) > int64(e.cfg.MaxLocksPerSession) {
		return attemptResult{}, a.undoOverSessionCap(l.Token, rec)
	}
	a.kind.keep(l, rec)
	if a.session != 0 {
		if kvs := t.won.session.KVs(resp); len(kvs) > 0 {
			var s hold.SessionRecord
			if json.Unmarshal(kvs[0].Value, &s) == nil {
				l.TTL = time.Duration(s.TTL) * time.Second
			}
		}
		e.fillLease(ctx, l, a.session)
	} else {
		l.ExpiresAt = a.expiresAt()
	}
	return attemptResult{outcome: won, lock: l}, nil
}

// expiresAt is when the own lease runs out at the latest: it was granted,
// or refreshed, at grantedAt.
func (a *acquirer) expiresAt() time.Time {
	return expiryAt(a.grantedAt, time.Duration(a.leaseTTL)*time.Second)
}

// seenBefore is the revision up to which a failed attempt's else branch
// saw every change: the one before its txn's. The attempt may have gone
// to etcd in a batch (internal/txnbatch), and the reads of a batch member
// see the writes of the members before it, not of those after, which
// share its revision: a release batched after a waiter's attempt deletes,
// at the attempt's revision, the key the attempt read as held. So a wait
// that starts from an attempt hears that revision's changes too; one it
// saw already wakes it for nothing, and it looks again.
func seenBefore(resp *clientv3.TxnResponse) int64 { return resp.Header.Revision - 1 }

// analyse reads a failed acquire transaction's else branch.
func (a *acquirer) analyseHold(ctx context.Context, resp *clientv3.TxnResponse, t *acquireTxn, queueKey string) (attemptResult, error) {
	r, err := a.holdOutcome(ctx, resp, t, queueKey)
	if err == nil && r.outcome == unstamped {
		r, err = a.stampLockDelay(ctx, r)
	}
	if queueKey == "" && a.enqueue != nil {
		r.enqueuedRev = resp.Header.Revision
		r.queuedBefore = t.lost.queued.Count(resp)
		if ahead := t.lost.ahead.KVs(resp); len(ahead) > 0 {
			r.ahead, r.aheadRev = string(ahead[0].Key), ahead[0].CreateRevision
		}
		if kvs := t.lost.place.KVs(resp); len(kvs) > 0 {
			r.placeRev, r.place = kvs[0].CreateRevision, kvs[0].Value
		}
	}
	return r, err
}

// holdOutcome is what a failed attempt of one hold found in its way.
func (a *acquirer) holdOutcome(ctx context.Context, resp *clientv3.TxnResponse, t *acquireTxn, queueKey string) (attemptResult, error) {
	e, name, lost := a.e, a.req.Name, &t.lost
	if a.session != 0 && len(lost.session.KVs(resp)) == 0 {
		return attemptResult{outcome: noSession}, nil
	}
	lockKVs := lost.lock.KVs(resp)
	if len(lockKVs) > 0 {
		if l, ok := a.granted(ctx, lockKVs[0]); ok {
			return attemptResult{outcome: won, lock: l}, nil
		}
	}
	if queueKey != "" && len(lost.entry.KVs(resp)) == 0 {
		return a.kind.entryGone(ctx)
	}
	r, settled, blocker := a.kind.inWay(resp, t, queueKey, lockKVs)
	if settled {
		return r, nil
	}
	lockKVs = blocker
	// behind is the result when a queued waiter is ahead of us.
	behindOf := func(holder *hold.Lock) (attemptResult, bool) {
		if queueKey == "" {
			return attemptResult{}, false
		}
		pred := lost.pred.KVs(resp)
		if len(pred) == 0 {
			return attemptResult{}, false
		}
		return attemptResult{outcome: behind, watchKey: string(pred[0].Key), watchRev: seenBefore(resp), watchCreated: pred[0].CreateRevision, holder: holder}, true
	}
	if len(lockKVs) > 0 {
		kv := lockKVs[0]
		hr, err := store.DecodeHolder(kv)
		if err != nil {
			return attemptResult{}, err
		}
		holder := hold.ToLock(hr, name, kv.ModRevision)
		a.lastHolder, a.lastHolderLease = holder, hr.Lease
		if a.session != 0 && hr.Session == a.req.Session && a.kind.repeatable() && string(kv.Key) == e.keys.Lock(a.seat) {
			e.fillLease(ctx, holder, a.session)
			return attemptResult{outcome: sameHolder, lock: holder}, nil
		}
		if r, ok := behindOf(holder); ok {
			return r, nil
		}
		return attemptResult{outcome: heldBy, watchKey: a.kind.headKey(), watchRev: seenBefore(resp), holder: holder}, nil
	}
	a.lastHolder = nil
	if r, ok, err := a.analyseGuard(resp, lost.guard.KVs(resp)); ok || err != nil {
		return r, err
	}
	if r, ok := behindOf(nil); ok {
		return r, nil
	}
	if queueKey == "" && lost.blocking.Count(resp) > 0 {
		return attemptResult{outcome: behind}, nil
	}
	return attemptResult{outcome: retryNow}, nil
}

// analyseGuard reads the lock-delay guard of a free lock, from a failed
// acquire txn. ok is false when the guard is no reason not to take the
// lock.
func (a *acquirer) analyseGuard(resp *clientv3.TxnResponse, guardKVs []*mvccpb.KeyValue) (r attemptResult, ok bool, err error) {
	if len(guardKVs) == 0 {
		if a.guardRev != 0 {
			a.guardRev = 0
			return attemptResult{outcome: retryNow}, true, nil
		}
		return attemptResult{}, false, nil
	}
	g := guardKVs[0]
	var dr hold.DelayRecord
	if err := json.Unmarshal(g.Value, &dr); err != nil {
		return attemptResult{}, false, fmt.Errorf("decode lock-delay guard: %w", err)
	}
	switch {
	case dr.Until == nil:
		// The hold ended without a release, and nobody stamped the
		// delay yet: the lease expired moments ago.
		return attemptResult{outcome: unstamped, guard: dr, guardRev: g.ModRevision}, true, nil
	case time.Now().Before(*dr.Until):
		return attemptResult{outcome: delayed, retryAt: *dr.Until, delayCause: dr.Cause, watchKey: a.e.keys.Delay(a.seat), watchRev: seenBefore(resp)}, true, nil
	case a.guardRev != g.ModRevision:
		a.guardRev = g.ModRevision // a spent guard: replace it next time
		return attemptResult{outcome: retryNow}, true, nil
	}
	return attemptResult{}, false, nil
}

// stampLockDelay starts the lock-delay of a hold that expired unrecorded
// (r is unstamped): from now, as the recorder would. It answers delayed,
// or retryNow if the guard changed meanwhile.
func (a *acquirer) stampLockDelay(ctx context.Context, r attemptResult) (attemptResult, error) {
	e, gkey := a.e, a.e.keys.Delay(a.seat)
	stamped := r.guard.Ended(time.Now(), hold.EventExpired)
	octx, done := e.etcd.Op(ctx)
	tr, err := e.cli.Txn(octx).If(clientv3.Compare(clientv3.ModRevision(gkey), "=", r.guardRev)).
		Then(clientv3.OpPut(gkey, store.MustJSON(stamped))).Commit()
	done()
	if err != nil {
		return attemptResult{}, e.etcd.Err(ctx, "stamp lock-delay", err)
	}
	if !tr.Succeeded {
		return attemptResult{outcome: retryNow}, nil
	}
	return attemptResult{outcome: delayed, retryAt: *stamped.Until, delayCause: hold.EventExpired, watchKey: gkey, watchRev: tr.Header.Revision}, nil
}

// tallyReads adds to t's Then branch the reads of the session's two
// tallies, each a range over its shards (Keys.TallyShard), keys only.
func (a *acquirer) tallyReads(t *acquireTxn) {
	e, id := a.e, a.req.Session
	t.won.acquired = t.OnSuccess(clientv3.OpGet(e.keys.SessionTally(id, "acquired"), clientv3.WithPrefix(), clientv3.WithKeysOnly()))
	t.won.released = t.OnSuccess(clientv3.OpGet(e.keys.SessionTally(id, "released"), clientv3.WithPrefix(), clientv3.WithKeysOnly()))
}

// heldInSession reads the session's tallies from an acquire's Then branch:
// the locks the session holds, the new ones included.
func heldInSession(resp *clientv3.TxnResponse, t *acquireTxn) int64 {
	versions := func(r store.Ref) (n int64) {
		for _, kv := range r.KVs(resp) {
			n += kv.Version
		}
		return n
	}
	return versions(t.won.acquired) - versions(t.won.released)
}

// undoOverSessionCap ends a hold that took its session past
// MaxLocksPerSession, and returns the error for the caller. The check
// comes after the commit because a txn cannot compare a count: the grant
// and the read of the session's tallies (its own hold counted) are one
// txn, and every acquire that counted more than the cap ends its own hold. So
// once concurrent acquires settle the session holds at most the cap; in
// between it may hold one more per acquire in flight, and a race near the
// cap may refuse an acquire that would have fit. The token was never
// handed out; the audit trail shows the hold acquired and at once
// released, with the reason.
func (a *acquirer) undoOverSessionCap(token int64, rec store.Holder) error {
	e, limit := a.e, a.e.cfg.MaxLocksPerSession
	reason := fmt.Sprintf("session %s already holds the maximum of %d locks; release some first", a.req.Session, limit)
	ctx, done := e.etcd.CleanupCtx()
	defer done()
	err := a.endOwn(ctx, token, &rec, "acquire refused: "+reason)
	if err != nil && !errors.Is(err, hold.ErrTokenMismatch) && !errors.Is(err, hold.ErrNotHeld) {
		// The session keeps a lock whose token nobody learnt: it shows in
		// the session's locks and ends with it. Say the outcome is unknown.
		e.log.Warn("end hold over the session's lock limit", "lock", a.req.Name, "token", token, "session", a.req.Session, "err", err)
		return fmt.Errorf("undo acquire over the session's lock limit: %w", err)
	}
	return &hold.LimitError{Err: hold.ErrTooManyLocks, Limit: limit, Reason: reason}
}

// memberRefs name one member's responses in a lock set's acquire txn
// (see acquireTxn); an op the txn does not carry has the zero Ref.
type memberRefs struct {
	lock, guard store.Ref
	queued      store.Ref // direct attempt: count of the member's queue
	ahead       store.Ref // direct attempt with enqueue: the newest entry before ours
	entry, pred store.Ref // queued attempt: our entry, and the one just ahead of it
}
